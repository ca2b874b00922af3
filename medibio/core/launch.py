"""Starting other processes with this session's settings: the one place that turns settings into
environment variables.

A process medibio starts — ``accelerate launch``'s workers, the book's background process, a chapter's
notebook kernel, a pretraining child — rebuilds its settings at its own boundary
(:meth:`medibio.core.settings.Settings.from_env`), so it must find them in its environment. Everything here
passes them explicitly (``env=``) except :func:`kernel_environment`: papermill starts its kernels with the
parent's environment, so for the kernel's start the variables are set in this process and restored after.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from medibio.core.settings import Settings

AUTOGROUP = Path("/proc/self/autogroup")


def yield_to_interactive_work(nice: int = 10) -> bool:
    """Make this process's session give way to the person at the machine (a background job such as the Table 5
    study's queues keeps about a tenth of a contended core at nice 10); return whether it did. Linux schedules each session as one group
    (autogroup), and a nice value only orders processes within a group: a queue in a session of its own (``make
    study`` starts it with ``setsid``) took its full share beside a user's shell at ``nice 10``. The group's
    own nice value is what yields; it is set only for a process that leads its own session, so that a command
    typed in a shell never lowers that shell's priority."""
    if os.getsid(0) != os.getpid() or not AUTOGROUP.exists():
        return False
    try:
        AUTOGROUP.write_text(str(nice))
    except OSError:
        return False
    return True


def declare_default(name: str, value: str) -> None:
    """Set ``name`` to ``value`` in this process's environment unless it is set already: a command's declared
    default that the command itself and every process it starts read (the study's precision, the switches that
    quiet transformers and datasets when they are imported)."""
    os.environ.setdefault(name, value)


def child_env(settings: Settings | None = None, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment with ``settings`` and ``extra`` on top (for a process started now)."""
    return {**os.environ, **(settings.to_env() if settings is not None else {}), **(extra or {})}


def thread_share(processes: int) -> dict[str, str]:
    """The CPU threads shared out between ``processes`` started together (unless ``OMP_NUM_THREADS``, set
    by the person who started this one, says otherwise)."""
    threads = str(max(1, (os.cpu_count() or processes) // processes))
    return {"OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", threads)}


def run(cmd: Sequence[str], settings: Settings | None = None, extra: Mapping[str, str] | None = None,
        **kwargs: Any) -> subprocess.CompletedProcess:
    """``subprocess.run`` with :func:`child_env`."""
    return subprocess.run(list(cmd), env=child_env(settings, extra), **kwargs)


def popen(cmd: Sequence[str], settings: Settings | None = None, extra: Mapping[str, str] | None = None,
          **kwargs: Any) -> subprocess.Popen:
    """``subprocess.Popen`` with :func:`child_env`."""
    return subprocess.Popen(list(cmd), env=child_env(settings, extra), **kwargs)


@contextlib.contextmanager
def kernel_environment(settings: Settings, extra: Mapping[str, str] | None = None) -> Iterator[None]:
    """The settings (and ``extra``) in this process's environment while the block starts kernels
    (papermill offers no other way to give a kernel its environment); restored when the block ends."""
    wanted = {**settings.to_env(), **(extra or {})}
    saved = {key: os.environ.get(key) for key in wanted}
    os.environ.update(wanted)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
