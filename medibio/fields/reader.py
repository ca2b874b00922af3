"""Metadata sources with field-of-study lists: which files, which format, which columns.

Supported inputs (one file or a folder of shards, plain or gzip):

* S2ORC metadata JSONL (``paper_id``, ``mag_field_of_study``: list of names or null);
* the 2019 S2ORC metadata TSV (``pid``, ``mag_fos``: a Python-list string such as ``['Biology']``);
* S2AG ``papers`` JSONL (``corpusid``, ``s2fieldsofstudy``: list of ``{category, source}`` objects);
* any JSONL/TSV with a field list, naming the columns explicitly.

This module also holds the per-line Python reference of the validation rules. DuckDB does the counting
(see :mod:`medibio.fields.cooccurrence`); the Python twin is used to find file and line of the rare bad
records, to fail fast in strict mode, and as the baseline in the scale benchmark.
"""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from medibio.core.errors import DataMissingError, InputFormatError
from medibio.fields.fos import EXTRA_KEYS, FIELD_INDEX, KEY_TO_FIELD, name_key

JSON_SUFFIXES = (".jsonl", ".json", ".ndjson")
TSV_SUFFIXES = (".tsv",)
FIELD_COLUMNS = ("mag_field_of_study", "mag_fos", "s2fieldsofstudy", "fieldsOfStudy", "fields_of_study")
ID_COLUMNS = ("paper_id", "pid", "corpusid", "corpusId", "paperId", "id")
#: Issue categories, in report order. Records with the first five are left out of the counts;
#: ``unknown_field`` records are counted with their known fields.
ISSUES = ("malformed_json", "malformed_row", "not_an_object", "missing_id", "wrong_type", "unknown_field")
DEFAULT_SOURCES = ("external",)
_PYLIST = re.compile(r"""^\[\s*(?:(?:'[^']*'|"[^"]*")\s*(?:,\s*(?:'[^']*'|"[^"]*")\s*)*)?\]$""")
_PYLIST_ITEM = re.compile(r"""'([^']*)'|"([^"]*)\"""")
HOW_TO_GET = (
    "S2ORC metadata shards (metadata_*.jsonl.gz) from https://github.com/allenai/s2orc, or the samples "
    "under <data_root>/s2orc/ (see its MANIFEST.md)"
)


@dataclass(frozen=True)
class SourceSpec:
    """What to read: the files, their format and the id / field-list columns."""

    files: tuple[Path, ...]
    fmt: str  # "jsonl" or "tsv"
    field_column: str
    id_column: str
    sources: tuple[str, ...] | None = DEFAULT_SOURCES  # S2AG object lists: sources kept (None: all)
    header: tuple[str, ...] = ()  # TSV only

    def describe(self) -> str:
        return f"{len(self.files)} {self.fmt} file(s), id column {self.id_column!r}, fields {self.field_column!r}"


def _fmt_of(path: Path) -> str | None:
    name = path.name.lower()
    if name.endswith(".gz"):
        name = name[:-3]
    if name.endswith(JSON_SUFFIXES):
        return "jsonl"
    if name.endswith(TSV_SUFFIXES):
        return "tsv"
    return None


def discover(inputs: str | Path | Sequence[str | Path]) -> list[Path]:
    """Files to read: each input is a file, or a folder searched recursively for JSONL/TSV (gzip or not).

    In folders, plain ``*.json`` files (manifests) and names starting with ``.`` or ``_`` are skipped.
    """
    items = [inputs] if isinstance(inputs, str | Path) else list(inputs)
    files: list[Path] = []
    for item in items:
        p = Path(item).expanduser()
        if p.is_dir():
            found = sorted(f for f in p.rglob("*") if f.is_file() and _fmt_of(f) and not f.name.endswith(".json")
                           and not f.name.startswith((".", "_")))
            if not found:
                raise DataMissingError(p, f"no *.jsonl[.gz] / *.tsv[.gz] files inside; expected {HOW_TO_GET}")
            files.extend(found)
        elif p.is_file():
            files.append(p)
        else:
            raise DataMissingError(p, HOW_TO_GET)
    return files


def open_text(path: Path) -> IO[str]:
    """Open a plain or gzip text file (decided by the magic bytes, not the name)."""
    with open(path, "rb") as fh:
        magic = fh.read(2)
    if magic == b"\x1f\x8b":
        return gzip.open(path, "rt", encoding="utf-8", errors="replace", newline="")
    return open(path, encoding="utf-8", errors="replace", newline="")


