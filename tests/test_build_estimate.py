"""The time a book build announces before it starts (medibio.book.estimate) and the progress line's countdown."""

from __future__ import annotations

import shutil

import pytest

from medibio.book import estimate as est
from medibio.book.build import select
from medibio.core import precision, speed
from medibio.core.progress import Countdown
from medibio.core.settings import Settings
from medibio.results.recorded import REFERENCE_ROOT


def _settings(tmp_path, **kw) -> Settings:
    return Settings(data_root=tmp_path / "data", results_root=tmp_path / "results", cache_root=tmp_path / "cache", **kw)


NOTEBOOKS = sum(c.is_notebook for c in select())  # the chapters that share the work besides training


def same(precision: str) -> float:
    """The recording machine's own step: this machine is that one."""
    return est.RECORDING_STEP_S[precision]


def never(precision: str) -> float:
    """A training step that must not be measured."""
    raise AssertionError(f"a {precision} training step measured")


def reference() -> float:
    """A kernel's imports at the speed the recorded build's chapter times are stated at."""
    return est.KERNEL_IMPORT_S


def bf16_cpu(requested: str) -> str:
    """A CPU with native bf16, as the recording machine had (pretraining's ``gpu`` stays fp32 there)."""
    return precision.precision_for(precision.Device("cpu", native_bf16=True), requested)


def _trained(records):
    return [r for r in records if r.status == "ok" and r.wall_time_s]


def test_a_fresh_build_on_the_recording_machine_is_estimated_at_the_recording_build(tmp_path):
    found = est.estimate("cpu", _settings(tmp_path), select(), step=same, precision_here=bf16_cpu, cores=2)
    planned = _trained(est.planned_runs("cpu"))
    assert found.to_train == len(planned) and found.recorded_here == 0 and found.processes == 2
    assert found.recorded_seconds == pytest.approx(est.RECORDED_RUNS_S, rel=1e-3)
    assert found.seconds == pytest.approx(est.RECORDING_BUILD_S, rel=1e-3)
    assert list(found.chapters) == [c.slug for c in select() if c.is_notebook and not c.execute_last] + ["intro",
                                                                                              "what_holds_up"]
    assert "about 31 min" in found.describe()


def test_a_slower_cpu_scales_the_time_and_recorded_runs_are_not_counted(tmp_path):
    settings = _settings(tmp_path)
    scierc = [r for r in est.planned_runs("cpu") if r.kind == "scierc"]
    held = scierc[0].path(REFERENCE_ROOT)
    # a record of the same run under another digest (another machine's precision) counts as recorded too
    target = scierc[0].path(settings.results_root).parent.with_name("0123456789ab") / held.name
    target.parent.mkdir(parents=True)
    shutil.copy2(held, target)
    fresh = est.estimate("cpu", _settings(tmp_path / "empty"), select(), step=same, precision_here=bf16_cpu, cores=2)
    slower = est.estimate("cpu", settings, select(), step=lambda p: 2 * same(p), precision_here=bf16_cpu, cores=2)
    assert slower.scale == pytest.approx(2.0)
    assert (slower.to_train, slower.recorded_here) == (fresh.to_train - 1, 1)
    assert slower.seconds == pytest.approx(2 * (fresh.seconds - scierc[0].wall_time_s / 2))
    # the SciERC chapter trains its runs itself, one after the other, while the background process computes
    # the frozen baselines: a run less is its whole time less there
    assert slower.chapters["table_4_scierc"] == pytest.approx(
        2 * (fresh.chapters["table_4_scierc"] - scierc[0].wall_time_s))


def test_one_chapter_on_one_core_counts_its_own_runs_in_one_process(tmp_path):
    found = est.estimate("cpu", _settings(tmp_path), select(["table_4_scierc"]), step=same, precision_here=bf16_cpu,
                         cores=1)
    scierc = _trained(r for r in est.planned_runs("cpu") if r.kind == "scierc")
    assert (found.to_train, found.processes, list(found.chapters)) == (len(scierc), 1, ["table_4_scierc"])
    assert found.seconds == pytest.approx(sum(r.wall_time_s for r in scierc) + est.OTHER_WORK_S / NOTEBOOKS)


