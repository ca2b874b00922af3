"""Verify a results root as a whole (``medibio results verify``): every record parses, lies where its
fields put it and is still the record its run wrote, every file it publishes is there with the digest it
holds, its scores are those of its predictions, and no evidence file lies about without a record naming it.

What is checked, under each kind's folder (``finetune/``, ``frozen/`` ...; nothing else of the root, such as
a build's summaries): each ``seed<N>.json`` is read (:func:`medibio.runs.records.read_record`); a sealed
record's seal is checked (:func:`~medibio.runs.records.check_seal`); its predictions (plain or gzipped, or
both: each copy is checked) against their digest (:meth:`~medibio.runs.records.RunRecord.predictions_file`),
and a record without one is a problem too (it was written before digests: ``--add-digests`` seals it, and
should only be run on files known to be the run's own). Given a data root, each record's test predictions
are re-scored against its gold (:mod:`medibio.results.rescore`) and a ``score_test`` or ``test`` metric the
re-score gives otherwise is a problem: a seal shows a record is its run's, the re-score that its numbers are
its predictions' (records written before seals, such as ``reference/``'s, have only the re-score). Any other
file is an orphan, except what the run protocol keeps on purpose: run locks (``seed<N>.lock``), the work
folders of unfinished runs (``.seed<N>.work/``) and published artifact folders (``seed<N>/``, which
``reference/`` does not hold). An orphan is never simply to be deleted: it may be the evidence of a record
that is unreadable, moved or deleted, and the message says so.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from medibio.core.atomic import write_json
from medibio.core.errors import MedibioError
from medibio.core.text import GZ
from medibio.results.rescore import Rescorer, Skipped, disagreements
from medibio.runs.records import (
    KINDS,
    RunRecord,
    SealError,
    add_digests,
    check_evidence,
    check_seal,
    evidence_file,
    evidence_sha256,
    read_record,
    require_root,
    sealed,
)


@dataclass
class Verification:
    """What :func:`verify` found: the records read, the files checked, and each problem in one line."""

    root: Path
    records: int = 0
    files: int = 0
    problems: list[str] = field(default_factory=list)
    sealed: list[Path] = field(default_factory=list)  # records given their digests and a seal (--add-digests)
    with_seal: int = 0  # records carrying a seal that holds
    rescored: int = 0  # records whose scores their predictions' re-score confirmed
    not_rescored: Counter[str] = field(default_factory=Counter)  # why records with predictions were not
    data_root: Path | None = None  # the gold re-scored against (None: no re-score)

    @property
    def ok(self) -> bool:
        return not self.problems

    def describe(self) -> str:
        head = (f"{self.root}: {self.records} run records and {self.files} evidence files verified"
                if self.ok else f"{self.root}: {len(self.problems)} problem(s) among {self.records} run records")
        lines = [head, f"sealed: {self.with_seal} of {self.records} records (the others were written before seals)"]
        if self.data_root is None:
            lines.append("scores not re-scored from the predictions")
        else:
            lines.append(f"scores re-scored from the predictions against {self.data_root}: {self.rescored} "
                         "record(s) agree")
            lines += [f"  not re-scored: {n} record(s): {why}" for why, n in sorted(self.not_rescored.items())]
        if self.sealed:
            lines.append(f"added digests (and a seal) to {len(self.sealed)} record(s)")
        return "\n".join([*lines, *(f"  - {p}" for p in self.problems)])


def verify(root: str | Path, add_missing: bool = False, data_root: str | Path | None = None,
           memo: str | Path | None = None) -> Verification:
    """Check every record and evidence file under ``root`` (see the module). ``add_missing`` writes the
    digests (and a seal) into intact records that lack them (the migration of records made before
    digests); ``data_root`` re-scores the predictions against its gold, memoised in ``memo``."""
    root = require_root(root)
    result = Verification(root, data_root=Path(data_root) if data_root is not None else None)
    rescorer = Rescorer(data_root, memo) if data_root is not None else None
    folders = [root / kind for kind in KINDS if (root / kind).is_dir()]
    for base in folders:
        files = sorted(p for p in base.rglob("*") if p.is_file() or p.is_symlink())
        named: set[Path] = set()
        kept: set[Path] = set()  # folders the protocol keeps: artifacts, work folders of unfinished runs
        unreadable: set[Path] = set()  # records that did not read: their files are not orphans
        for path in files:
            if not path.exists():
                result.problems.append(f"{path}: a broken symbolic link")
                named.add(path)
            elif path.name.startswith("seed") and path.suffix == ".json" and not path.name.endswith(".test.json"):
                named.add(path)
                stem = path.stem
                kept.update({path.parent / stem, path.parent / f".{stem}.work"})
                found = _check(path, result, add_missing, rescorer)
                if found is None:
                    unreadable.add(path)
                else:
                    named.update(found)
        for path in files:
            if path in named or (path.name.startswith("seed") and path.suffix == ".lock") \
                    or any(parent in kept or _work_folder(parent) for parent in path.parents):
                continue
            result.problems.append(_orphan(path, unreadable))
    if rescorer is not None:
        rescorer.save()
    if result.records == 0 and not result.problems:
        result.problems.append(f"no run records under {root}")
    return result


def _orphan(path: Path, unreadable: set[Path]) -> str:
    """What to do about a file no record names: never simply delete it, it may be a run's evidence."""
    owner = path.with_name(path.name.split(".", 1)[0] + ".json")
    if owner in unreadable:
        return (f"{path}: the evidence of {owner.name} beside it, which does not read as a run record (above): "
                "restore or fix that record; this file is not to be deleted")
    return (f"{path}: no run record names this file. It may be the evidence of a run whose record was deleted or "
            "moved: restore that record (git, or the results root it was recorded from); delete the file only "
            "if no run of yours needs it")


