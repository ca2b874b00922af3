"""How long a book build will take on this machine, said before it trains anything.

The runs a build trains are those of the recorded build in ``reference/`` (the same profile's runs, every kind)
that the build's results root does not hold yet; each recorded run says how long it took (``wall_time_s``) and
in which precision. A short measurement of this CPU (:func:`medibio.core.speed.training_step_seconds`, in wall
time, in the precision each run will use here) against the same measurement's value for the machine that
recorded them in the precision it used (:data:`RECORDING_STEP_S`) scales each run's time to this machine. The
book trains in two one-thread processes on a CPU with two cores or more (a chapter and the background process,
:mod:`medibio.book.background`); what a build does besides training (kernels, light chapters, the HTML, run
pages) is :data:`OTHER_WORK_S` at the recording, scaled as fp32 work.

A build from recorded runs (``--from``) trains nothing: its chapters' time follows the recorded runs each of
them reads (:func:`chapters_reading`; Appendix B reads every one), not the profile's own runs, and it is scaled
by a measurement of the work it does (:func:`medibio.core.speed.kernel_import_seconds`: a chapter kernel's
start, the interpreter's work) rather than by a training step, which a loaded or slower CPU slows otherwise.

The measurement sees the load of its moment and assumes it lasts; more cores than two make the estimate
pessimistic (a chapter's runs then get more threads). ``docs/benchmarks.md`` compares it with real builds.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from medibio.book import background
from medibio.book.chapters import TocEntry, at_once, execution_order
from medibio.core import capacity, profiles, progress
from medibio.core.settings import Settings
from medibio.experiments.ift import RECORDED
from medibio.experiments.table5 import STUDY
from medibio.results.recorded import REFERENCE_ROOT
from medibio.runs.records import BASE_VARIANT, KINDS, RunRecord, load_records

# The build that recorded reference/ (commit 1600346, `make book` on the 2-core development machine with
# native bf16): 30 min 34 s, its runs' wall times 3,156 s in all, trained in two processes.
RECORDING_BUILD_S = 30 * 60 + 34
RECORDED_RUNS_S = 3156.3
OTHER_WORK_S = RECORDING_BUILD_S - RECORDED_RUNS_S / 2
# What training_step_seconds would measure on the recording machine in each precision its runs used (bf16
# autocast for fine-tuning, SciERC and the frozen baselines; fp32 for pretraining), inferred by a calibration
# on another machine (docs/benchmarks.md, "The estimate before a build"): an AMD EPYC without AVX-512, where
# everything trains in fp32, loaded by other jobs, so in CPU time rather than wall time. Its fp32 step took
# 0.2395 s (median of six); its one-thread runs of recorded configurations took, in CPU time less 6 s of imports,
# BC5-chem (bf16 there) 244.4 s against the recorded 64.59 s, and the pretraining run (fp32 there)
# 58.8 s (64.8 s less 6 s) against the recorded 47.76 s.
RECORDING_STEP_S = {"bf16": round(0.2395 * 64.59 / 244.4, 4), "no": round(0.2395 * 47.76 / 58.8, 4)}

# A build from recorded runs trains nothing: each chapter takes RENDERING_S[slug] = (a fixed part: kernel, imports,
# its own computations; a part per recorded run it reads: records, test predictions scored unit by unit, tables;
# the claims' multi-bootstraps and verdicts are computed once per build, medibio.results.evidence_cache), in seconds
# on a CPU where a chapter kernel's imports (medibio.core.speed.kernel_import_seconds) take KERNEL_IMPORT_S, scaled
# by that import's time here. Calibrated on cold builds of 648 runs from fresh clones, two chapters at a time, on
# an AMD EPYC with AVX-512 bf16 (2026-12-04, docs/benchmarks.md, "The AMD EPYC with AVX-512 bf16, and an estimate
# that measures a kernel's start"): each part's time over the import's scale in its build, the mean of three quiet
# builds, then scaled by the geometric mean of its ratio in nine (six quiet, three emulated slower), split between
# the fixed part and the runs read as the earlier calibration on an Intel Xeon with AMX split it.
KERNEL_IMPORT_S = 0.51
_APPENDIX_B = "appendix_b_reproducibility"
_CLAIMS = "what_holds_up"
_TABLES_5_6 = "tables_5_6_pretraining_configurations"
_TABLES_1_2 = "tables_1_2_intermediate_finetuning"
_TABLE_7 = "table_7_blurb_comparison"
_SCIERC = "table_4_scierc"
RENDERING_S = {
    "figures_2_4_field_correlation": (3.78, 0.0), "appendix_a_paper_audit": (2.83, 0.0), "intro": (1.71, 0.0),
    "table_3_pretraining": (2.52, 0.0247), _SCIERC: (2.15, 0.43), _TABLES_5_6: (2.30, 0.017),
    _TABLES_1_2: (2.83, 0.0136), _TABLE_7: (2.60, 0.0582), _APPENDIX_B: (2.18, 0.0261),
    _CLAIMS: (2.51, 0.0005),  # reads the claims Appendix B judged (the evidence cache), whatever it reads
}
_UNMEASURED = (2.43, 0.0243)  # a chapter not calibrated: the mean scale of those that were
# The run pages after the chapters: per recorded run, at the same speed, with a worker process on each of two
# cores (medibio.core.workers, a dataset's pages in one). More cores write them faster than estimated.
RUN_PAGE_S = 0.0250
# The profiles a claim is declared on (their runs are recorded, read by the claims and shown by one chapter)
_SHOWN_BY = {RECORDED.profile: _TABLES_1_2, STUDY.profile: _TABLES_5_6}

# The chapter that trains each kind of run (fine-tuning after an intermediate task: Tables 1–2; frozen
# baselines: the background process, beside the first chapters).
_NAMES = {"bf16": "bf16", "no": "fp32"}
_CHAPTER_OF_KIND = {"pretrain": "table_3_pretraining", "scierc": _SCIERC,
                    "ift-stage": _TABLES_1_2}


def chapter_of(record: RunRecord) -> str | None:
    """The chapter slug whose execution trains ``record``'s run (None: the background process's baselines)."""
    if record.kind == "finetune":
        return ("tables_5_6_pretraining_configurations" if record.variant == BASE_VARIANT
                else "tables_1_2_intermediate_finetuning")
    return _CHAPTER_OF_KIND.get(record.kind)


def chapters_reading(record: RunRecord, profile: str) -> set[str]:
    """The chapters of a ``profile`` build that read ``record``: Appendix B (its run index and drift read every
    run); a run of the profile, the chapters whose tables show it (the frozen baselines: every fine-tuning
    table); a run of a profile a claim is declared on, the chapter that shows it and, for fine-tuning, the
    claims."""
    found = {_APPENDIX_B}
    if record.profile == profiles.filed_under(profile, record.kind):
        if record.kind == "frozen":
            return found | {_TABLES_5_6, _TABLES_1_2, _TABLE_7}
        if record.kind == "finetune":
            return found | {_TABLE_7, _TABLES_5_6 if record.variant == BASE_VARIANT else _TABLES_1_2}
        return found | ({chapter_of(record)} - {None})
    for declared, slug in _SHOWN_BY.items():
        if record.profile == profiles.filed_under(declared, record.kind):
            found |= {slug, _CLAIMS} if record.kind == "finetune" else {slug}
    return found


def recorded_runs(root: str | Path) -> list[RunRecord]:
    """Every run recorded under ``root``, of every kind and profile."""
    return [r for kind in KINDS for r in load_records(root, kind=kind, legacy=False)]


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


def _precision(value: str | None) -> str:
    return "no" if value in (None, "", "no", "fp32") else str(value)


def recorded_precision(record: RunRecord) -> str:
    """accelerate's ``mixed_precision`` a recorded run computed in (``"bf16"`` or ``"no"``): what fine-tuning and
    SciERC record as used, pretraining in its details, a frozen baseline as its precision, an IFT stage as asked."""
    hp, details = record.hyperparameters, record.details
    return _precision(hp.get("mixed_precision_used") or details.get("mixed_precision") or hp.get("precision")
                      or hp.get("mixed_precision"))


def requested_precision(record: RunRecord) -> str:
    """The precision a run of this configuration asks for (``bf16``, pretraining's ``gpu``: bf16 on a GPU only;
    ``auto`` where it names none), which :func:`medibio.core.precision.precision_for` turns into this CPU's."""
    return record.hyperparameters.get("mixed_precision") or record.hyperparameters.get("precision") or "auto"


