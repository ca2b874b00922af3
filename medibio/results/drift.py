"""How far the runs of one results folder land from the same runs in another: a re-execution against a
recording, or a build of this code against a build of earlier code.

Runs are matched by what they are (kind, profile, model, variant, dataset, seed), not by configuration
digest, so that records made under another identity scheme (earlier record schemas) are matched too. For
each pair: whether the test predictions are byte-identical (SHA-256 of the files), both test scores and
their difference, the CPU threads each computed with (another count rounds differently on a CPU), and
whether the difference lies inside the recorded seed spread (two standard deviations of the recorded runs
of the same model, variant and dataset; none with a single recorded seed).

A single seed has no spread to judge a difference by: :func:`paired` tests each configuration of both
folders on the same test units instead (the paired bootstrap of :mod:`medibio.results.significance`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from medibio.results import significance
from medibio.results.aggregate import seed_stats
from medibio.runs.records import KINDS, RunRecord, checked_sha256, load_records
from medibio.tasks.bootstrap import DEFAULT_RESAMPLES

PAIRED_KINDS = ("finetune", "frozen")  # BLURB test predictions, which the paired bootstrap reads
PAIRED_COLUMNS = ("kind", "profile", "model", "variant", "dataset", "seeds", "recorded seeds", "score",
                  "recorded score", "difference", "low", "high", "p", "interval holds 0")
COLUMNS = ("kind", "profile", "model", "variant", "dataset", "seed", "status", "identical predictions",
           "score", "recorded score", "difference", "recorded std", "inside seed spread", "threads",
           "recorded threads", "digest", "recorded digest")
Identity = tuple[str, str, str, str, str, int]


def _identity(record: RunRecord) -> Identity:
    """What a run is; a run made under ``--limit`` is another run than the profile's (its profile cell says
    so), never paired with it nor pooled with its seeds."""
    profile = record.profile if record.limited is None else f"{record.profile} (--limit {record.limited})"
    return (record.kind, profile, record.model_tag, record.variant, record.dataset, record.seed)


def _by_identity(records: Iterable[RunRecord]) -> dict[Identity, RunRecord]:
    """One record per run identity: the newest when a folder holds several configurations of one run."""
    out: dict[Identity, RunRecord] = {}
    for rec in records:
        key = _identity(rec)
        if key not in out or rec.created > out[key].created:
            out[key] = rec
    return out


def _predictions_hash(record: RunRecord, root: Path) -> str | None:
    """SHA-256 of a run's test predictions, checked against its record in the same hashing."""
    path = record.predictions_location(root)
    return None if path is None else checked_sha256(record, path)


def _score(record: RunRecord) -> float:
    value = record.score_test if record.score_test is not None else record.score_dev
    return math.nan if value is None else float(value)


def drift(ours_root: str | Path, recorded_root: str | Path, kinds: Iterable[str] = KINDS,
          profile: str | None = None) -> pd.DataFrame:
    """One row per run found in either folder (``status``: ``both``, ``only here``, ``only recorded``)."""
    ours_root, recorded_root = Path(ours_root), Path(recorded_root)
    rows = []
    for kind in kinds:
        ours = _by_identity(load_records(ours_root, kind=kind, profile=profile))
        theirs = _by_identity(load_records(recorded_root, kind=kind, profile=profile))
        spread: dict[tuple, float] = {}
        for key in theirs:
            group = key[:5]
            if group not in spread:
                scores = [_score(r) for k, r in theirs.items() if k[:5] == group and r.ok]
                spread[group] = seed_stats([s for s in scores if not math.isnan(s)])[2]
        for key in sorted(set(ours) | set(theirs), key=str):
            a, b = ours.get(key), theirs.get(key)
            status = "both" if a and b else ("only here" if a else "only recorded")
            row = dict(zip(("kind", "profile", "model", "variant", "dataset", "seed"), key, strict=True))
            row.update(status=status, score=_score(a) if a else math.nan,
                       **{"recorded score": _score(b) if b else math.nan,
                          "threads": a.cpu_threads if a else None, "recorded threads": b.cpu_threads if b else None,
                          "digest": a.config_digest if a else "", "recorded digest": b.config_digest if b else "",
                          "recorded std": spread.get(key[:5], math.nan)})
            row["difference"] = row["score"] - row["recorded score"]
            std = row["recorded std"]
            row["inside seed spread"] = (None if math.isnan(std) or math.isnan(row["difference"])
                                         else bool(abs(row["difference"]) <= 2 * std))
            if a and b:
                ha, hb = _predictions_hash(a, ours_root), _predictions_hash(b, recorded_root)
                row["identical predictions"] = None if ha is None and hb is None else ha == hb
            else:
                row["identical predictions"] = None
            rows.append(row)
    frame = pd.DataFrame(rows, columns=list(COLUMNS))
    return frame.astype({"threads": "Int64", "recorded threads": "Int64"}) if len(frame) else frame


def paired(ours_root: str | Path, recorded_root: str | Path, profile: str | None = None,
           data_root: str | Path | None = None, resamples: int = DEFAULT_RESAMPLES) -> pd.DataFrame:
    """One row per configuration (kind, profile, model, variant, dataset) with test predictions in both
    folders: mean over this folder's seeds minus mean over the recorded seeds on the same test units, its
    paired-bootstrap 95 % interval and p-value, and whether the interval holds 0."""
    ours_root, recorded_root = Path(ours_root), Path(recorded_root)
    rows = []
    for kind in PAIRED_KINDS:
        ours = _by_identity(load_records(ours_root, kind=kind, profile=profile))
        theirs = _by_identity(load_records(recorded_root, kind=kind, profile=profile))
        for group in sorted({k[:5] for k in ours} & {k[:5] for k in theirs}, key=str):
            here = significance.runs_of([r for k, r in ours.items() if k[:5] == group], ours_root, "here",
                                        group[4], data_root)
            there = significance.runs_of([r for k, r in theirs.items() if k[:5] == group], recorded_root,
                                         "recorded", group[4], data_root)
            if here is None or there is None:
                continue
            c = significance.paired_test(here, there, resamples)
            rows.append({**dict(zip(PAIRED_COLUMNS[:5], group, strict=True)), "seeds": len(c.seeds_a),
                         "recorded seeds": len(c.seeds_b), "score": c.mean_a, "recorded score": c.mean_b,
                         "difference": c.diff, "low": c.low, "high": c.high, "p": c.p_value,
                         "interval holds 0": bool(c.low <= 0 <= c.high)})
    return pd.DataFrame(rows, columns=list(PAIRED_COLUMNS))


def summary(frame: pd.DataFrame) -> str:
    """``41 runs in both: 38 with identical predictions, 3 differ (2 computed with other thread counts)``."""
    both = frame[frame["status"] == "both"]
    with_predictions = both[both["identical predictions"].notna()]
    same = int(with_predictions["identical predictions"].astype(bool).sum())
    differ = with_predictions[~with_predictions["identical predictions"].astype(bool)]
    other_threads = int((differ["threads"] != differ["recorded threads"]).sum())
    parts = [f"{len(both)} runs in both", f"{same} of {len(with_predictions)} with identical test predictions"]
    if len(differ):
        parts.append(f"{len(differ)} differ ({other_threads} computed with other CPU thread counts)")
    for status in ("only here", "only recorded"):
        n = int((frame["status"] == status).sum())
        if n:
            parts.append(f"{n} {status}")
    return "; ".join(parts)
