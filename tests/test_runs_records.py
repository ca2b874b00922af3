"""Run records: layout, round trip, resume check, filtering, errors, model identity."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from medibio.core import provenance
from medibio.core.errors import InputFormatError
from medibio.models import zoo
from medibio.runs import records as R
from medibio.runs.identity import RunKey
from tests.support.runs import safetensors_of

DIGEST = "0123456789ab"


def _model(tag: str = "minilm") -> dict:
    return {"name": tag, "path": f"/models/{tag}", "tag": tag, "hash": "sha256:00", "model_type": "bert",
            "parameters": 10}


def _record(dataset: str = "BIOSSES", seed: int = 1, **kw) -> R.RunRecord:
    return R.RunRecord(dataset=dataset, model=_model(kw.pop("tag", "minilm")), profile=kw.pop("profile", "cpu"),
                       seed=seed, score_test=kw.pop("score_test", 80.0),
                       config_digest=kw.pop("config_digest", DIGEST), **kw)


def _key(dataset: str = "BIOSSES", seed: int = 1, tag: str = "minilm", profile: str = "cpu",
         digest: str = DIGEST) -> RunKey:
    return RunKey("finetune", profile, tag, "base", dataset, seed, digest)


def test_record_fills_identity_from_registry_and_round_trips():
    rec = _record("chemprot", seed=3, variant="ift-STS-B", details={"intermediate": ["STS-B"]})
    assert rec.group == "RE" and rec.problem == "sequence_classification" and rec.intermediate == ["STS-B"]
    assert rec.run_id == f"finetune/cpu/minilm/ift-STS-B/chemprot/seed3@{DIGEST}"
    assert rec.key == RunKey("finetune", "cpu", "minilm", "ift-STS-B", "chemprot", 3, DIGEST)
    data = rec.to_dict()
    assert list(data)[:3] == ["schema_version", "kind", "run_id"]
    assert data["kind"] == "finetune" and data["schema_version"] == R.SCHEMA_VERSION and "schema" not in data
    again = R.RunRecord.from_dict(json.loads(json.dumps(data)))
    assert again == rec


def test_paths_follow_the_contract(tmp_path: Path):
    assert _key(seed=2).path(tmp_path) == (
        tmp_path / "finetune" / "cpu" / "minilm" / "base" / "BIOSSES" / DIGEST / "seed2.json")
    assert _key(seed=2).predictions_path(tmp_path).name == "seed2.test.jsonl"
    assert _key(seed=2).lock_path(tmp_path).name == "seed2.lock"
    with pytest.raises(ValueError, match="path component"):
        _key(tag="a/b")


def test_write_then_find_and_load_with_filters(tmp_path: Path):
    assert R.find_record(tmp_path, _key()) is None
    path = R.write_record(_record("BIOSSES", 1), tmp_path)
    assert path == _key().path(tmp_path)
    assert R.find_record(tmp_path, _key()).to_dict() == json.loads(path.read_text(encoding="utf-8"))
    assert R.find_record(tmp_path, _key(digest="ffffffffffff")) is None  # another configuration: not found
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
    path = _key("GAD").path(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text('{\n  "dataset": "GAD",\n  oops\n}\n')
    with pytest.raises(InputFormatError) as err:
        R.load_records(tmp_path)
    assert str(path) in str(err.value) and err.value.line == 3


def test_record_with_unknown_or_missing_keys_is_rejected(tmp_path: Path):
    data = _record("GAD").to_dict()
    data["surprise"] = 1
    path = _key("GAD").path(tmp_path)
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
    rec = R.RunRecord(dataset="EBM-PICO", model=_model(), profile="cpu", seed=1, status="skipped",
                      reason="train split absent in the data root", config_digest=DIGEST)
    assert not rec.ok and rec.score_test is None and rec.reason == "train split absent in the data root"
    R.write_record(rec, tmp_path)
    assert R.load_records(tmp_path)[0].reason == "train split absent in the data root"


def test_model_tag_names():
    assert zoo.model_tag("minilm") == "minilm"
    assert zoo.model_tag("sentence-transformers/all-MiniLM-L6-v2") == "minilm"
    assert zoo.model_tag(zoo.minilm_path()) == "minilm"
    assert zoo.model_tag("tiny-deberta") == "tiny-deberta"
    assert zoo.model_tag("microsoft/deberta-v3-base") == "microsoft__deberta-v3-base"
    assert zoo.model_tag("scideberta") == "KISTI-AI__Scideberta-full"


def test_model_tag_of_local_folder_is_its_name(tmp_path: Path):
    folder = tmp_path / "my ckpt"
    folder.mkdir()
    assert zoo.model_tag(folder) == "my_ckpt"


def test_fingerprint_covers_config_and_weights(tmp_path: Path):
    folder = tmp_path / "m"
    folder.mkdir()
    weights = safetensors_of(b"\x01" * 3000)
    (folder / "config.json").write_text('{"model_type": "bert"}')
    (folder / "model.safetensors").write_bytes(weights)
    (folder / "README.md").write_text("ignored")
    expected = hashlib.sha256(b"config.json\0" + b'{"model_type": "bert"}'
                              + b"model.safetensors\0" + weights).hexdigest()
    assert zoo.fingerprint(folder) == "sha256:" + expected
    (folder / "README.md").write_text("still ignored")
    assert zoo.fingerprint(folder) == "sha256:" + expected
    (folder / "model.safetensors").write_bytes(safetensors_of(b"\x02" * 3001))
    assert zoo.fingerprint(folder) != "sha256:" + expected


def test_fingerprint_of_hub_id_is_that_of_its_whole_snapshot(monkeypatch: pytest.MonkeyPatch, tmp_path):
    """A hub id is named by the files of its complete snapshot (medibio.models.zoo.hub_snapshot), never by its
    config alone (tests/test_models_zoo.py covers partial snapshots offline)."""
    folder = tmp_path / "snapshot"
    folder.mkdir()
    (folder / "config.json").write_text('{"model_type": "bert"}')
    (folder / "model.safetensors").write_bytes(safetensors_of(b"\x03" * 100))
    (folder / "vocab.txt").write_text("[PAD]\n")
    asked: list[str] = []
    monkeypatch.setattr(zoo, "hub_snapshot", lambda repo: asked.append(repo) or folder)
    monkeypatch.setattr(zoo, "load_config", lambda name: pytest.fail("the config alone named the model"))
    assert zoo.fingerprint("someorg/not-local") == zoo.fingerprint(folder)
    assert asked == ["someorg/not-local"]


def test_environment_info_reports_versions_and_commit():
    env = provenance.environment()
    assert env["versions"]["torch"] and env["versions"]["transformers"]
    assert env["torch_threads"] >= 1 and env["device"]
    cpuinfo = Path("/proc/cpuinfo")
    named = [line.split(":", 1)[1].strip() for line in cpuinfo.read_text().splitlines()
             if line.startswith("model name")] if cpuinfo.is_file() else []
    assert env["cpu"] == (named[0] if named else env["cpu"]) and env["cpu"]  # lscpu's model name
    assert env["git_commit"] is None or len(env["git_commit"].split("+")[0]) == 40


def test_committed_fixture_records_still_read(fixtures_dir: Path):
    """Records written by an earlier version stay readable (the on-disk format is a contract)."""
    from medibio.results.aggregate import results_table

    recs = R.load_records(fixtures_dir / "runs", profile="cpu")
    assert [(r.dataset, r.seed, r.status) for r in recs] == [
        ("EBM-PICO", 1, "skipped"), ("BIOSSES", 1, "ok"), ("BIOSSES", 2, "ok")]
    # the fixture keeps the record, not the predictions it names: reading them is refused, naming both
    with pytest.raises(R.EvidenceError, match=r"BIOSSES/seed1.test.jsonl: missing, but run record .*BIOSSES/seed1"):
        recs[1].predictions_file(fixtures_dir / "runs")
    df = results_table(fixtures_dir / "runs")
    bio = df[df["row"] == "BIOSSES"].iloc[0]
    # seeds 78 and 81: mean 79.5, std sqrt((1.5^2 + 1.5^2) / 1) = 2.1213
    assert bio["mean"] == 79.5 and bio["std"] == pytest.approx(2.12132, abs=1e-5)
    assert df[df["row"] == "BLURB score"].iloc[0]["covers"] == "1/6 groups; missing NER, PICO, RE, DC, QA"
    # written before run identities: legacy, shown as such, never found for a request, never rewritten
    assert all(r.legacy for r in recs) and bio["digest"] == "legacy"
    assert R.load_records(fixtures_dir / "runs", legacy=False) == []
    with pytest.raises(ValueError, match="without a configuration digest"):
        R.write_record(recs[1], fixtures_dir / "runs")


def test_a_second_process_cannot_take_a_held_run_lock(tmp_path: Path):
    with R.run_lock(_key(), tmp_path) as lock:
        holder = json.loads(lock.read_text(encoding="utf-8"))
        assert holder["pid"] == __import__("os").getpid()
        with pytest.raises(R.RunLockedError, match=f"pid {holder['pid']}"), R.run_lock(_key(), tmp_path, wait=False):
            pass
    assert not _key().lock_path(tmp_path).exists()  # released


def test_a_lock_left_by_a_killed_process_is_recovered(tmp_path: Path):
    import socket
    import subprocess
    import sys

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True)
    path = _key().lock_path(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"pid": int(dead.stdout), "host": socket.gethostname(), "started": "then"}))
    seen = []
    with R.run_lock(_key(), tmp_path, wait=False, log=seen.append):
        assert json.loads(path.read_text())["pid"] != int(dead.stdout)
    assert "stale lock" in seen[0]


HOLD = """
import json, sys, time
from pathlib import Path
from medibio.runs import records as R
from medibio.runs.identity import RunKey

