"""Work a book build starts beside its chapters on the cpu profile: the frozen-encoder baselines, then the
fine-tuning chapter's runs from its last one backwards, in a one-thread process.

The baselines (:mod:`medibio.baselines.frozen`) depend on nothing a chapter computes, and several chapters
show them. On the 2-core CPU a one-thread process beside the chapters pays when the chapters give it a core:
the build puts the process's pid into the chapters' settings (``share_cores_with``), so a run a chapter
starts while the process lives computes on one thread (:meth:`medibio.core.settings.Settings.run_threads`;
three threads on two cores slowed SciERC from 0.27 to ~5 s a step). After the baselines the process helps
the Tables 5–6 chapter: that chapter trains its runs from the first onwards, this process from the last
backwards (:func:`train_from_the_end`), and it stops where they meet. Every run is a record under a lock, so each
is trained once, by one of them; a chapter that needs a run the process is training waits for it and reuses
it. Nothing depends on the background process succeeding; its log is kept beside the build report.
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
from medibio.book.chapters import TocEntry
from medibio.core import launch, profiles, progress
from medibio.core.precision import accelerator as make_accelerator
from medibio.core.settings import Settings
from medibio.finetune.runner import FinetuneKind, plan_runs
from medibio.runs import protocol
from medibio.runs import records as rec

# Chapters that show frozen-encoder baselines of the profile's model on the book plan's tasks.
USES_FROZEN = ("tables_5_6_pretraining_configurations", "tables_1_2_intermediate_finetuning",
               "table_7_blurb_comparison")
FINETUNES = "tables_5_6_pretraining_configurations"  # the chapter whose runs the process may help with
# One intra-op thread, and threads that sleep rather than spin while they wait (GNU OpenMP spins by
# default, which would take time from the chapter's own threads).
CHILD_ENV = {"OMP_NUM_THREADS": "1", "OMP_WAIT_POLICY": "PASSIVE"}


def frozen_tasks(profile: str) -> list[str]:
    """The datasets whose baselines the book shows: the book plan's tasks and its transfer-matrix tasks."""
    prof = profiles.get(profile)
    return list(dict.fromkeys([*prof.book.tasks, *prof.book.stilt_tasks]))


def train_from_the_end(tasks: str | Sequence[str], profile: str, settings: Settings) -> list[rec.RunRecord]:
    """Train the runs of a fine-tuning request from its *last* one backwards, and stop at the first one that
    another process is training or has finished; returns the records of the runs it took."""
    plans = plan_runs(tasks, profile=profile, settings=settings)
    accelerator = make_accelerator(plans[0].job.config.mixed_precision) if plans else None
    kind = FinetuneKind()
    written = []
    for plan in reversed(plans):
        if rec.find_record(settings.results_root, plan.key) is not None:
            break
        try:
            written.append(protocol.run(kind, plan, settings, accelerator, wait=False)[0])
        except rec.RunLockedError:
            break
    return written


def work(profile: str, settings: Settings, finetune: bool = False) -> None:
    """What the background process does: the baselines, then (``finetune``) help the Tables 5–6 chapter."""
    prof = profiles.get(profile)
    frozen.baselines(prof.name, frozen_tasks(prof.name), settings=settings)
    if finetune:
        train_from_the_end(list(prof.book.tasks), prof.name, settings)


def command(profile: str, finetune: bool = False) -> list[str]:
    """``python -m medibio.book.background``: :func:`work` in a process of its own."""
    cmd = [sys.executable, "-m", "medibio.book.background", "--profile", profiles.get(profile).name]
    return [*cmd, "--finetune"] if finetune else cmd


def wanted(profile: str, chosen: Sequence[TocEntry], execute: bool) -> bool:
    """Whether a build of these chapters should compute the baselines in the background: when it executes a
    chapter that shows them, on a profile whose book plan asks for it."""
    return (execute and profiles.get(profile).book.background_frozen
            and any(c.slug in USES_FROZEN for c in chosen))


def trains_from_the_end(profile: str, chosen: Sequence[TocEntry]) -> bool:
    """Whether the background process should also train fine-tuning runs: when the build executes the
    chapter that asks for them, on a profile whose book plan says so (cpu)."""
    return profiles.get(profile).book.background_finetune and any(c.slug == FINETUNES for c in chosen)


@contextlib.contextmanager
def beside_chapters(profile: str, settings: Settings, log: Path, say: Callable[[str], None] = print,
                    finetune: bool = False) -> Iterator[Settings]:
    """Run :func:`command` in a background process for the ``with`` block and give the block the settings
    its chapters run with (sharing the cores with that process); at its end wait for the process (or stop
    it, if the block ends with an error) and say how it went."""
    log.parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    with open(log, "w", encoding="utf-8") as out:
        child = dataclasses.replace(settings, progress=False, share_cores_with=None)
        proc = launch.popen(command(profile, finetune), child, CHILD_ENV, stdout=out, stderr=subprocess.STDOUT)
        then = ", then fine-tuning runs from the end of Tables 5–6" if finetune else ""
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
    parser.add_argument("--finetune", action="store_true", help="then help the fine-tuning chapter")
    args = parser.parse_args(argv)
    settings = Settings.from_env()
    progress.configure(settings.progress)
    work(args.profile, settings, args.finetune)


if __name__ == "__main__":
    main()
