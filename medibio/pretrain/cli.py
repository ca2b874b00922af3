"""CLI commands of medibio.pretrain (registered on the main app by medibio.cli).

* ``medibio pretrain --config mini [--experiment table5-1|all] [--from CKPT] [--corpus ...] [--resume]``
  (also under ``accelerate launch -m medibio pretrain ...``)
* ``medibio pretrain --show table3|table5|configs|schedule [--json]`` prints the configuration tables.
* ``medibio vocab train CORPUS --size N --out DIR``
"""

from __future__ import annotations

import json
from enum import Enum
from pathlib import Path

import typer

from medibio import cli_values as check
from medibio import profiles


class Show(str, Enum):
    table3 = "table3"
    table5 = "table5"
    configs = "configs"
    schedule = "schedule"


class Variant(str, Enum):
    abstract = "abstract"
    fulltext = "fulltext"


def _config(name: str) -> object:
    from medibio.pretrain.configs import get_config

    return get_config(name)


def _experiments(selection: str) -> object:
    from medibio.pretrain.experiments import resolve_ids

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
    experiment: str = typer.Option(None, "--experiment", "-e", help="Table 5 stage(s) at small scale: "
                                   "table5-1 .. table5-5, science, 1,3 or all; prerequisites run first.",
                                   callback=check.lookup(_experiments)),
    from_: str = typer.Option(None, "--from", help="Continue pretraining from this checkpoint folder or model "
                              "name (keeps its vocabulary); default: from scratch with a new vocabulary."),
    corpus: str = typer.Option("biomed-abstracts", "--corpus", help="Named corpus (biomed-abstracts, "
                               "biomed-fulltext, cs, cs-abstracts, ...), a file or a folder of shards; "
                               "comma-separated for a mixture."),
    variant: Variant = typer.Option(Variant.abstract, "--variant", help="Text of JSONL records: abstract "
                                    "or fulltext (abstract + body)."),
    out: Path = typer.Option(None, "--out", "-o", help="Output folder (default results/pretrain/CONFIG/TAG/"
                             "DIGEST, named by the digest of the run's configuration: the same configuration "
                             "resumes or reuses it, a changed one trains into a new folder)."),
    max_steps: int = typer.Option(None, "--max-steps", help="Override the config's optimizer steps "
                                  "(warm-up keeps its share).", callback=check.at_least(1)),
    effective_batch: int = typer.Option(None, "--effective-batch", help="Examples per optimizer step; "
                                        "turned into accumulation steps for the processes at hand.",
                                        callback=check.at_least(1)),
    per_device_batch: int = typer.Option(None, "--per-device-batch", help="Examples per device per pass.",
                                         callback=check.at_least(1)),
    whole_word_mask: bool = typer.Option(False, "--whole-word-mask", help="Mask whole words."),
    resume: bool = typer.Option(False, "--resume", help="Continue from the newest checkpoint in --out (it "
                                "must come from the same configuration; without --out a run always resumes)."),
    data_root: Path = typer.Option(None, "--data-root", help="Data root (default $MEDIBIO_DATA or "
                                   "../shared/data)."),
    show: Show = typer.Option(None, "--show", help="Print a table instead of training: table3, table5, "
                              "configs or schedule (of --config)."),
    as_json: bool = typer.Option(False, "--json", help="With --show: print JSON; after training: print the "
                                 "run record as JSON."),
    limit: int = typer.Option(None, "--limit", help="At most N optimizer steps of at most N sequences per "
                              "device: the config's exact code path in seconds (a folder of its own).",
                              callback=check.at_least(1)),
) -> None:
    """Masked-language-model pretraining of DeBERTa-v2 (paper Tables 3 and 5)."""
    import os

    from medibio.pretrain import configs as cfgs

    if limit:
        os.environ[profiles.LIMIT_ENV] = str(limit)  # read by the configs; accelerate's processes inherit it

    if show is not None:
        from medibio.pretrain.experiments import table5

        frames = {Show.table3: cfgs.table3, Show.configs: cfgs.configs_table,
                  Show.table5: lambda: table5(config), Show.schedule: lambda: cfgs.lr_schedule(config)}
        _print_frame(frames[show](), as_json)
        return
    cfg = cfgs.get_config(config)
    if whole_word_mask:
        cfg = cfg.with_overrides(whole_word_mask=True)
    if experiment:
        from medibio.pretrain.experiments import run_experiments

        if from_ or corpus != "biomed-abstracts":
            raise typer.BadParameter("--experiment fixes each stage's base model and corpus (and always "
                                     "resumes); drop --from/--corpus")

        manifest = run_experiments(cfg.with_overrides(per_device_batch=per_device_batch), experiment,
                                   out_root=out, max_steps=max_steps, effective_batch=effective_batch,
                                   data_root=data_root)
        if as_json:
            typer.echo(json.dumps(manifest, indent=2))
        else:
            for eid, stage in manifest["stages"].items():
                typer.echo(f"{eid}: {stage['status']}  loss {stage['final_loss']}  -> {stage['output']}")
        return
    from medibio.pretrain.trainer import run_pretraining

    record = run_pretraining(cfg, corpus=corpus, variant=variant.value, init=from_, out_dir=out, resume=resume,
                             max_steps=max_steps, effective_batch=effective_batch,
                             per_device_batch=per_device_batch, data_root=data_root,
                             tag="continual" if from_ else "scratch")
    if as_json:
        typer.echo(json.dumps(record, indent=2))
    else:
        typer.echo(f"{record['status']}: {record['steps_done']} steps, final loss {record['final_loss']:.4f}, "
                   f"{record['tokens_per_s']:.0f} tokens/s -> {record['output']}")


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
                                  root=data_root)
    typer.echo(f"vocabulary of {len(tok)} pieces -> {out}")


def register(app: typer.Typer) -> None:
    """Add this area's commands to the main medibio app."""
    app.command("pretrain")(pretrain)
    app.add_typer(vocab_app, name="vocab")
