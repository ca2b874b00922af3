"""The Table 5 chain and the `mini` profile end to end on the real corpora (small settings for CI time)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from medibio.pretrain.experiments import run_experiments


@pytest.fixture(autouse=True)
def _small_footprint(tmp_path_factory, monkeypatch):
    import torch

    monkeypatch.setenv("MEDIBIO_CACHE", str(tmp_path_factory.getbasetemp() / "pretrain-cache"))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.mark.realdata
def test_table5_chain_records_outputs_and_resumes(data_root, tmp_path):
    manifest = run_experiments("smoke", "1,5", out_root=tmp_path, max_steps=2, data_root=data_root, progress=False)
    stages = manifest["stages"]
    assert list(stages) == ["science", "table5-1", "table5-4", "table5-5"]
    assert all(s["status"] == "complete" and Path(s["output"], "config.json").exists() for s in stages.values())
    rec1 = json.loads(Path(stages["table5-1"]["record"]).read_text())
    assert rec1["init"] == {"kind": "continual", "from": stages["science"]["output"]}
    assert rec1["corpus"]["spec"] == "biomed-abstracts"
    from medibio import modelzoo

    # a stage's identity includes the stage it continues from: retraining that one gives a new folder here
    assert rec1["effective_config"]["init"] == modelzoo.fingerprint(stages["science"]["output"])
    assert all(Path(s["out_dir"]).name == s["config_digest"] == json.loads(Path(s["record"]).read_text())[
        "config_digest"] for s in stages.values())
    rec5 = json.loads(Path(stages["table5-5"]["record"]).read_text())
    assert rec5["init"]["from"] == stages["table5-4"]["output"]
    assert rec5["tokenizer"]["fingerprint"] == json.loads(Path(stages["table5-4"]["record"]).read_text())[
        "tokenizer"]["fingerprint"]  # continual keeps #4's vocabulary
    science = json.loads(Path(stages["science"]["record"]).read_text())
    assert set(science["corpus"]["stats"]["per_source"]) == {"scisummnet", "unarxive", "scitldr"}
    on_disk = json.loads((tmp_path / "experiments.json").read_text())
    assert on_disk["stages"]["table5-5"]["output"] == stages["table5-5"]["output"]
    # a second call finds every stage complete and trains nothing
    again = run_experiments("smoke", "1,5", out_root=tmp_path, max_steps=2, data_root=data_root, progress=False)
    for eid, stage in again["stages"].items():
        assert json.loads(Path(stage["record"]).read_text())["run_id"] == \
            json.loads(Path(stages[eid]["record"]).read_text())["run_id"]


@pytest.mark.realdata
def test_a_changed_stage_trains_into_a_new_folder_and_leaves_the_old_one(data_root, tmp_path):
    def files(folder: Path) -> dict[str, bytes]:
        return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}

    first = run_experiments("smoke", "3", out_root=tmp_path, max_steps=2, data_root=data_root, progress=False)
    old = Path(first["stages"]["table5-3"]["out_dir"])
    before = files(old)
    second = run_experiments("smoke", "3", out_root=tmp_path, max_steps=3, data_root=data_root, progress=False)
    new = Path(second["stages"]["table5-3"]["out_dir"])
    assert new != old and new.parent == old.parent == tmp_path / "table5-3"
    assert json.loads((new / "run.json").read_text())["steps_done"] == 3
    assert files(old) == before, "the earlier configuration's stage was touched"


@pytest.mark.realdata
def test_mini_profile_end_to_end_via_cli(data_root, tmp_path):
    """The `mini` profile itself (model, vocabulary, 3 MB of real abstracts), shortened with --max-steps."""
    from typer.testing import CliRunner

    from medibio.cli import app

    out = tmp_path / "mini"
    result = CliRunner().invoke(app, ["pretrain", "--config", "mini", "--max-steps", "4", "--out", str(out),
                                      "--data-root", str(data_root), "--json"])
    assert result.exit_code == 0, result.output
    record = json.loads((out / "run.json").read_text())
    assert record["status"] == "complete" and record["config"] == "mini" and record["steps_done"] == 4
    assert record["hyperparameters"]["model"]["layers"] == 2
    assert 3_000 <= record["tokenizer"]["vocab_size"] <= 4_000
    assert record["corpus"]["stats"]["bytes"] >= 3_000_000
    assert (out / "model" / "tokenizer.json").exists() and (out / "model" / "config.json").exists()


def test_show_table3_json():
    from typer.testing import CliRunner

    from medibio.cli import app

    result = CliRunner().invoke(app, ["pretrain", "--show", "table3", "--json"])
    assert result.exit_code == 0, result.output
    rows = {r["hyperparameter"]: r for r in json.loads(result.output)}
    assert rows["batch size"]["medibiodeberta"].startswith("49,152")
    assert rows["max training steps"]["scideberta-v2"] == "500K"
