"""The scaled-down Table 5 arms (:data:`medibio.experiments.table5.SCALED_DOWN`): pretrain them in order,
chained and resumable, then fine-tune each resulting checkpoint.

Each arm is a pretraining run (tagged with the arm's id) whose identity covers its configuration, steps, corpus
files and the fingerprint of the model it continues from: a finished arm of the same configuration is reused,
an interrupted one resumes from its newest checkpoint, and a changed one — or one whose stage changed — trains
into a record of its own.

The book pretrains in a child process (``medibio pretrain --experiment``, :func:`pretrain_experiments`):
accelerate keeps one global state per process, and the pretraining and fine-tuning loops ask it for different
precisions on CPU, so both cannot share the notebook's kernel. The child also returns all its memory when it
ends.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from medibio.core import launch
from medibio.core.errors import MedibioError
from medibio.core.settings import Settings
from medibio.experiments.table5 import SCALED_DOWN, resolve_ids, scaled_steps
from medibio.finetune.runner import run_finetune
from medibio.pretrain.configs import PretrainConfig
from medibio.pretrain.lineage import model_reference
from medibio.pretrain.plan import effective_config
from medibio.pretrain.trainer import model_folder, run_pretraining
from medibio.runs.records import RunRecord


def run_experiments(config: PretrainConfig | str = "mini", selection: str | list[str] = "all",
                    max_steps: int | None = None, effective_batch: int | None = None, progress: bool = True,
                    settings: Settings | None = None) -> dict[str, RunRecord]:
    """Pretrain the selected arms (and the stages they continue) in order; return ``{arm id: record}``."""
    settings = settings or Settings()
    cfg = effective_config(config, max_steps, effective_batch, limit=settings.limit)
    records: dict[str, RunRecord] = {}
    for arm_id in resolve_ids(selection):
        arm = SCALED_DOWN.arms[arm_id]
        stage = SCALED_DOWN.stage_of(arm)
        init = str(model_folder(records[stage.id], settings)) if stage is not None else arm.init
        records[arm_id] = run_pretraining(cfg.with_overrides(max_steps=scaled_steps(arm, cfg)), corpus=arm.corpus,
                                          variant=arm.text, init=init, tag=SCALED_DOWN.tag(arm), progress=progress,
                                          notes=[arm.description], settings=settings)
    return records


def pretrain_experiments(config: str, settings: Settings, selection: str = "all") -> dict[str, RunRecord]:
    """Pretrain the scaled-down arms in a child process (finished ones are reused) and return their records by
    arm id."""
    cmd = [sys.executable, "-m", "medibio", "pretrain", "--config", config, "--experiment", selection, "--json"]
    proc = launch.run(cmd, settings, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise MedibioError(f"`{' '.join(cmd)}` failed (exit {proc.returncode}):\n{proc.stderr.strip()[-2000:]}")
    experiments = json.loads(proc.stdout[proc.stdout.index("{"):])
    return {eid: RunRecord.from_dict(record) for eid, record in experiments.items()}


def finetune_experiments(experiments: Mapping[str, RunRecord], tasks: str, *, profile: str,
                         seeds: Sequence[int] | None, settings: Settings) -> list[Any]:
    """Fine-tune every finished checkpoint of a paper configuration on ``tasks`` and return the run records,
    each arm's under its variant (:meth:`medibio.experiments.table5.Scale.variant`; a stage is not
    fine-tuned). The runs start from ``pretrain-run:`` names (the pretraining run, not its weights' bytes), so a
    build from recorded results finds them without the weights; training one needs the weights, and the error
    says so."""
    records: list[Any] = []
    for eid, record in experiments.items():
        arm = SCALED_DOWN.arms.get(eid)
        if arm is not None and arm.configuration is not None and record.ok:
            records += run_finetune(tasks, model=model_reference(record), seeds=seeds, profile=profile,
                                    variant=SCALED_DOWN.variant(arm), settings=settings)
    return records
