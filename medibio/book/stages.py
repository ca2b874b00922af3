"""The scaled-down Table 5 stages for the book: pretrain them, then fine-tune each resulting checkpoint.

Pretraining runs in a child process (``medibio pretrain --experiment``): accelerate keeps one global state
per process, and the pretraining and fine-tuning loops ask it for different precisions on CPU, so both
cannot share the notebook's kernel. The child also returns all its memory when it ends.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from medibio.errors import MedibioError
from medibio.paths import DATA_ENV, RESULTS_ENV


def run_table5_stages(config: str, *, results_root: Path, data_root: Path | None = None,
                      selection: str = "all") -> dict[str, Any]:
    """Pretrain the Table 5 stages (finished stages are reused) and return the experiments manifest."""
    cmd = [sys.executable, "-m", "medibio", "pretrain", "--config", config, "--experiment", selection, "--json"]
    env = {**os.environ, RESULTS_ENV: str(results_root)}
    if data_root is not None:
        cmd += ["--data-root", str(data_root)]
        env[DATA_ENV] = str(data_root)
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if proc.returncode != 0:
        raise MedibioError(f"`{' '.join(cmd)}` failed (exit {proc.returncode}):\n{proc.stderr.strip()[-2000:]}")
    return json.loads(proc.stdout[proc.stdout.index("{"):])


def finetune_stages(manifest: dict[str, Any], tasks: str, *, profile: str, seeds: Sequence[int] | None,
                    results_root: Path, data_root: Path | None = None) -> list[Any]:
    """Fine-tune every finished ``table5-N`` checkpoint on ``tasks`` and return the run records; they get
    variant ``pretrain-table5-N`` (the checkpoints all live in folders named ``model``, so the variant is
    what tells them apart in tables; their digests differ through the weights)."""
    from medibio.finetune.runner import run_finetune

    records: list[Any] = []
    for stage_id, stage in manifest["stages"].items():
        if stage_id.startswith("table5-") and stage.get("output"):
            records += run_finetune(tasks, model=stage["output"], seeds=seeds, profile=profile,
                                    variant=f"pretrain-{stage_id}", results_root=results_root, data_root=data_root)
    return records
