"""The settings of a medibio session: built once at a boundary, frozen, passed down.

A boundary is where a person's choices enter: the command line, a chapter's setup cell, a test fixture.
It builds one :class:`Settings` — from its own flags and, for what it was not told, the ``MEDIBIO_*``
environment variables (:meth:`Settings.from_env`, the only place medibio reads them) — and hands it, or the
values it holds, to the library. Library code never reads or writes the environment. A process medibio
starts (accelerate's processes, a notebook kernel, the book's background process) receives the settings as
environment variables (:meth:`Settings.to_env`, passed by :mod:`medibio.core.launch`) and rebuilds them at
its own boundary.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from medibio.core import paths, profiles
from medibio.core.errors import MedibioError

DATA_ENV = "MEDIBIO_DATA"
RESULTS_ENV = "MEDIBIO_RESULTS"
CACHE_ENV = "MEDIBIO_CACHE"
LIMIT_ENV = "MEDIBIO_LIMIT"
PROCESSES_ENV = "MEDIBIO_PROCESSES"
PROGRESS_ENV = "MEDIBIO_PROGRESS"
SHARE_ENV = "MEDIBIO_SHARE_CORES_WITH"
RECORDED_ENV = "MEDIBIO_RECORDED"
CPU_BF16_ENV = "MEDIBIO_CPU_BF16"  # "off": this CPU's native bf16 unused (Settings.native_bf16)
STUDY_ENV = "MEDIBIO_STUDY_ROOT"
# The CPU Table 5 study's work root (its results/ and cache/, medibio.experiments.study): outside the checkout, so
# that a next session on the same machine resumes its runs.
DEFAULT_STUDY_ROOT = Path("~/.cache/medibio-study")
# Set by accelerate/torchrun in the processes they start: such a process never launches processes again.
LAUNCHED_ENV = ("WORLD_SIZE", "LOCAL_RANK")


# The largest ``limit``. A limit runs a profile's code path on a few examples; no split medibio reads (the
# largest, SciRepEval's MeSH descriptors, has about 2.1 million examples) and no pretraining configuration's
# steps (the paper's: 500,000) come near it, so a larger one limits nothing.
MAX_LIMIT = 10_000_000
LIMIT_WHY = (f"a limit runs a profile's code path on a few examples, and no split of any dataset nor any "
             f"pretraining configuration's steps come near {MAX_LIMIT:,}, so more limits nothing; for full runs "
             "leave it out")


class SettingsError(MedibioError, ValueError):
    """A setting with a value no run can use (names the variable or option)."""


def _whole(name: str, text: str, minimum: int, maximum: int | None = None, why: str = "") -> int:
    text = text.strip()
    if text.isdigit() and int(text) >= minimum and (maximum is None or int(text) <= maximum):
        return int(text)
    bounds = f">= {minimum}" if maximum is None else f"in [{minimum}, {maximum:,}]"
    raise SettingsError(f"${name} must be a whole number {bounds}, not {text!r}" + (f": {why}" if why else ""))


@dataclass(frozen=True)
class Settings:
    """Where a session reads and writes, and how much of each run it does.

    ``limit``: at most this many examples per split and pretraining steps in every run (the profile's code
    path on a few examples; such runs write records of their own). ``processes``: run fine-tuning and
    SciERC requests through ``accelerate launch`` with this many processes. ``share_cores_with``: the pid of
    a process this one leaves a CPU core to while it runs (the book's background process,
    :mod:`medibio.book.background`); a run started meanwhile computes on one core less. ``recorded``: the
    recorded results (a results root, e.g. ``reference/``) this session renders from: the results root was
    seeded from it and no run may train (:func:`medibio.runs.protocol.run` raises instead); None: runs train
    when they have no record. ``study_root``: the work root of the CPU Table 5 study, whose commands read and
    write their results and cache under it (:func:`medibio.experiments.study.work_settings`). ``native_bf16``:
    False keeps a CPU with native bf16 at fp32 where a configuration asks for ``auto``
    (:func:`medibio.core.precision.allow_native_bf16`; the study's declared precision).
    """

    data_root: Path = dataclasses.field(default_factory=paths.default_data_root)
    results_root: Path = dataclasses.field(default_factory=paths.default_results_root)
    cache_root: Path = dataclasses.field(default_factory=paths.default_cache_root)
    limit: int | None = None
    processes: int = 1
    progress: bool = True
    share_cores_with: int | None = None
    recorded: Path | None = None
    study_root: Path = DEFAULT_STUDY_ROOT
    native_bf16: bool = True
    # started by a launcher (accelerate launch, torchrun: LAUNCHED_ENV set): one of several processes, maybe
    launched: bool = False

    def __post_init__(self) -> None:
        for name in ("data_root", "results_root", "cache_root", "study_root"):
            object.__setattr__(self, name, Path(getattr(self, name)).expanduser())
        if self.cache_root.exists() and not self.cache_root.is_dir():  # said here, not as "File exists" in a run
            raise SettingsError(f"{self.cache_root}: expected a folder (the cache, ${CACHE_ENV}), got a file; point "
                                f"${CACHE_ENV} at a folder")
        if self.recorded is not None:
            object.__setattr__(self, "recorded", Path(self.recorded).expanduser())
        if self.limit is not None and not 1 <= self.limit <= MAX_LIMIT:
            raise SettingsError(f"limit must be in [1, {MAX_LIMIT:,}] (examples per split), not {self.limit}: "
                                f"{LIMIT_WHY}")
        if self.processes < 1:
            raise SettingsError(f"processes must be >= 1, not {self.processes}")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **given: Any) -> Settings:
        """The settings of a boundary: ``given`` (its flags; ``None`` = not given), else the environment."""
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for field, name in (("data_root", DATA_ENV), ("results_root", RESULTS_ENV), ("cache_root", CACHE_ENV),
                            ("study_root", STUDY_ENV)):
            if env.get(name):
                values[field] = Path(env[name])
        if env.get(LIMIT_ENV, "").strip():
            values["limit"] = _whole(LIMIT_ENV, env[LIMIT_ENV], 1, MAX_LIMIT, LIMIT_WHY)
        values["launched"] = any(k in env for k in LAUNCHED_ENV)
        if env.get(PROCESSES_ENV, "").strip() and not values["launched"]:
            values["processes"] = _whole(PROCESSES_ENV, env[PROCESSES_ENV], 1)
        if PROGRESS_ENV in env:
            values["progress"] = env[PROGRESS_ENV].strip().lower() not in ("0", "false", "no", "off")
        if env.get(SHARE_ENV, "").strip().isdigit():
            values["share_cores_with"] = int(env[SHARE_ENV])
        if env.get(RECORDED_ENV, "").strip():
            values["recorded"] = Path(env[RECORDED_ENV])
        if env.get(CPU_BF16_ENV, "").strip().lower() == "off":
            values["native_bf16"] = False
        values.update({k: v for k, v in given.items() if v is not None and v != ""})
        return cls(**values)

    def replace(self, **changes: Any) -> Settings:
        """A copy with the given values (``None`` = keep this one, as for an option not given)."""
        return dataclasses.replace(self, **{k: v for k, v in changes.items() if v is not None})

    def to_env(self) -> dict[str, str]:
        """The settings as environment variables, for a process medibio starts."""
        env = {DATA_ENV: str(self.data_root), RESULTS_ENV: str(self.results_root),
               CACHE_ENV: str(self.cache_root), STUDY_ENV: str(self.study_root), PROCESSES_ENV: str(self.processes),
               PROGRESS_ENV: "1" if self.progress else "0"}
        if self.limit is not None:
            env[LIMIT_ENV] = str(self.limit)
        if self.share_cores_with is not None:
            env[SHARE_ENV] = str(self.share_cores_with)
        if self.recorded is not None:
            env[RECORDED_ENV] = str(self.recorded)
        if not self.native_bf16:
            env[CPU_BF16_ENV] = "off"
        return env

    def profile(self, profile: Any) -> Any:
        """The profile (name or :class:`~medibio.core.profiles.Profile`) under this session's ``limit``."""
        return profiles.get(profile).limited(self.limit)

    def run_threads(self) -> int | None:
        """The intra-op CPU threads for a run starting now: one core less than the machine has while the
        process named by ``share_cores_with`` runs (None otherwise: the process's own count)."""
        if self.share_cores_with is None or not alive(self.share_cores_with):
            return None
        return max(1, (os.cpu_count() or 2) - 1)


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
