"""Write the papers of a field group (e.g. the medicine-related subset) as pretraining shards.

One DuckDB query selects the counted records whose field mask meets the group, keeps one record per paper
id (the longest text among duplicates), drops records without text, keeps one paper per text hash (the
smallest id; the hash is MD5 of the lower-cased, whitespace-collapsed text) and orders by id. The result is
streamed into ``part-NNNNN.jsonl.gz`` shards of ``shard_size`` records, each written atomically; because
the order is deterministic, a rerun skips shards already on disk (resume) and ``manifest.json`` records
counts and parameters. Records: ``{"id", "fields", "abstract"?, "body"?}`` (what ``medibio.pretrain.corpus``
reads).

Text fields: ``abstract`` (S2ORC metadata, S2AG abstracts); body = S2ORC ``body_text`` paragraphs or S2AG
``content.text``. When the text lives in other files (S2ORC ``pdf_parses``, S2AG ``s2orc``), pass them as
``text_source``: they are joined on the paper id.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from medibio.core.atomic import atomic_open, write_json
from medibio.core.errors import InputFormatError
from medibio.fields.analysis import analyse
from medibio.fields.cooccurrence import connect, rec_ctes, sql_list
from medibio.fields.fos import fields_of, mask_of, resolve
from medibio.fields.reader import DEFAULT_SOURCES, ID_COLUMNS, SourceSpec, detect, discover, iter_lines

TEXT_CHOICES = ("abstract", "body", "both")
MANIFEST = "manifest.json"
PARAMS = "params.json"
_BODY = ("coalesce(nullif(array_to_string(json_extract_string({j}, '$.body_text[*].text'), chr(10)), ''), "
         "{j}->>'$.content.text', {j}->>'$.body')")


@dataclass
class SubsetReport:
    """What a subset run selected and wrote."""

    group: str
    fields: list[str]
    text: str
    out_dir: str
    selected_records: int = 0
    duplicate_ids: int = 0
    without_text: int = 0
    duplicate_texts: int = 0
    written: int = 0
    shards: list[str] = field(default_factory=list)
    shards_reused: int = 0
    inputs: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _text_sql(text: str, j: str) -> tuple[str, str]:
    abstract = f"nullif(trim({j}->>'$.abstract'), '')"
    body = f"nullif(trim({_BODY.format(j=j)}), '')"
    return (abstract if text in ("abstract", "both") else "NULL"), (body if text in ("body", "both") else "NULL")


def build_subset_sql(spec: SourceSpec, group_mask: int, text: str, text_source: SourceSpec | None = None) -> str:
    """Selection, id dedup, text dedup and order; returns (stage counts are read by separate queries)."""
    if spec.fmt != "jsonl" and text_source is None:
        raise InputFormatError(spec.files[0], None, "JSONL metadata with text fields (or a text_source)",
                               got=f"{spec.fmt} without text")
    abstract, body = _text_sql(text, "j")
    if text_source is None:
        texts = f"SELECT pid, mask, {abstract} AS abstract, {body} AS body FROM sel"
    else:
        ta, tb = _text_sql(text, "t.json")
        files = sql_list([str(f) for f in text_source.files])
        own_a, own_b = _text_sql(text, "sel.j") if spec.fmt == "jsonl" else ("NULL", "NULL")
        texts = f"""
          SELECT sel.pid, sel.mask, coalesce({own_a}, tx.abstract) AS abstract, coalesce({own_b}, tx.body) AS body
          FROM sel LEFT JOIN (
            SELECT t.json->>'$."{text_source.id_column}"' AS tid, {ta} AS abstract, {tb} AS body
            FROM read_json_objects({files}, format='newline_delimited', ignore_errors=true) t
          ) tx ON tx.tid = sel.pid"""
    joined = "CASE WHEN abstract IS NOT NULL AND body IS NOT NULL THEN abstract || chr(10) || chr(10) || body " \
             "ELSE coalesce(abstract, body) END"
    return f"""
    WITH {rec_ctes(spec).strip()},
    sel AS (SELECT pid, mask, j FROM rec WHERE counted AND (mask & {group_mask}) <> 0),
    texts AS ({texts}),
    by_id AS (
      SELECT pid, bit_or(mask) AS mask, count(*) AS copies,
             arg_max(abstract, length(coalesce(abstract, '')) + length(coalesce(body, ''))) AS abstract,
             arg_max(body, length(coalesce(abstract, '')) + length(coalesce(body, ''))) AS body
      FROM texts GROUP BY pid
    ),
    with_text AS (
      SELECT *, md5(lower(regexp_replace(trim({joined}), '\\s+', ' ', 'g'))) AS h
      FROM by_id WHERE abstract IS NOT NULL OR body IS NOT NULL
    ),
    by_text AS (
      SELECT h, min(pid) AS pid, count(*) AS n FROM with_text GROUP BY h
    )
    SELECT 'stats' AS kind, NULL AS pid, NULL AS mask, NULL AS abstract, NULL AS body,
           (SELECT count(*) FROM sel) AS selected, (SELECT sum(copies) - count(*) FROM by_id) AS dup_ids,
           (SELECT count(*) FROM by_id) - (SELECT count(*) FROM with_text) AS no_text,
           (SELECT sum(n) - count(*) FROM by_text) AS dup_texts
    UNION ALL
    SELECT * FROM (
      SELECT 'row', w.pid, w.mask, w.abstract, w.body, NULL, NULL, NULL, NULL
      FROM with_text w JOIN by_text b ON w.h = b.h AND w.pid = b.pid
      ORDER BY w.pid
    )
    """


def _group_fields(inputs: Any, group: str | None, fields: Sequence[str] | None, **kw: Any) -> tuple[str, list[str]]:
    if fields:
        chosen = [resolve(f) for f in fields]
        return group or "custom", chosen

    name = (group or "medicine").lower()
    seed = resolve(name.replace("_", " "))
    analysis = analyse(inputs, seeds=[seed] + (["Mathematics"] if seed != "Mathematics" else []), **kw)
    return name, list(analysis.groups[name].fields)


def write_subset(
    inputs: str | Path | Sequence[str | Path],
    out_dir: str | Path,
    group: str | None = "medicine",
    *,
    fields: Sequence[str] | None = None,
    text: str = "abstract",
    column: str | None = None,
    id_column: str | None = None,
    text_source: str | Path | Sequence[str | Path] | None = None,
    shard_size: int = 100_000,
    sources: tuple[str, ...] | None = DEFAULT_SOURCES,
    memory_limit: str = "1GB",
    threads: int | None = None,
) -> SubsetReport:
    """Select the papers of ``group`` (derived from C on the same inputs) or of explicit ``fields``."""
    if text not in TEXT_CHOICES:
        raise ValueError(f"text must be one of {TEXT_CHOICES}, got {text!r}")
    spec = detect(inputs, column, id_column, sources)
    name, chosen = _group_fields(spec, group, fields, memory_limit=memory_limit, threads=threads)
    tspec = None
    if text_source is not None:
        tspec = _text_spec(discover(text_source), id_column)
    out = Path(out_dir)
    report = SubsetReport(name, chosen, text, str(out), inputs=[str(f) for f in spec.files])
    params = {"fields": chosen, "text": text, "inputs": report.inputs, "shard_size": shard_size,
              "text_source": [str(f) for f in tspec.files] if tspec else None}
    if _resume_check(out, params):
        return SubsetReport(**json.loads((out / MANIFEST).read_text(encoding="utf-8")))
    con = connect(memory_limit, threads, None)
    try:
        cur = con.execute(build_subset_sql(spec, mask_of(chosen), text, tspec))
        stats = cur.fetchone()
        assert stats is not None and stats[0] == "stats"
        report.selected_records = int(stats[5] or 0)
        report.duplicate_ids = int(stats[6] or 0)
        report.without_text = int(stats[7] or 0)
        report.duplicate_texts = int(stats[8] or 0)
        shard = 0
        while True:
            rows = cur.fetchmany(shard_size)
            if not rows:
                break
            path = out / f"part-{shard:05d}.jsonl.gz"
            if path.exists():
                report.shards_reused += 1
            else:
                _write_shard(path, rows)
            report.shards.append(path.name)
            report.written += len(rows)
            shard += 1
    finally:
        con.close()
    write_json(out / MANIFEST, report.as_dict())
    return report


def _resume_check(out: Path, params: dict[str, Any]) -> bool:
    """True when ``out`` already holds this exact selection; refuse to mix shards of different selections."""
    ppath = out / PARAMS
    if ppath.exists():
        old = json.loads(ppath.read_text(encoding="utf-8"))
        if old != params:
            raise ValueError(f"{out} holds shards of another selection ({ppath}); use a new output folder")
        return (out / MANIFEST).exists()
    write_json(ppath, params)
    return False


def _text_spec(files: list[Path], id_column: str | None) -> SourceSpec:
    """Text files need an id column only; detect it from the first records."""
    first: dict[str, Any] = {}
    for n, line in iter_lines(files[0]):
        try:
            first = json.loads(line)
        except ValueError as exc:
            raise InputFormatError(files[0], n, "one JSON object per line", line[:80]) from exc
        break
    idc = id_column or next((c for c in ID_COLUMNS if c in first), None)
    if idc is None:
        raise InputFormatError(files[0], 1, f"a paper id column ({' / '.join(ID_COLUMNS)})", ", ".join(first))
    return SourceSpec(tuple(files), "jsonl", "", idc, None)


def _write_shard(path: Path, rows: list[tuple[Any, ...]]) -> None:
    with atomic_open(path, "wb") as fh, gzip.GzipFile(fileobj=fh, mode="wb", mtime=0) as gz:
        for _kind, pid, mask, abstract, body, *_ in rows:
            rec: dict[str, Any] = {"id": pid, "fields": fields_of(int(mask))}
            if abstract is not None:
                rec["abstract"] = abstract
            if body is not None:
                rec["body"] = body
            gz.write((json.dumps(rec, ensure_ascii=False) + "\n").encode("utf-8"))
