"""SciERC prediction files: one json object per line (``doc_key``, ``entities``, ``relations``, ``clusters``,
in the document-level word offsets of :mod:`medibio.tasks.scierc`), as the runs write them and as
``medibio scierc evaluate`` scores them.

A file is read against the documents of a split. Scoring a file that lacks some of them would silently
score a subset (and report it as the split's score), so a missing document is an error naming it unless the
caller asks for ``partial`` scoring (our smoke runs' capped test sets). A malformed line is an error naming
the file, the line and what was expected.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from medibio.core.errors import InputFormatError
from medibio.core.text import json_lines
from medibio.tasks import scierc as data

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


def read(path: str | Path, gold: Sequence[data.Document], partial: bool = False
         ) -> tuple[list[data.Document], list[dict[str, Any]]]:
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
