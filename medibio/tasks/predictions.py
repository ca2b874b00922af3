"""Prediction files: read and validate ``PRED_DIR/<dataset>.jsonl``, pair them with the gold, score them.

One file per dataset, one JSON object per line: ``{"id": ..., "prediction": ...}`` where ``id`` is the
loader's example id (a string) and ``prediction`` has the type of the dataset's gold column (a list of
word tags for NER/PICO, a label string for RE/QA, a list of hallmark names for HoC, a number for BIOSSES).
Extra keys (scores, probabilities) are allowed and ignored. The file must cover exactly the ids of the
gold split: a missing or extra id is an error that names them, because a score over a different set of
examples is not comparable with anyone else's.

:func:`score_directory` scores every dataset that has a file and aggregates with
:mod:`medibio.tasks.scoring`; datasets without a file are listed as missing, not treated as errors (but a
folder with no file for any dataset is an error). Files follow the text policy of
:mod:`medibio.core.text`: UTF-8, a leading byte-order mark dropped, blank lines only at the end.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import math
import operator
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from medibio.core.atomic import write_jsonl
from medibio.core.errors import DataMissingError, InputFormatError
from medibio.core.text import line_list, require_file, strict_json
from medibio.tasks import loaders, metrics, registry, scoring
from medibio.tasks.spec import Problem, TaskSpec

SUFFIX = ".jsonl"
SHOWN_IDS = 5  # how many missing/extra ids an error message lists before "... and N more"


@dataclass(frozen=True)
class Gold:
    """The gold side of one dataset split, in loader order."""

    dataset: str
    split: str
    ids: list[str]
    references: list[Any]


class Prediction(NamedTuple):
    """One validated line of a prediction file (a named tuple: a file makes one per line, and a frozen
    dataclass took a sixth of the reading)."""

    line: int
    value: Any


# --------------------------------------------------------------------------- gold


def load_gold(name: str, split: str = "test", data_root: str | Path | None = None) -> Gold:
    """Ids and references (``tags`` or ``label`` column) of one split, from the rows
    :mod:`medibio.tasks.loaders` reads: no ``datasets.Dataset`` is built for two columns (building one took
    longer than reading the file)."""
    spec = registry.get(name, "blurb")
    rows = loaders.read_rows(spec, split, data_root)
    return gold_from_columns(name, split, {key: [row[key] for row in rows] for key in ("id", _reference(spec))})


def _reference(spec: TaskSpec) -> str:
    return "tags" if spec.is_token_task else "label"


def gold_from_columns(name: str, split: str, columns: Mapping[str, list[Any]]) -> Gold:
    """The gold of a split already read into whole columns (``Dataset.to_dict()``)."""
    spec = registry.get(name, "blurb")
    return Gold(spec.name, split, [str(i) for i in columns["id"]], list(columns[_reference(spec)]))


def write_gold(
    out_dir: str | Path,
    split: str = "test",
    data_root: str | Path | None = None,
    datasets: str | list[str] | None = "all",
) -> tuple[list[Path], list[str]]:
    """Write the gold labels in the prediction format (one file per dataset); return (written, skipped).

    Datasets that lack ``split`` in the data root (EBM-PICO has no train) are skipped and named.
    """
    out = Path(out_dir)
    written: list[Path] = []
    skipped: list[str] = []
    for spec in registry.resolve(datasets):
        if split not in loaders.available_splits(spec.name, data_root):
            skipped.append(spec.name)
            continue
        gold = load_gold(spec.name, split, data_root)
        rows = ({"id": i, "prediction": ref} for i, ref in zip(gold.ids, gold.references, strict=True))
        written.append(write_jsonl(out / f"{spec.name}{SUFFIX}", rows))
    return written, skipped


# --------------------------------------------------------------------------- reading prediction files


def expected_type(spec: TaskSpec) -> str:
    """What one ``prediction`` value must look like for ``spec`` (used in error messages)."""
    labels = ", ".join(spec.labels)
    if spec.problem is Problem.TOKEN:
        return f"a list of tags (one per word) from {{{labels}}}"
    if spec.problem is Problem.CLASSIFY:
        return f"a label string from {{{labels}}}"
    if spec.problem is Problem.MULTILABEL:
        return f"a list of distinct labels from {{{labels}}} (may be empty)"
    return "a finite number"


def _json_kind(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return "boolean" if value is not None else "null"
    if isinstance(value, (int, float)):
        return "number"
    return {str: "string", list: "list", dict: "object"}.get(type(value), type(value).__name__)


# A line holding the end of one object and the start of the next: a file with one is read line by line
_TWO_ON_A_LINE = re.compile(r"\}[ \t\r]*,[ \t\r]*\{")
_KEYS = ("id", "prediction")
_ID, _PREDICTION = map(operator.itemgetter, _KEYS)
_VALUE = operator.itemgetter(1)  # a Prediction's value


def _all_valid(values: list[Any], problem: Problem, labels: frozenset[str]) -> bool:
    """Whether every value is a prediction of its kind (:func:`expected_type`), checked a file at a time: three
    times as fast as a call per value, and the one statement of the rules (:func:`_valid` asks it of one)."""
    try:
        if problem is Problem.REGRESSION:  # bool is no number; a number no float holds raises OverflowError
            return all(type(v) in (int, float) and math.isfinite(v) for v in values)
        if problem is Problem.CLASSIFY:
            return all(type(v) is str for v in values) and labels.issuperset(values)
        if not all(type(v) is list for v in values) or not labels.issuperset(itertools.chain.from_iterable(values)):
            return False  # an item no set can hold (a list, an object) raised TypeError: no label
    except (TypeError, OverflowError):
        return False
    return problem is Problem.TOKEN or all(len(set(v)) == len(v) for v in values)


def _valid(value: Any, problem: Problem, labels: frozenset[str]) -> bool:
    return _all_valid([value], problem, labels)


def _read_at_once(lines: list[str], problem: Problem, labels: frozenset[str]) -> dict[str, Prediction] | None:
    """The predictions of a file that is plainly valid, from one decode and a check of all its values at once
    (five times as fast as judging it line by line); None for any other file, which the line-by-line reader
    then judges and names.

    Plainly valid: one object a line (a blank line leaves an empty element in the joined text, which does
    not decode; with no line that may hold two, as many objects as lines are one a line), each with exactly
    the keys ``id`` and ``prediction``, distinct non-empty string ids, valid predictions. :func:`strict_json`'s
    refusals hold without its per-object hook: a file with a backslash goes line by line, so every key is
    spelled as it reads, and as many ``"id"`` and ``"prediction"`` in the text as lines means that no object
    gives a key twice; a number can only be a prediction, which is checked finite."""
    joined = "\n".join(lines)
    if (not lines or "\\" in joined or _TWO_ON_A_LINE.search(joined)
            or any(joined.count(f'"{key}"') != len(lines) for key in _KEYS)):
        return None
    try:
        objects = json.loads("[" + ",".join(lines) + "]")
    except json.JSONDecodeError:
        return None
    if len(objects) != len(lines) or set(map(type, objects)) != {dict} or set(map(len, objects)) != {2}:
        return None
    try:
        ids, values = list(map(_ID, objects)), list(map(_PREDICTION, objects))
    except KeyError:
        return None
    distinct = set(ids)
    if (set(map(type, ids)) != {str} or "" in distinct or len(distinct) != len(ids)
            or not _all_valid(values, problem, labels)):
        return None
    made = map(tuple.__new__, itertools.repeat(Prediction), zip(range(1, len(values) + 1), values, strict=True))
    return dict(zip(ids, made, strict=True))  # each Prediction made by tuple.__new__ alone: a third of the time


def read_predictions(path: str | Path, dataset: str) -> dict[str, Prediction]:
    """Read and validate one prediction file; return id -> :class:`Prediction` in file order."""
    path = Path(path)
    spec = registry.get(dataset, "blurb")
    require_file(path, f"write one JSON line per example: {{\"id\": ..., \"prediction\": ...}} for {spec.name}")
    labels = frozenset(spec.labels)
    lines = line_list(path)
    at_once = _read_at_once(lines, spec.problem, labels)
    return at_once if at_once is not None else _read_line_by_line(path, lines, spec, labels)


def _read_line_by_line(path: Path, lines: list[str], spec: TaskSpec, labels: frozenset[str]) -> dict[str, Prediction]:
    """Judge a prediction file line by line: the first line at fault is named with what it should hold."""
    out: dict[str, Prediction] = {}
    last = 0
    for number, raw in enumerate(lines, start=1):
        last = number
        line = raw.strip()
        if not line:
            raise InputFormatError(path, number, 'a JSON object {"id": ..., "prediction": ...}, not a blank '
                                   "line (blank lines may only end the file)", "")
        try:
            obj = strict_json(line)
        except json.JSONDecodeError as exc:
            raise InputFormatError(path, number, 'a JSON object {"id": ..., "prediction": ...}',
                                   f"invalid JSON ({exc.msg}): {line}") from None
        if not isinstance(obj, dict) or "id" not in obj or "prediction" not in obj:
            raise InputFormatError(path, number, 'a JSON object with keys "id" and "prediction"', line)
        sid = obj["id"]
        if not isinstance(sid, str) or not sid:
            raise InputFormatError(path, number, "an id that is a non-empty string", repr(sid))
        if sid in out:
            raise InputFormatError(path, number, f"each id once; {sid!r} already on line {out[sid].line}",
                                   line)
        if not _valid(obj["prediction"], spec.problem, labels):
            value = obj["prediction"]
            raise InputFormatError(path, number, f"prediction {expected_type(spec)}",
                                   f"{json.dumps(value, ensure_ascii=False)} (JSON {_json_kind(value)})")
        out[sid] = Prediction(number, obj["prediction"])
    if not out:
        raise InputFormatError(path, last + 1, f"at least one line, one per {spec.name} example",
                               "an empty file" if path.stat().st_size == 0 else "a file of blank lines only")
    return out


def _listing(ids: Sequence[str]) -> str:
    shown = ", ".join(repr(i) for i in ids[:SHOWN_IDS])
    more = f" ... and {len(ids) - SHOWN_IDS} more" if len(ids) > SHOWN_IDS else ""
    return f"{len(ids)}: {shown}{more}"


def align(path: str | Path, predictions: dict[str, Prediction], gold: Gold) -> list[Any]:
    """Predictions in gold order; every gold id exactly once and (token tasks) one tag per gold word."""
    token_task = registry.get(gold.dataset, "blurb").is_token_task
    if len(predictions) == len(gold.ids):  # as many as the gold's: all of them, found at once, or none extra
        with contextlib.suppress(KeyError):
            values = list(map(_VALUE, map(predictions.__getitem__, gold.ids)))
            if not token_task or list(map(len, values)) == list(map(len, gold.references)):
                return values
    gold_ids = set(gold.ids)
    missing = [i for i in gold.ids if i not in predictions]
    extra = [i for i in predictions if i not in gold_ids]
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"missing ids {_listing(missing)}")
        if extra:
            parts.append(f"ids not in the gold {_listing(extra)}")
        raise InputFormatError(
            path, None,
            f"one prediction for each of the {len(gold.ids)} {gold.split} ids of {gold.dataset}; "
            + "; ".join(parts),
        )
    out = []
    for sid, ref in zip(gold.ids, gold.references, strict=True):
        pred = predictions[sid]
        if token_task and len(pred.value) != len(ref):
            raise InputFormatError(path, pred.line, f"{len(ref)} tags for example {sid!r} (one per word)",
                                   f"{len(pred.value)} tags")
        out.append(pred.value)
    return out


# --------------------------------------------------------------------------- scoring a directory


def find_files(pred_dir: str | Path) -> tuple[dict[str, Path], list[Path]]:
    """Map dataset name -> prediction file in ``pred_dir`` (names, folders, aliases); also unrecognised files."""
    pred_dir = Path(pred_dir)
    if not pred_dir.is_dir():
        raise DataMissingError(pred_dir, "a folder holding <dataset>.jsonl prediction files")
    found: dict[str, Path] = {}
    unknown: list[Path] = []
    for path in sorted(pred_dir.glob(f"*{SUFFIX}")):
        try:
            name = registry.get(path.name[: -len(SUFFIX)]).name
        except KeyError:
            unknown.append(path)
            continue
        if name in found:
            raise InputFormatError(pred_dir, None, f"one prediction file for {name}",
                                   f"{found[name].name} and {path.name}")
        found[name] = path
    return found, unknown


def score_file(
    path: str | Path, dataset: str, split: str = "test", data_root: str | Path | None = None
) -> dict[str, float]:
    """Metrics of one prediction file against the gold of ``split``."""
    gold = load_gold(dataset, split, data_root)
    preds = align(path, read_predictions(path, dataset), gold)
    return metrics.evaluate(dataset, gold.references, preds, ids=gold.ids)


@dataclass
class ScoreReport:
    """Per-dataset metrics of a prediction folder and the aggregates built from their scores."""

    pred_dir: Path
    split: str
    metrics: dict[str, dict[str, float]]  # dataset -> metrics dict (key "score" on 0-100)
    files: dict[str, Path]
    missing: list[str]  # datasets without a prediction file
    unrecognised: list[Path] = field(default_factory=list)  # *.jsonl files that name no dataset

    @property
    def scores(self) -> dict[str, float]:
        return {name: m["score"] for name, m in self.metrics.items()}

    @property
    def group_averages(self) -> dict[str, float]:
        return scoring.group_averages(self.scores)

    @property
    def partial_groups(self) -> dict[str, tuple[float, int, int]]:
        return scoring.partial_group_averages(self.scores)

    @property
    def blurb_score(self) -> scoring.Aggregate:
        return scoring.blurb_score(self.scores)

    @property
    def paper_average(self) -> scoring.Aggregate:
        return scoring.paper_average(self.scores)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready form (``--json``)."""
        def agg(a: scoring.Aggregate) -> dict[str, Any]:
            return {"value": a.value, "covered": list(a.covered), "missing": list(a.missing)}

        return {
            "pred_dir": str(self.pred_dir),
            "split": self.split,
            "datasets": {
                name: {"group": registry.get(name, "blurb").group.value, "metric": registry.get(name, "blurb").metric,
                       "file": str(self.files[name]), **m}
                for name, m in self.metrics.items()
            },
            "missing": list(self.missing),
            "unrecognised_files": [str(p) for p in self.unrecognised],
            "group_averages": self.group_averages,
            "partial_groups": {g: {"average": v, "scored": k, "of": n}
                               for g, (v, k, n) in self.partial_groups.items()},
            "blurb_score": agg(self.blurb_score),
            "paper_average": agg(self.paper_average),
        }


def score_directory(
    pred_dir: str | Path, data_root: str | Path | None = None, split: str = "test"
) -> ScoreReport:
    """Score every ``<dataset>.jsonl`` in ``pred_dir`` against the gold ``split``; aggregate the scores.

    A folder without a prediction file for any dataset is an :class:`InputFormatError`: an empty
    report would read as a successful scoring of nothing.
    """
    files, unknown = find_files(pred_dir)
    if not files:
        got = (f"only {', '.join(p.name for p in unknown)}, which name no dataset" if unknown
               else f"no *{SUFFIX} file")
        raise InputFormatError(pred_dir, None, f"a prediction file <dataset>{SUFFIX} for at least one BLURB "
                               f"dataset (e.g. BIOSSES{SUFFIX}, lines {{\"id\": ..., \"prediction\": ...}})", got)
    results = {name: score_file(files[name], name, split, data_root)
               for name in registry.names() if name in files}
    missing = [name for name in registry.names() if name not in files]
    return ScoreReport(Path(pred_dir), split, results, files, missing, unknown)
