"""Fine-tuning runs on BLURB: :func:`medibio.finetune.runner.run_finetune` (tasks x seeds -> run records,
through the one run protocol, in this process or through ``accelerate launch``) and
:func:`medibio.finetune.grid.grid_search` (the BLURB hyperparameter grid, chosen on dev)."""
