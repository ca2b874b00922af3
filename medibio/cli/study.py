"""CLI commands of the CPU Table 5 study (:mod:`medibio.experiments.study`; registered by medibio.cli.main).

* ``medibio study unit --arm 3 --seed 1 [--tokens 5000000] [--unit-steps 25]``: one resumable unit of an
  arm's pretraining; it exits 0 when the run finished and :data:`UNIT_STOPPED` when it stopped at a checkpoint.
* ``medibio study status`` lists where every arm stands; ``medibio study finetune --arm 3`` fine-tunes an arm's
  models; ``medibio study queue a|b`` runs one of the study's two queues; ``medibio study pilot`` fine-tunes the
  pilot's arms and prints its go/no-go.

Every command works under the settings' study root (``--work-root``, else ``$MEDIBIO_STUDY_ROOT``, else
``~/.cache/medibio-study``): its results/ and cache/ live there, outside the checkout.
"""

from __future__ import annotations

from pathlib import Path

import typer

from medibio.cli import session
from medibio.cli import values as check
from medibio.core import profiles
from medibio.core.settings import DEFAULT_STUDY_ROOT, STUDY_ENV, Settings
from medibio.experiments import table5
from medibio.tasks import registry

# The exit status of `medibio study unit` when its run stopped at the end of a unit, at a checkpoint: run the
# same command again to go on (0: the run finished). `medibio study queue` reads it; 1 and 2 are medibio's
# errors (medibio.cli.main).
UNIT_STOPPED = 3

# The upper bound of --tokens: far above any run meant here, low enough that a mistyped number (a 23-digit
# --tokens planned about 1e19 steps) is refused before a run is planned, with the reason.
MAX_STUDY_TOKENS = 1_000_000_000


def _study_tokens_why() -> str:
    """Why ``--tokens`` stops at :data:`MAX_STUDY_TOKENS`, in the study configuration's steps."""
    from medibio.pretrain.configs import get_config

    config = get_config(table5.CONFIG)
    return (f"100 times the study's {table5.TOKENS:,} tokens a run: {table5.steps_for(MAX_STUDY_TOKENS, config):,} steps "
            f"of {config.effective_batch * config.seq_length:,} tokens, weeks of one CPU core at this scale; a larger "
            "study is another configuration (medibio pretrain --config)")


def _checkpoint_interval() -> int:
    from medibio.pretrain.configs import get_config

    return get_config(table5.CONFIG).save_every


def _datasets(selection: str) -> object:
    return registry.resolve(selection)


STUDY_TOKENS = check.bounded(1, MAX_STUDY_TOKENS, _study_tokens_why)
ARM = check.lookup(table5.STUDY.get_arm)
WORK_HELP = f"Folder of the study's results/ and cache/ (default ${STUDY_ENV}, else {DEFAULT_STUDY_ROOT})."
PILOT = f"(the pilot: {table5.PILOT_TOKENS})"

study_app = typer.Typer(help="The CPU Table 5 study's pretraining, in resumable units.",
                        no_args_is_help=True)


@study_app.callback()
def _declared_precision() -> None:
    """Every study command, and the children a queue starts, computes in the study's declared precision: fp32
    (native bf16 off, unless ``$MEDIBIO_CPU_BF16`` says otherwise)."""
    from medibio.core import launch
    from medibio.core.settings import CPU_BF16_ENV

    if table5.PRECISION == "fp32":
        launch.declare_default(CPU_BF16_ENV, "off")


def _settings(work_root: Path | None, data_root: Path | None) -> Settings:
    """The command's settings, with ``--work-root`` over the environment's study root."""
    return session.settings(data_root).replace(study_root=work_root)


def _study_settings(work_root: Path | None, data_root: Path | None) -> Settings:
    """The study's settings: results and cache under the study root, outside the checkout, so that a next
    session resumes the runs."""
    from medibio.experiments.study import work_settings

    return work_settings(_settings(work_root, data_root))


