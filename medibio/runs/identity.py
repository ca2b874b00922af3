"""One identity for a run: what it is, and a digest of everything that can change its result.

A run is named by (kind, profile, model tag, variant, dataset, seed) for people, and told apart from any
other run by :func:`digest` of its *effective configuration*: hyperparameters, caps, loss options,
stability options, the intermediate chain, the model's fingerprint (weights and tokenizer) and the
checksums of the data files it reads. Two requests share a record only when their digests are equal, so a
changed preset can never leave an old number on a page: it runs into a record of its own.

The digest is the first 12 hex digits of the SHA-256 of the configuration as canonical JSON (sorted keys,
no whitespace, floats as Python writes them), so it is stable across processes, machines and Python
versions, and short enough to show in a table's provenance column.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
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


def file_sha256(path: str | Path) -> str:
    """Full SHA-256 hex of a file, streamed; memoised per process on (path, size, mtime)."""
    path = Path(path)
    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
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


def _component(value: str | int, what: str) -> str:
    text = str(value)
    if not text or "/" in text or "\\" in text or text in (".", ".."):
        raise ValueError(f"{what} {text!r} cannot be a path component")
    return text


@dataclass(frozen=True)
class RunKey:
    """The identity of one run: human-readable parts plus the digest of its effective configuration.

    ``str(key)`` (``finetune/cpu/minilm/base/BIOSSES/seed1@3f2a...``) is the run id printed in logs and
    tables; :meth:`path` is where its record lives, so two configurations never share a file.
    """

    kind: str  # "finetune", "scierc", ...
    profile: str
    model_tag: str
    variant: str
    dataset: str
    seed: int
    config_digest: str

    def __post_init__(self) -> None:
        for name in ("kind", "profile", "model_tag", "variant", "dataset", "config_digest"):
            _component(getattr(self, name), name.replace("_", " "))
        object.__setattr__(self, "seed", int(self.seed))

    def __str__(self) -> str:
        return (f"{self.kind}/{self.profile}/{self.model_tag}/{self.variant}/{self.dataset}/seed{self.seed}"
                f"@{self.config_digest}")

    def folder(self, results_root: str | Path) -> Path:
        """``<root>/<kind>/<profile>/<model_tag>/<variant>/<dataset>/<config_digest>/``: all seeds of one
        configuration."""
        return (Path(results_root) / self.kind / self.profile / self.model_tag / self.variant / self.dataset
                / self.config_digest)

    def path(self, results_root: str | Path) -> Path:
        """The run record: ``<folder>/seed<N>.json``."""
        return self.folder(results_root) / f"seed{self.seed}.json"

    def predictions_path(self, results_root: str | Path) -> Path:
        """The run's test predictions, next to its record: ``<folder>/seed<N>.test.jsonl``."""
        return self.folder(results_root) / f"seed{self.seed}.test.jsonl"

    def lock_path(self, results_root: str | Path) -> Path:
        """The lock a process holds while it trains this run: ``<folder>/seed<N>.lock``."""
        return self.folder(results_root) / f"seed{self.seed}.lock"


def config_differences(old: Mapping[str, Any], new: Mapping[str, Any], prefix: str = "") -> list[str]:
    """What changed between two configurations, as ``path: old → new`` lines (nested keys dotted)."""
    out: list[str] = []
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key, "(absent)"), new.get(key, "(absent)")
        where = f"{prefix}{key}"
        if isinstance(a, Mapping) and isinstance(b, Mapping):
            out.extend(config_differences(a, b, where + "."))
        elif canonical_json(a) != canonical_json(b):
            out.append(f"{where}: {canonical_json(a)} → {canonical_json(b)}")
    return out
