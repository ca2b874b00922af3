"""Fine-tuning speed: medibio's engine against the Hugging Face ``Trainer``, and dynamic against fixed padding.

The measurements live in :mod:`medibio.finetune.benchmark` (one child process per measurement, so each
has its own memory peak); this script is its command line:

    python benchmarks/finetune_speed.py --quick                  # both parts in a few minutes
    python benchmarks/finetune_speed.py --only trainer           # MiniLM, cpu profile, NER/RE/HoC/BIOSSES
    python benchmarks/finetune_speed.py --only trainer --sizes 512,128,256,3   # train,dev,test,epochs
    python benchmarks/finetune_speed.py --only padding --examples 128 --tasks BC5-chem,ChemProt
    python benchmarks/finetune_speed.py --profile gpu --model minilm             # on a GPU machine
"""

from __future__ import annotations

from medibio.finetune.benchmark import main

if __name__ == "__main__":
    main()