key = RunKey(*json.loads(sys.argv[2]))
with R.run_lock(key, sys.argv[1], log=lambda m: print(m, file=sys.stderr, flush=True)):
    start = time.time()
    print("held", flush=True)
    time.sleep(float(sys.argv[3]))
    end = time.time()
print(json.dumps([start, end]), flush=True)
"""


def _holder_process(tmp_path: Path, hold_s: float):
    import subprocess
    import sys

    key = _key()
    args = [str(tmp_path), json.dumps([key.kind, key.profile, key.model_tag, key.variant, key.dataset, key.seed,
                                       key.config_digest]), str(hold_s)]
    return subprocess.Popen([sys.executable, "-c", HOLD, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def test_the_lock_of_a_process_killed_with_sigkill_is_free_at_once(tmp_path: Path):
    """The kernel drops a dead process's lock: no pid check, no grace period, no waiting."""
    import signal

    proc = _holder_process(tmp_path, 600)
    assert proc.stdout.readline().strip() == "held"
    with pytest.raises(R.RunLockedError, match=f"is being trained by pid {proc.pid} on "), \
            R.run_lock(_key(), tmp_path, wait=False):
        pass
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL and _key().lock_path(tmp_path).is_file()  # the file stays ...
    seen: list[str] = []
    with R.run_lock(_key(), tmp_path, wait=False, log=seen.append):  # ... but its lock went with the process
        pass
    assert len(seen) == 1 and "stale lock" in seen[0] and f"pid {proc.pid}" in seen[0]
    assert not _key().lock_path(tmp_path).exists()


