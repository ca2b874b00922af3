"""The ``medibio`` command line: one Typer app, one sub-command group per concept.

Each area has its module here (``medibio/cli/<area>.py``). A command imports the layers it drives inside
its function — the only deferred medibio imports of the package, kept because import time is measured to
matter: ``medibio --help`` takes 0.64 s this way and 5.7 s with every layer imported up front (torch,
transformers, datasets, pandas; ``/usr/bin/time medibio --help`` against importing every module, on the
2-core development machine).
"""

from __future__ import annotations

import errno
import importlib
import importlib.metadata as md
import os
import sys
from pathlib import Path

import typer

from medibio.core.errors import MedibioError
from medibio.core.precision import shutdown

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
    import medibio

    typer.echo(f"medibio {medibio.__version__}")
    for pkg in ("torch", "transformers", "accelerate", "datasets"):
        try:
            typer.echo(f"{pkg} {md.version(pkg)}")
        except md.PackageNotFoundError:
            typer.echo(f"{pkg} (not installed)")


AREAS = (
    "medibio.cli.data",  # medibio data check|fetch
    "medibio.cli.blurb",  # medibio blurb score
    "medibio.cli.paper",  # medibio audit
    "medibio.cli.claims",  # medibio claims
    "medibio.cli.finetune",  # medibio finetune, medibio grid
    "medibio.cli.results",  # medibio results table
    "medibio.cli.fields",  # medibio fields cooccurrence|subset
    "medibio.cli.pretrain",  # medibio pretrain, medibio vocab train
    "medibio.cli.study",  # medibio study unit|status|finetune|queue|pilot
    "medibio.cli.scierc",  # medibio scierc train|evaluate|table
    "medibio.cli.book",  # medibio book
)


def _register() -> None:
    for module in AREAS:
        importlib.import_module(module).register(app)


_register()


def main(argv: list[str] | None = None) -> None:
    """Entry point: every mistake ends in one line on stderr instead of a traceback.

    medibio's own errors (unknown names, invalid values, malformed input files) exit with 2; so do
    command-line usage errors found by the parser (a missing option, ``--epochs abc``), which Typer would
    otherwise draw as a multi-line box. An error of the operating system (a full disk, a read-only or
    unreadable folder, a file where a folder belongs) exits with 1, naming the path and what to do.
    ``typer.Exit`` codes pass through unchanged.
    """
    empty = _empty_value(sys.argv[1:] if argv is None else argv)
    if empty:
        _fail(empty, 2)
    try:
        code = app(args=argv, standalone_mode=False)
    except MedibioError as exc:
        _fail(str(exc), 2)
    except typer.Abort:
        _fail("aborted", 1)
    except OSError as exc:
        _fail(os_error_message(exc), 1)
    except RuntimeError as exc:  # pathlib's resolve() on a symbolic link loop (Python < 3.13)
        if not str(exc).startswith("Symlink loop from "):
            raise
        looped = str(exc).removeprefix("Symlink loop from ").strip("'\"")
        _fail(os_error_message(OSError(errno.ELOOP, os.strerror(errno.ELOOP), looped)), 1)
    except typer.TyperException as exc:  # the parser's usage errors (click exceptions)
        if type(exc).__name__ == "NoArgsIsHelpError":  # the help has been printed already
            sys.exit(2)
        ctx = getattr(exc, "ctx", None)
        hint = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
        message = exc.format_message() if hasattr(exc, "format_message") else str(exc)
        _fail(" ".join(message.split()) + hint, getattr(exc, "exit_code", 2))
    shutdown()  # only after success: after an error, a barrier could wait for a process that is gone
    sys.exit(code if isinstance(code, int) else 0)