def _existing_work_root(settings: Settings) -> Settings:
    """``settings`` when its study root, which a report reads, is a folder; one that does not exist, or is a file,
    is an error: a mistyped folder must not read as a study whose every run is at 0 steps."""
    from medibio.core.errors import MedibioError, NotAFileError

    work = settings.study_root
    if work.exists() and not work.is_dir():
        raise NotAFileError(work, "a file", "a folder (the study's work root, --work-root)")
    if not work.exists():
        raise MedibioError(f"{work}: no such folder, so no study has run there; give the work root that `medibio "
                           f"study unit` wrote to (--work-root or ${STUDY_ENV}; default "
                           f"{DEFAULT_STUDY_ROOT.expanduser()})")
    return settings


@study_app.command("unit")
def study_unit(
    arm: str = typer.Option(..., "--arm", help="0 (random init), 2 (MiniLM continued), 3 (scratch, abstracts), "
                            "4 (scratch, full text), cs (MiniLM continued on CS text), 1 (cs, then abstracts).",
                            callback=ARM),
    seed: int = typer.Option(..., "--seed", help="Pretraining seed.", callback=check.seed()),
    tokens: int = typer.Option(table5.TOKENS, "--tokens", help=f"Tokens the arm's run sees in all {PILOT}.",
                               callback=STUDY_TOKENS),
    unit_steps: int = typer.Option(25, "--unit-steps", help="At most this many more steps, a multiple of the "
                                   "checkpoint interval (25 steps of 8,192 tokens: 5-35 minutes on one thread "
                                   "here, quiet to loaded).",
                                   callback=check.multiple_of(_checkpoint_interval, "the study's checkpoint "
                                                              "interval: a unit ends on a checkpoint, where the "
                                                              "next one resumes")),
    work_root: Path = typer.Option(None, "--work-root", help=WORK_HELP),
    data_root: Path = typer.Option(None, "--data-root", help="Data root override."),
) -> None:
    """Train one unit of an arm's pretraining run: it stops at a checkpoint, and the same command resumes it.
    Exits 0 when the run finished, 3 when it stopped at a checkpoint (run it again)."""
    from medibio.experiments.study import run_unit

    settings = _study_settings(work_root, data_root)
    done = run_unit(table5.STUDY.get_arm(arm), seed, tokens, settings, unit_steps, progress=settings.progress)
    if isinstance(done, int):
        typer.echo(f"arm #{arm} seed {seed}: stopped at step {done}; run the command again to go on")
        raise typer.Exit(UNIT_STOPPED)
    typer.echo(f"arm #{arm} seed {seed}: finished, {done.details['steps_done']} steps -> "
               f"{done.path(settings.results_root)}")


@study_app.command("status")
def study_status(
    tokens: int = typer.Option(table5.TOKENS, "--tokens", help=f"Tokens per run {PILOT}.", callback=STUDY_TOKENS),
    work_root: Path = typer.Option(None, "--work-root", help=WORK_HELP),
    data_root: Path = typer.Option(None, "--data-root", help="Data root override."),
) -> None:
    """Steps done of every arm and seed (checkpoints and records under the work root) and their step time, the
    time left of the runs under way at their pace, and the fine-tuning runs and frozen probes recorded."""
    from medibio.experiments.study import status_lines, work_settings

    for line in status_lines(work_settings(_existing_work_root(_settings(work_root, data_root))), tokens):
        typer.echo(line)


_SEEDS = profiles.get(table5.PROFILE).seeds


@study_app.command("finetune")
def study_finetune(
    arm: str = typer.Option(..., "--arm", help="0, 1, 2, 3 or 4 (see `medibio study unit`).", callback=ARM),
    pretrain_seeds: str = typer.Option("1", "--pretrain-seeds", help="Pretraining seeds, e.g. 1,2.",
                                       callback=check.seeds()),
    tokens: int = typer.Option(table5.TOKENS, "--tokens", help=f"The pretraining runs' tokens {PILOT}.",
                               callback=STUDY_TOKENS),
    tasks: str = typer.Option(",".join(registry.LARGE_SETS), "--task", help="BLURB datasets (default: the seven large "
                              "sets).", show_default=False, callback=check.lookup(_datasets)),
    seeds: str = typer.Option(None, "--seeds", help=f"Fine-tuning seeds (default: the {table5.PROFILE} profile's, "
                              f"{_SEEDS[0]}-{_SEEDS[-1]}).", callback=check.seeds()),
    probes: bool = typer.Option(True, "--probes/--no-probes", help="Also the frozen-encoder probes of each model."),
    work_root: Path = typer.Option(None, "--work-root", help=WORK_HELP),
    data_root: Path = typer.Option(None, "--data-root", help="Data root override."),
) -> None:
    """Fine-tune an arm's finished pretrained models (variant study-<arm>, or study-<arm>-5M for the pilot's)."""
    from medibio.core.profiles import parse_seeds
    from medibio.experiments.study import finetune_arms

    done = finetune_arms(_study_settings(work_root, data_root), [arm], tasks.split(","), tokens,
                         parse_seeds(pretrain_seeds), parse_seeds(seeds) if seeds else None, probes=probes)
    for run in done.get(arm.lstrip("#"), []):
        typer.echo(f"{run.run_id}: {run.status}, test {run.score_test}")


