"""Atomic file writes: a reader (or a crash) never sees a half-written file.

Everything medibio writes that a later run reads back (run records, predictions, checkpoints' metadata,
tables) goes through these helpers: write to a temporary file in the same folder, fsync, then rename.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import IO, Any

_UMASK = os.umask(0)
os.umask(_UMASK)


@contextmanager
def atomic_open(path: str | Path, mode: str = "w", encoding: str | None = "utf-8") -> Iterator[IO[Any]]:
    """Open a temporary sibling of ``path``; on success it replaces ``path`` in one rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
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
