"""The ``medibio`` command line: one Typer app, one sub-command group per concept.

Each group lives next to the code it drives (``medibio/<area>/cli.py``) and imports heavy libraries
(torch, transformers) inside its commands, so ``medibio --help`` stays fast.
"""

from __future__ import annotations

import sys

import typer

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
    "medibio.book.cli",  # medibio book
)


def _register() -> None:
    import importlib

    for module in AREAS:
        importlib.import_module(module).register(app)


_register()


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the app, turning medibio's own errors into a clear message and exit code 2."""
    try:
        app(args=argv)
    except MedibioError as exc:
        typer.secho(f"error: {exc}", err=True, fg=typer.colors.RED)
        sys.exit(2)