@study_app.command("queue")
def study_queue(
    name: str = typer.Argument(..., help="a or b: the two queues of the study, one per core, run side by side."),
    tokens: int = typer.Option(table5.TOKENS, "--tokens", help="Tokens per pretraining run.", callback=STUDY_TOKENS),
    work_root: Path = typer.Option(None, "--work-root", help=WORK_HELP),
    data_root: Path = typer.Option(None, "--data-root", help="Data root override."),
) -> None:
    """Run one queue of the study to its end (the study's queues, medibio.experiments.table5.STUDY): every request in
    a child process with one thread, pretraining in units of 25 steps; run it again after an interruption and it
    goes on."""
    import sys

    from medibio.core import launch
    from medibio.core.errors import MedibioError

    queues = table5.STUDY.queues
    if name not in queues:
        raise typer.BadParameter(f"unknown queue {name!r}; known: {', '.join(queues)}")
    if launch.yield_to_interactive_work():
        typer.echo(f"queue {name}: its session yields the CPU to interactive work (autogroup nice 10)")
    # the study root decided here, so that every child works in the same one whatever its environment
    common = ["--tokens", str(tokens), "--work-root", str(_settings(work_root, data_root).study_root),
              *(["--data-root", str(data_root)] if data_root else [])]
    one_thread = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}

    def child(cmd: list[str]) -> int:
        return launch.run([sys.executable, "-m", "medibio", *cmd], extra=one_thread).returncode

    for step, arm, seed in queues[name]:
        typer.echo(f"queue {name}: {step} #{arm} seed {seed}")
        if step == "pretrain":
            cmd = ["study", "unit", "--arm", arm, "--seed", str(seed), *common]
        else:
            cmd = ["study", "finetune", "--arm", arm, "--pretrain-seeds", str(seed), *common]
        code = child(cmd)
        while step == "pretrain" and code == UNIT_STOPPED:  # the unit ended at a checkpoint: the next resumes there
            code = child(cmd)
        if code != 0:
            raise MedibioError(f"queue {name}: step {step} #{arm} seed {seed} failed: `medibio {' '.join(cmd)}` "
                               f"exited with status {code} (its output is above); run the queue again to go on "
                               "from there")


@study_app.command("pilot")
def study_pilot(
    work_root: Path = typer.Option(None, "--work-root", help=WORK_HELP),
    data_root: Path = typer.Option(None, "--data-root", help="Data root override."),
    as_json: bool = typer.Option(False, "--json", help="Print the scores and the gate as JSON."),
) -> None:
    """Fine-tune the pilot's finished arms (#0, #3, #4; 5M tokens, pretraining seed 1) on BC5-chem,
    NCBI-disease and ChemProt, and print the go/no-go: #3 must beat #0 by 3 F1 points on their mean."""
    from medibio.experiments.study import pilot

    result = pilot(_study_settings(work_root, data_root))
    session.echo_result(result, as_json, lambda: [
        f"#3 - #0: {result['mean_gain']:+.2f} F1 points on the mean "
        f"({', '.join(f'{t} {d:+.2f}' for t, d in result['scratch_minus_random'].items())}); "
        f"{'go' if result['go'] else 'no go'} (margin {result['margin']:g})",
        "#4 - #3: " + ", ".join(f"{t} {d:+.2f}" for t, d in result["fulltext_minus_abstracts"].items())])


def register(app: typer.Typer) -> None:
    """Add this area's commands to the main medibio app."""
    app.add_typer(study_app, name="study")
