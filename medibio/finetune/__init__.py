"""Fine-tuning engine: every BLURB task through accelerate, with run records, IFT and stability options.

Entry points (light to import; torch and transformers load when a run starts):

* :func:`run_finetune` (``medibio.finetune.runner``): tasks x seeds in this process -> run records.
* :func:`launch`: the same through ``accelerate launch`` in a subprocess (several processes).
* :func:`grid_search` (``medibio.finetune.grid``): the BLURB lr x batch x epochs grid, chosen on dev.
* :mod:`medibio.finetune.presets`: the per-task config of a profile (:mod:`medibio.profiles`) and overrides.
"""

from __future__ import annotations

from typing import Any

__all__ = ["grid_search", "launch", "run_finetune"]


def __getattr__(name: str) -> Any:
    # Lazy: the intermediate fine-tuning package imports this one's modules, and they import it back.
    if name == "grid_search":
        from medibio.finetune.grid import grid_search

        return grid_search
    if name in ("launch", "run_finetune"):
        from medibio.finetune import runner

        return getattr(runner, name)
    raise AttributeError(f"module 'medibio.finetune' has no attribute {name!r}")
