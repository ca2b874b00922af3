"""Where a result came from: package versions, the git commit, the device — written the same way everywhere.

Fine-tuning records, pretraining records, SciERC records and the book's reproducibility appendix all call
:func:`environment`, so every artefact lists the same packages and says the same thing about the checkout.
"""

from __future__ import annotations

import functools
import importlib.metadata as md
import platform
import shutil
import subprocess
from pathlib import Path
from typing import Any

from medibio.core.hashing import file_sha256
from medibio.core.paths import REPO_ROOT

# Every package a number in the book can depend on (training, metrics, data, rendering).
PACKAGES = ("medibio", "torch", "transformers", "tokenizers", "accelerate", "datasets", "evaluate", "seqeval",
            "sentencepiece", "scikit-learn", "numpy", "scipy", "pandas", "duckdb", "matplotlib", "seaborn",
            "papermill", "jupyter-book", "sphinx", "myst-nb")


LOCK_FILE = "requirements.lock"


@functools.lru_cache(maxsize=4)
def lock_digest(repo: str | Path | None = None) -> str | None:
    """The first 12 hex digits of the SHA-256 of the lock file the environment was installed from (``make
    install`` installs ``requirements.lock``), None outside a checkout."""
    path = Path(repo or REPO_ROOT) / LOCK_FILE
    return file_sha256(path)[:12] if path.is_file() else None


def versions(packages: tuple[str, ...] = PACKAGES) -> dict[str, str | None]:
    """Installed version of each package (None when not installed), the Python version and the digest of the
    lock file (``lock``)."""
    out: dict[str, str | None] = {"python": platform.python_version(), "lock": lock_digest()}
    for pkg in packages:
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            out[pkg] = None
    return out


@functools.lru_cache(maxsize=8)
def git_commit(repo: str | Path | None = None) -> str | None:
    """``git rev-parse HEAD`` of the checkout (``+dirty`` when tracked files changed), None outside git."""
    cwd = str(repo or REPO_ROOT)
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True,
                              timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=cwd,
                               capture_output=True, text=True, timeout=20, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return head + ("+dirty" if dirty else "") if head else None


def device() -> str:
    """``cuda (NVIDIA H100 ... x1)`` or ``cpu (x86_64, 2 threads)``."""
    try:
        import torch
    except ImportError:
        return f"cpu ({platform.processor() or platform.machine()})"
    if torch.cuda.is_available():
        return f"cuda ({torch.cuda.get_device_name(0)} x{torch.cuda.device_count()})"
    return f"cpu ({platform.processor() or platform.machine()}, {torch.get_num_threads()} threads)"


def cpu_model() -> str:
    """The CPU's model name (``lscpu``'s, from ``/proc/cpuinfo``), else what ``platform`` knows: CPU results
    and times depend on it (AMX, AVX-512 bf16 or neither), so records and pages name it."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def gpu_names() -> list[str]:
    """The NVIDIA GPUs ``nvidia-smi`` lists, none where it is absent or fails: the machine named without
    importing torch, seconds of a process's CPU on a page that trains nothing."""
    tool = shutil.which("nvidia-smi")
    if tool is None:
        return []
    try:
        listed = subprocess.run([tool, "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                                text=True, timeout=30, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return [line.strip() for line in listed.splitlines() if line.strip()]


CPU_FEATURES = ("avx2", "avx512f", "avx512_bf16", "amx_bf16")  # what decides a CPU run's precision and pace


def cpu_features(cpuinfo: Path = Path("/proc/cpuinfo")) -> list[str]:
    """The flags of :data:`CPU_FEATURES` this CPU has (``lscpu``'s flags, from ``/proc/cpuinfo``): two CPUs of
    one model name differ in them (an Intel Xeon with AMX, one without bf16), and they decide whether bf16 is
    native here, so records name them beside the model name."""
    try:
        with open(cpuinfo, encoding="utf-8") as fh:
            flags = next((set(line.split(":", 1)[1].split()) for line in fh if line.startswith("flags")), set())
    except OSError:
        return []
    return [f for f in CPU_FEATURES if f in flags]


def environment() -> dict[str, Any]:
    """``{"versions": {...}, "device": str, "cpu": str, "cpu_flags": [str], "git_commit": str | None,
    "torch_threads": int}``.

    ``versions`` also carries ``torch_num_threads``: CPU results depend on it (reductions in another order).
    """
    threads = 1
    try:
        import torch

        threads = torch.get_num_threads()
    except ImportError:
        pass
    vers: dict[str, Any] = dict(versions())
    vers["torch_num_threads"] = threads
    return {"versions": vers, "device": device(), "cpu": cpu_model(), "cpu_flags": cpu_features(),
            "git_commit": git_commit(),
            "torch_threads": threads}
