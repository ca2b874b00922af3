"""Parsers for the file formats of BLURB's data generation: plain Python rows, strict validation.

Every parser returns a list of dicts with the columns of the loader contract (see
:mod:`medibio.blurb.loaders`) plus ``line``, the 1-based line where the example starts (used by messages
about duplicates and split overlaps), and raises :class:`~medibio.errors.InputFormatError` naming the file
and the 1-based line of the first bad row: a silently skipped row would shift every count and score after it.

What every format shares (one policy, in :func:`text_lines`): files are UTF-8; a leading UTF-8 byte-order
mark is dropped (Windows editors add one; it never becomes part of the first id); CRLF line endings are
accepted; blank lines at the end of a file are ignored, blank lines elsewhere are an error except where the
format uses them (CoNLL sentence breaks); compressed, UTF-16 or binary files are rejected at the line where
they stop being UTF-8 text. A file (or split) without a single example is an error, not an empty dataset.
Example ids must be non-empty and unique within a file; a repeated id names both lines.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Sequence
from pathlib import Path

from medibio.errors import DataMissingError, InputFormatError

DOCSTART = "-DOCSTART-"
BOM = "\ufeff"
UTF8_TEXT = "a plain UTF-8 text file"

# Leading bytes of files that are not UTF-8 text at all, and what to tell the user.
_NOT_TEXT: tuple[tuple[bytes, str], ...] = (
    (b"\x1f\x8b", "gzip-compressed data (decompress it first, e.g. with gunzip)"),
    (b"PK\x03\x04", "a zip archive (unpack it first)"),
    (b"\xff\xfe", "UTF-16 text (little-endian byte-order mark); save it as UTF-8"),
    (b"\xfe\xff", "UTF-16 text (big-endian byte-order mark); save it as UTF-8"),
)


def _decode(path: Path, data: bytes) -> str:
    """The file's bytes as text; the first byte that is not UTF-8 (or a NUL byte) is reported with its line."""
    for magic, what in _NOT_TEXT:
        if data.startswith(magic):
            raise InputFormatError(path, 1, UTF8_TEXT, what)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        start = data.rfind(b"\n", 0, exc.start) + 1
        column = len(data[start: exc.start].decode("utf-8", errors="replace")) + 1
        raise InputFormatError(path, data.count(b"\n", 0, exc.start) + 1, "UTF-8 text",
                               f"the byte 0x{data[exc.start]:02x} at column {column}, which is not UTF-8 "
                               "(re-save the file as UTF-8)") from None
    nul = text.find("\x00")
    if nul >= 0:
        raise InputFormatError(path, text.count("\n", 0, nul) + 1, "text without NUL bytes",
                               f"a NUL byte at column {nul - text.rfind(chr(10), 0, nul)} (a binary file?)")
    return text.removeprefix(BOM)


def text_lines(path: str | Path, how_to_get: str = "") -> Iterator[tuple[int, str]]:
    """Yield (1-based line number, line without its line ending) of a UTF-8 text file.

    The shared policy of the module docstring: BOM dropped, CRLF accepted, trailing blank lines dropped
    (inner blank lines are yielded for the format to judge), non-UTF-8 bytes / NUL bytes / gzip, zip or
    UTF-16 files raise :class:`InputFormatError` with the line. A missing file names where to get it.
    """
    path = Path(path)
    if not path.is_file():
        raise DataMissingError(path, how_to_get)
    lines = _decode(path, path.read_bytes()).split("\n")
    while lines and not lines[-1].strip():  # the final newline, and blank lines at the end of the file
        lines.pop()
    for number, line in enumerate(lines, start=1):
        yield number, line.removesuffix("\r")


def data_lines(path: str | Path, what: str, how_to_get: str = "") -> Iterator[tuple[int, str]]:
    """Yield (line number, line) of a file with one record per line, under the :func:`text_lines` policy:
    a blank line inside the file is an error, and so is a file without a single record. ``what`` names a
    record in messages ("id (one per line)", "pair of the STS Benchmark")."""
    path = Path(path)
    last = 0
    records = 0
    for number, line in text_lines(path, how_to_get):
        last = number
        if not line.strip():
            raise _blank(path, number, what)
        records += 1
        yield number, line
    if not records:
        raise _no_examples(path, last, what)


def read_text(path: str | Path, how_to_get: str = "") -> str:
    """The whole file as text under the :func:`text_lines` policy (line numbers are preserved)."""
    return "\n".join(line for _, line in text_lines(path, how_to_get))


def _no_examples(path: Path, last: int, what: str) -> InputFormatError:
    """The error for a file without a single example: names the line after the last one read."""
    if last:
        got = "end of file"
    else:
        got = "an empty file" if path.stat().st_size == 0 else "a file of blank lines only"
    return InputFormatError(path, last + 1, f"at least one {what}", got)


def _blank(path: Path, number: int, what: str) -> InputFormatError:
    return InputFormatError(path, number, f"{what}, not a blank line (blank lines may only end the file)", "")


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
        raise _no_examples(path, last, "sentence (token<TAB>tag lines)")
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
            raise _blank(path, number, f"a row of {len(columns)} tab-separated columns")
        examples += 1
        yield number, line, _fields(path, number, line, columns)
    if not examples:
        raise _no_examples(path, last, f"row of {len(columns)} tab-separated columns ({', '.join(columns)})")


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
