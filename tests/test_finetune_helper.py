"""A second process helps a fine-tuning request: it trains from the last job backwards and stops where the
first process (which works from the first job onwards) has been."""

from __future__ import annotations

import pytest
import torch

from medibio.book.background import train_from_the_end
from medibio.finetune import runner
from medibio.runs import records as rec

pytestmark = pytest.mark.realdata

TASKS = "BIOSSES,GAD"  # in this order (seed 1 on smoke)


def test_it_trains_from_the_end_and_stops_at_a_finished_run(settings, data_root):
    tmp_path = settings.results_root
    plans = runner.plan_runs(TASKS, profile="smoke", settings=settings)
    assert [p.job.spec.name for p in plans] == ["BIOSSES", "GAD"]
    [first] = runner.run_finetune("BIOSSES", profile="smoke", settings=settings)
    helped = train_from_the_end(TASKS, profile="smoke", settings=settings)
    assert [r.dataset for r in helped] == ["GAD"]  # BIOSSES was done: it stopped there
    assert helped[0].cpu_threads == first.cpu_threads == torch.get_num_threads()  # recorded with the run
    assert rec.find_record(tmp_path, plans[1].key) is not None
    assert rec.find_record(tmp_path, plans[0].key).run_id == first.run_id  # not trained again
    # the request itself now reuses both records
    again = runner.run_finetune(TASKS, profile="smoke", settings=settings)
    assert [r.run_id for r in again] == [first.run_id, helped[0].run_id]


def test_it_stops_at_a_run_another_process_is_training(settings, data_root):
    tmp_path = settings.results_root
    plans = runner.plan_runs(TASKS, profile="smoke", settings=settings)
    with rec.run_lock(plans[1].key, tmp_path):  # GAD, the last job, is being trained elsewhere
        helped = train_from_the_end(TASKS, profile="smoke", settings=settings)
    assert helped == []
    assert all(rec.find_record(tmp_path, p.key) is None for p in plans)  # it did not go on to BIOSSES either
