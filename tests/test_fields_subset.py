"""The medicine-related subset: selection, dedup by id and by text hash, body text, resume."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from medibio.fields.subset import write_subset

FIX = Path(__file__).parent / "fixtures" / "fields"
GROUP = ["Medicine", "Biology", "Chemistry", "Psychology"]


def _rows(out: Path) -> list[dict]:
    rows = []
    for shard in sorted(out.glob("part-*.jsonl.gz")):
        with gzip.open(shard, "rt") as fh:
            rows.extend(json.loads(line) for line in fh)
    return rows


def test_abstract_subset_dedups_ids_and_texts(tmp_path):
    rep = write_subset(FIX / "texts.jsonl", tmp_path / "out", "medicine", fields=GROUP, shard_size=2, threads=1)
    assert rep.selected_records == 6  # physics and no-field papers left out
    assert rep.duplicate_ids == 1 and rep.without_text == 1 and rep.duplicate_texts == 1
    rows = _rows(tmp_path / "out")
    assert [r["id"] for r in rows] == ["10", "11", "16"]  # "cells divide." of 12 duplicates 11's text
    assert rows[0] == {"id": "10", "fields": ["Medicine"], "abstract": "Aspirin lowers fever."}
    assert rep.written == 3 and rep.shards == ["part-00000.jsonl.gz", "part-00001.jsonl.gz"]
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["written"] == 3 and manifest["fields"] == GROUP


def test_body_and_text_source_join(tmp_path):
    rep = write_subset(FIX / "texts.jsonl", tmp_path / "o", fields=GROUP, text="both",
                       text_source=FIX / "bodies.jsonl", threads=1)
    rows = {r["id"]: r for r in _rows(tmp_path / "o")}
    assert sorted(rows) == ["10", "11", "12", "14", "16"]
    assert rows["11"]["body"] == "Mitosis has phases.\nThen cytokinesis."  # S2ORC body_text paragraphs
    assert rows["14"] == {"id": "14", "fields": ["Medicine", "Psychology"], "body": "Stress and blood pressure."}
    assert rows["16"]["body"] == "Full text on statins." and rows["16"]["abstract"] == "Statins and the heart."
    assert rep.duplicate_texts == 0


def test_resume_and_refuse_other_selection(tmp_path):
    out = tmp_path / "r"
    first = write_subset(FIX / "texts.jsonl", out, fields=GROUP, shard_size=1, threads=1)
    (out / "part-00002.jsonl.gz").unlink()
    (out / "manifest.json").unlink()  # simulate a crash before the end
    again = write_subset(FIX / "texts.jsonl", out, fields=GROUP, shard_size=1, threads=1)
    assert again.shards_reused == 2 and again.written == first.written == 3
    assert [r["id"] for r in _rows(out)] == ["10", "11", "16"]
    with pytest.raises(ValueError, match="another selection"):
        write_subset(FIX / "texts.jsonl", out, fields=["Medicine"], shard_size=1, threads=1)


def test_group_derived_from_c_on_real_sample(data_root, tmp_path):
    rep = write_subset(data_root / "s2orc" / "v2020-07-05_metadata_sample.jsonl", tmp_path / "m", "medicine",
                       threads=1)
    assert rep.fields == GROUP
    rows = _rows(tmp_path / "m")
    assert len(rows) == rep.written > 100
    assert all(set(r["fields"]) & set(GROUP) and r["abstract"] for r in rows)
    assert len({r["id"] for r in rows}) == len(rows)
