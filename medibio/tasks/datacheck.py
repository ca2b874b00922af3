"""Validate every BLURB file in a data root and compare its counts with the BLURB paper's.

Counts are what the BLURB paper reports (its Table 3): entity mentions for NER (spans opened by ``B``),
PICO words for EBM PICO (words tagged other than ``O``), instances otherwise (HoC: abstracts). A few
differences are known and explained; they are reported with a note and do not count as failures. Anything
else (a malformed or unexpectedly missing file, an unexplained count, examples shared between two splits)
does. Each dataset is checked on its own: a bad file gives one failed row and the rest is still checked.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from medibio.core.errors import DataMissingError, InputFormatError
from medibio.core.text import present, read_text
from medibio.tasks import loaders, overlap, registry
from medibio.tasks.spec import Group, TaskSpec

# (dataset, split) -> (the count this data root is known to have, why it differs from the paper)
KNOWN_DEVIATIONS: dict[tuple[str, str], tuple[int, str]] = {
    ("BC5-disease", "dev"): (4246, "paper says 4244; the Crichton et al. source files also give 4246"),
    ("EBM-PICO", "dev"): (87308, "paper says 85321 PICO words; the difference is unexplained (test matches)"),
}

# Rows whose counts match but whose paper figure needs a word of explanation.
NOTES: dict[tuple[str, str], str] = {
    ("DDI", "train"): "the paper's table prints 22233; 25296 is what BLURB's data generation produces",
    ("DDI", "dev"): "the paper's table prints 5559; 2496 is what BLURB's data generation produces",
}

# Official BLURB split id lists under <root>/blurb/indexing/<folder>/: ids in the file must equal them.
ID_LISTS: dict[str, str] = {"HoC": "{split}_pmid.tsv", "EBM-PICO": "{split}_pmid.tsv", "BioASQ": "{split}_id.tsv"}


@dataclass
class CountRow:
    """One dataset split: our count next to the paper's, and whether a difference is understood."""

    dataset: str
    group: str
    split: str
    unit: str
    ours: int | None
    paper: int
    status: str  # match | mismatch | absent | error
    note: str = ""
    known: bool = False  # a documented deviation (or the known-absent EBM PICO train split)
    files: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when the row needs no action: it matches, or it deviates in a documented way."""
        return self.status == "match" or (self.status in ("mismatch", "absent") and self.known)

    def to_dict(self) -> dict:
        return {**asdict(self), "ok": self.ok}


def count(spec: TaskSpec, rows: Sequence[Mapping[str, Any]]) -> int:
    """The paper's unit: B-started spans (NER), non-O words (PICO) or examples."""
    if spec.group is Group.NER:
        return sum(tag == "B" for row in rows for tag in row["tags"])
    if spec.group is Group.PICO:
        return sum(tag != "O" for row in rows for tag in row["tags"])
    return len(rows)


def departures(spec: TaskSpec, splits: Mapping[str, Sequence[Mapping[str, Any]]]) -> list[str]:
    """The splits whose size is not that of BLURB's official split (the paper's count, or a documented
    deviation), each as "<split> split: N <unit>, the official one has M": a run on them is marked so."""
    out = []
    for split, rows in splits.items():
        ours = count(spec, rows)
        official = KNOWN_DEVIATIONS.get((spec.name, split), (spec.paper_counts[loaders.SPLITS.index(split)],))[0]
        if ours != official:
            out.append(f"{split} split: {ours} {spec.count_unit}, the official one has {official}")
    return out


def check_split(spec: TaskSpec, split: str, data_root: str | Path | None = None) -> CountRow:
    """Parse one split fully (every line validated) and compare its count with the paper's."""
    return _check_split(spec, split, data_root)[0]


