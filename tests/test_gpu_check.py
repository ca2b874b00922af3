"""The GPU check (issue 36): the folder ``make gpu-check`` builds, and a CPU dry run of its script.

The slow test builds the folder without wheels (every distribution is installed here; the real build
downloads them once from PyPI) and runs ``run.py --limit 16`` with this interpreter, outside any git checkout,
exactly as the GPU machine would run it: setup, ``accelerate launch`` of ``medibio finetune`` on the gpu
profile, a chapter through the book's executor, ``transformers.Trainer`` on the same GAD run, the summary.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from benchmarks.gpu_check import pack, run

REPO = Path(__file__).resolve().parents[1]


def test_wheels_leave_out_what_the_kernel_runs_without() -> None:
    assert not {"jedi", "parso", "debugpy"} & set(pack.WHEELS)
    assert {"datasets", "dill", "multiprocess", "seqeval", "papermill", "ipykernel"} <= set(pack.WHEELS)


def test_manifest_lists_every_file_with_its_size_and_checksum(tmp_path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.txt").write_bytes(b"hello")
    (tmp_path / "run.py").write_bytes(b"print(1)\n")
    total = pack.manifest(tmp_path)
    rows = (tmp_path / "MANIFEST.tsv").read_text(encoding="utf-8").splitlines()
    assert rows[0] == "path\tbytes\tsha256"
    assert rows[1:] == [f"a/x.txt\t5\t{hashlib.sha256(b'hello').hexdigest()}",
                        f"run.py\t9\t{hashlib.sha256(b'print(1)' + bytes([10])).hexdigest()}"]
    assert total == 14 + (tmp_path / "MANIFEST.tsv").stat().st_size


def test_archives_are_the_same_bytes_from_the_same_files(tmp_path) -> None:
    pack.archive(tmp_path / "one.tar.gz", REPO, ("configs/accelerate",))
    pack.archive(tmp_path / "two.tar.gz", REPO, ("configs/accelerate",))
    assert (tmp_path / "one.tar.gz").read_bytes() == (tmp_path / "two.tar.gz").read_bytes()
    with tarfile.open(tmp_path / "one.tar.gz") as tar:
        assert "configs/accelerate/one_gpu.yaml" in tar.getnames()


def test_each_step_keeps_time_for_the_steps_after_it() -> None:
    check = run.Check.__new__(run.Check)
    check.budget, check.start, check.cap_scale = 420.0, run.time.monotonic(), 1.0
    assert check.timeout("finetune") == run.STEP_CAPS["finetune"]
    check.budget = 200.0  # little left: finetune gives way to the chapter, the Trainer and the summary
    later = run.RESERVE["chapter"] + run.RESERVE["trainer"] + run.RESERVE["summary"]
    assert check.timeout("finetune") == pytest.approx(200.0 - later, abs=1.0)


@pytest.mark.slow
def test_cpu_dry_run_of_the_gpu_check(tmp_path, data_root) -> None:
    folder = tmp_path / "gpu-check"
    size = pack.build(folder, data_root, with_wheels=False)
    assert size <= pack.LIMIT_BYTES
    rows = (folder / "MANIFEST.tsv").read_text(encoding="utf-8").splitlines()[1:]
    assert {r.split("\t")[0] for r in rows} >= {"run.py", "src.tar.gz", "data.tar.gz", "model/model.safetensors"}
    weights = (folder / "model" / "model.safetensors").read_bytes()
    header = json.loads(weights[8:8 + int.from_bytes(weights[:8], "little")])  # safetensors: length, JSON header
    assert {v["dtype"] for k, v in header.items() if k != "__metadata__"} == {"F16", "I64"}  # floats, position ids
    out, work = tmp_path / "out", tmp_path / "work"
    proc = subprocess.run([sys.executable, str(folder / "run.py"), "--limit", "16", "--epochs", "1", "--budget", "1200", "--cap-scale", "4",
                           "--out", str(out), "--work", str(work)], cwd=tmp_path, capture_output=True, text=True,
                          timeout=1300)
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert sorted(p.name for p in out.iterdir()) == sorted(run.BUNDLE)  # at most 8 files come back
    assert [s["step"] for s in summary["steps"]] == ["setup", "finetune", "chapter", "trainer"]
    assert all(s["status"] == "ok" for s in summary["steps"])
    # step 1: three gpu-profile runs of the carried model (fp32 weights: upcast from the fp16 folder)
    assert sorted(r["dataset"] for r in summary["runs"]) == ["BC5-chem", "BIOSSES", "GAD"]
    assert {r["model"] for r in summary["runs"]} == {run.MODEL_DIR} and all(r["status"] == "ok"
                                                                          for r in summary["runs"])
    # step 3: Trainer beside medibio on GAD
    side = summary["trainer_vs_medibio"]
    assert side["trainer_examples_per_s"] > 0 and 0 <= side["trainer_test_f1"] <= 100 and side["speed_ratio"] > 0
    assert "transformers.Trainer" in (out / "summary.md").read_text(encoding="utf-8")
    # step 2: the chapter ran through the book's executor, for the carried model, outside a git checkout
    with tarfile.open(out / "records.tar.gz") as tar:
        names = tar.getnames()
        page = tar.extractfile(f"book/{run.CHAPTER}.ipynb").read().decode("utf-8")
    assert not any(n.endswith(".safetensors") for n in names)
    assert f"for model <code>{run.MODEL_DIR}</code>" in page and "outside a git checkout" in page
    assert "by commit not a gi" not in page