@dataclass(frozen=True)
class Estimate:
    """A build's expected time here, in total and per executed chapter (for the progress line's countdown)."""

    seconds: float
    chapters: dict[str, float]  # slug -> expected seconds, in execution order
    to_train: int  # runs the build will train
    recorded_here: int  # planned runs the results root already holds
    recorded_seconds: float  # the runs to train, as long as they took where they were recorded
    # this machine's step time / the recording machine's, weighted by the runs' recorded time (a build from
    # recorded runs: its kernel's import / KERNEL_IMPORT_S)
    scale: float
    steps: dict[str, float]  # the step measured here, per precision the runs will compute in
    processes: int
    work: float = 0.0  # a build from recorded runs: a kernel's import measured here (seconds)
    reads: dict[str, int] = field(default_factory=dict)  # a build from recorded runs: slug -> runs it reads
    rendered: int = 0  # a build from recorded runs: the runs recorded there, of every kind and profile
    pages: float = 0.0  # a build from recorded runs: the run pages after the chapters, expected seconds
    at_once: int = 1  # chapters executed side by side (medibio.book.chapters.at_once)
    # slug -> the part of its time a chapter executed side by side adds to the build's (1: one at a time)
    share: dict[str, float] = field(default_factory=dict)

    def describe(self) -> str:
        minutes = self.seconds / 60
        if self.rendered:
            read = ", ".join(f"{slug} {n}" for slug, n in self.reads.items() if n)
            speed = (f"a chapter kernel's imports take {self.work:.2f} s on this CPU now, {KERNEL_IMPORT_S:.2f} s "
                     f"where the chapters' times were measured (x{self.scale:.2f})")
            return (f"estimate: this build renders {self.rendered} recorded runs, training nothing (runs read by "
                    f"chapter: {read}); {speed}: about {minutes:.0f} min\n  by chapter: " + self._by_chapter())
        if self.to_train:
            trains = (f"trains {self.to_train} runs ({self.recorded_seconds / 60:.0f} min where reference/ was "
                      f"recorded; {self.recorded_here} already recorded here)")
        else:
            trains = f"trains nothing ({self.recorded_here} runs recorded here)"
        steps = ", ".join(f"{_NAMES[p]} {s * 1000:.0f} ms" for p, s in self.steps.items())
        there = ", ".join(f"{_NAMES[p]} {s * 1000:.0f} ms" for p, s in RECORDING_STEP_S.items())
        return (f"estimate: this build {trains}; a training step takes {steps} on this CPU now, {there} where "
                f"they were recorded (x{self.scale:.2f} overall), {self.processes} "
                f"training process{'es' if self.processes > 1 else ''}: about {minutes:.0f} min\n  by chapter: "
                + self._by_chapter())

    def _by_chapter(self) -> str:
        return (", ".join(f"{slug} {progress.clock(seconds)}" for slug, seconds in self.chapters.items())
                + (f", run pages {progress.clock(self.pages)}" if self.pages else "")
                + (f"; {self.at_once} chapters at a time" if self.at_once > 1 else ""))

    def parts(self) -> dict[str, float]:
        """Expected seconds of each chapter on its own and of the run pages: what a build's report keeps beside
        the times it took."""
        return {**self.chapters, **({"run pages": self.pages} if self.pages else {})}

    def stages(self) -> dict[str, float]:
        """Expected seconds of every stage the progress line counts down: the chapters (each its share of the
        time when several execute side by side), then the run pages."""
        return {**{slug: seconds * self.share.get(slug, 1.0) for slug, seconds in self.chapters.items()},
                **({"run pages": self.pages} if self.pages else {})}