def _check(path: Path, result: Verification, add_missing: bool, rescorer: Rescorer | None) -> set[Path] | None:
    """Read the record at ``path``, check its seal, the files it names and its scores; return the files it
    accounts for (None: it does not read). Problems go into ``result``."""
    try:
        record = read_record(path)
    except (MedibioError, OSError, UnicodeDecodeError) as exc:
        result.problems.append(str(exc) if str(path) in str(exc) else f"{path}: {exc}")
        return None
    result.records += 1
    before = len(result.problems)
    try:
        if check_seal(path):
            result.with_seal += 1
    except SealError as exc:
        result.problems.append(str(exc))
    names = [name for name in (record.predictions, *record.digests) if name]
    accounted = {path.parent / f"{name}{suffix}" for name in names for suffix in ("", GZ)}
    for name in dict.fromkeys(names):
        _check_copies(record, path.parent, name, result)
    intact = len(result.problems) == before
    lacks = bool(record.predictions) and record.predictions not in record.digests and not record.legacy
    if intact and rescorer is not None and record.ok and record.predictions:
        _rescore(record, path, result, rescorer)
        intact = len(result.problems) == before
    if lacks and intact and add_missing:
        add_digests(record, path.parent)
        write_json(path, sealed(record))
        result.sealed.append(path)
    elif lacks and intact:
        result.problems.append(f"{path}: names {record.predictions} without its digest (written before digests): "
                               f"check that it is the run's own file, then `medibio results verify "
                               f"{result.root} --add-digests`")
    return accounted


def _check_copies(record: RunRecord, folder: Path, name: str, result: Verification) -> None:
    """Check the file ``name`` a record names, plain or gzipped; where both copies lie there, each one, so
    that the advice keeps the copy that is the run's."""
    plain, packed = folder / name, folder / f"{name}{GZ}"
    copies = [p for p in (plain, packed) if p.is_file()] or [plain]
    failed: dict[Path, str] = {}
    for copy in copies:
        try:
            check_evidence(record, copy)
        except MedibioError as exc:
            failed[copy] = str(exc)
    good = [c for c in copies if c not in failed]
    result.files += len(good)
    if len(copies) == 2 and not failed and name not in record.digests \
            and evidence_sha256(plain) != evidence_sha256(packed):
        result.problems.append(f"{plain} and {packed} differ, and run record {record.run_id} holds no digest to "
                               f"say which is its own; readers take {plain.name}: keep the run's copy only")
    elif good and failed:
        bad = next(iter(failed))
        result.problems.append(f"{bad} is not the file run record {record.run_id} was written with (SHA-256 "
                               f"expected {record.digests[name]}, found {evidence_sha256(bad)}), but {good[0].name} "
                               f"beside it is (the same file {'gzipped' if good[0] == packed else 'uncompressed'}): "
                               f"remove {bad.name} and every reader takes {good[0].name}; keep {good[0].name}")
    else:
        result.problems += failed.values()


def _rescore(record: RunRecord, path: Path, result: Verification, rescorer: Rescorer) -> None:
    """Re-score the record's test predictions; a number of the record the re-score does not give is a problem."""
    name = str(record.predictions)
    predictions = evidence_file(path.parent, name)  # checked against its digest already
    sha256 = record.digests.get(name) or evidence_sha256(predictions)
    try:
        found = rescorer.metrics(record, predictions, sha256)
    except (MedibioError, OSError, UnicodeDecodeError) as exc:
        result.problems.append(f"{path}: its test predictions do not score against the gold of "
                               f"{rescorer.data_root}: {exc}")
        return
    if isinstance(found, Skipped):
        result.not_rescored[found.reason] += 1
        return
    wrong = disagreements(record, found)
    if wrong:
        result.problems.append(f"{path}: its scores are not those of its test predictions ({predictions.name}, "
                               f"re-scored against the gold of {rescorer.data_root}): {'; '.join(wrong)}. The "
                               "record was edited after its run: restore it (git, or the results root it was "
                               "recorded from) or delete it and run again")
    else:
        result.rescored += 1


def _work_folder(folder: Path) -> bool:
    """The work folder of a run that has not finished (``.seed<N>.work``, killed or still training): it has
    no record yet by definition, and the protocol resumes from it."""
    return folder.name.startswith(".seed") and folder.name.endswith(".work")
