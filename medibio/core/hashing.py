"""Digests that name configurations and files: stable across processes, machines and Python versions.

A configuration's digest is the first 12 hex digits of the SHA-256 of its canonical JSON (sorted keys, no
whitespace, floats as Python writes them): short enough for a table's provenance column, and equal exactly
when the configurations are.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

DIGEST_LENGTH = 12
_CHUNK = 1 << 20


def _plain(value: Any) -> Any:
    """JSON-ready form of a configuration value (tuples as lists, paths as strings, NaN refused)."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"a run configuration cannot hold {value!r}: its digest would not be stable")
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):  # numpy scalars
        return value.item()
    if hasattr(value, "value") and type(value).__module__ != "builtins":  # enums
        return _plain(value.value)
    return value


def canonical_json(payload: Any) -> str:
    """The configuration as canonical JSON: the exact text the digest is computed from."""
    return json.dumps(_plain(payload), sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def digest(payload: Any, length: int = DIGEST_LENGTH) -> str:
    """Short SHA-256 hex digest of ``payload`` as canonical JSON (equal configurations, equal digests)."""
    return hashlib.sha256(canonical_json(payload).encode("ascii")).hexdigest()[:length]


_FILE_HASHES: dict[tuple[str, int, int], str] = {}


def file_sha256(path: str | Path, memo: bool = True) -> str:
    """Full SHA-256 hex of a file, streamed; memoised per process on (path, size, mtime) unless ``memo`` is
    false (evidence checks read the file as it is now: an edit within the clock's resolution keeps the mtime)."""
    path = Path(path)
    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    if not memo:
        _FILE_HASHES.pop(key, None)
    if key not in _FILE_HASHES:
        h = hashlib.sha256()
        with open(path, "rb") as fh:
            while chunk := fh.read(_CHUNK):
                h.update(chunk)
        _FILE_HASHES[key] = h.hexdigest()
    return _FILE_HASHES[key]


def files_fingerprint(paths: Iterable[str | Path], root: str | Path | None = None) -> dict[str, str]:
    """``{name: sha256[:16]}`` for data files (names relative to ``root`` when given, so a data root moved
    to another machine keeps the same fingerprint). Missing files map to ``"absent"``."""
    out: dict[str, str] = {}
    for p in paths:
        p = Path(p)
        try:
            name = p.resolve().relative_to(Path(root).resolve()).as_posix() if root is not None else p.name
        except ValueError:
            name = p.name
        out[name] = file_sha256(p)[:16] if p.is_file() else "absent"
    return dict(sorted(out.items()))
