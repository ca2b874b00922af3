"""Two CPU processes through `accelerate launch --multi_gpu --num_processes 2` (gloo)."""

from __future__ import annotations

import json

import pytest

from medibio.finetune import runner
from medibio.tasks import predictions

pytestmark = [pytest.mark.realdata, pytest.mark.slow]


@pytest.fixture()
def two(settings, monkeypatch):
    """Settings that run fine-tuning in two processes of one thread each."""
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # the launched processes' threads (not a medibio setting)
    return settings.replace(processes=2)


def test_two_process_cpu_run_writes_one_complete_record(two, data_root):
    [record] = runner.run_finetune("BIOSSES", profile="smoke", settings=two)
    assert record.ok and record.num_processes == 2 and record.device.endswith("x2")
    assert record.hyperparameters["per_device_batch_size"] * 2 == record.hyperparameters["batch_size"]
    # two processes took turns on the batches: 32 examples / (4 per device x 2) = 4 steps per epoch
    assert [e["step"] for e in record.dev_curve] == [4, 8]
    pred_file = record.predictions_file(two.results_root)
    rows = [json.loads(line) for line in pred_file.read_text().splitlines()]
    assert len(rows) == len({r["id"] for r in rows}) == 20  # gathered from both, no duplicates
    assert predictions.score_file(pred_file, "BIOSSES", data_root=data_root)["score"] == pytest.approx(
        record.score_test)
    assert len(list(pred_file.parent.glob("seed*.json"))) == 1


def test_two_process_launches_that_reuse_a_record_exit_cleanly(two, data_root):
    """A launch whose run is already recorded returns at once on both processes. Before `accel.shutdown`
    and the barrier on the reuse path, about one such launch in ten ended in SIGABRT ("terminate called
    without an active exception") as one process tore gloo down under the other (4 of 40 launches)."""
    first = runner.run_finetune("BIOSSES", profile="smoke", settings=two)
    for _ in range(8):  # check=True: any non-zero exit of the launch raises
        again = runner.run_finetune("BIOSSES", profile="smoke", settings=two)
        assert [r.to_dict() for r in again] == [r.to_dict() for r in first]
