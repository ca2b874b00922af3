"""Verify a results root as a whole (``medibio results verify``): every record parses and lies where its
fields put it, every file it publishes is there with the digest it holds, and no evidence file lies about
without a record naming it.

What is checked, under each kind's folder (``finetune/``, ``frozen/`` ...; nothing else of the root, such as
a build's summaries): each ``seed<N>.json`` is read (:func:`medibio.runs.records.read_record`), its
predictions (plain or gzipped) are checked against their digest
(:meth:`~medibio.runs.records.RunRecord.predictions_file`), and a record without one is a problem too (it was written before digests: ``--add-digests`` seals it, and
should only be run on files known to be the run's own). Any other file is an orphan, except what the run
protocol keeps on purpose: run locks (``seed<N>.lock``), the work folders of unfinished runs
(``.seed<N>.work/``) and published artifact folders (``seed<N>/``, which ``reference/`` does not hold).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from medibio.core.atomic import write_json
from medibio.core.errors import MedibioError
from medibio.core.text import GZ
from medibio.runs.records import KINDS, add_digests, check_evidence, evidence_file, read_record, require_root


@dataclass
class Verification:
    """What :func:`verify` found: the records read, the files checked, and each problem in one line."""

    root: Path
    records: int = 0
    files: int = 0
    problems: list[str] = field(default_factory=list)
    sealed: list[Path] = field(default_factory=list)  # records given their digests (--add-digests)

    @property
    def ok(self) -> bool:
        return not self.problems

    def describe(self) -> str:
        head = (f"{self.root}: {self.records} run records and {self.files} evidence files verified"
                if self.ok else f"{self.root}: {len(self.problems)} problem(s) among {self.records} run records")
        sealed = [f"added digests to {len(self.sealed)} record(s)"] if self.sealed else []
        return "\n".join([head, *sealed, *(f"  - {p}" for p in self.problems)])


def verify(root: str | Path, add_missing: bool = False) -> Verification:
    """Check every record and evidence file under ``root`` (see the module); ``add_missing`` first writes the
    digests of records that lack them (the migration of records made before digests)."""
    root = require_root(root)
    result = Verification(root)
    folders = [root / kind for kind in KINDS if (root / kind).is_dir()]
    for base in folders:
        files = sorted(p for p in base.rglob("*") if p.is_file() or p.is_symlink())
        named: set[Path] = set()
        kept: set[Path] = set()  # folders the protocol keeps: artifacts, work folders of unfinished runs
        for path in files:
            if not path.exists():
                result.problems.append(f"{path}: a broken symbolic link")
                named.add(path)
            elif path.name.startswith("seed") and path.suffix == ".json" and not path.name.endswith(".test.json"):
                named.add(path)
                stem = path.stem
                kept.update({path.parent / stem, path.parent / f".{stem}.work"})
                named.update(_check(path, result, add_missing))
        for path in files:
            if path in named or (path.name.startswith("seed") and path.suffix == ".lock") \
                    or any(parent in kept or _work_folder(parent) for parent in path.parents):
                continue
            result.problems.append(f"{path}: no run record names this file (an orphan: delete it, or restore the "
                                   "record it belongs to)")
    if result.records == 0 and not result.problems:
        result.problems.append(f"no run records under {root}")
    return result


def _check(path: Path, result: Verification, add_missing: bool) -> set[Path]:
    """Read the record at ``path`` and check the files it names; return them. Problems go into ``result``."""
    try:
        record = read_record(path)
    except (MedibioError, OSError, UnicodeDecodeError) as exc:
        result.problems.append(str(exc) if str(path) in str(exc) else f"{path}: {exc}")
        return set()
    result.records += 1
    try:
        if add_missing and not record.legacy and add_digests(record, path.parent):
            write_json(path, record.to_dict())
            result.sealed.append(path)
    except MedibioError as exc:  # e.g. its predictions are gone: one problem among the others, not the end
        result.problems.append(str(exc))
        return set()
    named = {evidence_file(path.parent, name) for name in (record.predictions, *record.digests) if name}
    for file in sorted(named):
        try:
            check_evidence(record, file)
        except MedibioError as exc:
            result.problems.append(str(exc))
            continue
        result.files += 1
        if file.name.removesuffix(GZ) not in record.digests and not record.legacy:
            result.problems.append(f"{path}: names {file.name} without its digest (written before digests): "
                                   f"check that it is the run's own file, then `medibio results verify "
                                   f"{result.root} --add-digests`")
    return named


def _work_folder(folder: Path) -> bool:
    """The work folder of a run that has not finished (``.seed<N>.work``, killed or still training): it has
    no record yet by definition, and the protocol resumes from it."""
    return folder.name.startswith(".seed") and folder.name.endswith(".work")
