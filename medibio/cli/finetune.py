"""CLI commands of medibio.finetune: ``medibio finetune``, ``medibio grid`` and ``medibio presets``.

All three work under ``python -m medibio`` and ``accelerate launch -m medibio`` alike; heavy imports
happen inside the commands.
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Any

import typer

from medibio.cli import session
from medibio.cli import values as check
from medibio.core import profiles
from medibio.training.config import CLASS_WEIGHTINGS

Weighting = Enum("Weighting", {name: name for name in CLASS_WEIGHTINGS}, type=str)  # CLI choices

TASK_HELP = "dataset name, group (NER, PICO, RE, SS, DC, QA), comma list, or 'all'"


def _overrides(config: Path | None, **flags: Any) -> dict[str, Any]:
    from medibio.training import config as presets

    return session.merged_options(presets.load_config_file(config) if config else {}, **flags)


def _grid_line(name: str, best: dict[str, Any] | None, points: list[dict[str, Any]]) -> str:
    if best is None:
        return f"{name:13s} no scored grid point ({points[0]['skipped']})"
    return (f"{name:13s} best lr {best['learning_rate']:g} batch {best['batch_size']} epochs {best['epochs']}: "
            f"dev {best['dev_mean']:.2f} over {len(best['seeds'])} seed(s)")


def _floats(text: str) -> list[float]:
    return [float(x) for x in text.split(",") if x.strip()]


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def _datasets(selection: str) -> object:
    from medibio.tasks import registry

    return registry.resolve(selection)


def _chain(text: str) -> object:
    from medibio.ift import stages

    return stages.parse_chain(text)


def _check_model(model: str | None, profile: str, settings: Any) -> None:
    """The model (``None``: the profile's) is complete and an encoder with a tokenizer its embedding covers,
    said in one line before any data is read or any run trains (:func:`medibio.models.zoo.check_loadable`). A
    pretraining run's model is medibio's own, and its recorded runs are reused without its weights: the runner
    names them when a run has to train."""
    from medibio.models import zoo

    name = model or profiles.get(profile).model
    if zoo.run_key(name) is None:
        zoo.check_loadable(name, settings.cache_root, settings.results_root)


TASK = check.lookup(_datasets)
PROFILE = check.lookup(profiles.get)
SEEDS = check.seeds()
MODEL = check.name("model name or folder")
CONFIG = {"exists": True, "dir_okay": False, "readable": True}  # --config: an existing YAML file


def register(app: typer.Typer) -> None:
    """Add this area's commands to the main medibio app."""

    @app.command("finetune")
    def finetune_cmd(
        task: str = typer.Option(..., "--task", "-t", help=TASK_HELP, callback=TASK),
        model: str = typer.Option(None, "--model", "-m", help="model name (minilm, tiny-deberta, hub id) or "
                                  "folder; default: the profile's model", callback=MODEL),
        seeds: str = typer.Option(None, "--seeds", help="comma list, e.g. 1,2,3; default: the profile's",
                                  callback=SEEDS),
        profile: str = typer.Option(profiles.DEFAULT_PROFILE, "--profile", "-p", help=profiles.help_text(),
                                    callback=PROFILE),
        config: Path = typer.Option(None, "--config", help="YAML file of option overrides (optionally per "
                                    "task under 'tasks:')", **CONFIG),
        lr: float = typer.Option(None, "--lr", "--learning-rate", help="learning rate", callback=check.option("learning_rate")),
        batch_size: int = typer.Option(None, "--batch-size", help="global batch size",
                                        callback=check.option("batch_size")),
        epochs: int = typer.Option(None, "--epochs", help="training epochs", callback=check.option("epochs")),
        max_length: int = typer.Option(None, "--max-length", help="maximum sub-tokens per example",
                                       callback=check.option("max_length")),
        grad_accum: int = typer.Option(None, "--grad-accum", help="gradient accumulation steps",
                                       callback=check.option("grad_accum")),
        max_train_examples: int = typer.Option(None, "--max-train-examples", help="cap on training examples",
                                               callback=check.option("max_train_examples")),
        max_dev_examples: int = typer.Option(None, "--max-dev-examples", help="dev subsample for selection",
                                             callback=check.option("max_dev_examples")),
        intermediate: str = typer.Option(None, "--intermediate", help="intermediate task chain, e.g. "
                                         "STS-B or STS-B,SICK (the encoder is carried over, the head is new)",
                                         callback=check.lookup(_chain)),
        freeze_lower: bool = typer.Option(False, "--freeze-lower", help="freeze embeddings + lower half"),
        llrd: float = typer.Option(None, "--llrd", help="layer-wise learning-rate decay, e.g. 0.9",
                                   callback=check.option("llrd")),
        reinit_top: int = typer.Option(None, "--reinit-top", help="re-initialise the top k encoder layers",
                                       callback=check.option("reinit_top")),
        no_bias_correction: bool = typer.Option(False, "--no-bias-correction",
                                                help="Adam without bias correction (original BERT)"),
        longer_training: float = typer.Option(None, "--longer-training", help="multiply the epochs",
                                              callback=check.option("longer_training")),
        class_weighting: Weighting = typer.Option(None, "--class-weighting", case_sensitive=False,
                                                  help="class-weighted loss for RE/QA (1/count, 1/sqrt(count))"),
        cv_fold: int = typer.Option(None, "--cv-fold", help="train, select and test on fold K of a 5-fold "
                                    "cross-validation over all of the task's examples instead of the official "
                                    "splits (BIOSSES: 20 test pairs per fold, 100 over the five)",
                                    callback=check.option("cv_fold")),
        variant: str = typer.Option(None, "--variant", help="name of this variant in the results tree",
                                    callback=check.path_component("variant name")),
        results_root: Path = typer.Option(None, "--results-root", help="default $MEDIBIO_RESULTS or results/"),
        data_root: Path = typer.Option(None, "--data-root", help="default $MEDIBIO_DATA or ../shared/data"),
        force: bool = typer.Option(False, "--force", help="rerun even when a record exists"),
        allow_overlap: bool = typer.Option(False, "--allow-overlap", help="train although the splits share "
                                           "examples (by id or content) beyond BLURB's own documented overlaps; "
                                           "the record says so"),
        as_json: bool = typer.Option(False, "--json", help="print the records as JSON"),
        limit: int = typer.Option(None, "--limit", help="at most N examples per split, of at most 128 sub-tokens: "
                                  "the profile's exact code "
                                  "path on a few examples (records of their own)", callback=check.limit()),
    ) -> None:
        """Fine-tune a model on BLURB tasks x seeds and write one run record per run.

        Runs already recorded are skipped (resume), unless --force. Works under `accelerate launch -m
        medibio finetune ...` for several processes (only the main process writes).
        """
        from medibio.finetune import runner

        settings = session.settings(data_root, results_root, limit)
        _check_model(model, profile, settings)
        overrides = _overrides(config, learning_rate=lr, batch_size=batch_size, epochs=epochs,
                               max_length=max_length, grad_accum=grad_accum, max_train_examples=max_train_examples,
                               max_dev_examples=max_dev_examples, freeze_lower=freeze_lower or None, llrd=llrd,
                               reinit_top=reinit_top, bias_correction=False if no_bias_correction else None,
                               longer_training=longer_training, cv_fold=cv_fold,
                               class_weighting=class_weighting.value if class_weighting else None)
        records = runner.run_finetune(task, model, seeds, profile, overrides, intermediate, force, variant,
                                      settings=settings, allow_overlap=allow_overlap)
        session.echo_result([r.to_dict() for r in records], as_json, lambda: (
            f"{r.dataset:13s} seed {r.seed:<3d} {r.variant:20s} "
            + (f"dev {r.score_dev:6.2f}  test {r.score_test:6.2f}  ({r.wall_time_s:.0f}s)" if r.ok
               else f"skipped: {r.reason}") for r in records))

    @app.command("grid")
    def grid_cmd(
        task: str = typer.Option(..., "--task", "-t", help=TASK_HELP, callback=TASK),
        model: str = typer.Option(None, "--model", "-m", help="model name or folder", callback=MODEL),
        seeds: str = typer.Option("1", "--seeds", help="comma list of seeds per grid point", callback=SEEDS),
        profile: str = typer.Option(profiles.DEFAULT_PROFILE, "--profile", "-p", help=profiles.help_text(),
                                    callback=PROFILE),
        lrs: str = typer.Option("1e-5,3e-5,5e-5", "--lrs", help="learning rates (BLURB: 1e-5,3e-5,5e-5)",
                                callback=check.positive_list()),
        batch_sizes: str = typer.Option("16,32", "--batch-sizes", help="batch sizes (BLURB: 16,32)",
                                        callback=check.int_list(1, "16,32")),
        epochs: str = typer.Option(None, "--epochs", help="epoch choices, e.g. 2,3,5; default: the preset's",
                                   callback=check.int_list(1, "2,3,5")),
        config: Path = typer.Option(None, "--config", help="YAML file of option overrides", **CONFIG),
        max_train_examples: int = typer.Option(None, "--max-train-examples", help="cap on training examples",
                                               callback=check.option("max_train_examples")),
        results_root: Path = typer.Option(None, "--results-root", help="default $MEDIBIO_RESULTS or results/"),
        data_root: Path = typer.Option(None, "--data-root", help="default $MEDIBIO_DATA or ../shared/data"),
        force: bool = typer.Option(False, "--force", help="rerun grid points that have records"),
        as_json: bool = typer.Option(False, "--json", help="print the summaries as JSON"),
    ) -> None:
        """Grid search lr x batch x epochs on dev for each task; print and save the best point."""
        from medibio.finetune import grid
        from medibio.tasks import loaders, registry

        settings = session.settings(data_root, results_root)
        _check_model(model, profile, settings)
        overrides = _overrides(config, max_train_examples=max_train_examples)
        for spec in registry.resolve(task):  # every dataset's files, before the first grid point trains
            loaders.validate_dataset(spec.name, settings.data_root)
        summaries = grid.grid_search(task, model, _ints(seeds), profile, _floats(lrs), _ints(batch_sizes),
                                     _ints(epochs) if epochs else None, overrides, force, settings)
        session.echo_result(summaries, as_json, lambda: (_grid_line(name, summary["best"], summary["points"])
                                                         for name, summary in summaries.items()))

    @app.command("presets")
    def presets_cmd(
        profile: str = typer.Option(profiles.DEFAULT_PROFILE, "--profile", "-p", help=profiles.help_text(),
                                    callback=PROFILE),
        as_json: bool = typer.Option(False, "--json", help="print as JSON"),
    ) -> None:
        """Show the per-task fine-tuning budget and hyperparameters of a profile."""
        from medibio.training import config as presets

        rows = presets.budget_table(profile)
        if as_json:
            session.echo_json(rows)
            return
        prof = profiles.get(profile)
        typer.echo(f"profile {prof.name}: {prof.description} (model {prof.model})")
        cols = list(rows[0])
        typer.echo("  ".join(f"{c:>12s}" for c in cols))
        for row in rows:
            typer.echo("  ".join(f"{str(row[c]):>12s}" for c in cols))
