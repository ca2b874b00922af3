"""The scaled-down Table 5 experiments for the book: pretrain them, then fine-tune each resulting checkpoint.

Pretraining runs in a child process (``medibio pretrain --experiment``): accelerate keeps one global state
per process, and the pretraining and fine-tuning loops ask it for different precisions on CPU, so both
cannot share the notebook's kernel. The child also returns all its memory when it ends.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from medibio.core import launch
from medibio.core.errors import MedibioError
from medibio.core.settings import Settings
from medibio.finetune.runner import run_finetune
from medibio.pretrain.trainer import model_reference
from medibio.runs.records import RunRecord


def pretrain_experiments(config: str, settings: Settings, selection: str = "all") -> dict[str, RunRecord]:
    """Pretrain the Table 5 experiments (finished ones are reused) and return their records by experiment id."""
    cmd = [sys.executable, "-m", "medibio", "pretrain", "--config", config, "--experiment", selection, "--json"]
    proc = launch.run(cmd, settings, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise MedibioError(f"`{' '.join(cmd)}` failed (exit {proc.returncode}):\n{proc.stderr.strip()[-2000:]}")
    experiments = json.loads(proc.stdout[proc.stdout.index("{"):])
    return {eid: RunRecord.from_dict(record) for eid, record in experiments.items()}


def finetune_experiments(experiments: Mapping[str, RunRecord], tasks: str, *, profile: str,
                         seeds: Sequence[int] | None, settings: Settings) -> list[Any]:
    """Fine-tune every finished ``table5-N`` checkpoint on ``tasks`` and return the run records; they get
    variant ``pretrain-table5-N``. The runs start from ``pretrain-run:`` names (the pretraining run, not its
    weights' bytes), so a build from recorded results finds them without the weights; training one needs the
    weights, and the error says so."""
    records: list[Any] = []
    for eid, record in experiments.items():
        if eid.startswith("table5-") and record.ok:
            records += run_finetune(tasks, model=model_reference(record), seeds=seeds, profile=profile,
                                    variant=f"pretrain-{eid}", settings=settings)
    return records
