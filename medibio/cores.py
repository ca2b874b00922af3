"""CPU threads of this process, given up to a process that a book build runs beside its chapters.

On the 2-core CPU a chapter's two OpenMP threads and a one-thread background process (the frozen-encoder
baselines and fine-tuning help, :mod:`medibio.book.background`) are three threads on two cores, and every
operation of the chapter waits for its slower thread: SciERC training went from 0.27 to ~5 s a step. One
thread each shares the cores well (two one-thread SciERC trainings side by side ran at 1.47x the throughput
of one on two threads), so while the background process runs, the chapters use one thread less, and take it
back once it has ended. The build names that process in ``$MEDIBIO_SHARE_CORES_WITH`` (its pid) and the
chapters' kernels inherit it. Every run (fine-tuning, SciERC, frozen baseline, pretraining) calls
:func:`follow` when it starts and keeps that thread count to its end: another count rounds differently, so a
run that switched half-way would depend on when the background process ended. Run records keep the count
(``cpu_threads``).
"""

from __future__ import annotations

import os
from pathlib import Path

ENV = "MEDIBIO_SHARE_CORES_WITH"
_state: dict[str, int | None] = {"base": None}


def alive(pid: int) -> bool:
    """Whether process ``pid`` still runs (a finished child its parent has not reaped yet does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return False
    except OSError:  # no procfs: ask the kernel whether the pid exists
        try:
            os.kill(pid, 0)
        except OSError:
            return False
        return True
    return stat.rsplit(")", 1)[-1].split()[0] not in ("Z", "X")


def sharing_with() -> int | None:
    """The pid named in ``$MEDIBIO_SHARE_CORES_WITH`` while that process runs, else None."""
    text = os.environ.get(ENV, "").strip()
    if not text.isdigit():
        return None
    pid = int(text)
    return pid if alive(pid) else None


def wanted_threads(base: int, cpus: int | None = None) -> int:
    """This process's intra-op threads: ``base`` (what it started with), one core less than the machine
    has while the named process runs."""
    if sharing_with() is None:
        return base
    cpus = cpus or os.cpu_count() or base
    return max(1, min(base, cpus - 1))


def follow() -> int:
    """Called when a run starts: give up a core while the named process runs, take it back once it has
    ended, and return the intra-op threads the run will use. A count this module did not lower (a user's
    ``torch.set_num_threads``, ``OMP_NUM_THREADS``) is left as it is."""
    import torch

    current = torch.get_num_threads()
    if sharing_with() is not None:
        if _state["base"] is None:
            _state["base"] = current  # what to give back later
        want = wanted_threads(int(_state["base"]))
    else:
        want = current if _state["base"] is None else int(_state["base"])
        _state["base"] = None
    if want != current:
        torch.set_num_threads(want)
    return want


def reset() -> None:
    """Forget the count to give back (tests)."""
    _state["base"] = None
