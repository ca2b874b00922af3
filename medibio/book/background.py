"""Work a book build starts beside its chapters: the frozen-encoder baselines, in a one-thread process.

The baselines (:mod:`medibio.blurb.frozen`) depend on nothing a chapter computes, and several chapters show
them. On a GPU machine the CPU cores idle while the GPU trains, so a one-thread process encoding test sets
beside the chapters costs them little. On the 2-core CPU it pays too, provided the chapters give it a core:
the build names the process in ``$MEDIBIO_SHARE_CORES_WITH`` and the chapters' loops drop to one thread
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


def frozen_command(profile: str, results_root: Path, data_root: Path | None) -> list[str]:
    """``python -m medibio blurb frozen`` for the tasks the profile's book plan fine-tunes."""
    prof = profiles.get(profile)
    tasks = list(dict.fromkeys([*prof.book.tasks, *prof.book.stilt_tasks]))
    cmd = [sys.executable, "-m", "medibio", "blurb", "frozen", "--profile", prof.name, "--task", ",".join(tasks),
           "--results-root", str(results_root)]
    if data_root is not None:
        cmd += ["--data-root", str(data_root)]
    return cmd


def wanted(profile: str, chosen: Sequence[TocEntry], execute: bool) -> bool:
    """Whether a build of these chapters should compute the baselines in the background: when it executes a
    chapter that shows them, on a profile whose book plan asks for it."""
    return (execute and profiles.get(profile).book.background_frozen
            and any(c.slug in USES_FROZEN for c in chosen))


@contextlib.contextmanager
def frozen_baselines(profile: str, results_root: Path, data_root: Path | None, log: Path,
                     say=print) -> Iterator[subprocess.Popen | None]:
    """Run :func:`frozen_command` in a background process for the ``with`` block; at its end wait for the
    process (or stop it, if the block ends with an error) and say how it went."""
    log.parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    with open(log, "w", encoding="utf-8") as out:
        proc = subprocess.Popen(frozen_command(profile, results_root, data_root), stdout=out,
                                stderr=subprocess.STDOUT, env={**os.environ, **CHILD_ENV})
        say(f"… frozen-encoder baselines: computing in a background process (1 thread, log {log.name})")
        ok = False
        shared = contextlib.ExitStack()
        try:
            # the chapters' kernels start with this environment: they leave the process a core while it runs
            shared.enter_context(mock.patch.dict(os.environ, {cores.ENV: str(proc.pid)}))
            yield proc
            ok = True
        finally:
            shared.close()
            if not ok and proc.poll() is None:
                proc.terminate()  # records are written atomically and locks are the kernel's: nothing is lost
            code = proc.wait()
    minutes = (time.perf_counter() - started) / 60
    if code == 0:
        say(f"✓ frozen-encoder baselines (background): done, {minutes:.1f} min")
    elif ok:
        say(f"✗ frozen-encoder baselines (background) exited with {code} after {minutes:.1f} min; the "
            f"chapters computed what they needed themselves (see {log})")