def estimate(profile: str, settings: Settings, chosen: Sequence[TocEntry], *, execute: bool = True,
             model: str | None = None, step: Callable[[str], float] | None = None,
             precision_here: Callable[[str], str] | None = None, root: str | Path = REFERENCE_ROOT,
             cores: int | None = None, work: Callable[[], float] | None = None) -> Estimate | str:
    """The expected time of a build of ``chosen`` chapters (for ``model``; None: the profile's), or a sentence
    saying why there is none.

    ``step(precision)`` measures this CPU (default: :func:`medibio.core.speed.training_step_seconds` on one
    thread); ``precision_here(requested)``: what a run asking for ``requested`` computes in here (default: this
    CPU's answer); ``cores``: this machine's (default :func:`medibio.core.capacity.usable_cores`). Each run's recorded time is scaled by
    the step in the precision it will use here over the recording machine's step in the precision it used.
    ``work()`` measures this CPU for a build from recorded runs, which measures no step (default:
    :func:`medibio.core.speed.kernel_import_seconds`)."""
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
    if settings.recorded is not None:
        try:
            measured = (work or _kernel_import)()
        except RuntimeError as exc:  # the build goes on; its kernels will say what fails to import
            return f"no estimate: this CPU could not be measured ({exc})"
        return _rendering(profile, settings, chosen, slugs, here, measured, cores)
    here_precision = precision_here or _precision_here
    measure = step or _measure
    wanted = {here_precision(requested_precision(r)) for r in planned if r.status == "ok" and r.wall_time_s}
    steps = {p: measure(p) for p in sorted(wanted)}

    def scale(record: RunRecord) -> float:
        return steps[here_precision(requested_precision(record))] / RECORDING_STEP_S[recorded_precision(record)]

    timed = [r for r in planned if r.status == "ok" and r.wall_time_s]
    overall = sum(r.wall_time_s * scale(r) for r in timed) / sum(r.wall_time_s for r in timed)
    # the work besides training (kernels, imports, pandas, Sphinx) is fp32 work whatever the runs use
    other = steps["no"] / RECORDING_STEP_S["no"] if "no" in steps else overall
    processes = 2 if in_background and (cores or capacity.usable_cores()) >= 2 else 1
    chapters = _by_chapter(slugs, [(r, r.wall_time_s * scale(r)) for r in train], other, processes)
    return Estimate(sum(chapters.values()), chapters, len(train), here, sum(r.wall_time_s for r in train), overall,
                    steps, processes)


