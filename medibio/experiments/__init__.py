"""Experiments: named designs of several runs — their arms, budgets and the requests that make them.

* :mod:`medibio.experiments.registry` — every experiment by name (``get``, ``names``);
* :mod:`medibio.experiments.table5` — paper Table 5 at two scales (the scaled-down arms, the CPU study), the
  study's queues and its pilot's gate, and where a Table 5 claim's runs are (torch-free);
* :mod:`medibio.experiments.study` — the CPU study's runs: pretraining in resumable units, fine-tuning, the
  pilot, its status;
* :mod:`medibio.experiments.scaled_down` — the scaled-down arms' pretraining and fine-tuning;
* :mod:`medibio.experiments.ift` — intermediate fine-tuning: the design of the IFT claims' recorded runs;
* :mod:`medibio.experiments.ift_runs` — their runs: a target with and without IFT, the transfer matrix.

The floor sits above the kinds of run, whose runs it requests, and below :mod:`medibio.results`, which reads
what they recorded (docs/architecture.md).
"""
