"""Fine-tuning throughput per task type, dynamic padding against fixed max-length padding.

The measurement lives in :mod:`medibio.finetune.benchmark` (the engine's own features, sampler, optimiser
and precision; one child process per measurement); this script is its command line:

    python benchmarks/finetune_speed.py                          # MiniLM, cpu profile, 6 tasks x 2 modes
    python benchmarks/finetune_speed.py --examples 128 --tasks BC5-chem,ChemProt
    python benchmarks/finetune_speed.py --profile gpu --model minilm --examples 512   # on a GPU machine
"""

from __future__ import annotations

from medibio.finetune.benchmark import main

if __name__ == "__main__":
    main()
