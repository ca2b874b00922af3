"""How long a book build will take on this machine, said before it trains anything.

The runs a build trains are those of the recorded build in ``reference/`` (the same profile's runs, every kind)
that the build's results root does not hold yet; each recorded run says how long it took
(``wall_time_s``). A short measurement of this CPU (:func:`medibio.core.speed.training_step_seconds`, in the
precision the runs will use) against the same measurement's value for the machine that recorded them
(:data:`RECORDING_STEP_S`) scales those times to this machine. The book trains in two one-thread processes on
a CPU with two cores or more (a chapter and the background process, :mod:`medibio.book.background`), so the
runs' time is halved there; what a build does besides training (kernels, light chapters, the HTML, run pages)
is :data:`OTHER_WORK_S` at the recording, scaled the same way.

The estimate assumes the load it measured lasts; more cores than two make it pessimistic (a chapter's runs
then get more threads). ``docs/benchmarks.md`` compares it with real builds.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from medibio.book import background
from medibio.book.chapters import TocEntry, execution_order
from medibio.core import profiles
from medibio.core.settings import Settings
from medibio.results.recorded import REFERENCE_ROOT
from medibio.runs.records import KINDS, RunRecord, load_records

# The build that recorded reference/ (commit 1600346, `make book` on the 2-core development machine with
# native bf16): 30 min 34 s, its runs' wall times 3,156 s in all, trained in two processes.
RECORDING_BUILD_S = 30 * 60 + 34
RECORDED_RUNS_S = 3156.3
OTHER_WORK_S = RECORDING_BUILD_S - RECORDED_RUNS_S / 2
# What training_step_seconds would measure on the recording machine, inferred by a calibration on another
# (docs/benchmarks.md, "The estimate before a build"): an AMD EPYC without AVX-512 (fp32), loaded by other jobs,
# so CPU time rather than wall time: its step took 0.2395 s (median of six), its one-thread run of the recorded
# BC5-chem configuration 244.4 s (250.5 s less 6 s of imports) against the recorded 64.59 s:
# 0.2395 × 64.59 / 244.4.
RECORDING_STEP_S = 0.0633

# The chapter that trains each kind of run (fine-tuning after an intermediate task: Tables 1–2; frozen
# baselines: the background process, beside the first chapters).
_CHAPTER_OF_KIND = {"pretrain": "table_3_pretraining", "scierc": "table_4_scierc",
                    "ift-stage": "tables_1_2_intermediate_finetuning"}


def chapter_of(record: RunRecord) -> str | None:
    """The chapter slug whose execution trains ``record``'s run (None: the background process's baselines)."""
    if record.kind == "finetune":
        return ("tables_5_6_pretraining_configurations" if record.variant == "base"
                else "tables_1_2_intermediate_finetuning")
    return _CHAPTER_OF_KIND.get(record.kind)


def planned_runs(profile: str, root: str | Path = REFERENCE_ROOT) -> list[RunRecord]:
    """Every recorded run of ``profile`` (all kinds; pretraining under the profile's pretraining configuration)."""
    found: list[RunRecord] = []
    for kind in KINDS:
        found += load_records(root, profile=profiles.filed_under(profile, kind), kind=kind, legacy=False)
    return found


def recorded_here(record: RunRecord, results_root: Path) -> bool:
    """Whether ``results_root`` holds a record of the same run (kind, profile, model, variant, dataset, seed)
    under any configuration digest: a CPU without native bf16 trains the recorded configurations in fp32, under
    a digest of its own, and a changed preset, which would retrain, is rare enough for an estimate."""
    return any(record.path(results_root).parent.parent.glob(f"*/seed{record.seed}.json"))


@dataclass(frozen=True)
class Estimate:
    """A build's expected time here, in total and per executed chapter (for the progress line's countdown)."""

    seconds: float
    chapters: dict[str, float]  # slug -> expected seconds, in execution order
    to_train: int  # runs the build will train
    recorded_here: int  # planned runs the results root already holds
    recorded_seconds: float  # the runs to train, as long as they took where they were recorded
    scale: float  # this machine's step time / the recording machine's
    step_s: float
    processes: int

    def describe(self) -> str:
        minutes = self.seconds / 60
        trains = (f"trains {self.to_train} runs ({self.recorded_seconds / 60:.0f} min where reference/ was "
                  f"recorded; {self.recorded_here} already recorded here)" if self.to_train else
                  f"trains nothing ({self.recorded_here} runs recorded here)")
        return (f"estimate: this build {trains}; this CPU runs a training step in {self.step_s * 1000:.0f} ms "
                f"against {RECORDING_STEP_S * 1000:.0f} ms there (x{self.scale:.2f}), {self.processes} "
                f"training process{'es' if self.processes > 1 else ''}: about {minutes:.0f} min\n  by chapter: "
                + ", ".join(f"{slug} {seconds / 60:.1f}" for slug, seconds in self.chapters.items()) + " min")


def estimate(profile: str, settings: Settings, chosen: Sequence[TocEntry], *, execute: bool = True,
             model: str | None = None, step: Callable[[], float] | None = None, root: str | Path = REFERENCE_ROOT,
             cores: int | None = None) -> Estimate | str:
    """The expected time of a build of ``chosen`` chapters (for ``model``; None: the profile's), or a sentence
    saying why there is none.

    ``step`` measures this CPU (default: :func:`medibio.core.speed.training_step_seconds` on one thread in
    the profile's precision); ``cores``: this machine's (default ``os.cpu_count()``)."""
    if not execute:
        return "no estimate: nothing executes (--no-execute)"
    if model is not None and model != profiles.get(profile).model:
        return f"no estimate: the recorded runs are the profile's model's, not {model!r}'s"
    if settings.limit is not None:
        return f"no estimate: --limit {settings.limit} runs no recorded configuration"
    planned = planned_runs(profile, root)
    if not planned:
        return f"no estimate: {root} holds no recorded runs of profile {profile!r}"
    slugs = [c.slug for c in execution_order(tuple(chosen)) if c.is_notebook]
    in_background = background.wanted(profile, chosen, execute)
    results_root = Path(settings.results_root)
    train: list[RunRecord] = []
    here = 0
    for record in planned:
        if (chapter_of(record) or (slugs[0] if in_background else None)) not in slugs:
            continue
        if settings.recorded is not None or recorded_here(record, results_root):
            here += 1
        elif record.status == "ok" and record.wall_time_s:
            train.append(record)
    requested = next((r.hyperparameters["mixed_precision"] for r in planned
                      if r.hyperparameters.get("mixed_precision")), "auto")
    step_s = (step or _measure(requested))()
    scale = step_s / RECORDING_STEP_S
    processes = 2 if in_background and (cores or os.cpu_count() or 1) >= 2 else 1
    chapters = _by_chapter(slugs, train, scale, processes)
    return Estimate(sum(chapters.values()), chapters, len(train), here, sum(r.wall_time_s for r in train), scale,
                    step_s, processes)


def _by_chapter(slugs: list[str], train: list[RunRecord], scale: float, processes: int) -> dict[str, float]:
    """Expected seconds per chapter. In one process each chapter takes its runs' time (the frozen baselines:
    the first chapter's). In two, the background process computes the frozen baselines while the chapters
    before the fine-tuning ones train their own runs, then trains ahead of the fine-tuning chapters
    (:data:`medibio.book.background.FINETUNES`): what is left of that shared work when they start is done by
    both processes, half the time, in proportion to each chapter's own runs."""
    other = OTHER_WORK_S / len(execution_order()) * scale
    own = dict.fromkeys(slugs, 0.0)
    frozen = 0.0
    for record in train:
        seconds = record.wall_time_s * scale
        if chapter_of(record) is None:
            frozen += seconds
        else:
            own[chapter_of(record)] += seconds
    shared_chapters = [slug for slug in slugs if slug in background.FINETUNES] if processes == 2 else []
    if not shared_chapters:
        if slugs:
            own[slugs[0]] += frozen
        return {slug: own[slug] + other for slug in slugs}
    times, capacity = {}, 0.0
    for slug in slugs[:slugs.index(shared_chapters[0])]:
        times[slug] = own[slug] + other
        capacity += own[slug]  # (OTHER_WORK_S was measured against this: runs halved, the rest not)
    shared = sum(own[slug] for slug in shared_chapters)
    left = max(shared + frozen - capacity, 0.0) / processes
    for slug in slugs[slugs.index(shared_chapters[0]):]:
        times[slug] = other + (left * own[slug] / shared if slug in shared_chapters and shared else own[slug])
    return times


def _measure(requested: str) -> Callable[[], float]:
    """The step of :mod:`medibio.core.speed` on one thread, in what ``requested`` precision becomes on this CPU."""
    from medibio.core import precision
    from medibio.core.speed import training_step_seconds

    return lambda: training_step_seconds(precision.precision_for(requested=requested), threads=1)
