"""Work a book build starts beside its chapters: the frozen-encoder baselines, in a one-thread process.

The baselines (:mod:`medibio.blurb.frozen`) depend on nothing a chapter computes, and several chapters show
them. On a GPU machine the CPU cores idle while the GPU trains, so a one-thread process encoding test sets
beside the chapters costs them little. On the 2-core CPU it pays too, provided the chapters give it a core:
the build names the process in ``$MEDIBIO_SHARE_CORES_WITH`` and the chapters' runs start on one thread
while it runs and take the second back when it ends (:mod:`medibio.cores` has the measurements: without
that, three threads on two cores slowed SciERC from 0.27 to ~5 s a step). SciERC's span heads use a second
thread poorly, so the SciERC chapter loses little by giving one up while the baselines are computed beside it.
The chapters ask for the same baselines as before: each one is a run record under a kernel lock, so a
chapter that needs a baseline the background process is computing waits for it and then reuses it, and one
the process has not reached yet (or could not compute) the chapter computes itself. Nothing depends on the
background process succeeding; its log is kept beside the build report.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from unittest import mock

from medibio import cores, profiles
from medibio.book.chapters import TocEntry

# Chapters that show frozen-encoder baselines of the profile's model on the book plan's tasks.
USES_FROZEN = ("tables_5_6_pretraining_configurations", "tables_1_2_intermediate_finetuning",
               "table_7_blurb_comparison")
# One intra-op thread, and threads that sleep rather than spin while they wait (GNU OpenMP spins by
# default, which would take time from the chapter's own threads).
CHILD_ENV = {"OMP_NUM_THREADS": "1", "OMP_WAIT_POLICY": "PASSIVE", "MEDIBIO_PROGRESS": "0"}


FINETUNES = "tables_5_6_pretraining_configurations"  # the chapter whose runs the process may help with


def frozen_tasks(profile: str) -> list[str]:
    """The datasets whose baselines the book shows: the book plan's tasks and its transfer-matrix tasks."""
    prof = profiles.get(profile)
    return list(dict.fromkeys([*prof.book.tasks, *prof.book.stilt_tasks]))


def command(profile: str, results_root: Path, data_root: Path | None, finetune: bool = False) -> list[str]:
    """``python -m medibio.book.background``: the baselines of :func:`frozen_tasks`, then with ``finetune``
    the fine-tuning chapter's runs from its last one backwards (:func:`work`)."""
    prof = profiles.get(profile)
    cmd = [sys.executable, "-m", "medibio.book.background", "--profile", prof.name,
           "--results-root", str(results_root)]
    if data_root is not None:
        cmd += ["--data-root", str(data_root)]
    return [*cmd, "--finetune"] if finetune else cmd


def work(profile: str, results_root: Path, data_root: Path | None, finetune: bool = False) -> None:
    """What the background process does. First the frozen-encoder baselines (what several chapters show).
    Then, with ``finetune``, it helps the Tables 5-6 chapter: that chapter trains its runs from the first
    onwards, this process from the last backwards (:func:`medibio.finetune.runner.help_finetune`), and it
    stops where they meet. Every run is a record under a lock, so each is trained once, by one of them."""
    from medibio.blurb import frozen
    from medibio.finetune import runner

    prof = profiles.get(profile)
    frozen.baselines(prof.name, frozen_tasks(prof.name), data_root=data_root, results_root=results_root)
    if finetune:
        runner.help_finetune(list(prof.book.tasks), profile=prof.name, results_root=results_root,
                             data_root=data_root)


def wanted(profile: str, chosen: Sequence[TocEntry], execute: bool) -> bool:
    """Whether a build of these chapters should compute the baselines in the background: when it executes a
    chapter that shows them, on a profile whose book plan asks for it."""
    return (execute and profiles.get(profile).book.background_frozen
            and any(c.slug in USES_FROZEN for c in chosen))


def helps_finetune(profile: str, chosen: Sequence[TocEntry]) -> bool:
    """Whether the background process should also train fine-tuning runs: when the build executes the
    chapter that asks for them, on a profile whose book plan says so (cpu)."""
    return profiles.get(profile).book.background_finetune and any(c.slug == FINETUNES for c in chosen)


@contextlib.contextmanager
def beside_chapters(profile: str, results_root: Path, data_root: Path | None, log: Path,
                     say=print, finetune: bool = False) -> Iterator[subprocess.Popen | None]:
    """Run :func:`command` in a background process for the ``with`` block; at its end wait for the
    process (or stop it, if the block ends with an error) and say how it went."""
    log.parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    with open(log, "w", encoding="utf-8") as out:
        proc = subprocess.Popen(command(profile, results_root, data_root, finetune), stdout=out,
                                stderr=subprocess.STDOUT, env={**os.environ, **CHILD_ENV})
        then = ", then fine-tuning runs from the end of Tables 5–6" if finetune else ""
        say(f"… frozen-encoder baselines{then}: computing in a background process (1 thread, log {log.name})")
        ok = False
        try:
            # the chapters' kernels start with this environment: they leave the process a core while it runs
            with mock.patch.dict(os.environ, {cores.ENV: str(proc.pid)}):
                yield proc
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
    """The background process's entry point (``python -m medibio.book.background``), started by the build."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m medibio.book.background", description=work.__doc__)
    parser.add_argument("--profile", required=True, choices=profiles.names())
    parser.add_argument("--results-root", required=True, type=Path)
    parser.add_argument("--data-root", type=Path, default=None)
    parser.add_argument("--finetune", action="store_true", help="then help the fine-tuning chapter")
    args = parser.parse_args(argv)
    work(args.profile, args.results_root, args.data_root, args.finetune)


if __name__ == "__main__":
    main()
