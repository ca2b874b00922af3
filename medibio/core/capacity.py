"""How many training processes this machine holds: the bound on ``--processes`` / ``MEDIBIO_PROCESSES``.

Without a bound, ``--processes 999`` started 999 processes: in a container of 6 GiB it ended in out-of-memory
kills and hanging workers. A run's processes are one per GPU on a GPU machine; on a CPU, at most one per core
this process may use (its CPU affinity and the container's CPU quota), and as many as the memory available
now (the container's limit included) holds at :data:`PROCESS_MEMORY_GIB` each.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

from medibio.core.errors import MedibioError

# What one training process needs at least: the model, its optimiser state and activations of a batch of the
# CPU profile (a MiniLM process peaks near 1.2 GiB; the base-size models of the GPU profile more, on their GPU).
PROCESS_MEMORY_GIB = 2.0
_CGROUP = Path("/sys/fs/cgroup")


@dataclass(frozen=True)
class Capacity:
    """What bounds the processes: cores, GPUs and memory (GiB available now)."""

    cores: int
    gpus: int
    memory_gib: float | None

    @property
    def processes(self) -> int:
        """The most processes a run may start here (at least 1)."""
        if self.gpus:
            return self.gpus
        by_memory = math.inf if self.memory_gib is None else int(self.memory_gib // PROCESS_MEMORY_GIB)
        return max(1, int(min(self.cores, by_memory)))

    def describe(self) -> str:
        memory = ("memory unknown" if self.memory_gib is None else
                  f"{self.memory_gib:.1f} GiB of memory available, at {PROCESS_MEMORY_GIB:g} GiB per process")
        gpus = f"{self.gpus} GPU(s): one process each" if self.gpus else "no GPU"
        return f"{self.cores} CPU core(s), {gpus}, {memory}"


def usable_cores() -> int:
    """The cores this process may use: its CPU affinity, capped by a container's CPU quota."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    try:  # a container's CPU quota ("max 100000" is none)
        quota, period = (_CGROUP / "cpu.max").read_text().split()
        if quota != "max":
            cores = min(cores, max(1, math.floor(int(quota) / int(period))))
    except (OSError, ValueError):
        pass
    return cores


def _memory_gib() -> float | None:
    available = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                available = int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:  # the container's limit, less what it uses already
        limit = (_CGROUP / "memory.max").read_text().strip()
        if limit != "max":
            left = int(limit) - int((_CGROUP / "memory.current").read_text())
            available = left if available is None else min(available, left)
    except (OSError, ValueError):
        pass
    return None if available is None else max(0.0, available / 2**30)


def _gpus() -> int:
    if not Path("/proc/driver/nvidia").exists():
        return 0  # no NVIDIA driver: no need to import torch to know
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def capacity() -> Capacity:
    """This machine's cores, GPUs and available memory, now."""
    return Capacity(usable_cores(), _gpus(), _memory_gib())


def check_processes(processes: int, given_as: str = "--processes / $MEDIBIO_PROCESSES") -> int:
    """``processes`` when this machine holds them, else a :class:`MedibioError` saying what it holds and why."""
    if processes <= 1:
        return processes
    here = capacity()
    if processes > here.processes:
        raise MedibioError(f"{given_as} {processes}: more training processes than this machine holds; at most "
                           f"{here.processes} here ({here.describe()})")
    return processes
