"""Run records: layout, round trip, resume check, filtering, errors, model identity."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from medibio.errors import InputFormatError
from medibio.runs import records as R


def _model(tag: str = "minilm") -> dict:
    return {"name": tag, "path": f"/models/{tag}", "tag": tag, "hash": "sha256:00", "model_type": "bert",
            "parameters": 10}


def _record(dataset: str = "BIOSSES", seed: int = 1, **kw) -> R.RunRecord:
    return R.RunRecord(dataset=dataset, model=_model(kw.pop("tag", "minilm")), profile=kw.pop("profile", "cpu"),
                       seed=seed, score_test=kw.pop("score_test", 80.0), **kw)


def test_record_fills_identity_from_registry_and_round_trips():
    rec = _record("chemprot", seed=3, variant="ift-STS-B", intermediate=["STS-B"])
    assert rec.group == "RE" and rec.problem == "sequence_classification"
    assert rec.run_id == "cpu/minilm/ift-STS-B/chemprot/seed3"
    data = rec.to_dict()
    assert list(data)[:3] == ["schema", "kind", "run_id"]
    assert data["kind"] == "finetune" and data["schema"] == R.SCHEMA
    again = R.RunRecord.from_dict(json.loads(json.dumps(data)))
    assert again == rec


def test_paths_follow_the_contract(tmp_path: Path):
    assert R.record_path(tmp_path, "cpu", "minilm", "base", "BIOSSES", 2) == (
        tmp_path / "finetune" / "cpu" / "minilm" / "base" / "BIOSSES" / "seed2.json")
    assert R.predictions_path(tmp_path, "cpu", "minilm", "base", "BIOSSES", 2).name == "seed2.test.jsonl"
    with pytest.raises(ValueError, match="path component"):
        R.record_path(tmp_path, "cpu", "a/b", "base", "BIOSSES", 1)


def test_write_then_exists_and_load_with_filters(tmp_path: Path):
    assert not R.record_exists(tmp_path, "cpu", "minilm", "base", "BIOSSES", 1)
    path = R.write_record(_record("BIOSSES", 1), tmp_path)
    assert path == R.record_path(tmp_path, "cpu", "minilm", "base", "BIOSSES", 1)
    assert R.record_exists(tmp_path, "cpu", "minilm", "base", "BIOSSES", 1)
    assert [p.name for p in path.parent.iterdir()] == ["seed1.json"]  # no temporary left behind
    R.write_record(_record("BIOSSES", 2), tmp_path)
    R.write_record(_record("BC5-chem", 1), tmp_path)
    R.write_record(_record("BIOSSES", 1, tag="tiny-deberta", profile="smoke"), tmp_path)
    every = R.load_records(tmp_path)
    assert len(every) == 4
    # sorted by profile, model, variant, BLURB order, seed
    assert [(r.profile, r.dataset, r.seed) for r in every] == [
        ("cpu", "BC5-chem", 1), ("cpu", "BIOSSES", 1), ("cpu", "BIOSSES", 2), ("smoke", "BIOSSES", 1)]
    assert len(R.load_records(tmp_path, profile="cpu")) == 3
    assert len(R.load_records(tmp_path, model="minilm", dataset="biosses")) == 2
    assert [r.model_tag for r in R.load_records(tmp_path, model="tiny-deberta")] == ["tiny-deberta"]
    assert R.load_records(tmp_path, variant="ift-SICK-R") == []
    assert R.load_records(tmp_path / "nowhere") == []


def test_malformed_record_names_the_file(tmp_path: Path):
    path = R.record_path(tmp_path, "cpu", "minilm", "base", "GAD", 1)
    path.parent.mkdir(parents=True)
    path.write_text('{\n  "dataset": "GAD",\n  oops\n}\n')
    with pytest.raises(InputFormatError) as err:
        R.load_records(tmp_path)
    assert str(path) in str(err.value) and err.value.line == 3


def test_record_with_unknown_or_missing_keys_is_rejected(tmp_path: Path):
    data = _record("GAD").to_dict()
    data["surprise"] = 1
    path = R.record_path(tmp_path, "cpu", "minilm", "base", "GAD", 1)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(data))
    with pytest.raises(InputFormatError, match="surprise"):
        R.read_record(path)
    del data["surprise"], data["seed"]
    path.write_text(json.dumps(data))
    with pytest.raises(InputFormatError, match="seed"):
        R.read_record(path)


def test_skipped_record_needs_a_reason(tmp_path: Path):
    with pytest.raises(ValueError, match="reason"):
        R.RunRecord(dataset="EBM-PICO", model=_model(), profile="cpu", seed=1, status="skipped")
    rec = R.skipped_record("EBM-PICO", _model(), "cpu", 1, "train split absent in the data root")
    assert not rec.ok and rec.score_test is None and rec.notes == ["train split absent in the data root"]
    R.write_record(rec, tmp_path)
    assert R.load_records(tmp_path)[0].reason == "train split absent in the data root"


def test_model_tag_names():
    from medibio import modelzoo

    assert R.model_tag("minilm") == "minilm"
    assert R.model_tag("sentence-transformers/all-MiniLM-L6-v2") == "minilm"
    assert R.model_tag(modelzoo.minilm_path()) == "minilm"
    assert R.model_tag("tiny-deberta") == "tiny-deberta"
    assert R.model_tag("microsoft/deberta-v3-base") == "microsoft__deberta-v3-base"
    assert R.model_tag("scideberta") == "KISTI-AI__Scideberta-full"


def test_model_tag_of_local_folder_is_its_name(tmp_path: Path):
    folder = tmp_path / "my ckpt"
    folder.mkdir()
    assert R.model_tag(folder) == "my_ckpt"


def test_fingerprint_covers_config_and_weights(tmp_path: Path):
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "config.json").write_text('{"model_type": "bert"}')
    (folder / "model.safetensors").write_bytes(b"\x01" * 3000)
    (folder / "README.md").write_text("ignored")
    expected = hashlib.sha256(b"config.json\0" + b'{"model_type": "bert"}'
                              + b"model.safetensors\0" + b"\x01" * 3000).hexdigest()
    assert R.model_fingerprint(folder) == "sha256:" + expected
    (folder / "README.md").write_text("still ignored")
    assert R.model_fingerprint(folder) == "sha256:" + expected
    (folder / "model.safetensors").write_bytes(b"\x02" * 3001)
    assert R.model_fingerprint(folder) != "sha256:" + expected


def test_fingerprint_of_hub_id_hashes_the_config(monkeypatch: pytest.MonkeyPatch):
    from medibio import modelzoo

    class FakeConfig:
        def to_dict(self):
            return {"model_type": "deberta-v2", "hidden_size": 768}

    monkeypatch.setattr(modelzoo, "load_config", lambda name: FakeConfig())
    text = json.dumps({"hidden_size": 768, "model_type": "deberta-v2"}, sort_keys=True)
    assert R.model_fingerprint("someorg/not-local") == (
        "config-sha256:" + hashlib.sha256(text.encode()).hexdigest())


def test_environment_info_reports_versions_and_commit():
    env = R.environment_info()
    assert env["versions"]["torch"] and env["versions"]["transformers"]
    assert env["torch_threads"] >= 1 and env["device"]
    assert env["git_commit"] is None or len(env["git_commit"].split("+")[0]) == 40


def test_committed_fixture_records_still_read(fixtures_dir: Path):
    """Records written by an earlier version stay readable (the on-disk format is a contract)."""
    from medibio.runs.aggregate import results_table

    recs = R.load_records(fixtures_dir / "runs", profile="cpu")
    assert [(r.dataset, r.seed, r.status) for r in recs] == [
        ("EBM-PICO", 1, "skipped"), ("BIOSSES", 1, "ok"), ("BIOSSES", 2, "ok")]
    assert recs[1].predictions_file(fixtures_dir / "runs").name == "seed1.test.jsonl"
    df = results_table(fixtures_dir / "runs")
    bio = df[df["row"] == "BIOSSES"].iloc[0]
    # seeds 78 and 81: mean 79.5, std sqrt((1.5^2 + 1.5^2) / 1) = 2.1213
    assert bio["mean"] == 79.5 and bio["std"] == pytest.approx(2.12132, abs=1e-5)
    assert df[df["row"] == "BLURB score"].iloc[0]["covers"] == "1/6 groups; missing NER, PICO, RE, DC, QA"
