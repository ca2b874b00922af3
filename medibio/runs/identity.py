"""One identity for a run: what it is, and a digest of everything that can change its result.

A run is named by (kind, profile, model tag, variant, dataset, seed) for people, and told apart from any
other run by the digest (:func:`medibio.core.hashing.digest`) of its *effective configuration*:
hyperparameters, caps, loss options, stability options, the intermediate chain, the model's fingerprint
(weights and tokenizer) and the checksums of the data files it reads. Two requests share a record only when
their digests are equal, so a changed preset can never leave an old number on a page: it runs into a record
of its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from medibio.core.hashing import canonical_json


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

    def artifacts_path(self, results_root: str | Path) -> Path:
        """The run's published artifacts (an encoder, a pretrained model): ``<folder>/seed<N>/``."""
        return self.folder(results_root) / f"seed{self.seed}"

    def work_path(self, results_root: str | Path) -> Path:
        """Where the run builds its artifacts until it is finished (kept across a kill, for resuming)."""
        return self.folder(results_root) / f".seed{self.seed}.work"

    def lock_path(self, results_root: str | Path) -> Path:
        """The lock a process holds while it trains this run: ``<folder>/seed<N>.lock``."""
        return self.folder(results_root) / f"seed{self.seed}.lock"


def config_differences(old: Mapping[str, Any], new: Mapping[str, Any], prefix: str = "") -> list[str]:
    """What changed between two configurations, as ``path: old → new`` lines (nested keys dotted, list items
    of lists of one length by their index: ``intermediate.0.data.ift/stsb/sts-train.csv``)."""
    out: list[str] = []
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key, "(absent)"), new.get(key, "(absent)")
        where = f"{prefix}{key}"
        if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
            a, b = {str(i): v for i, v in enumerate(a)}, {str(i): v for i, v in enumerate(b)}
        if isinstance(a, Mapping) and isinstance(b, Mapping):
            out.extend(config_differences(a, b, where + "."))
        elif canonical_json(a) != canonical_json(b):
            out.append(f"{where}: {canonical_json(a)} → {canonical_json(b)}")
    return out
