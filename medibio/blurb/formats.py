"""Parsers for the file formats of BLURB's data generation: plain Python rows, strict validation.

Every parser returns a list of dicts with the columns of the loader contract (see
:mod:`medibio.blurb.loaders`) and raises :class:`~medibio.errors.InputFormatError` naming the file and the
1-based line of the first bad row: a silently skipped row would shift every count and score after it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path

from medibio.errors import DataMissingError, InputFormatError

DOCSTART = "-DOCSTART-"


def _lines(path: Path, how_to_get: str = "") -> Iterator[tuple[int, str]]:
    """Yield (1-based line number, line without its newline); a missing file names where to get it."""
    if not path.is_file():
        raise DataMissingError(path, how_to_get)
    with path.open(encoding="utf-8", newline="") as fh:
        for number, line in enumerate(fh, start=1):
            yield number, line.rstrip("\n").rstrip("\r")


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


def _doc_id(line: str) -> str:
    """``-DOCSTART- (10037531)`` or ``-DOCSTART- 95369245`` -> the bare document id."""
    return line[len(DOCSTART):].strip().strip("()").strip()


def read_conll(path: str | Path, labels: Sequence[str], bio: bool = True, how_to_get: str = "") -> list[dict]:
    """Read ``token<TAB>tag`` sentences separated by blank lines (CoNLL style).

    ``-DOCSTART-`` lines are not sentences; they give the document id, and sentence ``k`` of document
    ``d`` gets the id ``d-k`` (``k`` keeps counting when a document id recurs, so ids stay unique). Files
    without document markers number sentences ``0, 1, ...``. ``bio=True`` also rejects an ``I`` tag that
    does not continue a ``B``/``I`` span (a dangling ``I``), which would otherwise change entity counts.
    """
    path = Path(path)
    rows: list[dict] = []
    per_doc: dict[str, int] = {}
    doc: str | None = None
    tokens: list[str] = []
    tags: list[str] = []

    def flush() -> None:
        if not tokens:
            return
        if doc is None:
            sid = str(len(rows))
        else:
            k = per_doc.get(doc, 0)
            per_doc[doc] = k + 1
            sid = f"{doc}-{k}"
        rows.append({"id": sid, "tokens": list(tokens), "tags": list(tags)})
        tokens.clear()
        tags.clear()

    for number, line in _lines(path, how_to_get):
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
        if not token:
            raise InputFormatError(path, number, "a non-empty token before the tab", line)
        _label(path, number, tag, labels)
        if bio and tag == "I" and (not tags or tags[-1] == "O"):
            raise InputFormatError(path, number, "'I' only after 'B' or 'I' (BIO scheme)",
                                   f"'I' after {'sentence start' if not tags else repr(tags[-1])}")
        tokens.append(token)
        tags.append(tag)
    flush()
    return rows


def _check_header(path: Path, number: int, line: str, header: Sequence[str]) -> None:
    if line.split("\t") != list(header):
        raise InputFormatError(path, number, f"header {'<TAB>'.join(header)!r}", line)


def read_re_tsv(path: str | Path, labels: Sequence[str], header: Sequence[str] | None = None,
                how_to_get: str = "") -> list[dict]:
    """Sentence classification rows ``id<TAB>sentence<TAB>label`` (ChemProt, DDI; GAD has a header)."""
    path = Path(path)
    rows: list[dict] = []
    for number, line in _lines(path, how_to_get):
        if number == 1 and header is not None:
            _check_header(path, number, line, header)
            continue
        sid, text, label = _fields(path, number, line, ("id", "sentence", "label"))
        rows.append({"id": sid, "text": text, "text_pair": "", "label": _label(path, number, label, labels)})
    return rows


def read_biosses_tsv(path: str | Path, how_to_get: str = "") -> list[dict]:
    """Sentence pairs with a similarity score: header ``pair_id sent1 sent2 score``."""
    path = Path(path)
    rows: list[dict] = []
    for number, line in _lines(path, how_to_get):
        if number == 1:
            _check_header(path, number, line, ("pair_id", "sent1", "sent2", "score"))
            continue
        sid, text, pair, score = _fields(path, number, line, ("pair_id", "sent1", "sent2", "score"))
        try:
            value = float(score)
        except ValueError:
            raise InputFormatError(path, number, "a numeric score in the 4th column", score) from None
        rows.append({"id": sid, "text": text, "text_pair": pair, "label": value})
    return rows


def read_bioasq_tsv(path: str | Path, labels: Sequence[str], how_to_get: str = "") -> list[dict]:
    """Yes/no questions ``id<TAB>question<TAB>context<TAB>yes|no``, no header."""
    path = Path(path)
    rows: list[dict] = []
    for number, line in _lines(path, how_to_get):
        sid, question, context, label = _fields(path, number, line, ("id", "question", "context", "label"))
        rows.append({"id": sid, "text": question, "text_pair": context,
                     "label": _label(path, number, label, labels)})
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
    for number, line in _lines(path, how_to_get):
        if number == 1:
            _check_header(path, number, line, ("labels", "sentence", "index"))
            continue
        label_field, sentence, index = _fields(path, number, line, ("labels", "sentence", "index"))
        pmid, sep, sn = index.partition("_s")
        if not sep or not pmid or not sn.isdigit():
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
        doc = sentences.setdefault(pmid, {})
        if int(sn) in doc:
            raise InputFormatError(path, number, f"each sentence index once per abstract ({index} repeats)",
                                   line)
        doc[int(sn)] = sentence
        flags.setdefault(pmid, set()).update(on)
    return [
        {"id": pmid, "text": " ".join(doc[k] for k in sorted(doc)), "text_pair": "",
         "label": [hallmarks[k] for k in sorted(flags[pmid])]}
        for pmid, doc in sentences.items()
    ]


def read_id_list(path: str | Path, how_to_get: str = "") -> list[tuple[int, str]]:
    """One id per line (blank lines ignored) -> (line number, id)."""
    return [(number, line.strip()) for number, line in _lines(Path(path), how_to_get) if line.strip()]


def read_pubmedqa(json_path: str | Path, ids_path: str | Path, labels: Sequence[str],
                  how_to_get: str = "") -> list[dict]:
    """PubMedQA expert-labelled items restricted to one BLURB split, in the order of the id list.

    The question is ``text``; the abstract's context paragraphs (without the conclusion, which holds the
    answer) joined by spaces are ``text_pair``; ``final_decision`` is the label.
    """
    json_path, ids_path = Path(json_path), Path(ids_path)
    if not json_path.is_file():
        raise DataMissingError(json_path, how_to_get)
    try:
        items = json.loads(json_path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputFormatError(json_path, exc.lineno, "valid JSON", exc.msg) from None
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
            raise InputFormatError(json_path, None, f"QUESTION, CONTEXTS and final_decision for {pmid}",
                                   str(item)[:100]) from None
        if decision not in labels:
            raise InputFormatError(json_path, None, f"final_decision in {{{', '.join(labels)}}} for {pmid}",
                                   str(decision))
        rows.append({"id": pmid, "text": question, "text_pair": " ".join(contexts), "label": decision})
    return rows
