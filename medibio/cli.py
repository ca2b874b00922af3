"""The ``medibio`` command line: one Typer app, one sub-command group per concept.

Each group lives next to the code it drives (``medibio/<area>/cli.py``) and imports heavy libraries
(torch, transformers) inside its commands, so ``medibio --help`` stays fast.
"""

from __future__ import annotations

import sys

import typer

from medibio.accel import shutdown
from medibio.errors import MedibioError

app = typer.Typer(
    name="medibio",
    help="Reproduce the MediBioDeBERTa paper: BLURB data and scoring, fine-tuning, IFT, pretraining, "
    "S2ORC field analysis, the paper audit and the book.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


@app.callback()
def _root() -> None:
    """Reproduce the MediBioDeBERTa paper (see `medibio COMMAND --help`)."""


@app.command()
def version() -> None:
    """Print the medibio version and the versions of the libraries results depend on."""
    import importlib.metadata as md

    import medibio

    typer.echo(f"medibio {medibio.__version__}")
    for pkg in ("torch", "transformers", "accelerate", "datasets"):
        try:
            typer.echo(f"{pkg} {md.version(pkg)}")
        except md.PackageNotFoundError:
            typer.echo(f"{pkg} (not installed)")


AREAS = (
    "medibio.blurb.data_cli",  # medibio data check|fetch
    "medibio.blurb.cli",  # medibio blurb score
    "medibio.paper.cli",  # medibio audit
    "medibio.finetune.cli",  # medibio finetune, medibio grid
    "medibio.runs.cli",  # medibio results table
    "medibio.fields.cli",  # medibio fields cooccurrence|subset
    "medibio.pretrain.cli",  # medibio pretrain, medibio vocab train
    "medibio.scierc.cli",  # medibio scierc train|evaluate|table
    "medibio.book.cli",  # medibio book
)


def _register() -> None:
    import importlib

    for module in AREAS:
        importlib.import_module(module).register(app)


_register()


def main(argv: list[str] | None = None) -> None:
    """Entry point: every mistake ends in one line on stderr instead of a traceback.

    medibio's own errors (unknown names, invalid values, malformed input files) exit with 2; so do
    command-line usage errors found by the parser (a missing option, ``--epochs abc``), which Typer would
    otherwise draw as a multi-line box. ``typer.Exit`` codes pass through unchanged.
    """
    try:
        code = app(args=argv, standalone_mode=False)
    except MedibioError as exc:
        _fail(str(exc), 2)
    except typer.Abort:
        _fail("aborted", 1)
    except typer.TyperException as exc:  # the parser's usage errors (click exceptions)
        if type(exc).__name__ == "NoArgsIsHelpError":  # the help has been printed already
            sys.exit(2)
        ctx = getattr(exc, "ctx", None)
        hint = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
        message = exc.format_message() if hasattr(exc, "format_message") else str(exc)
        _fail(" ".join(message.split()) + hint, getattr(exc, "exit_code", 2))
    shutdown()  # only after success: after an error, a barrier could wait for a process that is gone
    sys.exit(code if isinstance(code, int) else 0)


def _fail(message: str, code: int) -> None:
    typer.secho(f"error: {message}", err=True, fg=typer.colors.RED)
    sys.exit(code)
