"""Work a book build starts beside its chapters on the cpu profile: the frozen-encoder baselines, then the
fine-tuning runs of the Tables 5–6 and Tables 1–2 chapters, in a one-thread process.

The baselines (:mod:`medibio.baselines.frozen`) depend on nothing a chapter computes, and several chapters
show them. On the 2-core CPU a one-thread process beside the chapters pays when the chapters give it a core:
the build puts the process's pid into the chapters' settings (``share_cores_with``), so a run a chapter
starts while the process lives computes on one thread (:meth:`medibio.core.settings.Settings.run_threads`;
three threads on two cores slowed SciERC from 0.27 to ~5 s a step). After the baselines the process works
through the fine-tuning chapters' runs ahead of them (:func:`train_ahead`): Tables 5–6's costliest first, then
Tables 1–2's from the last backwards, skipping each run that is recorded or that a chapter is training. A
chapter puts off a run this process holds and comes back to it after its others
(:func:`medibio.finetune.runner.run_plans`), and every run is a record under a lock, so each is trained
once and neither process waits while the other has work left. Nothing depends on the background process
succeeding; its log is kept beside the build report.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from medibio.baselines import frozen
from medibio.book import parameters
from medibio.book.chapters import TocEntry
from medibio.core import launch, profiles, progress
from medibio.core.precision import AcceleratorWhenTraining
from medibio.core.settings import Settings
from medibio.experiments import ift_runs
from medibio.finetune.runner import FinetuneKind, plan_runs
from medibio.runs import protocol
from medibio.runs import records as rec
from medibio.runs.protocol import Plan

# Chapters that show frozen-encoder baselines of the profile's model on the book plan's tasks.
USES_FROZEN = ("tables_5_6_pretraining_configurations", "tables_1_2_intermediate_finetuning",
               "table_7_blurb_comparison")
# the chapters whose fine-tuning runs the process may train ahead of them
FINETUNES = ("tables_5_6_pretraining_configurations", "tables_1_2_intermediate_finetuning")
# One intra-op thread, and threads that sleep rather than spin while they wait (GNU OpenMP spins by
# default, which would take time from the chapter's own threads).
CHILD_ENV = {"OMP_NUM_THREADS": "1", "OMP_WAIT_POLICY": "PASSIVE"}


def frozen_tasks(profile: str) -> list[str]:
    """The datasets whose baselines the book shows: the book plan's tasks and its transfer-matrix tasks."""
    prof = profiles.get(profile)
    return list(dict.fromkeys([*prof.book.tasks, *prof.book.stilt_tasks]))


def cost(plan: Plan) -> float:
    """A rough relative cost of a fine-tuning run: training examples x epochs plus a third of the evaluated
    ones (dev each epoch, test once), from the paper's split sizes under the preset's caps."""
    cfg = plan.job.config
    train, dev, test = plan.job.spec.paper_counts or (0, 0, 0)
    train = min(train, cfg.max_train_examples or train)
    dev = min(dev, cfg.max_dev_examples or dev)
    return train * cfg.epochs + (dev * cfg.epochs + test) / 3


def chapter_runs(profile: str, chapters: Sequence[str], settings: Settings, model: str | None = None) -> list[Plan]:
    """The fine-tuning runs of ``chapters`` (slugs of :data:`FINETUNES`) at their default parameters, in the
    order the background process takes them: Tables 5–6's costliest first (the long runs done early leave
    short ones for the end, where the chapter and this process meet), then Tables 1–2's from the last one."""
    params = parameters.resolve(profile, model=model, models=None, tasks=None, seeds=None, ift_tasks=None,
                                stilt_tasks=None, stilt_seeds=None)
    model = params.models[0]
    plans: list[Plan] = []
    if FINETUNES[0] in chapters:
        plans += sorted(plan_runs(params.tasks, model, params.seeds, profile, settings=settings), key=cost,
                        reverse=True)
    if FINETUNES[1] in chapters:
        table12 = [*ift_runs.plan_ift("BIOSSES", params.ift_tasks, profile=profile, model=model, seeds=params.seeds,
                                 settings=settings),
                   *ift_runs.plan_transfer_matrix(params.stilt_tasks, profile=profile, model=model,
                                             seeds=params.stilt_seeds, settings=settings)]
        plans += table12[::-1]
    return plans