def _empty_value(argv: list[str]) -> str | None:
    """What is wrong when an argument is empty (``--from ''``, ``--from=``, ``''``): no option or argument of
    medibio means anything by an empty value, and a path option would read it as the current folder."""
    for i, arg in enumerate(argv):
        option = arg[:-1] if arg.startswith("--") and arg.endswith("=") and len(arg) > 3 else None
        if option is None and not arg.strip():
            option = argv[i - 1] if i and argv[i - 1].startswith("-") else None
            if option is None:
                return f"argument {i + 1} of the command line: expected a value (not empty), got {arg!r}"
        if option is not None:
            return f"'{option}': expected a value (not empty), got ''; give one, or leave the option out"
    return None


# what a user can do about an operating-system error, by errno
_ADVICE = {
    errno.ENOSPC: "free space there or choose another folder with --results-root",
    errno.EDQUOT: "free space within your quota or choose another folder with --results-root",
    errno.EROFS: "the file system is read-only: choose a writable folder with --results-root",
    errno.EACCES: "check its permissions or choose a folder you may use (--results-root, --data-root)",
    errno.EPERM: "check its permissions or choose a folder you may use (--results-root, --data-root)",
    errno.ENOTDIR: "part of this path is a file where a folder belongs: move the file or choose another folder",
    errno.EISDIR: "a folder is where a file belongs: move it or give a file",
    errno.ENOENT: "it does not exist: check the path",
    errno.EIO: "the device reported an I/O error: check the disk",
}


_ADVICE[errno.ELOOP] = "a symbolic link there points (through others) back to itself: fix or remove the link"
_ADVICE[errno.EEXIST] = "something is already there (a file where a folder belongs?): move it or choose another path"
# what helps when a failing path lies in one of medibio's folders: the flag or variable that moves that folder
_FOLDER_ADVICE = {
    "cache_root": "it is in the cache folder: point MEDIBIO_CACHE at a folder you may write",
    "results_root": "it is in the results root: choose another with --results-root or MEDIBIO_RESULTS",
    "data_root": "it is in the data root: check its files, or choose another with --data-root or MEDIBIO_DATA",
}
# the first half of the advice where the second is the folder's own
_FIX = {errno.ENOSPC: "free space there", errno.EDQUOT: "free space within your quota",
        errno.EROFS: "the file system is read-only", errno.EACCES: "check its permissions",
        errno.EPERM: "check its permissions", errno.EEXIST: "something is already there (a file where a folder "
        "belongs?)", errno.ENOTDIR: "part of this path is a file where a folder belongs"}


def _folder_advice(path: str) -> str | None:
    """What helps for ``path`` when it lies in the cache, results or data folder of this session's
    environment (a read-only cache is no matter of --results-root), or in the book's _build/."""
    from medibio.core.paths import REPO_ROOT
    from medibio.core.settings import Settings

    try:
        settings = Settings.from_env()
        target = Path(path).absolute()
    except (MedibioError, OSError, ValueError):
        return None
    if target.is_relative_to(REPO_ROOT / "_build"):
        return "it is in the book's HTML output: make _build/ writable or remove it (`make clean-book`)"
    for name, advice in _FOLDER_ADVICE.items():
        if target.is_relative_to(Path(getattr(settings, name)).absolute()):
            return advice
    return None


def os_error_message(exc: OSError) -> str:
    """One line for an error of the operating system: what failed, on which path, and what to do (for a
    path in the cache, results or data folder, the setting that moves that folder)."""
    what = (exc.strerror or os.strerror(exc.errno)) if exc.errno else str(exc)
    paths = [str(p) for p in (exc.filename, exc.filename2) if p is not None]
    where = f": {' -> '.join(paths)}" if paths else ""
    advice = _ADVICE.get(exc.errno or 0, "check the path and try again")
    folder = _folder_advice(paths[0]) if paths and exc.errno in _FIX else None
    if folder is not None:
        advice = f"{_FIX[exc.errno]}; {folder}"
    return " ".join(f"{what}{where}; {advice}".split())


def _fail(message: str, code: int) -> None:
    typer.secho(f"error: {message}", err=True, fg=typer.colors.RED)
    sys.exit(code)
