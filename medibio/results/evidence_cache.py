"""A disk cache of what the claims' evidence costs to compute: each prediction file's unit statistics and each
multi-bootstrap's draws, keyed by digests of their inputs.

Scoring a run's test predictions unit by unit (seqeval's spans for NER) and drawing thousands of resamples of
tens of thousands of units take minutes of CPU; every reader of the claims (``medibio claims``, the "What holds
up" chapter, Appendix B's comparison with the recorded runs, which judges twice) would otherwise redo them. An
entry is named by the SHA-256 of everything its value depends on: the bytes of the prediction file and of the
gold test files, or the unit counts, seeds and sizes of a multi-bootstrap, and the source of the modules that
compute them, so a changed prediction, gold file or scoring code is a new entry, never a stale one.

The cache is used only where a boundary names its folder (:func:`stored_in`, e.g. the settings' cache root);
elsewhere everything is computed as before. Entries are ``.npz`` files written atomically (one rename); an
unreadable entry is computed again and replaced.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import pickle
import zipfile
from collections.abc import Iterable, Iterator, Mapping
from contextvars import ContextVar
from pathlib import Path
from typing import Any

import numpy as np

from medibio.core.atomic import atomic_open
from medibio.core.hashing import canonical_json, file_sha256

_FOLDER: ContextVar[Path | None] = ContextVar("medibio_evidence_cache", default=None)
SUBFOLDER = "evidence"
# The modules whose code decides a cached value: a change to any of them starts new entries.
_CODE_MODULES = ("medibio.tasks.units", "medibio.tasks.predictions", "medibio.tasks.loaders",
                 "medibio.tasks.formats", "medibio.tasks.metrics", "medibio.tasks.bootstrap",
                 "medibio.results.significance")


@contextlib.contextmanager
def stored_in(cache_root: str | Path | None) -> Iterator[None]:
    """Cache the evidence under ``cache_root/evidence`` while the block runs (None: no disk cache)."""
    token = _FOLDER.set(None if cache_root is None else Path(cache_root) / SUBFOLDER)
    try:
        yield
    finally:
        _FOLDER.reset(token)


def folder() -> Path | None:
    """Where entries are kept now, or None when no boundary asked for a cache."""
    return _FOLDER.get()


@functools.cache
def code_digest() -> str:
    """SHA-256 over the source of the modules that compute the cached values."""
    import importlib

    sources = {name: file_sha256(Path(importlib.import_module(name).__file__ or "")) for name in _CODE_MODULES}
    return hashlib.sha256(canonical_json(sources).encode()).hexdigest()


def key(kind: str, payload: Mapping[str, Any]) -> str:
    """The name of an entry: SHA-256 of its kind, the computing code and ``payload`` (JSON-ready)."""
    text = canonical_json({"kind": kind, "code": code_digest(), "payload": payload})
    return hashlib.sha256(text.encode()).hexdigest()


def array_digest(values: np.ndarray) -> str:
    """SHA-256 of an array's dtype, shape and bytes."""
    values = np.ascontiguousarray(values)
    h = hashlib.sha256(f"{values.dtype.str}{values.shape}".encode())
    h.update(values.tobytes())
    return h.hexdigest()


def text_digest(texts: Iterable[str]) -> str:
    """SHA-256 of a sequence of strings (ids, unit keys), one per line."""
    return hashlib.sha256("\n".join(texts).encode()).hexdigest()


@functools.cache
def package_digest() -> str:
    """SHA-256 over every file of the ``medibio`` package (its code and the paper's data it carries): the key of
    a value that any of them may decide, such as a claim's verdict."""
    package = Path(__file__).resolve().parents[1]
    files = sorted(p for p in package.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    return hashlib.sha256(canonical_json({str(p.relative_to(package)): file_sha256(p) for p in files})
                          .encode()).hexdigest()


def _path(kind: str, name: str, suffix: str = ".npz") -> Path | None:
    root = folder()
    return None if root is None else root / kind / name[:2] / f"{name}{suffix}"


def load(kind: str, name: str) -> tuple[dict[str, Any], dict[str, np.ndarray]] | None:
    """An entry's metadata and arrays, or None (no cache, no entry, or an entry that cannot be read)."""
    path = _path(kind, name)
    if path is None or not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {k: data[k] for k in data.files}
        meta = json.loads(str(arrays.pop("__meta__")))
    except (OSError, ValueError, KeyError, zipfile.BadZipFile):
        return None  # a torn or foreign file: computed again and replaced
    return meta, arrays


def save(kind: str, name: str, meta: Mapping[str, Any], arrays: Mapping[str, np.ndarray]) -> None:
    """Store an entry atomically (nothing happens without a cache folder). A cache that cannot be written (a
    full disk, a read-only folder) costs the next call its time, never this one its result: not an error."""
    path = _path(kind, name)
    if path is None:
        return
    with contextlib.suppress(OSError), atomic_open(path, "wb", encoding=None) as fh:
        np.savez(fh, __meta__=np.array(json.dumps(dict(meta))), **arrays)


def load_object(kind: str, name: str) -> Any | None:
    """A Python object stored by :func:`save_object`, or None (no cache, no entry, or one that cannot be read).
    Pickled: only for objects this cache's own writer stored (the cache folder is the user's own)."""
    path = _path(kind, name, ".pickle")
    if path is None or not path.is_file():
        return None
    try:
        return pickle.loads(path.read_bytes())
    except Exception:  # noqa: BLE001 - a torn, foreign or outdated entry is computed again and replaced
        return None


def save_object(kind: str, name: str, value: Any) -> None:
    """Store a picklable object atomically, as :func:`save` stores arrays (a failed write is not an error)."""
    path = _path(kind, name, ".pickle")
    if path is None:
        return
    with contextlib.suppress(OSError), atomic_open(path, "wb", encoding=None) as fh:
        pickle.dump(value, fh, protocol=pickle.HIGHEST_PROTOCOL)
