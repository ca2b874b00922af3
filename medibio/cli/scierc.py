"""``medibio scierc train|evaluate|table`` (also under ``python -m medibio`` and ``accelerate launch -m
medibio``; only the main process prints and writes)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from medibio.cli import session
from medibio.cli import values as check
from medibio.core import profiles

PROFILE = check.lookup(profiles.get)
SEEDS = check.seeds()
MODEL = check.name("model name or folder")
SPLIT = check.choice(("train", "dev", "test"))


def _mode(value: str | None) -> str | None:
    from medibio.scierc.presets import MODES

    if value is not None and value not in MODES:
        raise typer.BadParameter(f"{value!r} is not one of {', '.join(MODES)}")
    return value


def _metrics_line(test: dict[str, Any]) -> str:
    return "  ".join(f"{name} {test[f'{short}_f1']:6.2f}" for name, short in
                     (("NER", "ner"), ("REL", "rel"), ("REL+", "relplus"), ("Coref", "coref")))


def register(app: typer.Typer) -> None:
    group = typer.Typer(help="SciERC (Table 4): train the span model, score predictions, summarise runs.",
                        no_args_is_help=True)
    app.add_typer(group, name="scierc")

    @group.command("train")
    def train_cmd(
        model: str = typer.Option(None, "--model", "-m", help="encoder (minilm, tiny-deberta, hub id, folder); "
                                  "default: the profile's", callback=MODEL),
        seeds: str = typer.Option(None, "--seeds", help="comma list; default: the profile's", callback=SEEDS),
        profile: str = typer.Option(profiles.DEFAULT_PROFILE, "--profile", "-p", help=profiles.help_text(),
                                    callback=PROFILE),
        mode: str = typer.Option(None, "--mode", help="joint (DyGIE++-style) or pipeline (PURE-style)",
                                 callback=_mode),
        epochs: int = typer.Option(None, "--epochs", callback=check.at_least(1)),
        lr: float = typer.Option(None, "--lr", help="encoder learning rate", callback=check.positive()),
        head_lr: float = typer.Option(None, "--head-lr", help="task heads' learning rate", callback=check.positive()),
        batch_size: int = typer.Option(None, "--batch-size", help="documents per step", callback=check.at_least(1)),
        grad_accum: int = typer.Option(None, "--grad-accum", callback=check.at_least(1)),
        max_length: int = typer.Option(None, "--max-length", help="sub-tokens per window", callback=check.at_least(16)),
        max_span_width: int = typer.Option(None, "--max-span-width", callback=check.at_least(1)),
        max_train_docs: int = typer.Option(None, "--max-train-docs", callback=check.at_least(1)),
        max_dev_docs: int = typer.Option(None, "--max-dev-docs", callback=check.at_least(1)),
        max_test_docs: int = typer.Option(None, "--max-test-docs", help="test cap (scores then not official)",
                                          callback=check.at_least(1)),
        mixed_precision: str = typer.Option(None, "--mixed-precision", help="no, bf16 or fp16 (GPU)"),
        train_layers: int = typer.Option(None, "--train-layers", help="only the top N encoder layers learn",
                                         callback=check.at_least(0)),
        config: Path = typer.Option(None, "--config", help="YAML file of SciERC options (flags win over it)",
                                    exists=True, dir_okay=False),
        results_root: Path = typer.Option(None, "--results-root", help="default $MEDIBIO_RESULTS or results/"),
        data_root: Path = typer.Option(None, "--data-root", help="default $MEDIBIO_DATA or ../shared/data"),
        force: bool = typer.Option(False, "--force", help="rerun even when a record exists"),
        as_json: bool = typer.Option(False, "--json", help="print the records as JSON"),
        limit: int = typer.Option(None, "--limit", help="at most N documents per split", callback=check.at_least(1)),
    ) -> None:
        """Train the span model on SciERC (one run record per seed; recorded runs are reused unless --force)."""
        from medibio.scierc.presets import load_config_file
        from medibio.scierc.runner import run_scierc

        settings = session.settings(data_root, results_root, limit)
        overrides = {"mode": mode, "epochs": epochs, "learning_rate": lr, "head_learning_rate": head_lr,
                     "batch_size": batch_size, "grad_accum": grad_accum, "max_length": max_length,
                     "max_span_width": max_span_width, "max_train_docs": max_train_docs,
                     "max_dev_docs": max_dev_docs, "max_test_docs": max_test_docs, "mixed_precision": mixed_precision,
                     "train_layers": train_layers}
        given = session.merged_options(load_config_file(config) if config else {}, **overrides)
        records = run_scierc(model, seeds, profile, given, force, settings=settings)
        session.echo_result([r.to_dict() for r in records], as_json, lambda: (
            f"SciERC seed {r.seed:<3d} {r.variant:9s} {_metrics_line(r.test)}  ({r.wall_time_s:.0f}s)" for r in records))

    @group.command("evaluate")
    def evaluate_cmd(
        predictions: Path = typer.Argument(..., help="json lines: doc_key, entities, relations, clusters",
                                           exists=True, dir_okay=False),
        split: str = typer.Option("test", "--split", help="train, dev or test", callback=SPLIT),
        data_root: Path = typer.Option(None, "--data-root", help="default $MEDIBIO_DATA or ../shared/data"),
        partial: bool = typer.Option(False, "--partial", help="score only the documents the file predicts "
                                     "(otherwise a document of the split without a prediction is an error)"),
        as_json: bool = typer.Option(False, "--json", help="print every score as JSON"),
    ) -> None:
        """Score predictions against a SciERC split (NER, REL, REL+, MUC/B3/CEAF-e and CoNLL F1)."""
        from medibio.tasks import scierc, scierc_metrics, scierc_predictions

        gold = scierc.load_split(split, session.settings(data_root).data_root)
        docs, preds = scierc_predictions.read(predictions, gold, partial=partial)
        scores = scierc_metrics.flat(scierc_metrics.score_documents(docs, preds))
        if as_json:
            session.echo_json({**scores, "documents": len(docs), "split_documents": len(gold)})
            return
        typer.echo(_metrics_line(scores) + (f"  ({len(docs)} of {len(gold)} {split} documents)"
                                            if len(docs) < len(gold) else ""))

    @group.command("table")
    def table_cmd(
        profile: str = typer.Option(None, "--profile", "-p", help="only this profile's runs; "
                                    + profiles.help_text(), callback=PROFILE),
        results_root: Path = typer.Option(None, "--results-root", help="default $MEDIBIO_RESULTS or results/"),
    ) -> None:
        """Mean ± sd over seeds of the recorded SciERC runs."""
        from medibio.results.scierc import scierc_table

        table = scierc_table(session.settings(results_root=results_root).results_root, profile)
        typer.echo("no SciERC records" if table.empty else table.to_string(index=False, float_format="%.2f"))

