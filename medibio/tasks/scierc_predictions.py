"""SciERC prediction files: one json object per line (``doc_key``, ``entities``, ``relations``, ``clusters``,
in the document-level word offsets of :mod:`medibio.tasks.scierc`), as the runs write them and as
``medibio scierc evaluate`` scores them.

A file is read against the documents of a split. Scoring a file that lacks some of them would silently
score a subset (and report it as the split's score), so a missing document is an error naming it unless the
caller asks for ``partial`` scoring (our smoke runs' capped test sets); an empty file is an error even then
(the text policy's: a file without a single record). A malformed line is an error naming the file, the line
and what was expected.

A well-formed line is also checked for what no model produces and what would make the score depend on
the file instead of the predictions: a type outside SciERC's label sets, a span outside the
document (negative, past its last word, or ending before it starts), the same span with several types
(the last one would win), a mention in two coreference clusters, and a relation whose arguments are not
among the line's predicted entities (relations are scored end-to-end, on predicted entities). Each is an
error naming the file, line and document.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from medibio.core.errors import InputFormatError
from medibio.core.text import json_lines
from medibio.tasks import scierc

FIELDS = ("entities", "relations", "clusters")
# what each field's items must look like: (description, check)
_ITEMS = {
    "entities": ("[start, end, type] items",
                 lambda x: len(x) == 3 and _ints(x[:2]) and isinstance(x[2], str)),
    "relations": ("[start1, end1, start2, end2, type] items",
                  lambda x: len(x) == 5 and _ints(x[:4]) and isinstance(x[4], str)),
    "clusters": ("clusters as lists of [start, end] mentions",
                 lambda x: all(isinstance(m, list) and len(m) == 2 and _ints(m) for m in x)),
}


def _ints(values: Sequence[Any]) -> bool:
    return all(isinstance(v, int) and not isinstance(v, bool) for v in values)


def _fail(path: Path, line: int, doc: str, expected: str, got: Any) -> InputFormatError:
    return InputFormatError(path, line, f"(document {doc!r}) {expected}", json.dumps(got))


def _check_spans(path: Path, line: int, doc: scierc.Document, row: dict[str, Any]) -> None:
    """What a well-formed line may still get wrong: labels, offsets, one type per span, one cluster per
    mention, relations between predicted entities."""
    key, last = doc.doc_key, doc.n_words - 1

    def span(value: Sequence[int], what: str) -> tuple[int, int]:
        if not 0 <= value[0] <= value[1] <= last:
            raise _fail(path, line, key, f"{what} within the document's words 0..{last} with start <= end", value)
        return value[0], value[1]

    typed: dict[tuple[int, int], str] = {}
    for ent in row.get("entities", []):
        where = span(ent, "an entity span")
        if ent[2] not in scierc.ENTITY_TYPES:
            raise _fail(path, line, key, f"an entity type of SciERC ({', '.join(scierc.ENTITY_TYPES)})", ent)
        if where in typed:
            raise _fail(path, line, key, f"one type per span (span {list(where)} is also {typed[where]!r})", ent)
        typed[where] = ent[2]
    for rel in row.get("relations", []):
        args = span(rel[:2], "a relation argument"), span(rel[2:4], "a relation argument")
        if rel[4] not in scierc.RELATION_TYPES:
            raise _fail(path, line, key, f"a relation type of SciERC ({', '.join(scierc.RELATION_TYPES)})", rel)
        for arg in args:
            if arg not in typed:
                raise _fail(path, line, key, f"relation arguments among the predicted entities (span {list(arg)} "
                            "is not one: relations are scored on predicted entities)", rel)
    cluster_of: dict[tuple[int, int], int] = {}
    for n, cluster in enumerate(row.get("clusters", [])):
        for mention in cluster:
            where = span(mention, "a coreference mention")
            if where in cluster_of:
                other = "twice in one cluster" if cluster_of[where] == n else f"also in cluster {cluster_of[where]}"
                raise _fail(path, line, key, f"each mention in one cluster, once ({list(where)} is {other})",
                            cluster)
            cluster_of[where] = n


def _check_row(path: Path, line: int, text: str, row: Any, by_key: dict[str, Any], seen: dict[str, int]) -> None:
    if not isinstance(row, dict) or row.get("doc_key") not in by_key:
        raise InputFormatError(path, line, "an object whose doc_key is a document of the split", text)
    key = row["doc_key"]
    if key in seen:
        raise InputFormatError(path, line, f"one line per document ({key!r} is on line {seen[key]} already)", text)
    for name, (shape, ok) in _ITEMS.items():
        items = row.get(name, [])
        if not isinstance(items, list) or not all(isinstance(x, list) and ok(x) for x in items):
            raise InputFormatError(path, line, f"{name!r} as a list of {shape}", json.dumps(items))
    _check_spans(path, line, by_key[key], row)


def read(path: str | Path, gold: Sequence[scierc.Document], partial: bool = False
         ) -> tuple[list[scierc.Document], list[dict[str, Any]]]:
    """The gold documents and their predictions, in file order.

    Every line must predict a document of ``gold`` (once); every document of ``gold`` must be predicted
    unless ``partial`` (then only the predicted ones are scored).
    """
    path = Path(path)
    by_key = {d.doc_key: d for d in gold}
    seen: dict[str, int] = {}
    docs, preds = [], []
    for n, text, row in json_lines(path, "a JSON object per document (doc_key, entities, relations, clusters)"):
        _check_row(path, n, text, row, by_key, seen)
        seen[row["doc_key"]] = n
        docs.append(by_key[row["doc_key"]])
        preds.append({"doc_key": row["doc_key"], **{k: row.get(k, []) for k in FIELDS}})
    missing = [d.doc_key for d in gold if d.doc_key not in seen]
    if missing and not partial:
        shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        raise InputFormatError(path, None, f"a prediction for each of the split's {len(gold)} documents "
                                           f"(or --partial to score only those predicted); missing "
                                           f"{len(missing)}: {shown}")
    return docs, preds
