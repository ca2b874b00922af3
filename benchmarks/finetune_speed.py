"""Fine-tuning speed: medibio's engine against the Hugging Face ``Trainer``, and dynamic against fixed padding.

The measurements live in :mod:`benchmarks.finetune_engine` (one child process per measurement, so each
has its own memory peak); this script is its command line:

    python -m benchmarks.finetune_speed --quick                  # both parts in a few minutes
    python -m benchmarks.finetune_speed --only trainer           # MiniLM, cpu profile, NER/RE/HoC/BIOSSES
    python -m benchmarks.finetune_speed --only trainer --sizes 512,128,256,3   # train,dev,test,epochs
    python -m benchmarks.finetune_speed --only padding --examples 128 --tasks BC5-chem,ChemProt
    python -m benchmarks.finetune_speed --profile gpu --model minilm             # on a GPU machine
    python -m benchmarks.finetune_speed --only padding --tasks GAD --batch-size 32   # another batch
    python -m benchmarks.finetune_speed --only padding --tasks GAD --frozen-word-embeddings  # bound of a sparse update
    python -m benchmarks.finetune_speed --only padding --tasks GAD --compile      # torch.compile'd training
"""

from __future__ import annotations

from benchmarks.finetune_engine import main

if __name__ == "__main__":
    main()
