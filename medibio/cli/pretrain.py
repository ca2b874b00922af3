"""CLI commands of medibio.pretrain (registered on the main app by medibio.cli.main).

* ``medibio pretrain --config mini [--experiment table5-1|all] [--from CKPT] [--corpus ...]``
  (a killed run resumes from its newest checkpoint when the same command is given again)
  (also under ``accelerate launch -m medibio pretrain ...``)
* ``medibio pretrain --show table3|table5|configs|schedule [--json]`` prints the configuration tables.
* ``medibio vocab train CORPUS --size N --out DIR``

The CPU Table 5 study's commands (``medibio study ...``) are :mod:`medibio.cli.study`.
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path

import typer

from medibio.cli import session
from medibio.cli import values as check
from medibio.core import profiles


class Show(str, Enum):
    table3 = "table3"
    table5 = "table5"
    configs = "configs"
    schedule = "schedule"


class Variant(str, Enum):
    abstract = "abstract"
    fulltext = "fulltext"


# The upper bound of a run's length: far above any run meant here, low enough that a mistyped number (23 digits)
# is refused before a run is planned, with the reason (the study's --tokens has its own, medibio.cli.study).
MAX_STEPS = 5_000_000
STEPS_WHY = "10 times the paper's 500,000 pretraining steps (medibio pretrain --show configs)"


def _config(name: str) -> object:
    from medibio.pretrain.configs import get_config

    return get_config(name)


def _experiments(selection: str) -> object:
    from medibio.experiments.table5 import resolve_ids

    return resolve_ids(selection)


def _print_frame(frame, as_json: bool) -> None:
    if as_json:
        typer.echo(frame.reset_index().to_json(orient="records", indent=2))
    else:
        typer.echo(frame.to_string())


def pretrain(
    config: str = typer.Option(profiles.get(profiles.DEFAULT_PROFILE).pretrain_config, "--config", "-c",
                               help="Named config: mini, gpu-mini, smoke, scideberta-v2, medibiodeberta (see "
                               "--show configs); default: the default profile's.", callback=check.lookup(_config)),
    experiment: str = typer.Option(None, "--experiment", "-e", help="Table 5 experiment(s) at small scale: "
                                   "table5-1 .. table5-5, science, 1,3 or all; prerequisites run first.",
                                   callback=check.lookup(_experiments)),
    from_: str = typer.Option(None, "--from", help="Continue pretraining from this checkpoint folder or model "
                              "name (keeps its vocabulary); default: from scratch with a new vocabulary.",
                              callback=check.name("checkpoint folder or model name")),
    corpus: str = typer.Option("biomed-abstracts", "--corpus", help="Named corpus (biomed-abstracts, "
                               "biomed-fulltext, cs, cs-abstracts, ...), a file or a folder of shards; "
                               "comma-separated for a mixture."),
    variant: Variant = typer.Option(Variant.abstract, "--variant", help="Text of JSONL records: abstract "
                                    "or fulltext (abstract + body)."),
    max_steps: int = typer.Option(None, "--max-steps", help="Override the config's optimizer steps "
                                  "(warm-up keeps its share).", callback=check.bounded(1, MAX_STEPS, STEPS_WHY)),
    effective_batch: int = typer.Option(None, "--effective-batch", help="Examples per optimizer step; "
                                        "turned into accumulation steps for the processes at hand.",
                                        callback=check.at_least(1)),
    per_device_batch: int = typer.Option(None, "--per-device-batch", help="Examples per device per pass.",
                                         callback=check.at_least(1)),
    whole_word_mask: bool = typer.Option(False, "--whole-word-mask", help="Mask whole words."),
    data_root: Path = typer.Option(None, "--data-root", help="Data root (default $MEDIBIO_DATA or "
                                   "../shared/data)."),
    results_root: Path = typer.Option(None, "--results-root", help="Where run records and models go (default "
                                      "$MEDIBIO_RESULTS or results/). A run lives in the folder its configuration's "
                                      "digest names: the same configuration resumes or reuses it, a changed one "
                                      "trains into a new folder."),
    show: Show = typer.Option(None, "--show", help="Print a table instead of training: table3, table5, "
                              "configs or schedule (of --config)."),
    as_json: bool = typer.Option(False, "--json", help="With --show: print JSON; after training: print the "
                                 "run record as JSON."),
    limit: int = typer.Option(None, "--limit", help="At most N optimizer steps of at most N sequences per "
                              "device: the config's exact code path in seconds (a folder of its own).",
                              callback=check.limit()),
) -> None:
    """Masked-language-model pretraining of DeBERTa-v2 (paper Tables 3 and 5). A killed run resumes from its
    newest checkpoint when the same command runs again; a finished one is reused."""
    from medibio.pretrain import configs

    settings = session.settings(data_root, results_root, limit)

    if show is not None:
        from medibio.book.table5 import table5

        frames = {Show.table3: configs.table3, Show.configs: configs.configs_table,
                  Show.table5: lambda: table5(config), Show.schedule: lambda: configs.lr_schedule(config)}
        _print_frame(frames[show](), as_json)
        return
    cfg = configs.get_config(config)
    if whole_word_mask:
        cfg = cfg.with_overrides(whole_word_mask=True)
    if experiment:
        from medibio.experiments.scaled_down import run_experiments
        from medibio.pretrain.trainer import model_folder

        if from_ or corpus != "biomed-abstracts":
            raise typer.BadParameter("--experiment fixes each experiment's base model and corpus (and always "
                                     "resumes); drop --from/--corpus")

        records = run_experiments(cfg.with_overrides(per_device_batch=per_device_batch), experiment,
                                  max_steps=max_steps, effective_batch=effective_batch, settings=settings)
        if as_json:
            session.echo_json({eid: r.to_dict() for eid, r in records.items()})
        else:
            for eid, record in records.items():
                typer.echo(f"{eid}: loss {record.details['final_loss']:.4f} -> {model_folder(record, settings)}")
        return
    from medibio.pretrain.trainer import model_folder, run_pretraining

    record = run_pretraining(cfg, corpus=corpus, variant=variant.value, init=from_, max_steps=max_steps,
                             effective_batch=effective_batch, per_device_batch=per_device_batch,
                             tag="continual" if from_ else "scratch", settings=settings)
    d = record.details
    session.echo_result(record.to_dict(), as_json, lambda: [
        f"{d['steps_done']} steps, final loss {d['final_loss']:.4f}, {d['tokens_per_s']:.0f} tokens/s "
        f"-> {model_folder(record, settings)}"])


vocab_app = typer.Typer(help="SentencePiece vocabularies for DeBERTa-v2.", no_args_is_help=True)


@vocab_app.command("train")
def vocab_train(
    corpus: str = typer.Argument(..., help="Named corpus, file or folder (as for `medibio pretrain --corpus`)."),
    size: int = typer.Option(32000, "--size", "-n", help="Vocabulary size (unigram pieces).",
                             callback=check.at_least(8)),
    out: Path = typer.Option(..., "--out", "-o", help="Output folder (spm.model, tokenizer.json)."),
    variant: Variant = typer.Option(Variant.abstract, "--variant", help="abstract or fulltext."),
    max_mb: float = typer.Option(50.0, "--max-mb", help="Raw text to train on (MB; 0 = everything).",
                                 callback=check.non_negative()),
    data_root: Path = typer.Option(None, "--data-root", help="Data root override."),
) -> None:
    """Train a SentencePiece (unigram) vocabulary that DebertaV2TokenizerFast loads offline."""
    from medibio.pretrain.vocab import train_corpus_vocabulary

    tok = train_corpus_vocabulary(corpus, out, size, variant=variant.value, max_mb=max_mb or None,
                                  root=session.settings(data_root).data_root)
    typer.echo(f"vocabulary of {len(tok)} pieces -> {out}")


def register(app: typer.Typer) -> None:
    """Add this area's commands to the main medibio app."""
    app.command("pretrain")(pretrain)
    app.add_typer(vocab_app, name="vocab")
