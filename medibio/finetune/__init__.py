"""Fine-tuning engine: every BLURB task through accelerate, with run records, IFT and stability options.

Entry points (light to import; torch and transformers load when a run starts):

* :func:`run_finetune` (``medibio.finetune.runner``): tasks x seeds in this process -> run records.
* :func:`launch`: the same through ``accelerate launch`` in a subprocess (several processes).
* :func:`grid_search` (``medibio.finetune.grid``): the BLURB lr x batch x epochs grid, chosen on dev.
* :mod:`medibio.finetune.presets`: profiles (smoke, cpu, gpu, paper) and per-task hyperparameters.
"""

from medibio.finetune.grid import grid_search
from medibio.finetune.runner import launch, run_finetune

__all__ = ["grid_search", "launch", "run_finetune"]
