"""The command line's boundary: one :class:`~medibio.core.settings.Settings` per command, from its flags and,
for what they leave out, the ``MEDIBIO_*`` environment."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import typer

from medibio.core import precision, progress
from medibio.core.settings import Settings


def settings(data_root: Path | None = None, results_root: Path | None = None, limit: int | None = None,
             processes: int | None = None) -> Settings:
    """The settings a command runs with (flags first, then the environment); progress and the use of the CPU's
    native bf16 follow them."""
    made = Settings.from_env(data_root=data_root, results_root=results_root, limit=limit, processes=processes)
    progress.configure(made.progress)
    precision.allow_native_bf16(made.native_bf16)
    if made.processes > 1:  # said before any work starts, not as out-of-memory kills later
        from medibio.core.capacity import check_processes

        check_processes(made.processes)
    return made


def require_data_root(settings: Settings, what: str) -> None:
    """Refuse, naming the folder, a command whose numbers are scored against the data root's gold labels when
    there is no data root: without one every claim or chapter would read as untested, with exit status 0."""
    from medibio.core.errors import DataMissingError

    if not settings.data_root.is_dir():
        raise DataMissingError(settings.data_root, f"{what} scores the recorded runs against the gold test labels "
                               "in the data root: set MEDIBIO_DATA (or --data-root) to the folder holding blurb/, "
                               "ift/, s2orc/ ...")


def echo_json(data: Any) -> None:
    """``--json`` output, one form for every command: indented, non-ASCII text as is, other values as text."""
    typer.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))


def merged_options(file_options: Mapping[str, Any], **flags: Any) -> dict[str, Any]:
    """A ``--config`` file's options with the flags given on the command line over them (``None``: not given)."""
    return {**file_options, **{k: v for k, v in flags.items() if v is not None}}


def echo_result(data: Any, as_json: bool, lines: Callable[[], Iterable[str]]) -> None:
    """A training command's result: ``data`` as JSON with ``--json``, else ``lines()``; nothing from the
    worker processes of an ``accelerate launch`` (only the main process speaks)."""
    from medibio.core.precision import is_main_process  # accelerate: only after a run, never for --help

    if not is_main_process():
        return
    if as_json:
        echo_json(data)
        return
    for line in lines():
        typer.echo(line)


def echo_frame_or_nothing(frame: Any, as_json: bool, nothing: str) -> bool:
    """Print a listing's frame as JSON (``--json``) or say ``nothing`` when it is empty; True when done."""
    if as_json:
        echo_json(frame.to_dict(orient="records"))
        return True
    if frame.empty:
        typer.echo(nothing)
        return True
    return False