def test_no_estimate_where_no_recorded_configuration_runs(tmp_path):
    assert "--limit 4" in est.estimate("cpu", _settings(tmp_path, limit=4), select(), step=never)
    assert "no recorded runs of profile 'smoke'" in est.estimate("smoke", _settings(tmp_path), select(), step=never)
    assert "--no-execute" in est.estimate("cpu", _settings(tmp_path), select(), execute=False, step=never)


def test_the_countdown_keeps_the_pace_of_the_finished_stages():
    now = [0.0]
    countdown = Countdown({"a": 100.0, "b": 300.0, "c": 10.0}, clock=lambda: now[0])
    assert countdown.left() == 410.0
    now[0] = 200.0  # "a" took twice its estimate
    countdown.finish("a")
    assert countdown.pace() == 2.0 and countdown.left() == 620.0
    assert countdown.line().startswith("about 10:20 left (done at ")
    short = Countdown({"a": 30.0, "b": 60.0}, clock=lambda: now[0])
    now[0] += 90.0
    short.finish("a")  # under a minute expected so far: the estimates stand as they are
    assert short.left() == 60.0
    long = Countdown({"first": 90.0, "rest": 3000.0}, clock=lambda: now[0])
    now[0] += 9.0
    long.finish("first")  # a tenth of its estimate, but under a tenth of the whole: no pace from it yet
    assert long.left() == 3000.0


def test_no_estimate_for_another_model(tmp_path):
    found = est.estimate("cpu", _settings(tmp_path), select(), model="tiny-deberta",
                         step=lambda precision: pytest.fail("measured"))
    assert "not 'tiny-deberta'" in found


def test_each_run_is_scaled_from_the_precision_it_was_recorded_in_to_the_one_it_will_use(tmp_path):
    """On a CPU without native bf16 every run trains in fp32: the runs recorded in bf16 scale by this CPU's fp32
    step over the recording machine's bf16 step, the pretraining run (fp32 there too) by the two fp32 steps."""
    measured = []

    def fp32_here(precision):
        measured.append(precision)
        return 3 * est.RECORDING_STEP_S["no"]

    found = est.estimate("cpu", _settings(tmp_path), select(["table_3_pretraining", "table_4_scierc"]),
                         step=fp32_here, precision_here=lambda requested: "no", cores=1)
    assert measured == ["no"] and found.steps == {"no": pytest.approx(3 * est.RECORDING_STEP_S["no"])}
    planned = _trained(est.planned_runs("cpu"))
    pretrain = sum(r.wall_time_s for r in planned if r.kind == "pretrain")
    scierc = sum(r.wall_time_s for r in planned if r.kind == "scierc")
    bf16_scale = 3 * est.RECORDING_STEP_S["no"] / est.RECORDING_STEP_S["bf16"]
    other = est.OTHER_WORK_S / NOTEBOOKS * 3  # the work besides training scales as fp32 does
    assert found.chapters["table_3_pretraining"] == pytest.approx(3 * pretrain + other)
    assert found.chapters["table_4_scierc"] == pytest.approx(bf16_scale * scierc + other)


