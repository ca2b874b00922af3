"""Building from recorded results (``medibio book --from reference``): the results root is seeded from the
recording, every run is reused from it, and a run the recording lacks is an error naming it, never a
training. Fast: a synthetic recording of toy runs, no data root, no model."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from medibio.book import appendix
from medibio.book import notebook as nb
from medibio.book.build import build_book
from medibio.core import progress
from medibio.core.errors import MedibioError
from medibio.core.settings import Settings
from medibio.results import recorded
from medibio.runs import protocol
from medibio.runs import records as rec

COMMIT = "1234abcd" + "0" * 32


class Toy:
    """A kind of run that counts its trainings and writes fixed predictions (filed as fine-tuning runs)."""

    name = "finetune"

    def __init__(self, answer: int = 0) -> None:
        self.trained = 0
        self.answer = answer

    def replan(self, request: Mapping[str, Any], settings: Settings) -> protocol.Plan:
        return toy_plan(**request)

    def describe(self, record: rec.RunRecord) -> str:
        return f"toy {record.score_test}"

    def train(self, plan: protocol.Plan, context: protocol.RunContext) -> protocol.Outcome:
        self.trained += 1
        record = context.record(dataset=plan.key.dataset, model={"name": "toy", "tag": "toy"},
                                profile=plan.key.profile, seed=plan.key.seed, score_test=80.0 + plan.key.seed,
                                wall_time_s=0.0)
        record.environment["git_commit"] = COMMIT
        return protocol.Outcome(record, [{"id": str(i), "prediction": self.answer} for i in range(20)])


def toy_plan(seed: int = 1, lr: float = 1e-3) -> protocol.Plan:
    return protocol.plan("finetune", "cpu", "toy", "base", "BIOSSES", seed, {"lr": lr}, {"seed": seed, "lr": lr},
                         f"toy seed {seed}")


@pytest.fixture()
def recording(session_settings: Settings, tmp_path: Path) -> Path:
    """A recorded results root of three toy runs (seeds 1-3), made through the run protocol."""
    root = tmp_path / "reference"
    for seed in (1, 2, 3):
        protocol.run(Toy(), toy_plan(seed), session_settings.replace(results_root=root))
    return root


def test_a_seeded_results_root_reuses_every_recorded_run_and_trains_none(recording, session_settings, tmp_path):
    results = tmp_path / "results"
    assert recorded.seed_results_root(recording, results) == 6  # three records, three predictions files
    settings = session_settings.replace(results_root=results, recorded=recording)
    kind = Toy()
    for seed in (1, 2, 3):
        record, reused = protocol.run(kind, toy_plan(seed), settings)
        assert reused and record.git_commit == COMMIT
    assert kind.trained == 0
    assert recorded.seed_results_root(recording, results) == 0  # identical files are kept, nothing copied


def test_a_run_the_recording_lacks_is_an_error_naming_it(recording, session_settings, tmp_path):
    results = tmp_path / "results"
    recorded.seed_results_root(recording, results)
    settings = session_settings.replace(results_root=results, recorded=recording)
    kind = Toy()
    for attempt in ({}, {"force": True}):  # another configuration; a forced rerun of a recorded one
        plan = toy_plan(1, lr=2e-3) if not attempt else toy_plan(1)
        with pytest.raises(protocol.NotRecordedError) as info:
            protocol.run(kind, plan, settings, **attempt)
        message = str(info.value)
        assert "toy seed 1" in message and "finetune/cpu/toy/base/BIOSSES seed 1" in message
        assert plan.key.config_digest in message and "never trains" in message
    assert kind.trained == 0 and not toy_plan(1, lr=2e-3).key.path(results).exists()


def test_a_run_recorded_where_the_machine_decided_precision_otherwise_is_still_the_recorded_run(
        session_settings, tmp_path):
    """A recording made on a CPU with native bf16 renders on one without: the plan differs there only in its
    machine entry (the precision that CPU falls back to), so the recorded run is reused and the line says so;
    a difference in any other entry is still a run the recording lacks."""
    def plan(precision: str | None, lr: float = 1e-3) -> protocol.Plan:
        configuration = {"lr": lr, **({"precision": precision} if precision else {})}
        return protocol.plan("finetune", "cpu", "toy", "base", "BIOSSES", 1, configuration, {"lr": lr},
                             "toy seed 1", machine=("precision",))

    recording = tmp_path / "reference"
    protocol.run(Toy(), plan(None), session_settings.replace(results_root=recording))  # decided as requested
    results = tmp_path / "results"
    recorded.seed_results_root(recording, results)
    settings = session_settings.replace(results_root=results, recorded=recording)
    here = plan("no")  # this machine falls back to fp32: another digest
    assert here.key.config_digest != plan(None).key.config_digest
    kind, lines = Toy(), []
    with progress.sink(lambda kind_, info: lines.append(info.get("text", ""))):
        record, reused = protocol.run(kind, here, settings)
    assert reused and kind.trained == 0 and record.config_digest == plan(None).key.config_digest
    assert any("recorded on a machine that decided precision as requested (this machine: no)" in line
               for line in lines)
    with pytest.raises(protocol.NotRecordedError):
        protocol.run(kind, plan("no", lr=2e-3), settings)
    assert kind.trained == 0
    # outside a recorded build nothing is borrowed: this machine's run is its own, and it trains
    record, reused = protocol.run(kind, here, session_settings.replace(results_root=results))
    assert not reused and kind.trained == 1 and record.config_digest == here.key.config_digest


def test_seeding_refuses_the_recording_itself_and_a_root_holding_other_runs(recording, tmp_path):
    with pytest.raises(MedibioError, match="recorded results folder itself"):
        recorded.seed_results_root(recording, recording)
    results = tmp_path / "results"
    recorded.seed_results_root(recording, results)
    predictions = toy_plan(2).key.predictions_path(results)
    predictions.write_text('{"id": "0", "prediction": 9}\n', encoding="utf-8")
    with pytest.raises(MedibioError, match="differs from the recorded"):
        recorded.seed_results_root(recording, results)
    with pytest.raises(MedibioError, match="no run records"):
        recorded.seed_results_root(tmp_path / "empty", tmp_path / "elsewhere")


def test_every_page_says_which_mode_built_it(recording, session_settings, tmp_path):
    rendered = nb.built_by(session_settings.replace(recorded=recording), "cpu")
    assert rendered.startswith("**Rendered from recorded results** of commit 1234abcd")
    assert "3 runs" in rendered and "no run was trained" in rendered
    executed = nb.built_by(session_settings, "cpu")
    assert executed.startswith("**Re-executed on profile `cpu`**")
    origin = recorded.origin(recording)
    assert origin["runs"] == 3 and origin["profiles"] == ["cpu"] and origin["commits"] == ["1234abcd"]


def test_the_setting_reaches_processes_the_build_starts(recording, session_settings):
    settings = session_settings.replace(recorded=recording)
    assert Settings.from_env(settings.to_env()).recorded == recording
    assert Settings.from_env(session_settings.to_env()).recorded is None


def test_the_drift_table_lists_every_recorded_run(recording, session_settings, tmp_path):
    # rendered from the recording: every row is the recorded run itself
    results = tmp_path / "results"
    recorded.seed_results_root(recording, results)
    settings = session_settings.replace(results_root=results, recorded=recording)
    frame, caption = appendix.recorded_drift(results, "cpu", settings)
    assert len(frame) == 3 and frame["identical predictions"].all() and (frame["difference"] == 0).all()
    assert "identical by construction" in caption
    # a re-execution that recomputed seed 1 differently and never ran seed 3
    again = tmp_path / "again"
    protocol.run(Toy(answer=1), toy_plan(1), session_settings.replace(results_root=again))
    protocol.run(Toy(), toy_plan(2), session_settings.replace(results_root=again))
    frame, caption = appendix.recorded_drift(again, "cpu", session_settings.replace(results_root=again),
                                             recorded_root=recording)
    by_seed = frame.set_index("seed")
    assert list(by_seed.index) == [1, 2, 3]  # every recorded run, the one not re-executed too
    assert not by_seed.loc[1, "identical predictions"]
    assert by_seed.loc[2, "identical predictions"] and by_seed.loc[3, "status"] == "only recorded"
    assert by_seed.loc[1, "inside seed spread"]  # same score (81), recorded spread of 81, 82, 83
    assert "1 of 2 with identical test predictions" in caption and "1 only recorded" in caption


def test_a_build_from_a_recording_of_another_profile_stops_before_any_chapter(recording, session_settings,
                                                                            tmp_path):
    settings = session_settings.replace(results_root=tmp_path / "results", recorded=recording)
    with pytest.raises(MedibioError, match="no recorded runs of profile 'smoke'"):
        build_book("smoke", settings, root=tmp_path / "book", only=["intro"], html=False)
    assert not (tmp_path / "results").exists()


def test_table5_fine_tuning_without_the_pretrained_weights_says_what_is_missing(session_settings, tmp_path):
    """A run planned from a pretraining run's name is planned without its weights (from a BIOSSES split written
    here, no data root) and stops, when it would train, on the one line naming the run and what is missing."""
    from medibio.experiments import scaled_down

    pretrained = rec.RunRecord(kind="pretrain", dataset="biomed-abstracts", model={"name": "m", "tag": "scratch"},
                               profile="mini", variant="table5-1", seed=42, config_digest="abcabcabcabc",
                               artifacts={"model": "seed42/model"})
    biosses = tmp_path / "data" / "blurb" / "BIOSSES"
    biosses.mkdir(parents=True)
    for split in ("train", "dev", "test"):
        rows = "".join(f"{split}{i}\tA {split} cat sat {i} .\tA cat is sitting .\t{i % 5}.0\n" for i in range(4))
        (biosses / f"{split}.tsv").write_text("pair_id\tsent1\tsent2\tscore\n" + rows, encoding="utf-8")
    settings = session_settings.replace(data_root=tmp_path / "data", results_root=tmp_path / "results")
    with pytest.raises(MedibioError, match=r"pretrain-run:mini/scratch/table5-1/biomed-abstracts/abcabcabcabc/seed42: "
                                           r"the results root .* holds neither its record nor its weights"):
        scaled_down.finetune_experiments({"table5-1": pretrained}, "BIOSSES", profile="cpu", seeds=[1],
                                    settings=settings)
