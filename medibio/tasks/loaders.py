"""Load the 13 BLURB datasets from a data root into ``datasets.DatasetDict`` objects.

The data root holds BLURB's data-generation output under ``<root>/blurb/<folder>/{train,dev,test}.tsv``
(PubMedQA: ``ori_pqal.json`` plus split id lists). Columns follow ``spec.problem`` (see the shared
contract in the module functions below); ids are stable strings, the same ids prediction files use.
Nothing is cached: parsing all 13 datasets takes seconds, and a cache would be one more thing to go stale.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import TYPE_CHECKING

from medibio.core import paths
from medibio.core.errors import DataMissingError, InputFormatError, UnknownNameError
from medibio.core.text import present, require_file
from medibio.tasks import blurb, formats, ift, registry
from medibio.tasks.overlap import ALLOW_HINT, ContentOverlap, content_overlaps
from medibio.tasks.spec import Problem, TaskSpec

if TYPE_CHECKING:
    import datasets

SPLITS: tuple[str, ...] = ("train", "dev", "test")

# Splits a data root may legitimately lack (no public copy): loading them on request explains where to get
# them; loading "all splits" leaves them out instead of failing.
OPTIONAL_SPLITS: dict[tuple[str, str], str] = {
    ("EBM-PICO", "train"): (
        "the EBM PICO train split is not part of this data root (no public copy of BLURB's processed train "
        "file was reachable). Get the EBM-NLP corpus from https://github.com/bepnye/EBM-NLP "
        "(ebm_nlp_2_00.tar.gz), run BLURB's data generation on it (https://microsoft.github.io/BLURB/) and "
        "place the result at blurb/ebmnlp/train.tsv"
    ),
}


# Units that a data root is known to share between two splits, kept on purpose: (dataset, split, split) ->
# (the shared units, why). Any other shared unit is an error (see validate_splits).
KNOWN_SPLIT_OVERLAPS: dict[tuple[str, str, str], tuple[frozenset[str], str]] = {
    ("JNLPBA", "train", "test"): (
        frozenset({"98230439", "98282480", "98295832", "98305722", "98322350", "98325368", "98339383",
                   "98349401", "98362153", "98374270"}),
        "10 MEDLINE abstracts are in both JNLPBA's training data (GENIA) and its 2004 test set as BLURB "
        "distributes them (1 identical, 3 with the same tokens tagged differently, 6 tokenized and tagged "
        "differently); kept so that test scores stay comparable with published JNLPBA results",
    ),
}


@dataclass(frozen=True)
class InputFormat:
    """How one ``spec.reader`` is stored and read.

    ``files`` gives the files of a split (the last one is the file whose line numbers rows carry);
    ``read`` parses them into rows (``how`` says where to get a missing file).
    """

    files: Callable[[Path, str], list[Path]]
    read: Callable[[TaskSpec, list[Path], str], list[dict]]


def _tsv(folder: Path, split: str) -> list[Path]:
    return [folder / f"{split}.tsv"]


def _pubmedqa_files(folder: Path, split: str) -> list[Path]:
    return [folder / "ori_pqal.json", folder / "indexing" / f"{split}_pmid.tsv"]


INPUT_FORMATS: dict[str, InputFormat] = {
    "conll": InputFormat(_tsv, lambda spec, files, how: formats.read_conll(
        files[0], spec.labels, bio=spec.labels == blurb.BIO_TAGS, how_to_get=how)),
    "re_tsv": InputFormat(_tsv, lambda spec, files, how: formats.read_re_tsv(files[0], spec.labels, how_to_get=how)),
    "gad_tsv": InputFormat(_tsv, lambda spec, files, how: formats.read_re_tsv(
        files[0], spec.labels, header=("index", "sentence", "label"), how_to_get=how)),
    "biosses_tsv": InputFormat(_tsv, lambda spec, files, how: formats.read_biosses_tsv(
        files[0], spec.value_range, how_to_get=how)),
    "hoc_tsv": InputFormat(_tsv, lambda spec, files, how: formats.read_hoc_tsv(files[0], spec.labels, how_to_get=how)),
    "bioasq_tsv": InputFormat(_tsv, lambda spec, files, how: formats.read_bioasq_tsv(
        files[0], spec.labels, how_to_get=how)),
    "pubmedqa_json": InputFormat(_pubmedqa_files, lambda spec, files, how: formats.read_pubmedqa(
        files[0], files[1], spec.labels, how_to_get=how)),
}


def blurb_root(data_root: str | Path | None = None) -> Path:
    """The ``blurb/`` folder of the data root (``$MEDIBIO_DATA`` or ``../shared/data`` by default)."""
    return paths.data_root(data_root) / "blurb"


def split_files(name: str, split: str, data_root: str | Path | None = None) -> list[Path]:
    """The files one split is read from (several for PubMedQA: the items and the split's id list)."""
    spec = registry.get(name, "blurb")
    _check_split(split)
    return INPUT_FORMATS[spec.reader].files(blurb_root(data_root) / spec.folder, split)


def available_splits(name: str, data_root: str | Path | None = None) -> list[str]:
    """The splits whose files are all present, in train/dev/test order (EBM-PICO: dev, test). A directory or
    a broken link in a file's place counts as present, so that reading it says what it is (the known-absent
    EBM-PICO train split never hides a broken link)."""
    return [s for s in SPLITS if all(present(p) for p in split_files(name, s, data_root))]


def load_split(name: str, split: str, data_root: str | Path | None = None) -> datasets.Dataset:
    """Parse one split into a ``datasets.Dataset`` with the contract's columns and explicit features."""
    spec = registry.get(name, "blurb")
    return _dataset(spec, split, read_rows(spec, split, data_root))


def _dataset(spec: TaskSpec, split: str, rows: list[dict]) -> datasets.Dataset:
    import datasets

    columns = {key: [row[key] for row in rows] for key in features_for(spec)}
    return datasets.Dataset.from_dict(columns, features=features_for(spec), split=split)


def required_splits(name: str, data_root: str | Path | None = None) -> list[str]:
    """The splits a dataset must have in the data root: all three, less a documented absence
    (:data:`OPTIONAL_SPLITS`, EBM-PICO train) that this data root indeed lacks."""
    spec = registry.get(name, "blurb")
    present = set(available_splits(spec.name, data_root))
    return [s for s in SPLITS if s in present or (spec.name, s) not in OPTIONAL_SPLITS]


def load_blurb(name: str, data_root: str | Path | None = None,
               splits: list[str] | tuple[str, ...] | str | None = None,
               allow_overlap: bool = False) -> datasets.DatasetDict:
    """Load a BLURB dataset; ``splits=None`` loads the dataset's :func:`required_splits`.

    A split missing from the data root raises :class:`DataMissingError` naming the expected file and its
    source, except the known-absent EBM-PICO train split, which ``splits=None`` leaves out. The loaded splits
    must not share examples (see :func:`validate_splits`): a model is never trained on overlapping splits
    unless ``allow_overlap`` (then :func:`load_blurb_checked` says which).
    """
    return load_blurb_checked(name, data_root, splits, allow_overlap)[0]


def load_blurb_checked(name: str, data_root: str | Path | None = None,
                       splits: list[str] | tuple[str, ...] | str | None = None, allow_overlap: bool = False
                       ) -> tuple[datasets.DatasetDict, list[SplitOverlap | ContentOverlap]]:
    """:func:`load_blurb`, and the overlaps between the loaded splits (documented ones, and with
    ``allow_overlap`` the others) for the run record."""
    import datasets

    spec = registry.get(name, "blurb")
    wanted = required_splits(spec.name, data_root) if splits is None else (
        [splits] if isinstance(splits, str) else list(splits))
    for split in wanted:
        _check_split(split)
    rows = {split: read_rows(spec, split, data_root) for split in wanted}
    overlaps = _overlaps(spec, rows, data_root, allow_overlap)
    return datasets.DatasetDict({split: _dataset(spec, split, rows[split]) for split in wanted}), overlaps


def validate_dataset(name: str, data_root: str | Path | None = None, allow_overlap: bool = False) -> list[str]:
    """Parse every required split of a dataset and check them against each other, as :func:`load_blurb`
    does, without building datasets; return the splits checked. Training code calls it for every dataset
    of a request before the first run starts, so a bad file never surfaces after hours of other runs."""
    wanted = required_splits(name, data_root)
    validate_splits(name, data_root, wanted, allow_overlap)
    return wanted


def features_for(spec: TaskSpec) -> datasets.Features:
    """The column types of a dataset: they depend only on how it is modelled (``spec.problem``)."""
    from datasets import Features, List, Value

    text = {"id": Value("string"), "text": Value("string"), "text_pair": Value("string")}
    if spec.problem is Problem.TOKEN:
        return Features({"id": Value("string"), "tokens": List(Value("string")), "tags": List(Value("string"))})
    if spec.problem is Problem.MULTILABEL:
        return Features({**text, "label": List(Value("string"))})
    if spec.problem is Problem.REGRESSION:
        return Features({**text, "label": Value("float64")})
    return Features({**text, "label": Value("string")})


def read_rows(spec: TaskSpec, split: str, data_root: str | Path | None = None) -> list[dict]:
    """Parse one split into plain rows (the loaders' and the count check's common ground).

    Rows have the contract's columns plus ``line``, where the example starts in the split's last file.
    """
    files = split_files(spec.name, split, data_root)
    how = OPTIONAL_SPLITS.get((spec.name, split), spec.source)
    for path in files:
        require_file(path, how)
    return INPUT_FORMATS[spec.reader].read(spec, files, how)


@dataclass(frozen=True)
class SplitOverlap:
    """Units (documents, PMIDs, question ids) found in two splits of one dataset."""

    dataset: str
    unit: str
    splits: tuple[str, str]
    files: tuple[Path, Path]
    shared: dict[str, tuple[int, int]]  # unit -> (line in the first split's file, line in the second's)
    known: str = ""  # why, when this overlap is documented in KNOWN_SPLIT_OVERLAPS

    def describe(self) -> str:
        """One line: how many units, which, and where (the first few)."""
        shown = ", ".join(f"{k!r} ({self.files[0].name}:{a}, {self.files[1].name}:{b})"
                          for k, (a, b) in list(self.shared.items())[:3])
        more = f" and {len(self.shared) - 3} more" if len(self.shared) > 3 else ""
        return (f"{len(self.shared)} {self.unit}(s) in both {self.splits[0]} and {self.splits[1]}: "
                f"{shown}{more}")

    def error(self) -> InputFormatError:
        """The error naming the first shared unit with its line in both files."""
        key, (a, b) = next(iter(self.shared.items()))
        more = f" ({self.describe()})" if len(self.shared) > 1 else ""
        return InputFormatError(self.files[1], b, f"no {self.unit} of the {self.splits[0]} split; {key!r} is "
                                f"also at {self.files[0]}:{a}{more}; {ALLOW_HINT}", key)


def split_overlaps(spec: TaskSpec, rows: Mapping[str, Sequence[dict]],
                   data_root: str | Path | None = None) -> list[SplitOverlap]:
    """Every pair of the given splits that shares a unit of ``spec.split_unit``.

    ``rows`` are :func:`read_rows` results (they carry ``line``). A pair's units documented in
    :data:`KNOWN_SPLIT_OVERLAPS` form one overlap with ``known`` set, the others a separate one without.
    Datasets whose ids are positions (``split_unit`` None) have nothing to compare.
    """
    unit = spec.split_unit
    if unit is None:
        return []
    keyed: dict[str, dict[str, int]] = {}
    for split in (s for s in SPLITS if s in rows):
        keys: dict[str, int] = {}
        for row in rows[split]:
            key = unit.key(row["id"])
            if key is not None:
                keys.setdefault(key, row["line"])
        keyed[split] = keys
    out: list[SplitOverlap] = []
    for first, second in combinations(keyed, 2):
        shared = {k: (keyed[first][k], line) for k, line in keyed[second].items() if k in keyed[first]}
        if not shared:
            continue
        files = (split_files(spec.name, first, data_root)[-1], split_files(spec.name, second, data_root)[-1])
        allowed, why = KNOWN_SPLIT_OVERLAPS.get((spec.name, first, second), (frozenset(), ""))
        documented = {k: v for k, v in shared.items() if k in allowed}
        undocumented = {k: v for k, v in shared.items() if k not in allowed}
        if documented:
            out.append(SplitOverlap(spec.name, unit.what, (first, second), files, documented, why))
        if undocumented:
            out.append(SplitOverlap(spec.name, unit.what, (first, second), files, undocumented))
    return out


def validate_splits(name: str, data_root: str | Path | None = None, splits: Sequence[str] | None = None,
                    allow_overlap: bool = False) -> list[SplitOverlap | ContentOverlap]:
    """Parse the splits (default: all present) and refuse undocumented overlaps between them.

    Two checks: a unit (document, PMID, question id) in two splits, and an example whose normalised content
    is in two splits (:mod:`medibio.tasks.overlap`). Raises the :class:`InputFormatError` of the first overlap
    that :data:`KNOWN_SPLIT_OVERLAPS` or :data:`~medibio.tasks.overlap.KNOWN_CONTENT_OVERLAPS` does not
    document (file, line, and the line in the other file) unless ``allow_overlap``; returns the overlaps
    found. ``load_blurb`` runs the same check on the splits it loads, so training code gets it without a call.
    """
    spec = registry.get(name, "blurb")
    wanted = list(splits) if splits is not None else available_splits(spec.name, data_root)
    return _overlaps(spec, {s: read_rows(spec, s, data_root) for s in wanted}, data_root, allow_overlap)


def _overlaps(spec: TaskSpec, rows: Mapping[str, Sequence[dict]], data_root: str | Path | None,
              allow_overlap: bool) -> list[SplitOverlap | ContentOverlap]:
    found: list[SplitOverlap | ContentOverlap] = [*split_overlaps(spec, rows, data_root)]
    found += content_overlaps(spec.name, rows, lambda split: split_files(spec.name, split, data_root)[-1])
    if not allow_overlap:
        _raise_unknown(found)
    return found


def _raise_unknown(overlaps: Sequence[SplitOverlap | ContentOverlap]) -> None:
    for overlap in overlaps:
        if not overlap.known:
            raise overlap.error()


def _check_split(split: str) -> None:
    if split not in SPLITS:
        raise UnknownNameError("split", split, SPLITS)


def task_files(name: str, data_root: str | Path | None = None) -> list[Path]:
    """The files a BLURB dataset or an intermediate task is read from: what a run's configuration digest
    fingerprints (every split's files; an intermediate task's folder whole)."""
    spec = registry.get(name)
    if spec.is_blurb:
        return [p for split in SPLITS for p in split_files(spec.name, split, data_root)]
    if spec.family == "ift":
        return ift.files(spec, data_root)
    raise UnknownNameError("BLURB dataset or intermediate task", name, [*registry.names(), *registry.names("ift")])


def validate_task(name: str, data_root: str | Path | None = None) -> None:
    """Parse every split a BLURB dataset (:func:`validate_dataset`) or an intermediate task needs."""
    spec = registry.get(name)
    if spec.is_blurb:
        validate_dataset(spec.name, data_root)
    else:
        ift.read_rows(spec, data_root)


def load_task(name: str, data_root: str | Path | None = None,
              splits: list[str] | tuple[str, ...] | None = None) -> datasets.DatasetDict:
    """A BLURB dataset (:func:`load_blurb`) or an intermediate task as a ``DatasetDict`` of the loaders'
    schema (id, text, text_pair, label for sentence tasks); ``splits=None`` loads what the task has."""
    import datasets

    spec = registry.get(name)
    if spec.is_blurb:
        return load_blurb(spec.name, data_root, splits=list(splits) if splits is not None else None)
    if spec.family != "ift":
        raise UnknownNameError("BLURB dataset or intermediate task", name,
                               [*registry.names(), *registry.names("ift")])
    rows = ift.read_rows(spec, data_root)
    wanted = list(splits) if splits is not None else [s for s in SPLITS if s in rows]
    missing = [s for s in wanted if s not in rows]
    if missing:
        raise DataMissingError(ift.task_dir(spec, data_root) / missing[0], spec.source)
    return datasets.DatasetDict({split: _dataset(spec, split, rows[split]) for split in wanted})
