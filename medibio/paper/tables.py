"""Tables 1-7 of the MediBioDeBERTa paper as tidy data frames.

The numbers are transcribed exactly as printed (CSV files in ``medibio/paper/data``); empty cells stay
missing. Loading maps the paper's dataset spellings ("Chem Prot", "HOC", "PubmedQA", "EBM PICO") to the
registry's canonical names so paper numbers can be set beside our own results and fed to
:mod:`medibio.tasks.scoring` unchanged.

Layouts (one row per printed value):

* Tables 1, 6, 7 (scores): ``table, model, group, label, dataset, metric, kind, value, decimals, note``.
  ``label`` is the row label as printed, ``dataset`` the canonical name (missing on average rows),
  ``kind`` is ``score`` or ``average`` and ``decimals`` the number of printed decimals (it sets the
  rounding tolerance of the audit).
* Table 2 (IFT tasks): one row per IFT dataset, used/total counts as printed plus parsed ``*_n`` columns.
* Table 3 (pretraining hyperparameters): ``hyperparameter, model, value`` (text) and ``value_num``.
* Table 4 (SciERC): ``model, corpus, task, metric, mean, std``.
* Table 5 (configurations): one row per configuration #1-#5.
"""

from __future__ import annotations

import csv
import math
import re
from decimal import Decimal
from functools import cache
from importlib import resources
from pathlib import Path

import pandas as pd

from medibio.core.errors import DataMissingError, InputFormatError
from medibio.tasks import registry, scoring

CAPTIONS: dict[int, str] = {
    1: "BIOSSES test score of general-domain encoders, with and without MNLI intermediate fine-tuning",
    2: "Intermediate fine-tuning tasks: datasets, formats, examples used/available, metrics",
    3: "Pretraining hyperparameters of SciDeBERTa v2 and MediBioDeBERTa",
    4: "SciERC test F1 (mean ± std over runs) of SciDeBERTa and SciDeBERTa v2",
    5: "Pretraining configurations #1-#5 and their BLURB Avg.",
    6: "BLURB test scores of configurations #1-#5",
    7: "BLURB test scores of BioLinkBERT, SciDeBERTa v2, MediBioDeBERTa and MediBioDeBERTa-IFT",
}

_COLUMNS: dict[int, tuple[str, ...]] = {
    1: ("model", "group", "label", "metric", "kind", "value", "note"),
    2: ("task", "dataset", "format", "train_used", "train_total", "dev_used", "dev_total", "metric", "note"),
    3: ("hyperparameter", "model", "value", "note"),
    4: ("model", "corpus", "task", "metric", "mean", "std", "note"),
    5: ("config", "algorithm", "base_model", "corpus_type", "training_steps", "blurb_avg", "note"),
    6: ("model", "group", "label", "metric", "kind", "value", "note"),
    7: ("model", "group", "label", "metric", "kind", "value", "note"),
}
SCORE_TABLES = (1, 6, 7)
_NUMERIC: dict[int, tuple[str, ...]] = {4: ("mean", "std"), 5: ("training_steps", "blurb_avg")}
_COUNT_RE = re.compile(r"^(\d+(?:\.\d+)?)([KM]?)$")


def table_path(n: int) -> Path:
    """Where the CSV of table ``n`` lives inside the installed package."""
    if n not in CAPTIONS:
        raise KeyError(f"the paper has Tables 1-7; got {n!r}")
    return Path(str(resources.files("medibio.paper.data").joinpath(f"table{n}.csv")))


def parse_count(text: str) -> float:
    """Turn a printed count ("500K", "8,192", "8.9K", "0.0005") into a number; NaN for words or blanks."""
    text = text.strip().replace(",", "")
    if not text:
        return math.nan
    match = _COUNT_RE.match(text)
    if match:
        scale = {"": 1, "K": 1_000, "M": 1_000_000}[match.group(2)]
        return float(Decimal(match.group(1)) * scale)
    try:
        return float(text)
    except ValueError:
        return math.nan


def printed_decimals(text: str) -> int:
    """Number of decimals a value was printed with ("78.1" -> 1, "80.20" -> 2, "90000" -> 0)."""
    text = text.strip()
    return len(text.split(".", 1)[1]) if "." in text else 0


