"""Field co-occurrence counts N_i, N_ij and single-field counts in one streaming DuckDB pass.

Design (for 81.1M papers on a laptop-sized machine): DuckDB reads the shards in parallel, turns each
paper's field list into a 19-bit mask and aggregates. Papers are deduplicated by a 64-bit hash of their
id (``GROUP BY`` spills to disk under ``memory_limit``); the deduplicated papers are then reduced to a
histogram ``mask -> papers``, which has at most a few thousand rows. Every quantity of the analysis (N_i,
N_ij, single-field papers, union shares of groups) is a weighted sum over that histogram, computed in
numpy. Bad records are counted per file and category in the same pass (a second grouping set); only when
some exist does a Python pass re-read the affected files to report file, line and an example, and to
fail in strict mode. See ``docs/fields.md``.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from medibio.core.errors import InputFormatError
from medibio.core.paths import cache_root
from medibio.fields.fos import FIELDS, SQL_NAME_KEY, sql_key_map
from medibio.fields.reader import DEFAULT_SOURCES, EXPECTED, ISSUES, SourceSpec, detect, iter_parsed

_COLUMN_NAME = re.compile(r"^[A-Za-z0-9_]+$")
_LINE_DELIM = "\\x01\\x02"  # never present in text: read_csv returns whole lines


@dataclass
class IssueExample:
    """One bad record: where it is, its category and what was wrong."""

    file: str
    line: int
    issue: str
    detail: str
    text: str

    def as_dict(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "issue": self.issue, "detail": self.detail,
                "text": self.text[:200]}


@dataclass
class FieldCounts:
    """Result of one pass: the deduplicated mask histogram plus per-file record and issue counts."""

    spec: SourceSpec
    masks: dict[int, int]  # mask -> papers (after dedup)
    per_file: pd.DataFrame  # file, issue (None = clean), unknown (names), records
    dedup: bool = True
    examples: list[IssueExample] = field(default_factory=list)
    elapsed_s: float = 0.0
    engine: str = "duckdb"

    # -- totals -------------------------------------------------------------------------------------------
    @property
    def records(self) -> int:
        """Non-blank data lines read."""
        return int(self.per_file["records"].sum())

    @property
    def records_counted(self) -> int:
        """Records that entered the counts (clean ones and those with unknown names)."""
        ok = self.per_file["issue"].isna() | (self.per_file["issue"] == "unknown_field")
        return int(self.per_file.loc[ok, "records"].sum())

    @property
    def papers(self) -> int:
        """Distinct papers counted (after dedup by id)."""
        return int(sum(self.masks.values()))

    @property
    def duplicates(self) -> int:
        """Counted records that repeated an id already seen (their fields are merged into the first)."""
        return self.records_counted - self.papers

    @property
    def no_field(self) -> int:
        """Papers with no MAG field (null/empty list, or only unknown or S2-only names)."""
        return int(self.masks.get(0, 0))

    @property
    def papers_with_field(self) -> int:
        return self.papers - self.no_field

    def issue_counts(self) -> dict[str, int]:
        """Records per issue category (all categories, zeros included)."""
        got = self.per_file.dropna(subset=["issue"]).groupby("issue")["records"].sum()
        return {k: int(got.get(k, 0)) for k in ISSUES}

    def unknown_names(self) -> dict[str, int]:
        """Records per combination of unknown names (e.g. ``'Medicin'``)."""
        sub = self.per_file[self.per_file["issue"] == "unknown_field"]
        return {str(k): int(v) for k, v in sub.groupby("unknown")["records"].sum().sort_values(ascending=False).items()}

    # -- matrices -----------------------------------------------------------------------------------------
    def _bits(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        masks = np.array(sorted(self.masks), dtype=np.int64)
        weights = np.array([self.masks[m] for m in masks], dtype=np.int64)
        bits = (masks[:, None] >> np.arange(len(FIELDS))) & 1
        return masks, weights, bits

    def n_i(self) -> pd.Series:
        """N_i: papers carrying field i (with or without other fields)."""
        _, w, b = self._bits()
        return pd.Series(b.T @ w, index=list(FIELDS), name="N_i")

    def n_ij(self) -> pd.DataFrame:
        """N_ij: papers carrying both i and j (diagonal: N_i)."""
        _, w, b = self._bits()
        return pd.DataFrame(b.T @ (b * w[:, None]), index=list(FIELDS), columns=list(FIELDS))

    def single(self) -> pd.Series:
        """S_i: papers whose only field is i."""
        return pd.Series([int(self.masks.get(1 << i, 0)) for i in range(len(FIELDS))], index=list(FIELDS),
                         name="single")

    def c_matrix(self) -> pd.DataFrame:
        """C_ij = N_ij / N_i off the diagonal, C_ii = S_i / N_i (rows: field i, columns: field j)."""
        n = self.n_ij().to_numpy(dtype=float, copy=True)
        np.fill_diagonal(n, self.single().to_numpy(dtype=float))
        ni = self.n_i().to_numpy(dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            c = np.where(ni[:, None] > 0, n / ni[:, None], 0.0)
        return pd.DataFrame(c, index=list(FIELDS), columns=list(FIELDS))

    def tidy(self) -> pd.DataFrame:
        """One row per (field_i, field_j): n_ij (diagonal: single-field papers), n_i, c_ij."""
        n = self.n_ij()
        s = self.single()
        ni = self.n_i()
        c = self.c_matrix()
        rows = []
        for fi in FIELDS:
            for fj in FIELDS:
                rows.append({"field_i": fi, "field_j": fj, "kind": "single" if fi == fj else "pair",
                             "n_ij": int(s[fi] if fi == fj else n.loc[fi, fj]), "n_i": int(ni[fi]),
                             "c_ij": float(c.loc[fi, fj])})
        return pd.DataFrame(rows)

    def summary(self) -> dict[str, Any]:
        """Totals and issues as plain JSON-able values."""
        return {
            "input": self.spec.describe(),
            "files": len(self.spec.files),
            "field_column": self.spec.field_column,
            "id_column": self.spec.id_column,
            "engine": self.engine,
            "records": self.records,
            "records_counted": self.records_counted,
            "papers": self.papers,
            "duplicates": self.duplicates if self.dedup else None,
            "no_field": self.no_field,
            "papers_with_field": self.papers_with_field,
            "multi_field": int(sum(v for m, v in self.masks.items() if m & (m - 1))),
            "issues": self.issue_counts(),
            "unknown_names": self.unknown_names(),
            "examples": [e.as_dict() for e in self.examples],
            "elapsed_s": round(self.elapsed_s, 3),
        }


# ---------------------------------------------------------------------------------------------------------
# SQL
def _check_column(name: str) -> str:
    if not _COLUMN_NAME.match(name):
        raise ValueError(f"column names must be letters, digits and '_': {name!r}")
    return name


def sql_list(values: Sequence[str]) -> str:
    return "[" + ", ".join("'" + str(v).replace("'", "''") + "'" for v in values) + "]"


def _source_sql(spec: SourceSpec) -> str:
    """SELECT file, issue0 (excluding problems), pid, names VARCHAR[] for each record."""
    files = sql_list([str(f) for f in spec.files])
    if spec.fmt == "tsv":
        idx_id = spec.header.index(spec.id_column) + 1
        idx_f = spec.header.index(spec.field_column) + 1
        header = "\t".join(spec.header).replace("'", "''")
        pylist = r"""^\[\s*(?:(?:'[^']*'|"[^"]*")\s*(?:,\s*(?:'[^']*'|"[^"]*")\s*)*)?\]$""".replace("'", "''")
        item = r"""'[^']*'|"[^"]*\"""".replace("'", "''")
        return f"""
        lines AS (
          SELECT filename AS file, string_split(line, chr(9)) AS cols
          FROM read_csv({files}, columns={{'line': 'VARCHAR'}}, delim=e'{_LINE_DELIM}', quote='', escape='',
                        header=false, auto_detect=false, filename=true, strict_mode=false)
          WHERE line IS NOT NULL AND trim(line) <> '' AND line <> '{header}'
        ),
        src AS (
          SELECT file,
            CASE WHEN len(cols) <> {len(spec.header)} THEN 'malformed_row'
                 WHEN cols[{idx_id}] = '' THEN 'missing_id'
                 WHEN trim(cols[{idx_f}]) <> '' AND NOT regexp_full_match(trim(cols[{idx_f}]), '{pylist}')
                   THEN 'wrong_type' END AS issue0,
            cols[{idx_id}] AS pid, NULL::JSON AS j,
            CASE WHEN len(cols) = {len(spec.header)} THEN
              list_transform(regexp_extract_all(trim(cols[{idx_f}]), '{item}'), lambda s: s[2:-2]) END AS names
          FROM lines
        )"""
    idc, fc = _check_column(spec.id_column), _check_column(spec.field_column)
    el_expr = "json_extract(fj, '$[*]')"
    if spec.sources is not None:
        el_expr = (f"list_filter({el_expr}, lambda x: json_type(x) <> 'OBJECT' "
                   f"OR list_contains({sql_list(spec.sources)}, x->>'$.source'))")
    return f"""
        raw AS (
          SELECT filename AS file, json AS j, json_extract(json, ['$."{idc}"', '$."{fc}"']) AS v
          FROM read_json_objects({files}, format='newline_delimited', ignore_errors=true, filename=true)
        ),
        typed AS (
          SELECT file, j, v[1] AS idj, v[2] AS fj, json_type(v[1]) AS idt, json_type(v[2]) AS ft FROM raw
        ),
        elems AS (
          SELECT *, CASE WHEN ft = 'ARRAY' THEN {el_expr} END AS el
          FROM typed
        ),
        src AS (
          SELECT file,
            CASE WHEN j IS NULL THEN 'malformed_json'
                 WHEN idt IS NULL AND ft IS NULL AND json_type(j) <> 'OBJECT' THEN 'not_an_object'
                 WHEN idt IS NULL OR idt = 'NULL' OR (idt = 'VARCHAR' AND idj->>'$' = '') THEN 'missing_id'
                 WHEN idt NOT IN ('VARCHAR', 'BIGINT', 'UBIGINT') THEN 'wrong_type'
                 WHEN ft IS NOT NULL AND ft NOT IN ('NULL', 'ARRAY') THEN 'wrong_type'
                 WHEN el IS NOT NULL AND list_count(names) < len(names) THEN 'wrong_type' END AS issue0,
            idj->>'$' AS pid, names, j
          FROM (SELECT *, list_transform(el, lambda x: CASE WHEN json_type(x) = 'VARCHAR' THEN x->>'$'
                     WHEN json_type(x) = 'OBJECT' AND json_type(x->'$.category') = 'VARCHAR'
                     THEN x->>'$.category' END) AS names FROM elems)
        )"""


def rec_ctes(spec: SourceSpec) -> str:
    """CTEs ending in ``rec``: one row per record with file, issue, unknown names, counted, pid, mask, j."""
    key = SQL_NAME_KEY.format(x="n")
    return f"""
    {_source_sql(spec).strip()},
    keyed AS (
      SELECT file, issue0, pid, names, j,
             CASE WHEN issue0 IS NULL THEN list_transform(names, lambda n: ({sql_key_map()})[{key}]) END AS bits
      FROM src
    ),
    rec AS (
      SELECT file,
        coalesce(issue0, CASE WHEN list_count(bits) < len(bits) THEN 'unknown_field' END) AS issue,
        CASE WHEN list_count(bits) < len(bits) THEN array_to_string(list_sort(list_distinct(
             list_filter(list_transform(names, lambda n: CASE WHEN ({sql_key_map()})[{key}] IS NULL THEN n END),
                         lambda x: x IS NOT NULL))), ' | ') END AS unknown,
        issue0 IS NULL AS counted,
        pid, j,
        coalesce(list_aggregate(bits, 'bit_or'), 0)::INTEGER AS mask
      FROM keyed
    )"""


def build_sql(spec: SourceSpec, dedup: bool = True) -> str:
    """The whole counting query; returns rows (kind, file, issue, unknown, mask, papers, records)."""
    group_key = "hash(pid)" if dedup else "mask"
    papers = "count(*)" if dedup else "sum(n)"
    return f"""
    WITH {rec_ctes(spec).strip()},
    g AS (
      SELECT file, issue, unknown, counted, {group_key} AS gkey, bit_or(mask) AS gmask, count(*) AS n,
             GROUPING(file) AS by_key
      FROM rec
      GROUP BY GROUPING SETS ((counted, {group_key}), (file, issue, unknown))
    )
    SELECT 'paper' AS kind, NULL AS file, NULL AS issue, NULL AS unknown, gmask AS mask, {papers} AS papers,
           sum(n) AS records
    FROM g WHERE by_key = 1 AND counted GROUP BY gmask
    UNION ALL
    SELECT 'file', file, issue, unknown, NULL, NULL, n FROM g WHERE by_key = 0
    """


def connect(memory_limit: str, threads: int | None, temp_dir: str | Path | None) -> Any:
    import duckdb

    con = duckdb.connect()
    con.execute(f"SET memory_limit = '{memory_limit}'")
    if threads:
        con.execute(f"SET threads = {int(threads)}")
    con.execute("SET preserve_insertion_order = false")
    tmp = Path(temp_dir) if temp_dir else cache_root() / "duckdb_tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    con.execute(f"SET temp_directory = '{tmp}'")
    return con


def count_fields(
    inputs: str | Path | Sequence[str | Path] | SourceSpec,
    column: str | None = None,
    id_column: str | None = None,
    *,
    dedup: bool = True,
    strict: bool = False,
    examples: int = 5,
    sources: tuple[str, ...] | None = DEFAULT_SOURCES,
    memory_limit: str = "1GB",
    threads: int | None = None,
    temp_dir: str | Path | None = None,
) -> FieldCounts:
    """Count fields with DuckDB in one pass; bad records are reported (strict: the first one raises)."""
    spec = inputs if isinstance(inputs, SourceSpec) else detect(inputs, column, id_column, sources)
    t0 = time.perf_counter()
    con = connect(memory_limit, threads, temp_dir)
    try:
        df = con.execute(build_sql(spec, dedup)).df()
    finally:
        con.close()
    papers = df[df["kind"] == "paper"]
    masks = {int(m): int(p) for m, p in zip(papers["mask"], papers["papers"], strict=True)}
    per_file = df[df["kind"] == "file"][["file", "issue", "unknown", "records"]].reset_index(drop=True)
    per_file["records"] = per_file["records"].astype("int64")
    per_file = per_file.astype({"issue": object, "unknown": object})
    per_file = per_file.where(per_file.notna(), None)
    result = FieldCounts(spec, masks, per_file, dedup=dedup, elapsed_s=time.perf_counter() - t0)
    bad = per_file.dropna(subset=["issue"])
    if len(bad):
        if strict:
            raise_first_issue(spec, set(bad["file"]))
        result.examples = locate_examples(spec, bad, examples)
    result.elapsed_s = time.perf_counter() - t0
    return result


# ---------------------------------------------------------------------------------------------------------
# Python side: examples with line numbers, strict mode, reference implementation
def raise_first_issue(spec: SourceSpec, files: set[str]) -> None:
    """Raise InputFormatError for the first bad record (file order, then line order)."""
    for path in spec.files:
        if str(path) not in files:
            continue
        for n, line, rec in iter_parsed(path, spec):
            if rec.issue is not None:
                raise InputFormatError(path, n, EXPECTED[rec.issue], got=f"{rec.detail}: {line[:80]}")


def locate_examples(spec: SourceSpec, bad: pd.DataFrame, per_issue: int) -> list[IssueExample]:
    """First ``per_issue`` examples of each issue category, with file and line (re-reads only bad files)."""
    remaining = bad.groupby(["file", "issue"])["records"].sum().to_dict()
    wanted = Counter({issue: per_issue for issue in bad["issue"].unique()})
    out: list[IssueExample] = []
    for path in spec.files:
        todo = {i for (f, i), v in remaining.items() if f == str(path) and v > 0 and wanted[i] > 0}
        if not todo:
            continue
        left = {i: remaining[(str(path), i)] for i in todo}
        for n, line, rec in iter_parsed(path, spec):
            if rec.issue in left:
                left[rec.issue] -= 1
                if wanted[rec.issue] > 0:
                    wanted[rec.issue] -= 1
                    out.append(IssueExample(str(path), n, rec.issue, rec.detail, line))
                if all(v <= 0 or wanted[i] <= 0 for i, v in left.items()):
                    break
    order = {k: i for i, k in enumerate(ISSUES)}
    return sorted(out, key=lambda e: (order[e.issue], e.file, e.line))


def count_fields_python(
    inputs: str | Path | Sequence[str | Path] | SourceSpec,
    column: str | None = None,
    id_column: str | None = None,
    *,
    dedup: bool = True,
    sources: tuple[str, ...] | None = DEFAULT_SOURCES,
    limit: int | None = None,
) -> FieldCounts:
    """Plain-Python reference (json.loads per line, dict of ids): the benchmark baseline and a test oracle."""
    spec = inputs if isinstance(inputs, SourceSpec) else detect(inputs, column, id_column, sources)
    t0 = time.perf_counter()
    by_id: dict[str, int] = {}
    masks: Counter[int] = Counter()
    per_file: Counter[tuple[str, str | None, str | None]] = Counter()
    seen = 0
    for path in spec.files:
        for _n, _line, rec in iter_parsed(path, spec):
            per_file[(str(path), rec.issue, " | ".join(rec.unknown) or None)] += 1
            if rec.counted:
                if dedup:
                    assert rec.paper_id is not None
                    by_id[rec.paper_id] = by_id.get(rec.paper_id, 0) | rec.mask
                else:
                    masks[rec.mask] += 1
            seen += 1
            if limit is not None and seen >= limit:
                break
        if limit is not None and seen >= limit:
            break
    if dedup:
        masks = Counter(by_id.values())
    rows = [{"file": f, "issue": i, "unknown": u, "records": c} for (f, i, u), c in per_file.items()]
    df = pd.DataFrame(rows, columns=["file", "issue", "unknown", "records"])
    return FieldCounts(spec, dict(masks), df, dedup=dedup, elapsed_s=time.perf_counter() - t0, engine="python")
