"""Parsers for the file formats of BLURB's data generation: plain Python rows, strict validation.

Every parser returns a list of dicts with the columns of the loader contract (see
:mod:`medibio.tasks.loaders`) plus ``line``, the 1-based line where the example starts (used by messages
about duplicates and split overlaps), and raises :class:`~medibio.core.errors.InputFormatError` naming the file
and the 1-based line of the first bad row: a silently skipped row would shift every count and score after it.

Every file is read under the one text policy of :mod:`medibio.core.text` (UTF-8, a leading byte-order mark
dropped, CRLF accepted, blank lines only where the format uses them: CoNLL sentence breaks). A file (or
split) without a single example is an error, not an empty dataset. Example ids must be non-empty and unique
within a file; a repeated id names both lines.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Sequence
from pathlib import Path

from medibio.core.errors import InputFormatError
from medibio.core.text import blank_line, data_lines, no_examples, read_text, text_lines

DOCSTART = "-DOCSTART-"


def _fields(path: Path, number: int, line: str, columns: Sequence[str]) -> list[str]:
    parts = line.split("\t")
    if len(parts) != len(columns):
        raise InputFormatError(path, number, f"{len(columns)} tab-separated columns ({', '.join(columns)})",
                               f"{len(parts)} columns: {line}")
    return parts


def _label(path: Path, number: int, value: str, labels: Sequence[str]) -> str:
    if value not in labels:
        raise InputFormatError(path, number, f"a label in {{{', '.join(labels)}}}", value)
    return value


def _text(path: Path, number: int, value: str, column: str, line: str) -> str:
    if not value.strip():
        raise InputFormatError(path, number, f"a non-empty {column}", line)
    return value


class _Ids:
    """Ids seen so far in one file: an empty or repeated id is an error naming both lines."""

    def __init__(self, path: Path, what: str = "id") -> None:
        self.path = path
        self.what = what
        self.first: dict[str, int] = {}

    def add(self, number: int, sid: str, line: str) -> str:
        if not sid.strip():
            raise InputFormatError(self.path, number, f"a non-empty {self.what}", line)
        first = self.first.setdefault(sid, number)
        if first != number:
            raise InputFormatError(self.path, number, f"each {self.what} once; {sid!r} is already on line {first}",
                                   line)
        return sid


def _doc_id(line: str) -> str:
    """``-DOCSTART- (10037531)`` or ``-DOCSTART- 95369245`` -> the bare document id."""
    return line[len(DOCSTART):].strip().strip("()").strip()


def read_conll(path: str | Path, labels: Sequence[str], bio: bool = True, how_to_get: str = "") -> list[dict]:
    """Read ``token<TAB>tag`` sentences separated by blank lines (CoNLL style).

    ``-DOCSTART-`` lines are not sentences; they give the document id, and sentence ``k`` of document
    ``d`` gets the id ``d-k`` (``k`` keeps counting when a document id recurs, as it does in JNLPBA's
    files, so ids stay unique). Files without document markers number sentences ``0, 1, ...``. ``bio=True``
    also rejects an ``I`` tag that does not continue a ``B``/``I`` span (a dangling ``I``), which would
    otherwise change entity counts.
    """
    path = Path(path)
    rows: list[dict] = []
    per_doc: dict[str, int] = {}
    doc: str | None = None
    tokens: list[str] = []
    tags: list[str] = []
    start = 0
    last = 0

    def flush() -> None:
        if not tokens:
            return
        if doc is None:
            sid = str(len(rows))
        else:
            k = per_doc.get(doc, 0)
            per_doc[doc] = k + 1
            sid = f"{doc}-{k}"
        rows.append({"id": sid, "tokens": list(tokens), "tags": list(tags), "line": start})
        tokens.clear()
        tags.clear()

    for number, line in text_lines(path, how_to_get):
        last = number
        if line.startswith(DOCSTART):
            flush()
            doc = _doc_id(line)
            if not doc:
                raise InputFormatError(path, number, f"'{DOCSTART} <document id>'", line)
            continue
        if not line.strip():
            flush()
            continue
        token, tag = _fields(path, number, line, ("token", "tag"))
        if not token.strip():
            raise InputFormatError(path, number, "a non-empty token before the tab", line)
        _label(path, number, tag, labels)
        if bio and tag == "I" and (not tags or tags[-1] == "O"):
            raise InputFormatError(path, number, "'I' only after 'B' or 'I' (BIO scheme)",
                                   f"'I' after {'sentence start' if not tags else repr(tags[-1])}")
        if not tokens:
            start = number
        tokens.append(token)
        tags.append(tag)
    flush()
    if not rows:
        raise no_examples(path, last, "sentence (token<TAB>tag lines)")
    return rows


def _check_header(path: Path, number: int, line: str, header: Sequence[str]) -> None:
    if line.split("\t") != list(header):
        raise InputFormatError(path, number, f"header {'<TAB>'.join(header)!r}", line)


def _table(path: Path, columns: Sequence[str], header: bool, how_to_get: str) -> Iterator[tuple[int, str, list[str]]]:
    """Rows of a tab-separated file: (line number, line, fields); checks the header, blank lines, emptiness."""
    last = 0
    examples = 0
    for number, line in text_lines(path, how_to_get):
        last = number
        if number == 1 and header:
            _check_header(path, number, line, columns)
            continue
        if not line.strip():
            raise blank_line(path, number, f"a row of {len(columns)} tab-separated columns")
        examples += 1
        yield number, line, _fields(path, number, line, columns)
    if not examples:
        raise no_examples(path, last, f"row of {len(columns)} tab-separated columns ({', '.join(columns)})")


def read_re_tsv(path: str | Path, labels: Sequence[str], header: Sequence[str] | None = None,
                how_to_get: str = "") -> list[dict]:
    """Sentence classification rows ``id<TAB>sentence<TAB>label`` (ChemProt, DDI; GAD has a header)."""
    path = Path(path)
    ids = _Ids(path)
    columns = tuple(header) if header is not None else ("id", "sentence", "label")
    rows: list[dict] = []
    for number, line, (sid, text, label) in _table(path, columns, header is not None, how_to_get):
        rows.append({"id": ids.add(number, sid, line), "text": _text(path, number, text, "sentence", line),
                     "text_pair": "", "label": _label(path, number, label, labels), "line": number})
    return rows


def read_biosses_tsv(path: str | Path, value_range: tuple[float, float] | None = None,
                     how_to_get: str = "") -> list[dict]:
    """Sentence pairs with a similarity score: header ``pair_id sent1 sent2 score``.

    Scores must be finite numbers, within ``value_range`` when given (BIOSSES: 0-4, the registry's range).
    """
    path = Path(path)
    ids = _Ids(path, "pair_id")
    columns = ("pair_id", "sent1", "sent2", "score")
    scale = "" if value_range is None else f" in [{value_range[0]:g}, {value_range[1]:g}]"
    rows: list[dict] = []
    for number, line, (sid, text, pair, score) in _table(path, columns, True, how_to_get):
        try:
            value = float(score)
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or (value_range and not value_range[0] <= value <= value_range[1]):
            raise InputFormatError(path, number, f"a finite numeric score{scale} in the 4th column", score)
        rows.append({"id": ids.add(number, sid, line), "text": _text(path, number, text, "sent1", line),
                     "text_pair": _text(path, number, pair, "sent2", line), "label": value, "line": number})
    return rows


def read_bioasq_tsv(path: str | Path, labels: Sequence[str], how_to_get: str = "") -> list[dict]:
    """Yes/no questions ``id<TAB>question<TAB>context<TAB>yes|no``, no header."""
    path = Path(path)
    ids = _Ids(path)
    rows: list[dict] = []
    for number, line, (sid, question, context, label) in _table(path, ("id", "question", "context", "label"),
                                                                 False, how_to_get):
        rows.append({"id": ids.add(number, sid, line), "text": _text(path, number, question, "question", line),
                     "text_pair": _text(path, number, context, "context", line),
                     "label": _label(path, number, label, labels), "line": number})
    return rows


def read_hoc_tsv(path: str | Path, hallmarks: Sequence[str], how_to_get: str = "") -> list[dict]:
    """HoC sentence rows ``k_0,...,k_1<TAB>sentence<TAB>PMID_sN`` -> one multi-label row per abstract.

    BLURB scores HoC per abstract: the sentences of a PMID are joined in ``sN`` order and the abstract
    carries every hallmark any of its sentences carries. Abstracts keep the order of first appearance.
    """
    path = Path(path)
    n = len(hallmarks)
    sentences: dict[str, dict[int, str]] = {}
    flags: dict[str, set[int]] = {}
    seen = _Ids(path, "sentence index")
    for number, line, (label_field, sentence, index) in _table(path, ("labels", "sentence", "index"), True,
                                                               how_to_get):
        pmid, sep, sn = index.partition("_s")
        if not sep or not pmid.strip() or not sn.isdigit():
            raise InputFormatError(path, number, "an index of the form PMID_sN", index)
        pairs = label_field.split(",")
        expected = f"{n} comma-separated flags k_0|k_1 for k = 0..{n - 1}"
        if [p.rpartition("_")[0] for p in pairs] != [str(k) for k in range(n)]:
            raise InputFormatError(path, number, expected, label_field)
        on: set[int] = set()
        for k, pair in enumerate(pairs):
            flag = pair.rpartition("_")[2]
            if flag not in ("0", "1"):
                raise InputFormatError(path, number, expected, label_field)
            if flag == "1":
                on.add(k)
        seen.add(number, f"{pmid}_s{int(sn)}", line)
        sentences.setdefault(pmid, {})[int(sn)] = _text(path, number, sentence, "sentence", line)
        flags.setdefault(pmid, set()).update(on)
    first_line = {}
    for key, number in seen.first.items():
        first_line.setdefault(key.partition("_s")[0], number)
    return [
        {"id": pmid, "text": " ".join(doc[k] for k in sorted(doc)), "text_pair": "",
         "label": [hallmarks[k] for k in sorted(flags[pmid])], "line": first_line[pmid]}
        for pmid, doc in sentences.items()
    ]


def read_id_list(path: str | Path, how_to_get: str = "") -> list[tuple[int, str]]:
    """One id per line -> (line number, id); ids are unique, blank lines may only end the file."""
    path = Path(path)
    ids = _Ids(path)
    return [(number, ids.add(number, line.strip(), line)) for number, line in data_lines(path, "id (one per line)",
                                                                                          how_to_get)]


class _DuplicateKey(Exception):
    def __init__(self, key: str) -> None:
        self.key = key


def _unique_keys(pairs: list[tuple[str, object]]) -> dict:
    out: dict = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


def _key_line(text: str, key: str) -> int | None:
    """The line of the first ``"key":`` (computed only for an error message: it scans the whole text)."""
    return next(iter(_key_lines(text, key)), None)


def _key_lines(text: str, key: str) -> list[int]:
    """1-based lines where ``"key":`` occurs in JSON text (to point at an item of a parsed object)."""
    return [text.count("\n", 0, m.start()) + 1 for m in re.finditer(rf'"{re.escape(key)}"\s*:', text)]


def read_pubmedqa(json_path: str | Path, ids_path: str | Path, labels: Sequence[str],
                  how_to_get: str = "") -> list[dict]:
    """PubMedQA expert-labelled items restricted to one BLURB split, in the order of the id list.

    The question is ``text``; the abstract's context paragraphs (without the conclusion, which holds the
    answer) joined by spaces are ``text_pair``; ``final_decision`` is the label. Errors about an item name
    the line of its PMID key in the JSON file; ``line`` of a row is its line in the id list.
    """
    json_path, ids_path = Path(json_path), Path(ids_path)
    text = read_text(json_path, how_to_get)
    try:
        items = json.loads(text, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as exc:
        raise InputFormatError(json_path, exc.lineno, "valid JSON", exc.msg) from None
    except _DuplicateKey as dup:
        lines = _key_lines(text, dup.key)[:2] or [None]
        raise InputFormatError(json_path, lines[-1], f"each key once; {dup.key!r} is already on line {lines[0]}",
                               dup.key) from None
    if not isinstance(items, dict):
        raise InputFormatError(json_path, 1, "a JSON object keyed by PMID", type(items).__name__)
    rows: list[dict] = []
    for number, pmid in read_id_list(ids_path, how_to_get):
        item = items.get(pmid)
        if item is None:
            raise InputFormatError(ids_path, number, f"a PMID present in {json_path.name}", pmid)
        try:
            question, contexts, decision = item["QUESTION"], item["CONTEXTS"], item["final_decision"]
        except (KeyError, TypeError):
            raise InputFormatError(json_path, _key_line(text, pmid), f"QUESTION, CONTEXTS and final_decision for {pmid}",
                                   str(item)[:100]) from None
        if decision not in labels:
            raise InputFormatError(json_path, _key_line(text, pmid), f"final_decision in {{{', '.join(labels)}}} for {pmid}",
                                   str(decision))
        if not isinstance(question, str) or not question.strip():
            raise InputFormatError(json_path, _key_line(text, pmid), f"a non-empty QUESTION for {pmid}", str(question))
        if not isinstance(contexts, list) or not all(isinstance(c, str) for c in contexts):
            raise InputFormatError(json_path, _key_line(text, pmid), f"CONTEXTS as a list of strings for {pmid}", str(contexts)[:100])
        rows.append({"id": pmid, "text": question, "text_pair": " ".join(contexts), "label": decision,
                     "line": number})
    return rows