def train_ahead(plans: Sequence[Plan], settings: Settings) -> list[rec.RunRecord]:
    """Train ``plans`` in this order, skipping each run that is recorded or that another process is
    training; returns the records of the runs this process trained."""
    accelerator = AcceleratorWhenTraining(plans[0].job.config.mixed_precision, settings.launched) if plans else None
    kind = FinetuneKind()
    written = []
    for plan in plans:
        try:
            record, reused = protocol.run(kind, plan, settings, accelerator, wait=False)
        except rec.RunLockedError:
            continue
        if not reused:
            written.append(record)
    return written


def work(profile: str, settings: Settings, chapters: Sequence[str] = (), model: str | None = None) -> None:
    """What the background process does: the baselines of ``model`` (None: the profile's), then the
    fine-tuning runs of ``chapters``."""
    prof = profiles.get(profile)
    frozen.baselines(prof.name, frozen_tasks(prof.name), model=model, settings=settings)
    if chapters:
        train_ahead(chapter_runs(prof.name, chapters, settings, model), settings)


def command(profile: str, chapters: Sequence[str] = (), model: str | None = None) -> list[str]:
    """``python -m medibio.book.background``: :func:`work` in a process of its own."""
    cmd = [sys.executable, "-m", "medibio.book.background", "--profile", profiles.get(profile).name]
    cmd += ["--model", model] if model else []
    return [*cmd, "--chapters", ",".join(chapters)] if chapters else cmd


def wanted(profile: str, chosen: Sequence[TocEntry], execute: bool) -> bool:
    """Whether a build of these chapters should compute the baselines in the background: when it executes a
    chapter that shows them, on a profile whose book plan asks for it."""
    return (execute and profiles.get(profile).book.background_frozen
            and any(c.slug in USES_FROZEN for c in chosen))


def trains_ahead(profile: str, chosen: Sequence[TocEntry]) -> list[str]:
    """The chapters among ``chosen`` whose fine-tuning runs the background process should train ahead of
    them: those of :data:`FINETUNES` the build executes, on a profile whose book plan says so (cpu)."""
    if not profiles.get(profile).book.background_finetune:
        return []
    slugs = {c.slug for c in chosen}
    return [slug for slug in FINETUNES if slug in slugs]


@contextlib.contextmanager
def beside_chapters(profile: str, settings: Settings, log: Path, say: Callable[[str], None] = print,
                    chapters: Sequence[str] = (), model: str | None = None) -> Iterator[Settings]:
    """Run :func:`command` in a background process for the ``with`` block and give the block the settings
    its chapters run with (sharing the cores with that process); at its end wait for the process (or stop
    it, if the block ends with an error) and say how it went."""
    log.parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    with open(log, "w", encoding="utf-8") as out:
        child = dataclasses.replace(settings, progress=False, share_cores_with=None)
        proc = launch.popen(command(profile, chapters, model), child, CHILD_ENV, stdout=out, stderr=subprocess.STDOUT)
        then = ", then fine-tuning runs ahead of the chapters" if chapters else ""
        say(f"… frozen-encoder baselines{then}: computing in a background process (1 thread, log {log.name})")
        ok = False
        try:
            yield dataclasses.replace(settings, share_cores_with=proc.pid)
            ok = True
        finally:
            if not ok and proc.poll() is None:
                proc.terminate()  # records are written atomically and locks are the kernel's: nothing is lost
            code = proc.wait()
    minutes = (time.perf_counter() - started) / 60
    if code == 0:
        say(f"✓ frozen-encoder baselines (background): done, {minutes:.1f} min")
    elif ok:
        say(f"✗ frozen-encoder baselines (background) exited with {code} after {minutes:.1f} min; the "
            f"chapters computed what they needed themselves (see {log})")


def main(argv: Sequence[str] | None = None) -> None:
    """The background process's entry point (``python -m medibio.book.background``), started by the build:
    its settings come from the environment the build gave it."""
    parser = argparse.ArgumentParser(prog="python -m medibio.book.background", description=work.__doc__)
    parser.add_argument("--profile", required=True, choices=profiles.names())
    parser.add_argument("--model", default=None, help="the encoder (default: the profile's)")
    parser.add_argument("--chapters", default="", help="then train these chapters' fine-tuning runs (comma list)")
    args = parser.parse_args(argv)
    settings = Settings.from_env()
    progress.configure(settings.progress)
    work(args.profile, settings, [c for c in args.chapters.split(",") if c], args.model)


if __name__ == "__main__":
    main()
