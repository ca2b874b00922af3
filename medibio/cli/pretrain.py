"""CLI commands of medibio.pretrain (registered on the main app by medibio.cli.main).

* ``medibio pretrain --config mini [--experiment table5-1|all] [--from CKPT] [--corpus ...]``
  (a killed run resumes from its newest checkpoint when the same command is given again)
  (also under ``accelerate launch -m medibio pretrain ...``)
* ``medibio pretrain --show table3|table5|configs|schedule [--json]`` prints the configuration tables.
* ``medibio vocab train CORPUS --size N --out DIR``
* ``medibio study unit --arm 3 --seed 1 [--tokens 5000000] [--unit-steps 25]``: one resumable unit of the
  Table 5 study's pretraining (issue 40); ``medibio study status`` lists where every arm stands;
  ``medibio study pilot`` fine-tunes the pilot's arms and prints its go/no-go.
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path

import typer

from medibio.cli import session
from medibio.cli import values as check
from medibio.core import profiles
from medibio.tasks import registry


class Show(str, Enum):
    table3 = "table3"
    table5 = "table5"
    configs = "configs"
    schedule = "schedule"


class Variant(str, Enum):
    abstract = "abstract"
    fulltext = "fulltext"


# Upper bounds of run lengths: far above any run meant here, low enough that a mistyped number (a 23-digit
# --tokens planned about 1e19 steps) is refused before a run is planned, with the reason.
MAX_STEPS = 5_000_000
STEPS_WHY = "10 times the paper's 500,000 pretraining steps (medibio pretrain --show configs)"
MAX_STUDY_TOKENS = 1_000_000_000


def _study_tokens_why() -> str:
    """Why ``--tokens`` stops at :data:`MAX_STUDY_TOKENS`, in the study configuration's steps."""
    from medibio.pretrain.configs import get_config
    from medibio.pretrain.study import CONFIG, TOKENS, steps_for

    config = get_config(CONFIG)
    return (f"100 times the study's {TOKENS:,} tokens a run: {steps_for(MAX_STUDY_TOKENS, config):,} steps of "
            f"{config.effective_batch * config.seq_length:,} tokens, weeks of one CPU core at this scale; a larger "
            "study is another configuration (medibio pretrain --config)")


def _checkpoint_interval() -> int:
    from medibio.pretrain.configs import get_config
    from medibio.pretrain.study import CONFIG

    return get_config(CONFIG).save_every


def _arm(arm: str) -> object:
    from medibio.pretrain.study import get_arm

    return get_arm(arm)


def _datasets(selection: str) -> object:
    return registry.resolve(selection)


STUDY_TOKENS = check.bounded(1, MAX_STUDY_TOKENS, _study_tokens_why)
ARM = check.lookup(_arm)


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
    from medibio.pretrain import configs as cfgs

    settings = session.settings(data_root, results_root, limit)

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


study_app = typer.Typer(help="The CPU Table 5 study's pretraining (issue 40), in resumable units.",
                        no_args_is_help=True)


def _study_settings(work_root: Path | None, data_root: Path | None):
    """The study's settings: results and cache under the work root, outside the checkout, so that a next
    session resumes the runs."""
    import dataclasses

    from medibio.pretrain.study import WORK_ROOT

    work = work_root or WORK_ROOT
    return dataclasses.replace(session.settings(data_root), results_root=work / "results", cache_root=work / "cache")


def _existing_work_root(work_root: Path | None) -> Path:
    """The work root a report reads (``--work-root``, else the default); one that does not exist, or is a file,
    is an error: a mistyped folder must not read as a study whose every run is at 0 steps."""
    from medibio.core.errors import MedibioError, NotAFileError
    from medibio.pretrain.study import WORK_ROOT

    work = (work_root or WORK_ROOT).expanduser()
    if work.exists() and not work.is_dir():
        raise NotAFileError(work, "a file", "a folder (the study's work root, --work-root)")
    if not work.exists():
        raise MedibioError(f"{work}: no such folder, so no study has run there; give the work root that `medibio "
                           f"study unit` wrote to (--work-root; default {WORK_ROOT})")
    return work


