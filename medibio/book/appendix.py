"""What the reproducibility appendix shows: environment, versions, data checksums, run records, the drift of
every recorded run, builds.

The data root ships ``CHECKSUMS.tsv`` files (``path, bytes, sha256_16, lines``; ``sha256_16`` is the first
16 hex digits of the file's SHA-256). :func:`verify_checksums` re-hashes every listed file so the book
states which exact data it was built from, and flags any file that changed or went missing.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import platform
import sys
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from medibio.core import profiles, provenance
from medibio.core.errors import InputFormatError
from medibio.core.paths import REPO_ROOT
from medibio.core.settings import RESULTS_ENV, Settings
from medibio.results import drift
from medibio.results.listing import list_records
from medibio.results.recorded import REFERENCE_ROOT
from medibio.runs.records import KINDS

CHECKSUM_COLUMNS = ("path", "bytes", "sha256_16", "lines")


def environment() -> pd.DataFrame:
    """Interpreter, platform, the CPU (model name and the features that decide its precision), the GPUs and the
    git commit of the checkout; torch is not imported for it (the runs' own threads and device are in their
    records, on the run pages)."""
    features = provenance.cpu_features()
    rows = {"python": platform.python_version(), "executable": sys.executable,
            "platform": platform.platform(), "machine": platform.machine(), "cpu": provenance.cpu_model(),
            "cpu features": ", ".join(features) if features else f"none of {', '.join(provenance.CPU_FEATURES)}",
            "cpu cores": os.cpu_count(), "gpu": ", ".join(provenance.gpu_names()) or "none listed by nvidia-smi",
            "git commit": provenance.git_commit() or "(not a git checkout)"}
    return pd.DataFrame({"value": [str(v) for v in rows.values()]}, index=pd.Index(list(rows), name="item"))


def versions() -> pd.DataFrame:
    """Installed version of each package results depend on (the list every record carries)."""
    out = {k: v or "not installed" for k, v in provenance.versions().items()}
    return pd.DataFrame({"version": list(out.values())}, index=pd.Index(list(out), name="package"))


def read_checksums(path: Path) -> list[dict[str, str]]:
    """Rows of a ``CHECKSUMS.tsv``; a malformed row raises :class:`InputFormatError` naming its line."""
    with open(path, encoding="utf-8", newline="") as fh:
        reader = csv.reader(fh, delimiter="\t")
        header = next(reader, None)
        if header is None or tuple(header[:4]) != CHECKSUM_COLUMNS:
            raise InputFormatError(path, 1, "header " + "\\t".join(CHECKSUM_COLUMNS), "\t".join(header or []))
        rows = []
        for lineno, row in enumerate(reader, start=2):
            if len(row) < 4 or not row[1].isdigit():
                raise InputFormatError(path, lineno, "path<TAB>bytes<TAB>sha256_16<TAB>lines", "\t".join(row))
            rows.append(dict(zip(CHECKSUM_COLUMNS, row[:4], strict=True)))
        return rows


def _sha256_prefix(path: Path, n: int) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()[:n]


def verify_checksums(root: Path) -> pd.DataFrame:
    """Re-hash every file listed in each ``CHECKSUMS.tsv`` under ``root``; one row per file with status."""
    rows = []
    for listing in sorted(root.rglob("CHECKSUMS.tsv")):
        folder = listing.parent.relative_to(root).as_posix()
        for entry in read_checksums(listing):
            path = listing.parent / entry["path"]
            row = {"folder": folder, "file": entry["path"], "bytes": int(entry["bytes"]),
                   "sha256_16": entry["sha256_16"]}
            if not path.is_file():
                row["status"] = "missing"
            elif path.stat().st_size != row["bytes"]:
                row["status"] = f"size {path.stat().st_size} ≠ {row['bytes']}"
            elif _sha256_prefix(path, len(entry["sha256_16"])) != entry["sha256_16"]:
                row["status"] = "sha256 differs"
            else:
                row["status"] = "ok"
            rows.append(row)
    columns = ["folder", "file", "bytes", "sha256_16", "status"]
    return pd.DataFrame(rows, columns=columns)


def manifests(root: Path) -> pd.DataFrame:
    """Every ``MANIFEST.md`` of the data root with its title line and size."""
    rows = []
    for path in sorted(root.rglob("MANIFEST.md")):
        title = next((line.lstrip("# ").strip() for line in path.read_text(encoding="utf-8").splitlines()
                      if line.startswith("#")), "")
        rows.append({"manifest": path.relative_to(root).as_posix(), "title": title,
                     "sha256_16": _sha256_prefix(path, 16)})
    return pd.DataFrame(rows, columns=["manifest", "title", "sha256_16"])


def shown_path(path: str | Path, settings: Settings) -> str:
    """The results folder as a reader can use it, never the build machine's absolute path: relative to the
    repository when inside it, else the variable that named it (``$MEDIBIO_RESULTS``)."""
    path = Path(path).expanduser().resolve()
    try:
        return path.relative_to(REPO_ROOT.resolve()).as_posix() + "/"
    except ValueError:
        pass
    if settings.results_root.expanduser().resolve() == path:
        return f"${RESULTS_ENV}"
    return f"${RESULTS_ENV} (a folder outside the repository)"


INDEX_COLUMNS = ("kind", "profile", "model", "variant", "dataset", "seed", "status", "score_test", "digest",
                 "commit", "freshness", "changed", "record")


def run_index(results_root: Path, settings: Settings) -> pd.DataFrame:
    """One row per run record under ``results_root`` of every kind (fine-tuning, frozen baselines, SciERC,
    intermediate stages, pretraining): its digest, the commit that made it and whether today's request would
    still get it (:func:`medibio.results.listing.list_records`); the record's path relative to the results
    folder."""
    frame = list_records(results_root, settings)
    root = Path(results_root)
    frame["record"] = [Path(p).relative_to(root).as_posix() if Path(p).is_relative_to(root) else Path(p).name
                       for p in frame["path"]]
    # why a record could not be checked may name the results folder: as the reader knows it
    frame["changed"] = frame["changed"].str.replace(str(root.resolve()), shown_path(root, settings).rstrip("/"),
                                                    regex=False)
    return frame[list(INDEX_COLUMNS)].reset_index(drop=True)


DRIFT_COLUMNS = ("kind", "model", "variant", "dataset", "seed", "status", "identical predictions", "recorded score",
                 "score", "difference", "recorded std", "inside seed spread", "recorded threads", "threads",
                 "same configuration")


def recorded_drift(results_root: Path, profile: str, settings: Settings,
                   recorded_root: Path = REFERENCE_ROOT) -> tuple[pd.DataFrame, str]:
    """Every recorded run of ``profile`` (``reference/``, or the recording this build renders from) beside
    this build's run of the same identity (:func:`medibio.results.drift.drift`): identical test predictions,
    else the score difference and whether it lies inside the recorded seed spread; and a caption saying what
    the table means for this build. Runs of this build that were never recorded are not rows (they have no
    counterpart); recorded runs this build did not make are (``only recorded``)."""
    root = settings.recorded or recorded_root
    names = {profiles.filed_under(profile, kind) for kind in KINDS}
    frame = drift.drift(results_root, root)
    frame = frame[frame["profile"].isin(names) & (frame["status"] != "only here")].copy()
    frame["same configuration"] = (frame["digest"] == frame["recorded digest"]).where(frame["status"] == "both")
    shown = frame[list(DRIFT_COLUMNS)].reset_index(drop=True)
    where = shown_path(root, settings)
    if frame.empty:
        return shown, f"{where} holds no recorded runs of profile {profile!r}: nothing to compare"
    if settings.recorded is not None:
        return shown, (f"Every recorded run ({len(frame)}, {where}): this build was rendered from them, so each "
                       "row is the recorded run itself and identical by construction")
    return shown, f"This build's runs against the {len(frame)} recorded in {where}: {drift.summary(frame)}"


# --------------------------------------------------------------------------- as the page shows them

SHA_HEADER = "SHA-256 (first 16 hex digits)"  # what the page calls a CHECKSUMS.tsv's sha256_16
SCORE_COLUMN = "score_test"  # a run's score: on its run page and in the chapters, not in the provenance table


def manifests_for_page(frame: pd.DataFrame) -> pd.DataFrame:
    """:func:`manifests` by file, under readable headers."""
    return frame.set_index("manifest").rename(columns={"sha256_16": SHA_HEADER})


def checksums_for_page(frame: pd.DataFrame) -> pd.DataFrame:
    """:func:`verify_checksums` by file path under the data root (one row label, so the header is one row, not
    a row of index names under the column names), under readable headers."""
    out = frame.drop(columns=["folder", "file"]).rename(columns={"sha256_16": SHA_HEADER})
    out.index = pd.Index([f"{folder}/{file}" for folder, file in zip(frame["folder"], frame["file"], strict=True)],
                         name="file")
    return out


def records_for_page(frame: pd.DataFrame) -> pd.DataFrame:
    """:func:`run_index` as Appendix B shows it: a provenance table (which request made each record, with which
    configuration digest and commit, and whether it is still current) by record path, without the test score:
    scores sit on the run pages and in the chapters, never beside digests and commits."""
    return frame.drop(columns=[SCORE_COLUMN]).set_index("record")


def freshness_reading(frame: pd.DataFrame) -> str:
    """One sentence on the stale records of :func:`run_index`: how many, of which kind and profile, and what
    changed (the fields, not their values), so a reader knows what "stale" says about the numbers: that the
    same request made here today would plan another configuration, not that the record is wrong."""
    stale = frame[frame["freshness"] == "stale"]
    if stale.empty:
        return f"All {len(frame):,} records are current: each request would still get its record today."
    groups, fields = [], set()
    for (kind, profile), rows in stale.groupby(["kind", "profile"], sort=True):
        named = sorted({part.split(":")[0].split(".")[0].strip() for changed in rows["changed"].dropna()
                        for part in str(changed).split(";") if part.strip()})
        fields.update(named)
        groups.append(f"{len(rows):,} {kind} records of profile {profile} ({', '.join(named) or 'unnamed'} "
                      "changed)")
    why = [text for field, text in _STALE_BECAUSE.items() if field in fields] or ["what the table names"]
    return (f"{len(stale):,} of {len(frame):,} records are stale here: {'; '.join(groups)}. A stale record keeps "
            "the numbers its run made; the same request planned on this machine today would get another "
            f"configuration ({', '.join(why)}), so it would be run again rather than reused.")


# what a changed field of a stale record's configuration says about the machine that plans it again
_STALE_BECAUSE = {"precision": "the precision this machine computes in",
                  "vocabulary": "vocabulary files this machine does not hold"}


@dataclass(frozen=True)
class Reproducibility:
    """What Appendix B checked this build against, counted once for its first table and its first sentence."""

    records: int  # run records this build read
    compared: int  # recorded runs whose test predictions reference/ also holds
    identical: int  # of those, byte-identical to this build's
    claims: int
    changed: int  # claims whose verdict differs from reference/'s
    checksums: tuple[int, int] | None  # (data files listed, files that differ); None without a data root

    @classmethod
    def of(cls, runs: pd.DataFrame, drift_frame: pd.DataFrame, beside: pd.DataFrame,
           checksums: pd.DataFrame | None) -> Reproducibility:
        """Counted from the page's own tables: :func:`run_index`, :func:`recorded_drift`,
        :func:`medibio.book.verdicts.beside_recorded` and :func:`verify_checksums`."""
        identical = drift_frame["identical predictions"]
        files = None if checksums is None else (len(checksums), int((checksums["status"] != "ok").sum()))
        return cls(len(runs), int(identical.notna().sum()), int(identical.eq(True).sum()), len(beside),
                   int((~beside["same verdict"].astype(bool)).sum()), files)

    def table(self) -> pd.DataFrame:
        """One row per check, the count and what it is out of as integers, and the section that has the
        details."""
        rows = [("run records this build read", self.records, None, "Run records"),
                ("recorded runs whose test predictions are byte-identical", self.identical, self.compared,
                 "Drift against the recorded results"),
                ("claims whose verdict differs from reference/'s", self.changed, self.claims,
                 "Verdicts against the recorded results")]
        if self.checksums is not None:
            rows.append(("data files that differ from their checksums", self.checksums[1], self.checksums[0],
                         "Data manifest"))
        frame = pd.DataFrame([r[1:] for r in rows], columns=["count", "out of", "section"],
                             index=pd.Index([r[0] for r in rows], name="checked"))
        return frame.astype({"count": "Int64", "out of": "Int64"})