def test_a_build_from_recorded_runs_counts_the_runs_every_chapter_reads(tmp_path):
    """Rendering reference/ trains nothing; each chapter's time follows the recorded runs it reads (all of them
    for Appendix B's index and drift, the claims' fine-tuning runs for What holds up), not the profile's 48, and
    scales with a chapter kernel's imports measured here, not with a training step (none is measured)."""
    recorded = REFERENCE_ROOT.resolve()
    found = est.estimate("cpu", _settings(tmp_path, recorded=recorded), select(), step=never, work=reference,
                         cores=2)
    every = sorted(p for p in recorded.rglob("seed*.json") if not p.name.endswith(".test.json"))
    assert found.to_train == 0 and found.rendered == len(every) > len(est.planned_runs("cpu"))
    assert found.reads["appendix_b_reproducibility"] == len(every)
    claims = [p for p in every if p.relative_to(recorded).parts[:2] in {("finetune", "cpu-ift"), ("finetune", "cpu-study")}]
    assert found.reads["what_holds_up"] == len(claims)
    assert found.reads["figures_2_4_field_correlation"] == 0
    for slug, seconds in found.chapters.items():  # on the recording machine: its fixed work plus the reading
        fixed = est.RENDERING_S[slug][0]
        assert seconds >= fixed and (seconds == fixed) == (found.reads[slug] == 0)
    assert found.chapters["appendix_b_reproducibility"] > 4 * found.chapters["intro"]
    slower = est.estimate("cpu", _settings(tmp_path, recorded=recorded), select(), step=never,
                          work=lambda: 2 * reference(), cores=2)
    assert slower.seconds == pytest.approx(2 * found.seconds)
    assert f"renders {len(every)} recorded runs" in found.describe() and "x2.00" in slower.describe()
    assert found.steps == {} and "training step" not in found.describe()
    # the run pages come after the chapters: in the total, in the countdown, and in the per-stage line
    assert found.pages > 0 and found.pages == pytest.approx(slower.pages / 2)
    # two chapters at a time on two cores: each takes as long; a wave of chapters (then the two that read them)
    # takes half its sum, or its longest chapter where that is longer
    assert found.at_once == 2 and "2 chapters at a time" in found.describe()
    first = [c.slug for c in select() if c.is_notebook and not c.execute_last]
    readers = [c.slug for c in select() if c.execute_last]
    assert readers == ["intro", "what_holds_up"]
    spans = [max(sum(found.chapters[s] for s in wave) / 2, *(found.chapters[s] for s in wave))
             for wave in (first, readers)]
    assert found.seconds == pytest.approx(sum(spans) + found.pages)
    assert found.seconds == pytest.approx(sum(found.stages().values()))
    assert list(found.stages())[-1] == "run pages" and "run pages" in found.describe()
    # what the build's report keeps: each chapter on its own (not its share of a wave), then the run pages
    assert found.parts() == {**found.chapters, "run pages": found.pages}
    alone = est.estimate("cpu", _settings(tmp_path, recorded=recorded), select(), step=never, work=reference,
                         cores=1)
    assert alone.at_once == 1 and alone.chapters == found.chapters
    assert alone.seconds == pytest.approx(sum(found.chapters.values()) + found.pages)


def test_a_kernels_imports_are_timed_in_fresh_interpreters_on_the_given_clock():
    """The measurement behind a build from recorded runs: the median of fresh interpreters importing the chapters'
    library, on the given clock (wall time by default, so that the load counts); a module that cannot be imported
    is said, not timed."""
    ticks = iter([0, 5, 10, 12, 20, 29])  # three imports taking 5, 2 and 9
    assert speed.kernel_import_seconds("json", repeats=3, clock=lambda: next(ticks)) == 5
    assert 0 < speed.kernel_import_seconds("json", repeats=1) < 60
    with pytest.raises(RuntimeError, match="no_such_module_here"):
        speed.kernel_import_seconds("no_such_module_here", repeats=1)


def test_a_build_from_recorded_runs_whose_measurement_fails_has_no_estimate_and_goes_on(tmp_path):
    def broken() -> float:
        raise RuntimeError("`python -c import medibio.book.notebook` failed: ModuleNotFoundError")

    found = est.estimate("cpu", _settings(tmp_path, recorded=REFERENCE_ROOT.resolve()), select(), step=never,
                         work=broken, cores=2)
    assert isinstance(found, str) and found.startswith("no estimate: this CPU could not be measured")
    assert "ModuleNotFoundError" in found
