"""Atomic file writes: a reader (or a crash) never sees a half-written file.

Everything medibio writes that a later run reads back (run records, predictions, checkpoints' metadata,
tables) goes through these helpers: write to a temporary file in the same folder, fsync, then rename.

A writer killed mid-way (SIGKILL, power loss) leaves its temporary file behind. Temporary names carry the
writer's host and pid (``.{name}.{host}.{pid}.XXXXXXXX.tmp``), so the first write into a folder by a later
process removes the leftovers of writers on this host that are no longer alive; a live writer's file, or
one written from another host sharing the folder, is never touched.
"""

from __future__ import annotations

import json
import os
import re
import socket
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import IO, Any

_UMASK = os.umask(0)
os.umask(_UMASK)

_HOST = re.sub(r"[^A-Za-z0-9_-]", "-", socket.gethostname()) or "host"
_TEMP = re.compile(r"\.(?P<name>.+)\.(?P<host>[A-Za-z0-9_-]+)\.(?P<pid>\d+)\.[A-Za-z0-9_]+\.tmp")
_SWEPT: set[Path] = set()  # folders this process has already cleaned


def temp_prefix(path: Path) -> str:
    """Prefix of the temporary sibling of ``path`` written by this process."""
    return f".{path.name}.{_HOST}.{os.getpid()}."


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # e.g. PermissionError: the process exists but belongs to someone else
        return True
    return True


def remove_stale_temps(folder: str | Path) -> list[Path]:
    """Delete temporary files in ``folder`` left by dead writers on this host; return what was removed."""
    removed: list[Path] = []
    folder = Path(folder)
    try:
        entries = list(os.scandir(folder))
    except FileNotFoundError:
        return removed
    for entry in entries:
        match = _TEMP.fullmatch(entry.name)
        if not match or match["host"] != _HOST or not entry.is_file(follow_symlinks=False):
            continue
        if int(match["pid"]) != os.getpid() and not _alive(int(match["pid"])):
            with suppress(FileNotFoundError):
                os.unlink(entry.path)
                removed.append(Path(entry.path))
    return removed


def _sweep_once(folder: Path) -> None:
    key = folder.resolve()
    if key not in _SWEPT:
        _SWEPT.add(key)
        remove_stale_temps(folder)


@contextmanager
def atomic_open(path: str | Path, mode: str = "w", encoding: str | None = "utf-8") -> Iterator[IO[Any]]:
    """Open a temporary sibling of ``path``; on success it replaces ``path`` in one rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    _sweep_once(path.parent)
    fd, tmp = tempfile.mkstemp(prefix=temp_prefix(path), suffix=".tmp", dir=path.parent)
    binary = "b" in mode
    try:
        with os.fdopen(fd, mode, encoding=None if binary else encoding) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp creates 0600; give the file normal permissions
        os.replace(tmp, path)
    except BaseException:
        with suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_text(path: str | Path, text: str) -> Path:
    """Atomically write ``text`` to ``path``."""
    with atomic_open(path, "w") as fh:
        fh.write(text)
    return Path(path)


def write_json(path: str | Path, obj: Any, indent: int = 2) -> Path:
    """Atomically write ``obj`` as JSON (sorted keys off: records keep their logical order)."""
    with atomic_open(path, "w") as fh:
        json.dump(obj, fh, indent=indent, ensure_ascii=False, default=_default)
        fh.write("\n")
    return Path(path)


def write_jsonl(path: str | Path, rows: Iterable[Any]) -> Path:
    """Atomically write one JSON object per line."""
    with atomic_open(path, "w") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False, default=_default))
            fh.write("\n")
    return Path(path)


def _default(obj: Any) -> Any:
    """JSON fallback for numpy scalars/arrays and paths."""
    if isinstance(obj, Path):
        return str(obj)
    for attr in ("item", "tolist"):
        if hasattr(obj, attr):
            return getattr(obj, attr)()
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")
