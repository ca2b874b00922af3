"""Pretraining: corpora, SentencePiece vocabularies, DeBERTa-v2 masked-language-model runs and the paper's
Table 3 and Table 5 configurations.

* :mod:`medibio.pretrain.configs` — the paper's Table 3 settings and the profiles' configurations
  (``table3()``, ``configs_table()``, ``lr_schedule(config)``, ``config_for_profile(profile)``);
* :mod:`medibio.pretrain.trainer` — ``run_pretraining(config, corpus=..., init=...)``: one run through the run
  protocol, its record, ``curve_frame(record)``.

The Table 5 experiments that pretrain several arms (at small scale, and the CPU study) are
:mod:`medibio.experiments.table5`.
"""
