"""Parsers for the intermediate-task files, each returning plain rows in the BLURB loader schema.

Rows are ``{"id", "text", "text_pair", "label"}`` dicts (label: float for regression, str for
classification, list of str for multi-label). Every parser reads its file strictly: a malformed line raises
:class:`InputFormatError` with the 1-based line number instead of being skipped. Files follow the text policy
of every input (:mod:`medibio.core.text`): UTF-8 (a bad byte is named with its line and column), a
leading byte-order mark dropped, CRLF accepted, blank lines only at the end, and a file without a single
record is an error.

Ranking tasks (SciRepEval proximity and search formats) are turned into scored pairs for a cross-encoder:
``text`` is the query, ``text_pair`` a candidate, ``label`` ``"1"`` (relevant) or ``"0"``; the pair id is
``<query id>::<candidate id>`` so :mod:`medibio.tasks.ranking` can regroup pairs per query and compute MAP or
nDCG from the model's scores.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from medibio.core.errors import InputFormatError
from medibio.core.text import data_lines, read_text

PAIR_SEP = "::"




def _float(value: str, path: Path, lineno: int, what: str, lo: float | None = None,
           hi: float | None = None) -> float:
    try:
        number = float(value)
    except ValueError:
        raise InputFormatError(path, lineno, what, value) from None
    if not math.isfinite(number):
        raise InputFormatError(path, lineno, f"{what} (a finite number)", value)
    if (lo is not None and number < lo) or (hi is not None and number > hi):
        raise InputFormatError(path, lineno, f"{what} in [{lo:g}, {hi:g}]" if lo is not None and hi is not None
                               else f"{what} >= {lo:g}" if lo is not None else f"{what} <= {hi:g}", value)
    return number


# --- sentence-pair similarity -------------------------------------------------------------------------

def read_stsb(path: Path, split: str) -> list[dict]:
    """STS Benchmark file: tab-separated genre, file, year, id, score, sentence1, sentence2[, sources...].

    The readme allows licence/source fields after sentence2; they are ignored. Quotes are literal text
    (the files are not CSV-quoted), so lines are split on tabs only.
    """
    rows = []
    for lineno, line in data_lines(path, "sentence pair (genre<TAB>file<TAB>year<TAB>id<TAB>score<TAB>sentence1"
                                   "<TAB>sentence2)"):
        fields = line.split("\t")
        if len(fields) < 7:
            raise InputFormatError(path, lineno, "at least 7 tab-separated fields (genre, file, year, id, "
                                   "score, sentence1, sentence2)", line)
        score = _float(fields[4], path, lineno, "a similarity score", 0.0, 5.0)
        rows.append({"id": f"stsb-{split}-{lineno:05d}", "text": fields[5], "text_pair": fields[6],
                     "label": score})
    return rows


SICK_SPLITS = {"TRAIN": "train", "TRIAL": "dev", "TEST": "test"}
SICK_LABELS = ("ENTAILMENT", "NEUTRAL", "CONTRADICTION")


def read_sick(path: Path, target: str) -> dict[str, list[dict]]:
    """SICK full file (tab-separated, header row) -> rows per split (SemEval set TRAIN/TRIAL/TEST).

    ``target`` is ``"relatedness"`` (float 1-5) or ``"entailment"`` (3 labels).
    """
    need = ("pair_ID", "sentence_A", "sentence_B", "entailment_label", "relatedness_score", "SemEval_set")
    out: dict[str, list[dict]] = {s: [] for s in SICK_SPLITS.values()}
    lines = data_lines(path, "header row, then one sentence pair per line")
    _, header_line = next(lines)
    header = header_line.split("\t")
    missing = [c for c in need if c not in header]
    if missing:
        raise InputFormatError(path, 1, f"header columns {list(need)}", header_line)
    col = {name: header.index(name) for name in need}
    for lineno, line in lines:
        fields = line.split("\t")
        if len(fields) != len(header):
            raise InputFormatError(path, lineno, f"{len(header)} tab-separated fields", line)
        split = SICK_SPLITS.get(fields[col["SemEval_set"]])
        if split is None:
            raise InputFormatError(path, lineno, f"SemEval_set in {sorted(SICK_SPLITS)}", fields[col["SemEval_set"]])
        if target == "relatedness":
            label: Any = _float(fields[col["relatedness_score"]], path, lineno, "a relatedness score", 1.0, 5.0)
        else:
            label = fields[col["entailment_label"]]
            if label not in SICK_LABELS:
                raise InputFormatError(path, lineno, f"entailment label in {SICK_LABELS}", label)
        out[split].append({"id": f"sick-{fields[col['pair_ID']]}", "text": fields[col["sentence_A"]],
                           "text_pair": fields[col["sentence_B"]], "label": label})
    empty = [name for name, split in SICK_SPLITS.items() if not out[split]]
    if empty:
        raise InputFormatError(path, None, f"pairs of every SemEval_set ({', '.join(SICK_SPLITS)})",
                               f"none for {', '.join(empty)}")
    return out


def read_clinicalsts(path: Path, prefix: str) -> list[dict]:
    """n2c2/OHNLP ClinicalSTS file: ``sentence1<TAB>sentence2<TAB>score`` (score 0-5), one pair per line."""
    rows = []
    for lineno, line in data_lines(path, "sentence pair (sentence1<TAB>sentence2<TAB>score)"):
        fields = line.split("\t")
        if len(fields) != 3:
            raise InputFormatError(path, lineno, "3 tab-separated fields: sentence1, sentence2, score "
                                   "(test files without gold scores must be merged with the gold file first)",
                                   line)
        score = _float(fields[2], path, lineno, "a similarity score", 0.0, 5.0)
        rows.append({"id": f"{prefix}-{lineno:05d}", "text": fields[0].strip(), "text_pair": fields[1].strip(),
                     "label": score})
    return rows


# --- SciRepEval ---------------------------------------------------------------------------------------

def read_json_records(path: Path) -> Iterator[tuple[int, dict]]:
    """Objects of a SciRepEval file: JSON lines (``.jsonl``) or one JSON array (``.json``), with line numbers."""
    if path.suffix == ".json":
        try:
            data = json.loads(read_text(path))
        except json.JSONDecodeError as exc:
            raise InputFormatError(path, exc.lineno, "a JSON array of objects", exc.msg) from exc
        if not isinstance(data, list) or not data:
            raise InputFormatError(path, 1, "a non-empty JSON array of objects",
                                   "[]" if isinstance(data, list) else type(data).__name__)
        for k, obj in enumerate(data, start=1):
            if not isinstance(obj, dict):
                raise InputFormatError(path, None, f"object #{k} of the array to be a JSON object", repr(obj)[:80])
            yield k, obj
        return
    for lineno, line in data_lines(path, "JSON object (one per line)"):
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputFormatError(path, lineno, "one JSON object per line", exc.msg) from exc
        if not isinstance(obj, dict):
            raise InputFormatError(path, lineno, "a JSON object", line)
        yield lineno, obj


def _paper_id(paper: dict, fallback: str) -> str:
    for key in ("corpus_id", "doc_id", "paper_id", "sha"):
        if paper.get(key) not in (None, ""):
            return str(paper[key])
    return fallback


def _paper_text(paper: Any, path: Path, lineno: int, what: str) -> tuple[str, str]:
    """(title, abstract) of a paper object; a bare string counts as a title (search queries)."""
    if isinstance(paper, str):
        return paper, ""
    if not isinstance(paper, dict) or "title" not in paper:
        raise InputFormatError(path, lineno, f"{what} with a 'title' field", repr(paper)[:80])
    return str(paper.get("title") or ""), str(paper.get("abstract") or "")


def read_scirepeval_docs(path: Path, label_field: str, kind: str, labels: tuple[str, ...] = ()) -> list[dict]:
    """Per-paper tasks (regression / classification): text = title, text_pair = abstract.

    ``kind``: ``"regression"`` (float label), ``"classify"`` (one label from ``labels``) or ``"multilabel"``
    (list of labels from ``labels``).
    """
    allowed = set(labels)
    rows = []
    for lineno, obj in read_json_records(path):
        title, abstract = _paper_text(obj, path, lineno, "a paper")
        if label_field not in obj:
            raise InputFormatError(path, lineno, f"a {label_field!r} field", ", ".join(sorted(obj))[:80])
        raw = obj[label_field]
        if kind == "regression":
            label: Any = _float(str(raw), path, lineno, f"a number in {label_field!r}")
        elif kind == "classify":
            label = str(raw)
            if allowed and label not in allowed:
                raise InputFormatError(path, lineno, f"{label_field!r} among the task's {len(allowed)} labels", label)
        else:
            if not isinstance(raw, list) or not raw:
                raise InputFormatError(path, lineno, f"a non-empty list in {label_field!r}", repr(raw)[:80])
            label = [str(v) for v in raw]
            bad = [v for v in label if allowed and v not in allowed]
            if bad:
                raise InputFormatError(path, lineno, f"{label_field!r} among the task's {len(allowed)} labels",
                                       ", ".join(bad))
        rows.append({"id": _paper_id(obj, f"{path.stem}-{lineno}"), "text": title, "text_pair": abstract,
                     "label": label})
    return rows


def _candidate_text(title: str, abstract: str) -> str:
    return f"{title}. {abstract}".strip() if abstract else title


def read_scirepeval_triplets(path: Path) -> list[dict]:
    """Citation prediction (SPECTER triplets ``{"query", "pos", "neg"}``) -> two labelled pairs per line."""
    rows = []
    for lineno, obj in read_json_records(path):
        for key in ("query", "pos", "neg"):
            if key not in obj:
                raise InputFormatError(path, lineno, "a triplet with 'query', 'pos' and 'neg'", ", ".join(obj))
        q_title, q_abs = _paper_text(obj["query"], path, lineno, "'query' paper")
        qid = _paper_id(obj["query"], f"q{lineno}")
        for key, label in (("pos", "1"), ("neg", "0")):
            title, abstract = _paper_text(obj[key], path, lineno, f"'{key}' paper")
            cid = _paper_id(obj[key], f"{key}{lineno}")
            rows.append({"id": f"{qid}{PAIR_SEP}{cid}", "text": _candidate_text(q_title, q_abs),
                         "text_pair": _candidate_text(title, abstract), "label": label})
    return rows


def read_scirepeval_ranking(path: Path) -> list[dict]:
    """Search / same-author / influential-citation files ``{"query", "candidates": [{..., "score"}]}``.

    ``score`` > 0 marks a relevant candidate (label ``"1"``): the cross-encoder learns this binary class,
    and ranking metrics use it as the relevance grade.
    """
    rows = []
    for lineno, obj in read_json_records(path):
        if "query" not in obj or not isinstance(obj.get("candidates"), list):
            raise InputFormatError(path, lineno, "an object with 'query' and a 'candidates' list", ", ".join(obj))
        q_title, q_abs = _paper_text(obj["query"], path, lineno, "'query'")
        qid = _paper_id(obj["query"], "") if isinstance(obj["query"], dict) else ""
        qid = qid or str(obj.get("doc_id") or obj.get("query_id") or f"q{lineno}")
        seen: set[str] = set()
        for k, cand in enumerate(obj["candidates"], start=1):
            title, abstract = _paper_text(cand, path, lineno, f"candidate #{k}")
            if "score" not in cand:
                raise InputFormatError(path, lineno, f"a 'score' in candidate #{k}", ", ".join(cand))
            score = _float(str(cand["score"]), path, lineno, f"a numeric score in candidate #{k}")
            cid = _paper_id(cand, f"c{k}")
            if cid in seen:
                raise InputFormatError(path, lineno, f"distinct candidate ids (repeated {cid!r})")
            seen.add(cid)
            rows.append({"id": f"{qid}{PAIR_SEP}{cid}", "text": _candidate_text(q_title, q_abs),
                         "text_pair": _candidate_text(title, abstract), "label": "1" if score > 0 else "0"})
    return rows
