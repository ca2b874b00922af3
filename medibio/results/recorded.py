"""Reference results: run records from a GPU run, committed to the repository and shown as *recorded*.

A GPU is lent to this project only now and then, and a reader's machine may have none, so the results of
the ``gpu`` profile are kept as they were recorded: ``reference/`` holds a results root (records and their
test predictions, each with its device, library versions, git commit and configuration digest) that
``medibio results record`` fills from a finished run. The chapters show those records labelled as recorded
beside whatever the current build ran, and when the build re-executes the same profile,
:func:`compare_with_recorded` says for each dataset how far the re-execution lands from the recording and
whether that is inside the recorded seed spread.
"""

from __future__ import annotations

import math
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from medibio.core.atomic import write_json
from medibio.core.paths import REPO_ROOT
from medibio.results.aggregate import seed_stats
from medibio.runs.records import RunRecord, load_records

REFERENCE_ROOT = REPO_ROOT / "reference"


def recorded(profile: str | None = None, kind: str = "finetune", root: str | Path = REFERENCE_ROOT,
             **filters: Any) -> list[RunRecord]:
    """The committed reference records (of one profile, if given), marked ``recorded``."""
    records = load_records(root, profile=profile, kind=kind, legacy=False, **filters)
    for rec in records:
        rec.recorded = True
    return records


def record(records: Iterable[RunRecord], results_root: str | Path, root: str | Path = REFERENCE_ROOT) -> list[Path]:
    """Copy finished runs (record and test predictions) from a results root into the reference folder."""
    written = []
    for rec in records:
        if not rec.ok or rec.legacy:
            continue
        source = rec.predictions_file(results_root)
        target = rec.path(root)
        if source is not None and source.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target.parent / source.name)
        written.append(write_json(target, rec.to_dict()))
    return written


def _summary(records: list[RunRecord]) -> dict[str, Any]:
    scores = [float(r.score_test) for r in records if r.ok and r.score_test is not None]
    n, mean, std, _ = seed_stats(scores)
    return {"n": n, "mean": mean, "std": std, "min": min(scores) if scores else math.nan,
            "max": max(scores) if scores else math.nan}


def recorded_frame(records: Iterable[RunRecord]) -> pd.DataFrame:
    """One row per (model, variant, dataset) of recorded runs: mean ± std over seeds, device, commit."""
    groups: dict[tuple[str, str, str], list[RunRecord]] = {}
    for rec in records:
        groups.setdefault((rec.model_tag, rec.variant, rec.dataset), []).append(rec)
    rows = []
    for (model, variant, dataset), recs in groups.items():
        s = _summary(recs)
        rows.append({"model": model, "variant": variant, "dataset": dataset, "recorded mean": s["mean"],
                     "recorded std": s["std"], "seeds": s["n"], "device": recs[0].device,
                     "commit": (recs[0].git_commit or "")[:8], "digest": recs[0].config_digest,
                     "recorded on": recs[0].created[:10]})
    return pd.DataFrame(rows, columns=["model", "variant", "dataset", "recorded mean", "recorded std", "seeds",
                                       "device", "commit", "digest", "recorded on"])


def compare_with_recorded(ours: Iterable[RunRecord], reference: Iterable[RunRecord]) -> pd.DataFrame:
    """A re-execution against the recording, per (model, variant, dataset) both have.

    ``inside seed spread`` is true when our mean lies within two recorded standard deviations of the
    recorded mean (about the range 95% of seeds fall in, if scores over seeds are roughly normal); with a
    single recorded seed there is no spread to judge by and the cell is empty. ``same configuration``
    says whether the digests agree: a re-execution with another configuration is a different experiment.
    """
    def grouped(records: Iterable[RunRecord]) -> dict[tuple[str, str, str], list[RunRecord]]:
        out: dict[tuple[str, str, str], list[RunRecord]] = {}
        for rec in records:
            out.setdefault((rec.model_tag, rec.variant, rec.dataset), []).append(rec)
        return out

    mine, theirs = grouped(ours), grouped(reference)
    rows = []
    for key in [k for k in theirs if k in mine]:
        a, b = _summary(mine[key]), _summary(theirs[key])
        diff = a["mean"] - b["mean"]
        inside = None if math.isnan(b["std"]) or math.isnan(diff) else abs(diff) <= 2 * b["std"]
        rows.append({"model": key[0], "variant": key[1], "dataset": key[2], "recorded mean": b["mean"],
                     "recorded std": b["std"], "recorded seeds": b["n"], "our mean": a["mean"], "our seeds": a["n"],
                     "difference": diff, "inside seed spread": inside,
                     "same configuration": {r.config_digest for r in mine[key]} == {r.config_digest
                                                                                   for r in theirs[key]}})
    return pd.DataFrame(rows, columns=["model", "variant", "dataset", "recorded mean", "recorded std",
                                       "recorded seeds", "our mean", "our seeds", "difference",
                                       "inside seed spread", "same configuration"])
