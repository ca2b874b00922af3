"""Re-score a run record's test predictions against the data root's gold: what ties the numbers a record
holds to the predictions it publishes (``medibio results verify``). A seal shows that a record is the one
its run wrote; records written before seals (``reference/``'s) have only this.

What can be re-scored: a finished run on a BLURB dataset with test predictions (fine-tuning, frozen-encoder
baselines), with the registry's metric over the examples the predictions cover (a capped test set is scored
on its subset, as the run scored it; a cross-validation fold on its share of all official splits). Only
against the very gold files the run's configuration fingerprints (``config["data"]``): where the data root
holds other files, lacks the dataset, or the record names no files, there is nothing to compare with, and
the record is left out with the reason (:class:`Skipped`).

Scoring a large NER test set takes seqeval a second or more, so scores are memoised in a JSON file of the
cache (``rescored.json``), keyed by the predictions' SHA-256, the gold files' fingerprint and the scoring
code's: a memoised score is the score of exactly those bytes under exactly this code.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from medibio.core.atomic import write_json
from medibio.core.errors import MedibioError
from medibio.core.hashing import digest, file_sha256, files_fingerprint
from medibio.runs.records import RunRecord
from medibio.tasks import formats, loaders, metrics, registry
from medibio.tasks import predictions as blurb_predictions

MEMO_NAME = "rescored.json"
_CODE = (metrics, blurb_predictions, loaders, formats)  # what a memoised score depends on besides the bytes


@dataclass(frozen=True)
class Skipped:
    """A record whose predictions were not re-scored, and why (not a problem of the record)."""

    reason: str


class Rescorer:
    """Scores test-prediction files against one data root's gold, each dataset's gold read once."""

    def __init__(self, data_root: str | Path, memo: str | Path | None = None) -> None:
        self.data_root = Path(data_root)
        self.memo_path = Path(memo) if memo is not None else None
        self.memo: dict[str, dict[str, float]] = self._read_memo()
        self.added = 0
        self.reused = 0
        self._gold: dict[tuple[str, tuple[str, ...]], blurb_predictions.Gold | Skipped] = {}
        self._code = {m.__name__: file_sha256(str(m.__file__)) for m in _CODE}

    def _read_memo(self) -> dict[str, dict[str, float]]:
        """The memo, or an empty one when there is none or it does not read (it is only a cache)."""
        if self.memo_path is None or not self.memo_path.is_file():
            return {}
        try:
            data = json.loads(self.memo_path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            return {}
        return data if isinstance(data, dict) else {}

    def save(self) -> None:
        """Write the memo back when this check scored anything new."""
        if self.memo_path is not None and self.added:
            write_json(self.memo_path, self.memo)

    def metrics(self, record: RunRecord, predictions: Path, sha256: str) -> dict[str, float] | Skipped:
        """The metrics of ``predictions`` (the record's file, whose content has SHA-256 ``sha256``) against
        the gold; :class:`Skipped` when there is nothing to score them against. Predictions that do not
        fit the gold raise :class:`~medibio.core.errors.MedibioError` naming the file."""
        if not registry.is_blurb(record.dataset):
            return Skipped(f"not a BLURB dataset ({record.dataset})")
        name = registry.get(record.dataset).name
        cv = bool(record.details.get("cv_fold"))
        splits = ("train", "dev", "test") if cv else ("test",)
        available = loaders.available_splits(name, self.data_root)
        splits = tuple(s for s in splits if s in available)
        if "test" not in splits:
            return Skipped(f"the data root has no {name} test split")
        files = [p for split in splits for p in loaders.split_files(name, split, self.data_root)]
        fingerprint = files_fingerprint(files, root=self.data_root)
        scored_on = record.config.get("data") or {}
        if any(f not in scored_on for f in fingerprint):
            return Skipped("its configuration does not fingerprint the gold files it was scored on")
        if any(scored_on[f] != h for f, h in fingerprint.items()):
            return Skipped("the data root's gold files are not those the run was scored on")
        key = digest([name, splits, sha256, fingerprint, self._code], length=64)
        if key in self.memo:
            self.reused += 1
            return self.memo[key]
        gold = self._gold_of(name, splits)
        if isinstance(gold, Skipped):
            return gold
        found = _score(predictions, name, gold)
        self.memo[key] = found
        self.added += 1
        return found

    def _gold_of(self, name: str, splits: tuple[str, ...]) -> blurb_predictions.Gold | Skipped:
        """One dataset's gold over ``splits`` (pooled in that order), read once per check."""
        if (name, splits) not in self._gold:
            parts = [blurb_predictions.load_gold(name, split, self.data_root) for split in splits]
            ids = [i for g in parts for i in g.ids]
            if len(set(ids)) < len(ids):
                self._gold[name, splits] = Skipped(f"{name}'s example ids repeat across its official splits")
            else:
                self._gold[name, splits] = blurb_predictions.Gold(name, "+".join(splits), ids,
                                                                  [r for g in parts for r in g.references])
        return self._gold[name, splits]


def _score(path: Path, name: str, gold: blurb_predictions.Gold) -> dict[str, float]:
    """The dataset's metrics over the gold examples the file covers (ids outside the gold are an error)."""
    found = blurb_predictions.read_predictions(path, name)
    covered = [i for i in gold.ids if i in found]
    position = {i: k for k, i in enumerate(gold.ids)}
    sub = blurb_predictions.Gold(name, gold.split, covered, [gold.references[position[i]] for i in covered])
    values = blurb_predictions.align(path, found, sub)
    try:
        return {k: float(v) for k, v in metrics.evaluate(name, sub.references, values, ids=sub.ids).items()}
    except metrics.MetricInputError as exc:
        raise MedibioError(f"{path}: its predictions cannot be scored against the gold: {exc}") from exc


def disagreements(record: RunRecord, found: dict[str, float], tolerance: float = 1e-6) -> list[str]:
    """``score_test`` and each number of the record's ``test`` metrics that the re-score gives otherwise
    (beyond float rounding), as ``'score_test is 86.15, re-scored 76.15'``."""
    pairs: list[tuple[str, Any, float]] = []
    if record.score_test is not None:
        pairs.append(("score_test", record.score_test, found["score"]))
    pairs += [(f"test.{k}", v, found[k]) for k, v in record.test.items() if k in found]
    return [f"{what} is {have!r}, re-scored {want!r}" for what, have, want in pairs
            if not isinstance(have, (int, float)) or isinstance(have, bool) or abs(float(have) - want) > tolerance]
