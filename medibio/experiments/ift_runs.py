"""Intermediate fine-tuning's runs (:mod:`medibio.experiments.ift` declares the designs): a target with and
without IFT, and a STILT-style transfer matrix.

Both are loops over :func:`medibio.finetune.runner.run_finetune` (which reuses a run's record only when its
configuration is the one asked for). The run functions return the records they stand on, keyed by the
intermediate task (:data:`BASELINE` for none); :mod:`medibio.results.ift` builds the tables from exactly those
records, so a chapter can never show a number from a run with another configuration. The ``plan_*`` functions
plan the same runs in the same order, for a process that trains them ahead (:mod:`medibio.book.background`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from medibio.core.settings import Settings
from medibio.finetune.runner import plan_runs, run_finetune
from medibio.runs.protocol import Plan

BASELINE = "none (baseline)"

Runs = dict[str, list[Any]]  # intermediate label (BASELINE for none) -> run records of the target


def run_ift(target: str, intermediates: Sequence[str], *, profile: str, model: str | None = None,
            seeds: Sequence[int] | None = None, overrides: Mapping[str, Any] | None = None,
            settings: Settings | None = None) -> Runs:
    """Fine-tune ``target`` directly and after each intermediate task; records reused when present."""
    return {chain or BASELINE: run_finetune(target, model=model, seeds=seeds, profile=profile,
                                            config_overrides=overrides, intermediate=chain, settings=settings)
            for chain in (None, *intermediates)}


def plan_ift(target: str, intermediates: Sequence[str], *, profile: str, model: str | None = None,
             seeds: Sequence[int] | None = None, settings: Settings | None = None) -> list[Plan]:
    """The runs :func:`run_ift` makes, planned and in its order (for a process that trains them ahead)."""
    return [p for chain in (None, *intermediates)
            for p in plan_runs(target, model, seeds, profile, intermediate=chain, settings=settings)]


def run_transfer_matrix(tasks: Sequence[str], *, profile: str, model: str | None = None,
                        seeds: Sequence[int] | None = None, settings: Settings | None = None) -> dict[str, Runs]:
    """Every ordered pair (intermediate, target) of ``tasks``, plus each target's baseline:
    ``{target: {intermediate or BASELINE: records}}``."""
    return {target: run_ift(target, [t for t in tasks if t != target], profile=profile, model=model, seeds=seeds,
                            settings=settings)
            for target in tasks}


def plan_transfer_matrix(tasks: Sequence[str], *, profile: str, model: str | None = None,
                         seeds: Sequence[int] | None = None, settings: Settings | None = None) -> list[Plan]:
    """The runs :func:`run_transfer_matrix` makes, planned and in its order."""
    return [p for target in tasks for p in plan_ift(target, [t for t in tasks if t != target], profile=profile,
                                                    model=model, seeds=seeds, settings=settings)]
