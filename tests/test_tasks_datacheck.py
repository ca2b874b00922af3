"""`medibio data check`: counts against the BLURB paper, documented deviations, per-dataset errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from medibio.cli import data as data_cli
from medibio.tasks import datacheck as check
from medibio.tasks import registry


def _cli() -> typer.Typer:
    app = typer.Typer()

    @app.callback()
    def _root() -> None:
        """Test root."""

    data_cli.register(app)
    return app


def _ner_file(path: Path, mentions: int) -> None:
    """``mentions`` sentences of one mention each, worded after the split (splits share no sentence)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"Drug{i}\tB\n{path.stem}\tO\n\n" for i in range(mentions)), encoding="utf-8")


def _fake_bc5_disease(root: Path, dev_mentions: int) -> None:
    folder = root / "blurb" / "BC5CDR-disease"
    train, _, test = registry.get("BC5-disease").paper_counts
    _ner_file(folder / "train.tsv", train)
    _ner_file(folder / "dev.tsv", dev_mentions)
    _ner_file(folder / "test.tsv", test)


def test_counts_by_unit() -> None:
    ner = [{"tags": ["B", "I", "O", "B"]}, {"tags": ["O"]}]
    pico = [{"tags": ["I-PAR", "I-PAR", "O", "I-INT"]}]
    assert check.count(registry.get("NCBI-disease"), ner) == 2
    assert check.count(registry.get("EBM-PICO"), pico) == 3
    assert check.count(registry.get("GAD"), [{}, {}, {}]) == 3


def test_documented_deviation_is_ok_but_other_counts_are_not(tmp_path: Path) -> None:
    _fake_bc5_disease(tmp_path, 4246)
    rows = {r.split: r for r in check.check_all(tmp_path, ["BC5-disease"])}
    assert rows["train"].status == "match" and rows["train"].ok
    assert rows["dev"].status == "mismatch" and rows["dev"].known and rows["dev"].ok
    assert "4244" in rows["dev"].note

    other = tmp_path / "other"
    _fake_bc5_disease(other, 4250)
    dev = check.check_split(registry.get("BC5-disease"), "dev", other)
    assert (dev.status, dev.ours, dev.known, dev.ok) == ("mismatch", 4250, False, False)


def test_malformed_file_is_an_error_row_not_a_crash(tmp_path: Path) -> None:
    _fake_bc5_disease(tmp_path, 4246)
    bad = tmp_path / "blurb" / "BC5CDR-disease" / "test.tsv"
    bad.write_text("Fever\tB\nhigh\tX\n", encoding="utf-8")
    rows = check.check_all(tmp_path, ["BC5-disease", "GAD"])
    by_key = {(r.dataset, r.split): r for r in rows}
    err = by_key[("BC5-disease", "test")]
    assert err.status == "error" and not err.ok
    assert "test.tsv:2" in err.note
    assert by_key[("BC5-disease", "train")].status == "match"
    gad = by_key[("GAD", "train")]
    assert gad.status == "absent" and not gad.known and not gad.ok


def test_ebm_pico_train_absent_is_known(tmp_path: Path) -> None:
    row = check.check_split(registry.get("EBM-PICO"), "train", tmp_path)
    assert (row.status, row.known, row.ok) == ("absent", True, True)
    assert "EBM-NLP" in row.note


def test_id_list_mismatch_is_reported(tmp_path: Path) -> None:
    folder = tmp_path / "blurb" / "BioASQ"
    folder.mkdir(parents=True)
    (folder / "dev.tsv").write_text("q1\tIs it?\tIt is.\tyes\n", encoding="utf-8")
    index = tmp_path / "blurb" / "indexing" / "BioASQ"
    index.mkdir(parents=True)
    (index / "dev_id.tsv").write_text("q1,q2", encoding="utf-8")
    row = check.check_split(registry.get("BioASQ"), "dev", tmp_path)
    assert row.status == "error" and "1 missing ('q2'), 0 extra" in row.note  # named: which example is gone
    (folder / "dev.tsv").write_text("q1\tIs it?\tIt is.\tyes\nq9\tIs that?\tNo.\tno\n", encoding="utf-8")
    (index / "dev_id.tsv").write_text(",".join(f"q{i}" for i in (1, *range(10, 23))), encoding="utf-8")
    row = check.check_split(registry.get("BioASQ"), "dev", tmp_path)
    assert "13 missing ('q10', 'q11', 'q12', 'q13', 'q14', 'q15', 'q16', 'q17', 'q18', 'q19' and 3 more), " \
           "1 extra ('q9')" in row.note


def test_cli_exit_codes(tmp_path: Path) -> None:
    runner = CliRunner()
    _fake_bc5_disease(tmp_path, 4246)
    ok = runner.invoke(_cli(), ["data", "check", "--data-root", str(tmp_path), "--only", "BC5-disease"])
    assert ok.exit_code == 0, ok.output
    assert "known" in ok.output and "4246" in ok.output
    bad = runner.invoke(_cli(), ["data", "check", "--data-root", str(tmp_path), "--only", "BC5-disease,GAD",
                                 "--json"])
    assert bad.exit_code == 1
    payload = json.loads(bad.output)
    assert [r["status"] for r in payload if r["dataset"] == "GAD"] == ["absent"] * 3


def test_real_data_all_splits_ok(data_root: Path) -> None:
    rows = check.check_all(data_root)
    assert len(rows) == 39
    assert [f"{r.dataset}/{r.split}" for r in rows if not r.ok] == []
    by_key = {(r.dataset, r.split): r for r in rows}
    assert (by_key[("BC5-disease", "dev")].ours, by_key[("BC5-disease", "dev")].status) == (4246, "mismatch")
    assert (by_key[("EBM-PICO", "dev")].ours, by_key[("EBM-PICO", "dev")].paper) == (87308, 85321)
    assert by_key[("EBM-PICO", "train")].status == "absent"
    assert "22233" in by_key[("DDI", "train")].note
    matched = {k for k, r in by_key.items() if r.status == "match"}
    assert len(matched) == 36
    assert by_key[("BC5-chem", "train")].ours == 5203 and by_key[("HoC", "test")].ours == 371


@pytest.mark.parametrize("flag", [[], ["--json"]])
def test_real_data_cli(data_root: Path, flag: list[str]) -> None:
    result = CliRunner().invoke(_cli(), ["data", "check", "--data-root", str(data_root), "--only", "QA", *flag])
    assert result.exit_code == 0, result.output
    if flag:
        assert [r["ours"] for r in json.loads(result.output)] == [450, 50, 500, 670, 75, 140]
    else:
        assert "PubMedQA" in result.output and "6/6 splits OK" in result.output