def _check_split(spec: TaskSpec, split: str, data_root: str | Path | None) -> tuple[CountRow, list[dict] | None]:
    paper = spec.paper_counts[loaders.SPLITS.index(split)]
    files = loaders.split_files(spec.name, split, data_root)
    row = CountRow(spec.name, spec.group.value, split, spec.count_unit, None, paper, "error",
                   files=[str(p) for p in files])
    try:
        rows = loaders.read_rows(spec, split, data_root)
        problems = _id_problems(spec, split, rows, data_root)
    except DataMissingError as exc:
        row.status = "absent"
        optional = (spec.name, split) in loaders.OPTIONAL_SPLITS
        row.known = optional
        row.note = ("known absent: no public copy; EBM-NLP is at https://github.com/bepnye/EBM-NLP" if optional
                    else str(exc))
        return row, None
    except InputFormatError as exc:
        row.note = str(exc)
        return row, None
    except OSError as exc:  # unreadable (permissions, an I/O error): what and where, as the CLI would say it
        row.note = f"cannot read {exc.filename or files[-1]}: {exc.strerror or exc}"
        return row, None
    except Exception as exc:  # noqa: BLE001 - a checker reports every file; a crash would hide the others
        row.note = f"unexpected {type(exc).__name__} while reading: {exc}"
        return row, None
    row.ours = count(spec, rows)
    if problems:
        row.note = "; ".join(problems)
        return row, rows
    known = KNOWN_DEVIATIONS.get((spec.name, split))
    if row.ours == paper:
        row.status = "match"
        row.note = NOTES.get((spec.name, split), "")
    else:
        row.status = "mismatch"
        row.known = known is not None and known[0] == row.ours
        row.note = known[1] if row.known else "unexplained difference from the BLURB paper"
    return row, rows


def check_dataset(spec: TaskSpec, data_root: str | Path | None = None) -> list[CountRow]:
    """One row per split, then the splits' disjointness, by unit (documents, PMIDs, question ids) and by
    content (:mod:`medibio.tasks.overlap`): an overlap fails the later split's row, naming the examples with
    file and line in both splits.

    Overlaps documented in :data:`loaders.KNOWN_SPLIT_OVERLAPS` and
    :data:`~medibio.tasks.overlap.KNOWN_CONTENT_OVERLAPS` (BLURB's own files) only add a note with their count.
    """
    checked = {split: _check_split(spec, split, data_root) for split in loaders.SPLITS}
    parsed = {split: rows for split, (_, rows) in checked.items() if rows is not None}
    found: list[loaders.SplitOverlap | overlap.ContentOverlap] = [*loaders.split_overlaps(spec, parsed, data_root)]
    found += overlap.content_overlaps(spec.name, parsed,
                                      lambda split: loaders.split_files(spec.name, split, data_root)[-1])
    for shared in found:
        row = checked[shared.splits[1]][0]
        if shared.known:
            why = shared.known if isinstance(shared.known, str) else "BLURB's own files (documented)"
            row.note = "; ".join(filter(None, [row.note, f"known: {shared.describe()}; {why}"]))
        else:
            row.status = "error"
            row.known = False
            row.note = "; ".join(filter(None, [str(shared.error()), row.note]))
    return [row for row, _ in checked.values()]


def check_all(data_root: str | Path | None = None, names: list[str] | None = None) -> list[CountRow]:
    """Check every split of every dataset (or of ``names``); one row per split, errors included as rows."""
    specs = [registry.get(n, "blurb") for n in names] if names else list(registry.DATASETS)
    return [row for spec in specs for row in check_dataset(spec, data_root)]


def _id_problems(spec: TaskSpec, split: str, rows: list[dict], data_root: str | Path | None) -> list[str]:
    """Ids that differ from BLURB's official split id list where one exists (duplicates fail in the reader)."""
    problems: list[str] = []
    ids = [row["id"] for row in rows]
    pattern = ID_LISTS.get(spec.name)
    if pattern is None:
        return problems
    id_file = loaders.blurb_root(data_root) / "indexing" / spec.folder / pattern.format(split=split)
    if not present(id_file):  # no official id list: nothing to compare (a directory there is an error)
        return problems
    official = {i.strip().removesuffix(".txt") for i in read_text(id_file).replace(
        "\n", ",").split(",") if i.strip()}
    ours = {i.rsplit("-", 1)[0] for i in ids} if spec.is_token_task else set(ids)
    if ours != official:
        problems.append(f"ids differ from {id_file}: {_named(official - ours, 'missing')}, "
                        f"{_named(ours - official, 'extra')}")
    return problems


def _named(ids: set[str], what: str, shown: int = 10) -> str:
    """``2 missing ('11', '22')``: how many, and which (the first ``shown`` in order)."""
    if not ids:
        return f"0 {what}"
    names = ", ".join(repr(i) for i in sorted(ids)[:shown])
    more = f" and {len(ids) - shown} more" if len(ids) > shown else ""
    return f"{len(ids)} {what} ({names}{more})"
