"""One way to run a request in several processes: ``accelerate launch`` of the same ``medibio`` command.

Fine-tuning and SciERC requests both go through :func:`launch_request`: it starts ``python -m medibio
<command>`` in ``settings.processes`` processes of ``accelerate launch`` (``--multi_gpu`` also works on a CPU:
accelerate then starts gloo processes), with overrides travelling as a YAML ``--config`` file and the
settings in the environment (:mod:`medibio.core.launch`). Each process runs the same plans; only the main
process writes. The caller then finds the records by planning the same request in this process.
"""

from __future__ import annotations

import os
import socket
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from medibio.core import launch
from medibio.core.capacity import check_processes
from medibio.core.settings import Settings


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def accelerate_launch(medibio_args: Sequence[str], processes: int, settings: Settings, multi_gpu: bool = True,
                      accelerate_args: Sequence[str] = (), check: bool = True) -> None:
    """``python -m medibio <medibio_args>`` in ``processes`` processes of ``accelerate launch``."""
    cmd = [sys.executable, "-m", "accelerate.commands.launch", "--num_processes", str(processes)]
    if multi_gpu and processes > 1:
        cmd.append("--multi_gpu")
    cmd += ["--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no", *accelerate_args]
    if multi_gpu and processes > 1 and not any(a.startswith("--main_process_port") for a in accelerate_args):
        # a free port, not accelerate's fixed 29500: two launches on one machine must not meet on it
        cmd += ["--main_process_port", str(free_port())]
    cmd += ["-m", "medibio", *medibio_args]
    launch.run(cmd, settings, launch.thread_share(processes), check=check)


@contextmanager
def overrides_file(overrides: Mapping[str, Any] | None, folder: Path) -> Iterator[str | None]:
    """The overrides as a temporary YAML file for ``--config`` (None without overrides), removed after."""
    if not overrides:
        yield None
        return

    folder.mkdir(parents=True, exist_ok=True)
    fd, path = tempfile.mkstemp(suffix=".yaml", dir=folder)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        yaml.safe_dump(dict(overrides), fh)
    try:
        yield path
    finally:
        os.unlink(path)


def request_args(command: Sequence[str], profile: str, model: str | None, seeds: Sequence[int], force: bool,
                 options: Sequence[str] = ()) -> list[str]:
    """The ``medibio`` arguments that repeat a training request in launched processes: ``command``, the
    profile, the model and seeds when given, the kind's own ``options``, then ``--force``."""
    args = [*command, "--profile", profile]
    if model:
        args += ["--model", str(model)]
    if seeds:
        args += ["--seeds", ",".join(map(str, seeds))]
    args += options
    if force:
        args.append("--force")
    return args


def launch_request(command: Sequence[str], overrides: Mapping[str, Any] | None, settings: Settings,
                   processes: int | None = None) -> None:
    """Run ``medibio <command> [--config OVERRIDES]`` in ``processes`` (default ``settings.processes``)
    processes; the launched processes get the same settings, less the request to launch again."""
    count = check_processes(processes or settings.processes)  # bounded by cores, GPUs and memory
    child = settings.replace(processes=1)
    with overrides_file(overrides, settings.results_root / ".launch") as config:
        args = [*command, *(["--config", config] if config else [])]
        accelerate_launch(args, count, child)
