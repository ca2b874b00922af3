"""Reference results: run records of a finished build, committed to the repository and shown as *recorded*.

``reference/`` holds a results root (records and their test predictions, each with its device, library
versions with the lock file's digest, git commit and configuration digest; never model weights) that
``medibio results record`` fills from a finished build: the ``cpu`` profile's, so that a reader can render the
whole book from it without training (:func:`seed_results_root`, ``medibio book --from reference``), and a GPU profile's
when a GPU is lent, so that readers without one see those results. The chapters show the records labelled as
recorded beside whatever the current build ran, and when the build re-executes the same profile,
:func:`compare_with_recorded` says for each dataset how far the re-execution lands from the recording and
whether that is inside the recorded seed spread (:mod:`medibio.results.drift` does the same per run).
"""

from __future__ import annotations

import gzip
import math
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from medibio.core import profiles
from medibio.core.atomic import atomic_open, write_json
from medibio.core.errors import MedibioError
from medibio.core.hashing import file_sha256
from medibio.core.paths import REPO_ROOT
from medibio.core.text import GZ, file_bytes
from medibio.results.aggregate import newest_configurations, seed_stats
from medibio.runs.records import KINDS, RunRecord, add_digests, check_seal, load_records, sealed

REFERENCE_ROOT = REPO_ROOT / "reference"


def recorded(profile: str | None = None, kind: str = "finetune", root: str | Path = REFERENCE_ROOT,
             **filters: Any) -> list[RunRecord]:
    """The committed reference records (of one profile, if given), marked ``recorded``."""
    records = load_records(root, profile=profile, kind=kind, legacy=False, **filters)
    for rec in records:
        rec.recorded = True
    return records


def recordable(results_root: str | Path, profile: str, dataset: str | None = None) -> list[RunRecord]:
    """The runs of a profile's build that a rebuild reuses: every kind's records of the newest configuration
    per run (pretraining records are filed under the profile's pretraining configuration, e.g. ``mini``)."""
    found: list[RunRecord] = []
    for kind in KINDS:
        found += newest_configurations(load_records(results_root, profile=profiles.filed_under(profile, kind),
                                                    dataset=dataset, kind=kind, legacy=False))[0]
    return found


def record(records: Iterable[RunRecord], results_root: str | Path, root: str | Path = REFERENCE_ROOT) -> list[Path]:
    """Copy finished runs (record and gzipped test predictions; not artifacts such as weights or encoders) from
    a results root into the reference folder. Skipped runs are copied too: their record (say, a train split
    the data root lacks) is what a rebuild reuses instead of trying again. The predictions are compressed
    without a time stamp, so that recording the same run twice writes the same bytes. A record whose seal no
    longer holds is refused (:class:`~medibio.runs.records.SealError`): the copy is sealed anew, and must not
    launder an edited number."""
    written = []
    for rec in records:
        if rec.legacy:
            continue
        if rec.path(results_root).is_file():
            check_seal(rec.path(results_root))
        source = rec.predictions_file(results_root)  # checked against its digest (EvidenceError)
        target = rec.path(root)
        if source is not None:
            plain = target.parent / rec.predictions
            with atomic_open(plain.with_name(plain.name + GZ), "wb", encoding=None) as out:
                out.write(gzip.compress(file_bytes(source), compresslevel=9, mtime=0))
            plain.unlink(missing_ok=True)  # an earlier recording's uncompressed copy
            add_digests(rec, source.parent)  # a record written before digests gets them here
        written.append(write_json(target, sealed(rec)))
    return written


def seed_results_root(recorded_root: str | Path, results_root: str | Path) -> int:
    """Copy the recorded runs (every kind's records and predictions) into ``results_root``, which a build
    from recorded results then reuses as its own; return the number of files copied.

    The results root must be another folder (a build writes its chapters' summaries there). A file it
    already holds is kept when it is byte-identical and refused otherwise: a book said to be rendered from
    the recording must not show a different run of the same name."""
    source, target = Path(recorded_root).resolve(), Path(results_root).resolve()
    if source == target:
        raise MedibioError(f"the results root {target} is the recorded results folder itself; a build writes "
                           "its chapters' summaries there: give it another results root (--results-root)")
    files = [p for kind in KINDS if (source / kind).is_dir() for p in sorted((source / kind).rglob("*"))
             if p.is_file()]
    if not any(p.suffix == ".json" for p in files):
        raise MedibioError(f"no run records under {source} (expected {'/, '.join(KINDS)}/ folders of a results root)")
    copied = 0
    for path in files:
        dest = target / path.relative_to(source)
        if dest.is_file():
            if file_sha256(dest) != file_sha256(path):
                raise MedibioError(f"{dest} differs from the recorded {path}: build from recorded results into "
                                   "an empty results root (--results-root)")
            continue
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, dest)
        copied += 1
    return copied


def origin(root: str | Path) -> dict[str, Any]:
    """Where a folder of recorded runs comes from: how many runs, the commits, devices and lock digests
    their records name (what a page built from them says)."""
    records = [r for kind in KINDS for r in load_records(root, kind=kind, legacy=False)]

    def distinct(values: Iterable[Any]) -> list[str]:
        return sorted({str(v) for v in values if v})

    return {"runs": len(records), "commits": distinct((r.git_commit or "")[:8] for r in records),
            "devices": distinct(r.device for r in records),
            "locks": distinct(r.environment.get("versions", {}).get("lock") for r in records),
            "profiles": distinct(r.profile for r in records)}


def _summary(records: list[RunRecord]) -> dict[str, Any]:
    scores = [float(r.score_test) for r in records if r.ok and r.score_test is not None]
    n, mean, std, _ = seed_stats(scores)
    return {"n": n, "mean": mean, "std": std, "min": min(scores) if scores else math.nan,
            "max": max(scores) if scores else math.nan}


def recorded_frame(records: Iterable[RunRecord]) -> pd.DataFrame:
    """One row per configuration of recorded runs (profile, model, variant, dataset and configuration digest):
    mean ± std over its seeds, device, commit. Runs of two profiles or configurations are never averaged together
    (the cpu profile's three ift-STS-B seeds and cpu-ift's five are two experiments, not eight seeds of one)."""
    groups: dict[tuple[str, str, str, str, str], list[RunRecord]] = {}
    for rec in records:
        groups.setdefault((rec.profile, rec.model_tag, rec.variant, rec.dataset, rec.config_digest or ""), []).append(rec)
    rows = []
    for (profile, model, variant, dataset, digest), recs in groups.items():
        s = _summary(recs)
        rows.append({"profile": profile, "model": model, "variant": variant, "dataset": dataset,
                     "recorded mean": s["mean"], "recorded std": s["std"], "seeds": s["n"], "device": recs[0].device,
                     "commit": (recs[0].git_commit or "")[:8], "digest": digest, "recorded on": recs[0].created[:10]})
    return pd.DataFrame(rows, columns=["profile", "model", "variant", "dataset", "recorded mean", "recorded std",
                                       "seeds", "device", "commit", "digest", "recorded on"])


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
