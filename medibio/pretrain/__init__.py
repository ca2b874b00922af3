"""Pretraining: SentencePiece vocabularies, corpora and DeBERTa-v2 masked-language-model training.

The notebook-facing API (heavy libraries load only when a function runs):

* ``table3()``, ``configs_table()``, ``lr_schedule(config)`` — paper Table 3 and the profiles as DataFrames
* ``table5(config)`` and ``run_experiments(config, selection)`` — the five Table 5 stages at small scale
* ``run_pretraining(config, corpus=..., init=...)`` — one run; returns its record; ``curve_frame(record)``
* ``config_for_profile("smoke"|"cpu"|"gpu"|"paper")`` — the config each book profile uses
* ``plan_batch(effective, per_device, processes)`` — effective batch -> accumulation steps
"""

from medibio.pretrain.batching import BatchLayout, effective_batch, plan_batch
from medibio.pretrain.configs import (
    CONFIGS,
    PretrainConfig,
    config_for_profile,
    configs_table,
    get_config,
    lr_schedule,
    table3,
)
from medibio.pretrain.experiments import EXPERIMENTS, run_experiments, table5


def run_pretraining(*args, **kwargs):
    """See ``medibio.pretrain.trainer.run_pretraining`` (imported lazily: it pulls in torch)."""
    from medibio.pretrain.trainer import run_pretraining as _run

    return _run(*args, **kwargs)


def curve_frame(record):
    """See ``medibio.pretrain.trainer.curve_frame``: a run's loss / lr / tokens-per-second curve."""
    from medibio.pretrain.trainer import curve_frame as _curve

    return _curve(record)


__all__ = [
    "CONFIGS", "EXPERIMENTS", "BatchLayout", "PretrainConfig", "config_for_profile", "configs_table",
    "curve_frame", "effective_batch", "get_config",
    "lr_schedule", "plan_batch", "run_experiments", "run_pretraining", "table3", "table5",
]