@pytest.mark.slow
def test_processes_taking_over_one_stale_lock_hold_it_one_at_a_time(tmp_path: Path):
    """The old pid-file lock let two processes remove the same stale lock and both train."""
    path = _key().lock_path(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"pid": 2**22 + 1, "host": "gone", "started": "then"}))
    procs = [_holder_process(tmp_path, 2.0) for _ in range(3)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], [err for _, err in outs]
    spans = sorted(tuple(json.loads(out.splitlines()[-1])) for out, _ in outs)
    assert all(a_end <= b_start for (_, a_end), (b_start, _) in zip(spans, spans[1:], strict=False)), spans
    assert sum("stale lock" in err for _, err in outs) == 1  # only the first one found it left over


@pytest.mark.parametrize("holder", [
    {"pid": __import__("os").getpid(), "host": __import__("socket").gethostname()},  # a restarted container
    {"pid": 1, "host": "another-node"},  # another machine sharing the results folder
])
def test_a_left_over_lock_never_blocks_whatever_pid_and_host_it_names(tmp_path: Path, holder: dict):
    path = _key().lock_path(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({**holder, "started": "then"}))
    seen: list[str] = []
    with R.run_lock(_key(), tmp_path, wait=False, log=seen.append):
        assert json.loads(path.read_text())["started"] != "then"
    assert "stale lock" in seen[0] and f"pid {holder['pid']} on {holder['host']}" in seen[0]


def test_table_rows_carry_the_digest_and_commit_and_never_mix_configurations():
    from medibio.results.aggregate import results_table

    old = [_record("BIOSSES", s, score_test=10.0 * s, config_digest="aaaaaaaaaaaa",
                   environment={"git_commit": "1" * 40}, created="2026-01-01T00:00:00+00:00") for s in (1, 2)]
    new = [_record("BIOSSES", s, score_test=50.0 + s, config_digest="bbbbbbbbbbbb",
                   environment={"git_commit": "2" * 40 + "+dirty"}, created="2026-02-01T00:00:00+00:00")
           for s in (1, 2)]
    row = results_table(old + new, aggregates=False).iloc[0]
    assert row["mean"] == 51.5 and row["digest"] == "bbbbbbbbbbbb" and row["commit"] == "22222222+dirty"
    assert "1 older configuration(s) not shown" in row["note"]
