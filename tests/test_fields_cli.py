"""`medibio fields cooccurrence|subset` on the real S2ORC samples and on the hand-made fixtures."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from medibio.cli.main import app
from medibio.core.errors import InputFormatError

FIX = Path(__file__).parent / "fixtures" / "fields"
runner = CliRunner()


def test_cooccurrence_json_on_real_sample(data_root):
    sample = data_root / "s2orc" / "v2020-07-05_metadata_sample.jsonl"
    res = runner.invoke(app, ["fields", "cooccurrence", str(sample), "--json", "--threads", "1"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert len(data["fields"]) == 19 and len(data["c"]) == 19
    s = data["summary"]
    assert s["records"] == 1000 and s["no_field"] == 47 and s["multi_field"] == 71
    counts = {row["field"]: row["n_i"] for row in data["table"]}
    assert counts["Medicine"] == 217 and counts["Physics"] == 187 and counts["Geography"] == 3
    # the paper's claim holds on this sample: biology, chemistry, psychology are closest to medicine
    assert data["groups"]["medicine"]["related"] == ["Biology", "Chemistry", "Psychology"]


def test_cooccurrence_text_and_plots_on_real_samples(data_root, tmp_path):
    s2orc = data_root / "s2orc"
    res = runner.invoke(app, ["fields", "cooccurrence", str(s2orc / "v2020-07-05_metadata_sample.jsonl"),
                              "--plot", str(tmp_path), "--threads", "1"])
    assert res.exit_code == 0, res.output
    assert "group medicine: Medicine, Biology, Chemistry, Psychology" in res.output
    assert (tmp_path / "fig2_field_correlation.svg").stat().st_size > 0
    tsv = runner.invoke(app, ["fields", "cooccurrence", str(s2orc / "2019_metadata_sample.tsv"), "--json"])
    assert tsv.exit_code == 0 and json.loads(tsv.output)["summary"]["field_column"] == "mag_fos"
    s2ag = runner.invoke(app, ["fields", "cooccurrence", str(s2orc / "s2ag_samples" / "papers"), "--json"])
    assert s2ag.exit_code == 0 and json.loads(s2ag.output)["summary"]["records"] == 100


def test_bad_records_reported_then_strict_fails():
    res = runner.invoke(app, ["fields", "cooccurrence", str(FIX / "records.jsonl"), "--threads", "1"])
    assert res.exit_code == 0, res.output
    assert "malformed_json 1" in res.output and f"{FIX / 'records.jsonl'}:13: malformed_json" in res.output
    strict = runner.invoke(app, ["fields", "cooccurrence", str(FIX / "records.jsonl"), "--strict"])
    assert strict.exit_code != 0 and isinstance(strict.exception, InputFormatError)
    assert strict.exception.line == 10 and "records.jsonl:10" in str(strict.exception)


def test_subset_command(tmp_path):
    res = runner.invoke(app, ["fields", "subset", str(FIX / "texts.jsonl"), "--out", str(tmp_path / "s"),
                              "--fields", "Medicine,Biology,Chemistry,Psychology", "--json", "--threads", "1"])
    assert res.exit_code == 0, res.output
    rep = json.loads(res.output)
    assert rep["written"] == 3 and rep["duplicate_ids"] == 1 and rep["duplicate_texts"] == 1
    assert (tmp_path / "s" / "part-00000.jsonl.gz").exists()