WORK_HELP = "Folder of the study's results/ and cache/ (default ~/.cache/medibio-study)."


@study_app.command("unit")
def study_unit(
    arm: str = typer.Option(..., "--arm", help="0 (random init), 2 (MiniLM continued), 3 (scratch, abstracts), "
                            "4 (scratch, full text), cs (MiniLM continued on CS text), 1 (cs, then abstracts).",
                            callback=ARM),
    seed: int = typer.Option(..., "--seed", help="Pretraining seed.", callback=check.seed()),
    tokens: int = typer.Option(10_000_000, "--tokens", help="Tokens the arm's run sees in all (the pilot: "
                               "5000000).", callback=STUDY_TOKENS),
    unit_steps: int = typer.Option(25, "--unit-steps", help="At most this many more steps, a multiple of the "
                                   "checkpoint interval (25 steps of 8,192 tokens: 5-35 minutes on one thread "
                                   "here, quiet to loaded).",
                                   callback=check.multiple_of(_checkpoint_interval, "the study's checkpoint "
                                                              "interval: a unit ends on a checkpoint, where the "
                                                              "next one resumes")),
    work_root: Path = typer.Option(None, "--work-root", help=WORK_HELP),
    data_root: Path = typer.Option(None, "--data-root", help="Data root override."),
) -> None:
    """Train one unit of an arm's pretraining run: it stops at a checkpoint, and the same command resumes it."""
    from medibio.pretrain.study import get_arm, run_unit

    settings = _study_settings(work_root, data_root)
    done = run_unit(get_arm(arm), seed, tokens, settings, unit_steps, progress=settings.progress)
    if isinstance(done, int):
        typer.echo(f"arm #{arm} seed {seed}: stopped at step {done}; run the command again to go on")
    else:
        typer.echo(f"arm #{arm} seed {seed}: finished, {done.details['steps_done']} steps -> "
                   f"{done.path(settings.results_root)}")


@study_app.command("status")
def study_status(
    tokens: int = typer.Option(10_000_000, "--tokens", help="Tokens per run (the pilot: 5000000).",
                               callback=STUDY_TOKENS),
    work_root: Path = typer.Option(None, "--work-root", help=WORK_HELP),
    data_root: Path = typer.Option(None, "--data-root", help="Data root override."),
) -> None:
    """Steps done of every arm and seed (checkpoints and records under the work root) and their step time, the
    time left of the runs under way at their pace, and the fine-tuning runs and frozen probes recorded."""
    from medibio.book.study import status_lines

    for line in status_lines(_study_settings(_existing_work_root(work_root), data_root), tokens):
        typer.echo(line)


@study_app.command("finetune")
def study_finetune(
    arm: str = typer.Option(..., "--arm", help="0, 1, 2, 3 or 4 (see `medibio study unit`).", callback=ARM),
    pretrain_seeds: str = typer.Option("1", "--pretrain-seeds", help="Pretraining seeds, e.g. 1,2.",
                                       callback=check.seeds()),
    tokens: int = typer.Option(10_000_000, "--tokens", help="The pretraining runs' tokens (the pilot: 5000000).",
                               callback=STUDY_TOKENS),
    tasks: str = typer.Option(",".join(registry.LARGE_SETS), "--task", help="BLURB datasets (default: the seven large "
                              "sets).", show_default=False, callback=check.lookup(_datasets)),
    seeds: str = typer.Option(None, "--seeds", help="Fine-tuning seeds (default: the cpu-study profile's, 1-3).",
                              callback=check.seeds()),
    probes: bool = typer.Option(True, "--probes/--no-probes", help="Also the frozen-encoder probes of each model."),
    work_root: Path = typer.Option(None, "--work-root", help=WORK_HELP),
    data_root: Path = typer.Option(None, "--data-root", help="Data root override."),
) -> None:
    """Fine-tune an arm's finished pretrained models (variant study-<arm>, or study-<arm>-5M for the pilot's)."""
    from medibio.book.study import finetune_arms
    from medibio.core.profiles import parse_seeds

    done = finetune_arms(_study_settings(work_root, data_root), [arm], tasks.split(","), tokens,
                         parse_seeds(pretrain_seeds), parse_seeds(seeds) if seeds else None, probes=probes)
    for run in done.get(arm.lstrip("#"), []):
        typer.echo(f"{run.run_id}: {run.status}, test {run.score_test}")


