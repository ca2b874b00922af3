"""The Table 5 chain and the `mini` profile end to end on the real corpora (small settings for CI time)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from medibio.core.settings import Settings
from medibio.experiments.scaled_down import run_experiments
from medibio.pretrain.trainer import model_folder


@pytest.fixture()
def small(data_root: Path, tmp_path: Path, tmp_path_factory):
    """One thread, a results folder of this test, a pretraining cache shared by this module's tests."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield Settings(data_root=data_root, results_root=tmp_path / "results",
                   cache_root=tmp_path_factory.getbasetemp() / "pretrain-cache", progress=False)
    torch.set_num_threads(threads)


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.realdata
def test_table5_chain_records_outputs_and_resumes(small):
    stages = run_experiments("smoke", "1,5", max_steps=2, progress=False, settings=small)
    assert list(stages) == ["science", "table5-1", "table5-4", "table5-5"]
    assert all(r.ok and r.kind == "pretrain" and (model_folder(r, small) / "config.json").exists()
               for r in stages.values())
    rec1 = stages["table5-1"]
    assert rec1.details["init"] == {"kind": "continual", "from": str(model_folder(stages["science"], small))}
    assert rec1.details["corpus"]["spec"] == "biomed-abstracts" and rec1.variant == "table5-1"
    from medibio.models import zoo

    # a stage's identity includes the stage it continues from: retraining that one gives a new record here
    assert rec1.config["init"] == zoo.fingerprint(model_folder(stages["science"], small))
    assert all(r.path(small.results_root).parent.name == r.config_digest for r in stages.values())
    rec5 = stages["table5-5"]
    assert rec5.details["init"]["from"] == str(model_folder(stages["table5-4"], small))
    assert rec5.details["tokenizer"]["fingerprint"] == stages["table5-4"].details["tokenizer"]["fingerprint"]
    science = stages["science"]
    assert set(science.details["corpus"]["stats"]["per_source"]) == {"scisummnet", "unarxive", "scitldr"}
    on_disk = json.loads(rec5.path(small.results_root).read_text())
    assert on_disk["run_id"] == rec5.run_id and on_disk["artifacts"]["model"] == "seed42/model"
    # a second call finds every stage complete and trains nothing
    again = run_experiments("smoke", "1,5", max_steps=2, progress=False, settings=small)
    for eid, record in again.items():
        assert record.run_id == stages[eid].run_id and record.created == stages[eid].created


@pytest.mark.realdata
def test_a_changed_stage_trains_into_a_new_folder_and_leaves_the_old_one(small):
    first = run_experiments("smoke", "3", max_steps=2, progress=False, settings=small)["table5-3"]
    old = first.path(small.results_root).parent
    before = _files(old)
    second = run_experiments("smoke", "3", max_steps=3, progress=False, settings=small)["table5-3"]
    new = second.path(small.results_root).parent
    assert new != old and new.parent == old.parent and old.parent.parent.name == "table5-3"
    assert second.details["steps_done"] == 3
    assert _files(old) == before, "the earlier configuration's stage was touched"


@pytest.mark.realdata
def test_mini_profile_end_to_end_via_cli(data_root, tmp_path):
    """The `mini` profile itself (model, vocabulary, 3 MB of real abstracts), shortened with --max-steps."""
    from typer.testing import CliRunner

    from medibio.cli.main import app
    from medibio.runs.records import RunRecord

    result = CliRunner().invoke(app, ["pretrain", "--config", "mini", "--max-steps", "4", "--results-root",
                                      str(tmp_path / "results"), "--data-root", str(data_root), "--json"])
    assert result.exit_code == 0, result.output
    # progress lines share the captured output with the JSON (stderr and stdout, in flush order)
    record = RunRecord.from_dict(json.JSONDecoder().raw_decode(result.output, result.output.index("{"))[0])
    assert record.ok and record.profile == "mini" and record.details["steps_done"] == 4
    assert record.hyperparameters["model"]["layers"] == 2
    assert 3_000 <= record.details["tokenizer"]["vocab_size"] <= 4_000
    assert record.details["corpus"]["stats"]["bytes"] >= 3_000_000
    out = record.artifact("model", tmp_path / "results")
    assert (out / "tokenizer.json").exists() and (out / "config.json").exists()


def test_show_table3_json():
    from typer.testing import CliRunner

    from medibio.cli.main import app

    result = CliRunner().invoke(app, ["pretrain", "--show", "table3", "--json"])
    assert result.exit_code == 0, result.output
    rows = {r["hyperparameter"]: r for r in json.loads(result.output)}
    assert rows["batch size"]["medibiodeberta"].startswith("49,152")
    assert rows["max training steps"]["scideberta-v2"] == "500K"