def iter_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(1-based line number, line without its end-of-line) for every non-blank line."""
    with open_text(path) as fh:
        for n, line in enumerate(fh, 1):
            line = line.rstrip("\r\n")
            if line.strip():
                yield n, line


def detect(
    inputs: str | Path | Sequence[str | Path],
    column: str | None = None,
    id_column: str | None = None,
    sources: tuple[str, ...] | None = DEFAULT_SOURCES,
) -> SourceSpec:
    """Find the files, their (single) format and the columns to use, looking at the first records."""
    files = discover(inputs)
    fmts = {_fmt_of(f) or "jsonl" for f in files}
    if len(fmts) > 1:
        raise InputFormatError(files[0], None, "files of one format (all JSONL or all TSV)", got=str(sorted(fmts)))
    fmt = fmts.pop()
    first = files[0]
    if fmt == "tsv":
        with open_text(first) as fh:
            header = tuple(fh.readline().rstrip("\r\n").split("\t"))
        keys: set[str] = set(header)
    else:
        header = ()
        keys = set()
        for n, line in iter_lines(first):
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            if isinstance(obj, dict):
                keys |= set(obj)
            if n > 200:
                break
    field_column = column or next((c for c in FIELD_COLUMNS if c in keys), None)
    idc = id_column or next((c for c in ID_COLUMNS if c in keys), None)
    if field_column is None or (column and keys and column not in keys):
        raise InputFormatError(first, 1 if fmt == "tsv" else None,
                               f"a field-of-study column ({column or ' / '.join(FIELD_COLUMNS)})",
                               got=", ".join(sorted(keys)) or "no readable record")
    if idc is None or (id_column and keys and id_column not in keys):
        raise InputFormatError(first, 1 if fmt == "tsv" else None,
                               f"a paper id column ({id_column or ' / '.join(ID_COLUMNS)})",
                               got=", ".join(sorted(keys)) or "no readable record")
    return SourceSpec(tuple(files), fmt, field_column, idc, sources, header)


@dataclass
class Parsed:
    """One record as the validation rules see it (the Python twin of the SQL in cooccurrence)."""

    issue: str | None
    paper_id: str | None = None
    mask: int = 0
    unknown: tuple[str, ...] = ()
    detail: str = ""

    @property
    def counted(self) -> bool:
        return self.issue in (None, "unknown_field")


def _names_to_mask(names: list[str]) -> tuple[int, tuple[str, ...]]:
    mask, unknown = 0, []
    for name in names:
        key = name_key(name)
        field = KEY_TO_FIELD.get(key)
        if field is not None:
            mask |= 1 << FIELD_INDEX[field]
        elif key not in EXTRA_KEYS:
            unknown.append(name)
    return mask, tuple(sorted(set(unknown)))


def _finish(pid: str, names: list[str]) -> Parsed:
    mask, unknown = _names_to_mask(names)
    if unknown:
        return Parsed("unknown_field", pid, mask, unknown, f"unknown field name(s) {list(unknown)}")
    return Parsed(None, pid, mask)


def parse_json_line(line: str, spec: SourceSpec) -> Parsed:
    """Apply the validation rules to one JSONL line."""
    try:
        obj = json.loads(line)
    except ValueError as exc:
        return Parsed("malformed_json", detail=f"not valid JSON ({exc.msg})")
    if not isinstance(obj, dict):
        return Parsed("not_an_object", detail=f"a JSON {type(obj).__name__}, not an object")
    raw_id = obj.get(spec.id_column)
    if raw_id is None or raw_id == "":
        return Parsed("missing_id", detail=f"no {spec.id_column!r}")
    if isinstance(raw_id, bool) or not isinstance(raw_id, str | int):
        return Parsed("wrong_type", detail=f"{spec.id_column!r} is a {type(raw_id).__name__}, not a string/int")
    pid = str(raw_id)
    value = obj.get(spec.field_column)
    if value is None:
        return Parsed(None, pid, 0)
    if not isinstance(value, list):
        return Parsed("wrong_type", pid, detail=f"{spec.field_column!r} is a {type(value).__name__}, not a list")
    names: list[str] = []
    for item in value:
        if isinstance(item, dict):
            if spec.sources is not None and item.get("source") not in spec.sources:
                continue
            item = item.get("category")
        if not isinstance(item, str):
            return Parsed("wrong_type", pid, detail=f"{spec.field_column!r} holds a {type(item).__name__}")
        names.append(item)
    return _finish(pid, names)


def parse_tsv_line(line: str, spec: SourceSpec) -> Parsed:
    """Apply the validation rules to one TSV data line (no quoting, tab separated)."""
    cols = line.split("\t")
    if len(cols) != len(spec.header):
        return Parsed("malformed_row", detail=f"{len(cols)} tab-separated columns, header has {len(spec.header)}")
    pid = cols[spec.header.index(spec.id_column)]
    if pid == "":
        return Parsed("missing_id", detail=f"empty {spec.id_column!r}")
    value = cols[spec.header.index(spec.field_column)].strip(" ")
    if value == "":
        return Parsed(None, pid, 0)
    if not _PYLIST.match(value):
        return Parsed("wrong_type", pid, detail=f"{spec.field_column!r} is not a list of quoted names: {value[:60]!r}")
    names = [a or b for a, b in _PYLIST_ITEM.findall(value)]
    return _finish(pid, names)


def iter_parsed(path: Path, spec: SourceSpec) -> Iterator[tuple[int, str, Parsed]]:
    """(line number, raw line, parsed record) for every data line of one file."""
    lines = iter_lines(path)
    if spec.fmt == "tsv":
        next(lines, None)  # header
        for n, line in lines:
            yield n, line, parse_tsv_line(line, spec)
    else:
        for n, line in lines:
            yield n, line, parse_json_line(line, spec)


EXPECTED = {
    "malformed_json": "one JSON object per line",
    "malformed_row": "as many tab-separated columns as the header",
    "not_an_object": "a JSON object per line",
    "missing_id": "a non-empty paper id",
    "wrong_type": "a string/int id and a list (or null) of field names",
    "unknown_field": "field names among the 19 MAG fields",
}