@study_app.command("queue")
def study_queue(
    name: str = typer.Argument(..., help="a or b: the two queues of the study, one per core, run side by side."),
    tokens: int = typer.Option(10_000_000, "--tokens", help="Tokens per pretraining run.", callback=STUDY_TOKENS),
    work_root: Path = typer.Option(None, "--work-root", help=WORK_HELP),
    data_root: Path = typer.Option(None, "--data-root", help="Data root override."),
) -> None:
    """Run one queue of the study to its end (medibio.pretrain.study.QUEUES): every step in a child process with
    one thread, pretraining in units of 25 steps; run it again after an interruption and it goes on."""
    import subprocess
    import sys

    from medibio.core import launch
    from medibio.pretrain.study import QUEUES

    if name not in QUEUES:
        raise typer.BadParameter(f"unknown queue {name!r}; known: {', '.join(QUEUES)}")
    if launch.yield_to_interactive_work():
        typer.echo(f"queue {name}: its session yields the CPU to interactive work (autogroup nice 10)")
    common = ["--tokens", str(tokens), *(["--work-root", str(work_root)] if work_root else []),
              *(["--data-root", str(data_root)] if data_root else [])]
    one_thread = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    for step, arm, seed in QUEUES[name]:
        typer.echo(f"queue {name}: {step} #{arm} seed {seed}")
        if step == "pretrain":
            cmd = [sys.executable, "-m", "medibio", "study", "unit", "--arm", arm, "--seed", str(seed), *common]
            while "finished" not in (out := launch.run(cmd, extra=one_thread, check=True, stdout=subprocess.PIPE,
                                                       text=True).stdout):
                typer.echo(out.strip())
        else:
            launch.run([sys.executable, "-m", "medibio", "study", "finetune", "--arm", arm, "--pretrain-seeds",
                        str(seed), *common], extra=one_thread, check=True)


@study_app.command("pilot")
def study_pilot(
    work_root: Path = typer.Option(None, "--work-root", help=WORK_HELP),
    data_root: Path = typer.Option(None, "--data-root", help="Data root override."),
    as_json: bool = typer.Option(False, "--json", help="Print the scores and the gate as JSON."),
) -> None:
    """Fine-tune the pilot's finished arms (#0, #3, #4; 5M tokens, pretraining seed 1) on BC5-chem,
    NCBI-disease and ChemProt, and print the go/no-go: #3 must beat #0 by 3 F1 points on their mean."""
    from medibio.book.study import pilot

    result = pilot(_study_settings(work_root, data_root))
    session.echo_result(result, as_json, lambda: [
        f"#3 - #0: {result['mean_gain']:+.2f} F1 points on the mean "
        f"({', '.join(f'{t} {d:+.2f}' for t, d in result['scratch_minus_random'].items())}); "
        f"{'go' if result['go'] else 'no go'} (margin {result['margin']:g})",
        "#4 - #3: " + ", ".join(f"{t} {d:+.2f}" for t, d in result["fulltext_minus_abstracts"].items())])


def register(app: typer.Typer) -> None:
    """Add this area's commands to the main medibio app."""
    app.command("pretrain")(pretrain)
    app.add_typer(vocab_app, name="vocab")
    app.add_typer(study_app, name="study")