def _read_rows(n: int, path: Path) -> list[dict[str, str]]:
    if not path.is_file():
        raise DataMissingError(path, "reinstall medibio: the paper tables ship inside the package")
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        expected = _COLUMNS[n]
        if tuple(reader.fieldnames or ()) != expected:
            raise InputFormatError(path, 1, "header " + ",".join(expected), ",".join(reader.fieldnames or ()))
        rows = []
        for line, row in enumerate(reader, start=2):
            if None in row or any(v is None for v in row.values()):
                raise InputFormatError(path, line, f"{len(expected)} comma-separated fields", str(row))
            rows.append({k: v.strip() for k, v in row.items()})
            _check_numbers(n, path, line, rows[-1])
    return rows


def _check_numbers(n: int, path: Path, line: int, row: dict[str, str]) -> None:
    fields = ("value",) if n in SCORE_TABLES else _NUMERIC.get(n, ())
    if n == 2:
        fields = ("train_used", "train_total", "dev_used", "dev_total")
    for name in fields:
        text = row[name]
        if text and math.isnan(parse_count(text)):
            raise InputFormatError(path, line, f"a number or an empty cell in column {name!r}", text)


def _canonical(label: str) -> str | None:
    try:
        return registry.get(label, "blurb").name
    except KeyError:
        return None


@cache
def _load(n: int) -> pd.DataFrame:
    return parse_table(table_path(n), n)


def parse_table(path: Path, n: int) -> pd.DataFrame:
    """Read a CSV laid out like the packaged Table ``n`` (used by :func:`load_table`; handy for edits).

    Raises :class:`~medibio.core.errors.InputFormatError` naming the file and 1-based line of a bad header,
    row or number.
    """
    rows = _read_rows(n, Path(path))
    frame = pd.DataFrame(rows, columns=list(_COLUMNS[n]))
    if n in SCORE_TABLES:
        frame["dataset"] = [_canonical(label) if kind == "score" else None
                            for label, kind in zip(frame["label"], frame["kind"], strict=True)]
        frame["decimals"] = [printed_decimals(v) for v in frame["value"]]
        frame["value"] = [parse_count(v) for v in frame["value"]]
        frame = frame[["model", "group", "label", "dataset", "metric", "kind", "value", "decimals", "note"]]
    elif n == 2:
        for col in ("train_used", "train_total", "dev_used", "dev_total"):
            frame[f"{col}_n"] = [parse_count(v) for v in frame[col]]
        frame["task"] = [_canonical(t) or t for t in frame["task"]]
    elif n == 3:
        frame["value_num"] = [parse_count(v) for v in frame["value"]]
    else:
        for col in _NUMERIC[n]:
            frame[col] = [parse_count(v) for v in frame[col]]
    frame = frame.replace({"": None})
    frame.insert(0, "table", n)
    return frame


def load_table(n: int) -> pd.DataFrame:
    """Table ``n`` (1-7) of the paper, tidy (see the module docstring for the columns)."""
    return _load(n).copy()


def _ordered(values: pd.Series) -> list[str]:
    return list(dict.fromkeys(values))


def paper_layout(n: int) -> pd.DataFrame:
    """Table ``n`` pivoted back to the layout printed in the paper (missing cells stay NaN)."""
    frame = load_table(n)
    if n in SCORE_TABLES:
        frame["group"] = frame["group"].fillna("")
        rows = _ordered(zip(frame["group"], frame["label"], strict=True))
        wide = frame.pivot_table(index=["group", "label"], columns="model", values="value", dropna=False,
                                 aggfunc="first", sort=False)
        wide = wide.reindex(index=pd.MultiIndex.from_tuples(rows, names=["group", "label"]),
                            columns=_ordered(frame["model"]))
        wide.columns.name = None
        return wide
    if n == 2:
        out = frame[["task", "dataset", "format", "metric"]].copy()
        out["train used/total"] = frame["train_used"] + "/" + frame["train_total"]
        out["dev used/total"] = frame["dev_used"] + "/" + frame["dev_total"]
        return out[["task", "dataset", "format", "train used/total", "dev used/total", "metric"]]
    if n == 3:
        wide = frame.pivot(index="hyperparameter", columns="model", values="value")
        wide = wide.reindex(index=_ordered(frame["hyperparameter"]), columns=_ordered(frame["model"]))
        wide.columns.name = None
        return wide
    if n == 4:
        frame["cell"] = [f"{m:.1f} ± {s:.1f}" for m, s in zip(frame["mean"], frame["std"], strict=True)]
        wide = frame.pivot(index="model", columns="task", values="cell")
        wide = wide.reindex(index=_ordered(frame["model"]), columns=_ordered(frame["task"]))
        wide.columns.name = None
        return wide
    return frame.drop(columns=["table", "note"]).set_index("config")