def _rendering(profile: str, settings: Settings, chosen: Sequence[TocEntry], slugs: list[str], here: int,
               work: float, cores: int | None) -> Estimate:
    """A build from the recorded runs of ``settings.recorded``: each chapter's fixed part and the runs it reads,
    then the run pages, scaled by a kernel's import measured here (``work``, seconds) over :data:`KERNEL_IMPORT_S`."""
    scale = work / KERNEL_IMPORT_S
    rendered = recorded_runs(settings.recorded)
    reads = {slug: sum(slug in chapters_reading(r, profile) for r in rendered) for slug in slugs}
    chapters = {slug: scale * (fixed + per_run * reads[slug])
                for slug in slugs for fixed, per_run in [RENDERING_S.get(slug, _UNMEASURED)]}
    pages = scale * RUN_PAGE_S * len(rendered)
    side = at_once(settings, cores)
    share = _shares(chosen, chapters, side)
    return Estimate(sum(chapters[slug] * share[slug] for slug in chapters) + pages, chapters, to_train=0,
                    recorded_here=here, recorded_seconds=0.0, scale=scale, steps={}, processes=1, work=work,
                    reads=reads, rendered=len(rendered), pages=pages, at_once=side, share=share)


def _shares(chosen: Sequence[TocEntry], chapters: dict[str, float], side: int) -> dict[str, float]:
    """Each chapter's part of its time in the build's, ``side`` chapters at a time: a wave of chapters (those that
    read the others come after them, :func:`medibio.book.chapters.execution_order`) takes its longest chapter's
    time or its sum over the cores, whichever is longer, shared in proportion to each chapter's time."""
    share = {}
    for last in (False, True):
        wave = [c.slug for c in chosen if c.slug in chapters and c.execute_last == last]
        total = sum(chapters[slug] for slug in wave)
        span = max([total / side, *(chapters[slug] for slug in wave)])
        share.update({slug: span / total if total else 1.0 for slug in wave})
    return share


def _by_chapter(slugs: list[str], train: list[tuple[RunRecord, float]], other_scale: float,
                processes: int) -> dict[str, float]:
    """Expected seconds per chapter. In one process each chapter takes its runs' time (the frozen baselines:
    the first chapter's). In two, the background process computes the frozen baselines while the chapters
    before the fine-tuning ones train their own runs, then trains ahead of the fine-tuning chapters
    (:data:`medibio.book.background.FINETUNES`): what is left of that shared work when they start is done by
    both processes, half the time, in proportion to each chapter's own runs."""
    other = OTHER_WORK_S / _notebooks() * other_scale
    own = dict.fromkeys(slugs, 0.0)
    frozen = 0.0
    for record, seconds in train:
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


def _notebooks() -> int:
    """The executed chapters of a whole build, among which the work besides training is shared (markdown
    chapters, copied, take none of it)."""
    return sum(c.is_notebook for c in execution_order())


def _precision_here(requested: str) -> str:
    """What ``requested`` becomes for a run on this machine's CPU (:func:`medibio.core.precision.precision_for`)."""
    from medibio.core import precision

    return precision.precision_for(precision.Device("cpu", precision.cpu_has_bf16()), requested)


def _kernel_import() -> float:
    """:func:`medibio.core.speed.kernel_import_seconds`, in wall time (the load counts)."""
    from medibio.core.speed import kernel_import_seconds

    return kernel_import_seconds()


def _measure(precision: str) -> float:
    """The step of :mod:`medibio.core.speed` on one thread in ``precision``, in wall time (the load counts)."""
    from medibio.core.speed import training_step_seconds

    return training_step_seconds(precision, threads=1)
