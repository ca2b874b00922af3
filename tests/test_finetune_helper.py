"""Two processes work through one list of fine-tuning runs: the book's background process trains ahead
(skipping what is recorded or held by another process), and a chapter puts off a run the other process holds
until its other runs are done."""

from __future__ import annotations

import threading
import time

import pytest
import torch

from medibio.book import background
from medibio.finetune import runner
from medibio.runs import records as rec

pytestmark = pytest.mark.realdata

TASKS = "BIOSSES,GAD"  # in this order (seed 1 on smoke)


def test_it_trains_ahead_and_skips_a_finished_run(settings, data_root):
    tmp_path = settings.results_root
    plans = runner.plan_runs(TASKS, profile="smoke", settings=settings)
    assert [p.job.spec.name for p in plans] == ["BIOSSES", "GAD"]
    [first] = runner.run_finetune("BIOSSES", profile="smoke", settings=settings)
    helped = background.train_ahead(plans, settings)
    assert [r.dataset for r in helped] == ["GAD"]  # BIOSSES was done: skipped
    assert helped[0].cpu_threads == first.cpu_threads == torch.get_num_threads()  # recorded with the run
    assert rec.find_record(tmp_path, plans[0].key).run_id == first.run_id  # not trained again
    # the request itself now reuses both records
    again = runner.run_finetune(TASKS, profile="smoke", settings=settings)
    assert [r.run_id for r in again] == [first.run_id, helped[0].run_id]


def test_it_skips_a_run_another_process_is_training_and_goes_on(settings, data_root):
    tmp_path = settings.results_root
    plans = runner.plan_runs(TASKS, profile="smoke", settings=settings)
    with rec.run_lock(plans[0].key, tmp_path):  # BIOSSES is being trained elsewhere
        helped = background.train_ahead(plans, settings)
    assert [r.dataset for r in helped] == ["GAD"]
    assert rec.find_record(tmp_path, plans[0].key) is None  # left to the process that holds it


def test_a_chapter_puts_off_a_run_another_process_holds(settings, data_root):
    """BIOSSES is held elsewhere for a while: the request trains GAD meanwhile, then waits for BIOSSES and
    trains it once it is free; the records come back in the request's order."""
    tmp_path = settings.results_root
    plans = runner.plan_runs(TASKS, profile="smoke", settings=settings)
    held, release = threading.Event(), threading.Event()

    def other_process() -> None:
        with rec.run_lock(plans[0].key, tmp_path):
            held.set()
            release.wait(120)

    thread = threading.Thread(target=other_process)
    thread.start()
    held.wait(30)
    freed_at: list[float] = []

    def free_when_gad_is_recorded() -> None:
        while rec.find_record(tmp_path, plans[1].key) is None and thread.is_alive():
            time.sleep(0.2)
        freed_at.append(time.time())
        release.set()

    watcher = threading.Thread(target=free_when_gad_is_recorded)
    watcher.start()
    records = runner.run_finetune(TASKS, profile="smoke", settings=settings)
    watcher.join()
    thread.join()
    assert [r.dataset for r in records] == ["BIOSSES", "GAD"]
    assert all(r.ok for r in records)
    # GAD was trained while BIOSSES was held; BIOSSES only after it was freed
    assert rec.find_record(tmp_path, plans[0].key).created >= rec.find_record(tmp_path, plans[1].key).created


def test_the_background_plans_the_chapters_runs(settings, data_root):
    """What the process trains ahead is what the two chapters ask for at their default parameters (the same
    run identities), Tables 5–6's costliest first."""
    from medibio.book import parameters
    from medibio.experiments import ift_runs

    profile = "cpu"
    params = parameters.resolve(profile, models=None, tasks=None, seeds=None, ift_tasks=None, stilt_tasks=None,
                                stilt_seeds=None, finetune_config=None)
    model = params.models[0]
    table56 = runner.plan_runs(params.tasks, model, params.seeds, profile, params.finetune_config, settings=settings)
    table12 = [*ift_runs.plan_ift("BIOSSES", params.ift_tasks, profile=profile, model=model, seeds=params.seeds,
                             settings=settings),
               *ift_runs.plan_transfer_matrix(params.stilt_tasks, profile=profile, model=model, seeds=params.stilt_seeds,
                                         settings=settings)]
    ahead = background.chapter_runs(profile, background.FINETUNES, settings)
    assert [p.key for p in ahead[:len(table56)]] == sorted((p.key for p in table56),
                                                            key=lambda k: -background.cost(
                                                                next(p for p in table56 if p.key == k)))
    assert {p.key for p in ahead[len(table56):]} == {p.key for p in table12}
    assert ahead[0].job.spec.name == "ChemProt" and ahead[len(table56) - 1].job.spec.name == "BIOSSES"
    only_ift = background.chapter_runs(profile, [background.FINETUNES[1]], settings)
    assert [p.key for p in only_ift] == [p.key for p in ahead[len(table56):]]