TABLE5_HEADERS = {"algorithm": "algorithm", "base_model": "base model", "corpus_type": "corpus",
                  "training_steps": "training steps", "blurb_avg": "BLURB avg."}  # the transcription's fields in words


def cell(n: int, column: str, row: str) -> float:
    """One numeric cell, addressed as in the paper: table, column header, row label.

    Score tables take the model/config as column and the printed label or canonical dataset name as row
    ("Chem Prot" and "ChemProt" both work); Table 3 takes model and hyperparameter, Table 4 model and
    task (``"NER"`` gives the mean, ``"NER std"`` the std), Table 5 config and field name. Empty cells
    are NaN; an address that does not exist raises ``KeyError``.
    """
    frame = load_table(n)
    if n in SCORE_TABLES:
        canon = _canonical(row)
        hit = frame[(frame["model"] == column) & ((frame["label"] == row) | (frame["dataset"] == canon)
                                                  if canon else frame["label"] == row)]
        field = "value"
    elif n == 3:
        hit, field = frame[(frame["model"] == column) & (frame["hyperparameter"] == row)], "value_num"
    elif n == 4:
        task, _, stat = row.partition(" ")
        hit, field = frame[(frame["model"] == column) & (frame["task"] == task)], stat or "mean"
    elif n == 5:
        hit, field = frame[frame["config"] == column], row
    else:
        raise KeyError(f"Table {n} has no numeric cells addressed by (column, row)")
    if len(hit) != 1 or field not in hit.columns:
        raise KeyError(f"Table {n} has no cell ({column!r}, {row!r})")
    return float(hit[field].iloc[0])


def column_scores(n: int, column: str) -> dict[str, float]:
    """Canonical dataset -> score for one model/config column of Table 6 or 7 (empty cells left out)."""
    if n not in (6, 7):
        raise KeyError(f"Table {n} has no per-dataset BLURB columns (use Table 6 or 7)")
    frame = load_table(n)
    part = frame[(frame["model"] == column) & (frame["kind"] == "score") & frame["value"].notna()]
    if part.empty and column not in set(frame["model"]):
        raise KeyError(f"Table {n} has no column {column!r}; columns: {', '.join(_ordered(frame['model']))}")
    return dict(zip(part["dataset"], part["value"], strict=True))


def columns(n: int) -> list[str]:
    """Model/config column headers of a score table, in printed order."""
    return _ordered(load_table(n)["model"])


AGGREGATE_COLUMNS = ("BLURB Avg. (plain mean)", "BLURB score (mean of groups)", "datasets with a score",
                     "groups with a score")


def recomputed_aggregates(n: int) -> pd.DataFrame:
    """Both BLURB aggregates of every column of Table 6 or 7 recomputed from its printed cells, one row per
    column, with how many datasets and groups they cover.

    One row per column (not one per aggregate) so that each column of the frame holds one kind of number: the
    coverage counts stay integers (13, not 13.00) beside the two-decimal scores the paper prints."""
    rows = []
    for column in columns(n):
        scores = column_scores(n, column)
        plain, macro = scoring.paper_average(scores), scoring.blurb_score(scores)
        rows.append((plain.value, macro.value, len(plain.covered), len(macro.covered)))
    frame = pd.DataFrame(rows, columns=list(AGGREGATE_COLUMNS),
                         index=pd.Index(columns(n), name="model" if n == 7 else "configuration"))
    return frame.astype({AGGREGATE_COLUMNS[0]: float, AGGREGATE_COLUMNS[1]: float,
                         AGGREGATE_COLUMNS[2]: int, AGGREGATE_COLUMNS[3]: int})
