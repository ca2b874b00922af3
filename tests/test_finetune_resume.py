"""Resume after a killed run, through the real command line (`python -m medibio finetune`)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from medibio.finetune import runner
from medibio.runs import records as rec

pytestmark = pytest.mark.realdata

KILL_AFTER_FIRST_EPOCH = textwrap.dedent("""
    import os, signal, sys
    from medibio.core.settings import Settings
    from medibio.finetune import runner

    def kill(event, epoch, **_):
        if epoch == 1:
            os.kill(os.getpid(), signal.SIGKILL)  # no cleanup at all, like an OOM kill

    settings = Settings.from_env(results_root=sys.argv[1], data_root=sys.argv[2])
    runner.run_finetune("BIOSSES", profile="smoke", callbacks=[kill], settings=settings)
""")


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "medibio", *args], capture_output=True, text=True, timeout=300)


def test_killed_run_leaves_no_record_and_a_rerun_completes(settings, data_root):
    tmp_path = settings.results_root
    killed = subprocess.run([sys.executable, "-c", KILL_AFTER_FIRST_EPOCH, str(tmp_path), str(data_root)],
                            capture_output=True, text=True, timeout=300)
    assert killed.returncode == -9
    key = runner.plan_run("BIOSSES", profile="smoke", settings=settings).key
    assert rec.find_record(tmp_path, key) is None
    assert not list(tmp_path.rglob("*.json"))
    assert [p.name for p in tmp_path.rglob("*.lock")] == ["seed1.lock"]  # the killed run's lock stays ...

    args = ("finetune", "--task", "BIOSSES", "--profile", "smoke", "--results-root", str(tmp_path),
            "--data-root", str(data_root), "--json")
    first = _cli(*args)
    assert first.returncode == 0, first.stderr[-2000:]
    [record] = json.loads(first.stdout)
    assert record["status"] == "ok" and record["dataset"] == "BIOSSES" and record["score_test"] is not None
    path = key.path(tmp_path)
    assert path.is_file() and (path.parent / "seed1.test.jsonl").is_file()
    assert "stale lock" in first.stderr and not list(tmp_path.rglob("*.lock"))  # ... and is recovered

    again = _cli(*args)
    assert again.returncode == 0 and "reused" in again.stderr + again.stdout
    assert json.loads(again.stdout)[0]["created"] == record["created"]

    forced = _cli(*args, "--force", "--seeds", "1")
    assert forced.returncode == 0
    assert json.loads(forced.stdout)[0]["run_id"] == record["run_id"]
    assert rec.read_record(path).to_dict()["created"] >= record["created"]
    assert "rerun" not in forced.stdout  # plain JSON output
    assert "done before" not in forced.stderr + forced.stdout


def test_cli_reports_a_bad_option_file(tmp_path, fixtures_dir):
    out = _cli("finetune", "--task", "BIOSSES", "--profile", "smoke", "--results-root", str(tmp_path),
               "--config", str(fixtures_dir / "finetune" / "bad_option.yaml"))
    assert out.returncode == 2 and "bad_option.yaml" in out.stderr and "warmup_steps" in out.stderr


def test_cli_refuses_an_unknown_class_weighting(tmp_path):
    out = _cli("finetune", "--task", "DDI", "--profile", "smoke", "--results-root", str(tmp_path),
               "--class-weighting", "inverse")
    assert out.returncode == 2 and "'inverse' is not one of" in out.stderr and "balanced" in out.stderr
    assert not any(tmp_path.iterdir())


def test_two_identical_runs_started_together_train_once(tmp_path, data_root):
    """Two `medibio finetune` processes asking for the same run into one results folder: one trains, the
    other waits on the run's lock and then reuses the finished record (no second training, no clash)."""
    args = [sys.executable, "-m", "medibio", "finetune", "--task", "BIOSSES", "--profile", "smoke",
            "--results-root", str(tmp_path), "--data-root", str(data_root), "--json"]
    procs = [subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=600) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [err[-1500:] for _, err in outs]
    records = [json.loads(out)[0] for out, _ in outs]
    assert records[0]["created"] == records[1]["created"] and records[0]["run_id"] == records[1]["run_id"]
    logs = [err for _, err in outs]
    assert sum("training (config" in log for log in logs) == 1
    assert sum("reused its record" in log for log in logs) == 1
    assert len(list(tmp_path.rglob("seed1.json"))) == 1 and not list(tmp_path.rglob("*.lock"))
