"""Counts, C and bad-record reporting of medibio.fields on hand-made records (DuckDB and Python agree)."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest

from medibio.core.errors import DataMissingError, InputFormatError
from medibio.fields import fos
from medibio.fields.cooccurrence import count_fields, count_fields_python
from medibio.fields.reader import detect

FIX = Path(__file__).parent / "fixtures" / "fields"
RECORDS = FIX / "records.jsonl"


@pytest.fixture(scope="module")
def counts():
    return count_fields(RECORDS, threads=1)


def test_fos_names_and_masks():
    assert len(fos.FIELDS) == 19 and len(set(fos.FIELDS)) == 19
    assert fos.canonical("computer_science") == "Computer Science"
    assert fos.canonical(" political-science ") == "Political Science"
    assert fos.canonical("Education") is None
    assert fos.fields_of(fos.mask_of(["Physics", "Medicine"])) == ["Medicine", "Physics"]
    with pytest.raises(ValueError, match="expected one of"):
        fos.resolve("Medicin")


def test_totals_nulls_duplicates(counts):
    assert counts.records == 19  # blank line ignored
    assert counts.records_counted == 13
    assert counts.papers == 11
    assert counts.duplicates == 2  # ids 2 and 6 repeated
    assert counts.no_field == 3  # null, [] and a record without the key
    assert counts.papers_with_field == 8


def test_issue_counts_and_examples(counts):
    assert counts.issue_counts() == {"malformed_json": 1, "malformed_row": 0, "not_an_object": 1,
                                     "missing_id": 1, "wrong_type": 3, "unknown_field": 1}
    assert counts.unknown_names() == {"Medicin": 1}
    lines = {(e.issue, e.line) for e in counts.examples}
    assert lines == {("malformed_json", 13), ("not_an_object", 15), ("missing_id", 16), ("wrong_type", 11),
                     ("wrong_type", 12), ("wrong_type", 18), ("unknown_field", 10)}
    assert all(e.file == str(RECORDS) for e in counts.examples)


def test_n_and_c_values(counts):
    n_i, n_ij, single, c = counts.n_i(), counts.n_ij(), counts.single(), counts.c_matrix()
    assert n_i["Medicine"] == 4 and n_i["Biology"] == 3 and n_i["Chemistry"] == 3 and n_i["Psychology"] == 1
    assert n_ij.loc["Medicine", "Biology"] == 2 and n_ij.loc["Biology", "Medicine"] == 2
    assert single["Medicine"] == 1 and single["Chemistry"] == 1 and single["Biology"] == 0
    assert c.loc["Medicine", "Medicine"] == pytest.approx(0.25)  # diagonal: single-field share
    assert c.loc["Medicine", "Biology"] == pytest.approx(0.5)
    assert c.loc["Biology", "Medicine"] == pytest.approx(2 / 3)  # C is not symmetric
    assert c.loc["Psychology", "Medicine"] == pytest.approx(1.0)
    assert c.loc["Physics", "Physics"] == pytest.approx(1.0)
    assert c.loc["Art"].sum() == 0.0  # field without papers: zero row, no NaN
    # names are normalised: "psychology" and "computer_science" count
    assert n_ij.loc["Mathematics", "Computer Science"] == 1
    tidy = counts.tidy()
    assert len(tidy) == 19 * 19
    row = tidy[(tidy.field_i == "Medicine") & (tidy.field_j == "Medicine")].iloc[0]
    assert row.kind == "single" and row.n_ij == 1 and row.n_i == 4


def test_duckdb_matches_python_reference(counts):
    ref = count_fields_python(RECORDS)
    assert ref.masks == counts.masks
    assert ref.issue_counts() == counts.issue_counts()


def test_no_dedup_counts_every_record():
    c = count_fields(RECORDS, dedup=False, threads=1)
    assert c.papers == 13 and c.duplicates == 0
    assert c.n_i()["Medicine"] == 5
    assert count_fields_python(RECORDS, dedup=False).masks == c.masks


def test_strict_names_file_and_line():
    with pytest.raises(InputFormatError) as err:
        count_fields(RECORDS, strict=True, threads=1)
    assert err.value.line == 10 and err.value.path == RECORDS
    assert f"{RECORDS}:10" in str(err.value)


def test_tsv_python_list_strings():
    c = count_fields(FIX / "records.tsv", threads=1)
    assert c.spec.fmt == "tsv" and c.spec.field_column == "mag_fos" and c.spec.id_column == "pid"
    assert c.issue_counts()["wrong_type"] == 1 and c.issue_counts()["malformed_row"] == 1
    assert c.papers == 4 and c.duplicates == 1
    assert c.n_ij().loc["Medicine", "Chemistry"] == 1  # fields of the duplicate id are merged
    assert {(e.issue, e.line) for e in c.examples} == {("wrong_type", 5), ("malformed_row", 6)}
    assert count_fields_python(FIX / "records.tsv").masks == c.masks


def test_s2ag_objects_and_sources():
    c = count_fields(FIX / "s2ag.jsonl", threads=1)
    assert c.spec.field_column == "s2fieldsofstudy" and c.spec.id_column == "corpusid"
    assert c.n_i()["Medicine"] == 1 and c.n_i()["Biology"] == 0  # s2-fos-model ignored by default
    assert c.n_i()["Psychology"] == 1 and c.issue_counts()["unknown_field"] == 0  # Education: S2-only
    assert c.issue_counts()["wrong_type"] == 1
    every = count_fields(FIX / "s2ag.jsonl", sources=None, threads=1)
    assert every.n_ij().loc["Medicine", "Biology"] == 1
    assert count_fields_python(FIX / "s2ag.jsonl", sources=None).masks == every.masks


def test_gzip_folder_of_shards(tmp_path):
    lines = RECORDS.read_text().splitlines(keepends=True)
    (tmp_path / "a").mkdir()
    with gzip.open(tmp_path / "a" / "part1.jsonl.gz", "wt") as fh:
        fh.writelines(lines[:10])
    shutil.copy(RECORDS, tmp_path / "a" / "part2.jsonl")
    (tmp_path / "a" / "manifest.json").write_text("{}")
    c = count_fields(tmp_path / "a", threads=1)
    assert len(c.spec.files) == 2
    assert c.records == 19 + 10
    assert c.papers == 11  # the first ten lines repeat ids of part2
    assert count_fields_python(tmp_path / "a").masks == c.masks


def test_column_option_and_missing_inputs(tmp_path):
    p = tmp_path / "x.jsonl"
    p.write_text('{"pid": "1", "fos": ["Medicine"]}\n')
    c = count_fields(p, column="fos", id_column="pid", threads=1)
    assert c.n_i()["Medicine"] == 1
    with pytest.raises(InputFormatError, match="field-of-study column"):
        detect(p)
    with pytest.raises(DataMissingError):
        detect(tmp_path / "nope.jsonl")
