"""Grid search over the BLURB hyperparameter space, selecting on dev (never on test).

Every grid point is an ordinary run with its own variant (``grid-lr3e-05-bs16-ep3``), so points are
resumable and their records sit beside the others. The choice is the point with the best *mean dev score*
over the seeds; the summary (all points, the choice, and the choice's test score for information) is
written atomically to ``<results_root>/grid/<profile>/<model_tag>/<dataset>.json``.
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from medibio.core import profiles
from medibio.core.atomic import write_json
from medibio.core.precision import is_main_process
from medibio.core.settings import Settings
from medibio.finetune import runner
from medibio.models.zoo import model_tag
from medibio.tasks import registry
from medibio.training import config


def point_variant(lr: float, batch_size: int, epochs: int) -> str:
    return f"grid-lr{lr:g}-bs{batch_size}-ep{epochs}"


def grid_search(tasks: str | Sequence[str], model: str | None = None, seeds: Sequence[int] = (1,),
                profile: str = profiles.DEFAULT_PROFILE,
                learning_rates: Sequence[float] = config.BLURB_LEARNING_RATES,
                batch_sizes: Sequence[int] = config.BLURB_BATCH_SIZES, epochs: Sequence[int] | None = None,
                config_overrides: Mapping[str, Any] | None = None, force: bool = False,
                settings: Settings | None = None) -> dict[str, dict[str, Any]]:
    """Run every (lr, batch, epochs) point for each task and return ``{dataset: summary}``.

    ``epochs`` defaults to the profile's preset epochs of each task (then the grid is lr x batch).
    """
    settings = settings or Settings()
    prof = settings.profile(profile)
    model = model or prof.model
    root = settings.results_root
    out: dict[str, dict[str, Any]] = {}
    for spec in registry.resolve(tasks):
        base = config.apply_overrides(config.preset(spec.name, prof), spec.name, config_overrides)
        epoch_choices = list(epochs) if epochs else [base.epochs]
        points = []
        for lr, bs, ep in itertools.product(learning_rates, batch_sizes, epoch_choices):
            overrides = {**(config_overrides or {}), "learning_rate": lr, "batch_size": bs, "epochs": ep}
            records = runner.run_finetune(spec.name, model, list(seeds), profile, overrides, force=force,
                                          variant=point_variant(lr, bs, ep), settings=settings)
            done = [r for r in records if r.ok and r.score_dev is not None]
            points.append({
                "learning_rate": lr, "batch_size": bs, "epochs": ep, "variant": point_variant(lr, bs, ep),
                "seeds": [r.seed for r in done], "dev_scores": [r.score_dev for r in done],
                "dev_mean": statistics.fmean(r.score_dev for r in done) if done else None,
                "test_scores": [r.score_test for r in done],
                "skipped": [r.reason for r in records if not r.ok],
            })
        scored = [p for p in points if p["dev_mean"] is not None]
        best = max(scored, key=lambda p: p["dev_mean"]) if scored else None  # first of equals wins
        summary = {"dataset": spec.name, "profile": prof.name, "model": model, "selection": "mean dev score",
                   "points": points, "best": best}
        if is_main_process():
            write_json(Path(root) / "grid" / prof.name / model_tag(model) / f"{spec.name}.json", summary)
        out[spec.name] = summary
    return out
