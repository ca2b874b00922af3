"""The CPU Table 5 study run: its arms' pretraining in resumable units, their shared vocabulary, their
fine-tuning, the pilot and where every arm stands.

Arms (paper Table 5 numbering; the paper's models and S2ORC replaced by what runs offline here):

* ``#0`` random initialisation: the study's shape around its vocabulary, no pretraining (the floor). It is a
  pretraining run of zero steps, so that it has a record and a model artifact like the others.
* ``#2`` MiniLM (all-MiniLM-L6-v2, the general-domain stand-in for DeBERTa-v3) continued with MLM on
  SumPubMed abstracts. MiniLM ships an encoder and a pooler but no MLM head, so "continued MLM" here means:
  MiniLM's embeddings and six layers, a new head (a dense layer and layer norm initialised at random from the
  pretraining seed, the decoder tied to MiniLM's word embeddings, a zero bias), and ``<dig>`` as one new
  embedding row. The head and the encoder learn together from the first step: learning the head alone first
  (the encoder frozen for 5% of the steps, the trainer's ``head_warmup_steps``) did not help
  (``benchmarks.head_warmup``: after 200 steps its held-out MLM loss was 5.045 against 5.006 without; the
  learning rate's own warm-up keeps the random head's first gradients small). MiniLM keeps its own shape (6 x 384) and WordPiece vocabulary; the scratch arms have the study's.
* ``#3`` from scratch on SumPubMed abstracts; ``#4`` from scratch on SumPubMed full texts.
* ``#1`` the science-model route: MiniLM continued first on computer-science text (the ``cs`` corpus:
  SciTLDR, ScisummNet, unarXive; the stage ``cs``, half the arm's tokens, the stand-in for SciDeBERTa v2),
  then on SumPubMed abstracts like #2. #1 against #2 is then "a science stage first, or not", on equal
  biomedical tokens; #1 has seen more tokens in all, as the paper's #1 had.

Every arm sees the same number of tokens (``tokens`` rounds up to whole steps of the study config's
8,192 tokens) and each is pretrained with at least two seeds. All tokenizers are in the SumPubMed form
(:mod:`medibio.pretrain.vocab`): #0, #3 and #4 share one vocabulary trained on the abstracts, so #3 and #4
differ in their corpus only.

A run trains in *units* (:func:`run_unit`): it stops after at most ``unit_steps`` more steps, at a
checkpoint, as a kill would, and the next unit resumes from there (``medibio.pretrain.trainer``). With the
results and cache roots under the settings' ``study_root``, outside the checkout (:func:`work_settings`), a
next session resumes where the last stopped.

The study's design (its arms, budgets, queues and the pilot's gate) is :data:`medibio.experiments.table5.STUDY`,
which loads no torch so that the command line reads it at once. The pilot pretrains #3 and #4 on
``PILOT_TOKENS`` and fine-tunes them beside #0 on ``PILOT_TASKS`` under the study's profile; the study goes on
only if #3 beats #0 by ``GO_MARGIN`` F1 points on the mean over those sets (:func:`pilot`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from medibio.baselines import frozen
from medibio.core import profiles
from medibio.core.atomic import publish_folder
from medibio.core.errors import MedibioError
from medibio.core.settings import Settings
from medibio.experiments.table5 import (
    CONFIG,
    PILOT_ARMS,
    PILOT_TASKS,
    PILOT_TOKENS,
    PROFILE,
    SEEDS,
    STUDY,
    TOKENS,
    Arm,
    arm_config,
    pilot_gate,
    study_variant,
)
from medibio.finetune.runner import run_finetune
from medibio.pretrain.configs import PretrainConfig, get_config
from medibio.pretrain.lineage import model_reference
from medibio.pretrain.plan import effective_config, plan_pretraining
from medibio.pretrain.trainer import (
    Stopped,
    checkpoint_state,
    has_tokenizer,
    latest_checkpoint,
    run_pretraining,
)
from medibio.pretrain.vocab import train_corpus_vocabulary
from medibio.runs import records as rec
from medibio.tasks import registry


def work_settings(settings: Settings) -> Settings:
    """The settings the study's runs use: results and cache under ``settings.study_root``, outside the
    checkout, so that a next session resumes them."""
    return settings.replace(results_root=settings.study_root / "results", cache_root=settings.study_root / "cache")


def tokenizer_folder(settings: Settings, config: PretrainConfig) -> Path:
    """Where :func:`study_tokenizer` keeps the shared vocabulary."""
    return Path(settings.cache_root) / "study" / f"tokenizer-{config.name}"


def study_tokenizer(settings: Settings, config: PretrainConfig | str = CONFIG) -> Path:
    """The vocabulary #0, #3 and #4 share, trained once on the abstracts in the SumPubMed form, in the cache
    root (``study/tokenizer-<config>``). Both queues of ``make study`` ask for it first: the one that comes
    second waits for the first to publish it (:func:`medibio.core.atomic.publish_folder`)."""
    cfg = get_config(config) if isinstance(config, str) else config

    def train(folder: Path) -> None:
        abstracts = STUDY.arms["3"]
        train_corpus_vocabulary(abstracts.corpus, folder, cfg.model.vocab_size, variant=abstracts.text,
                                max_mb=cfg.vocab_sample_mb, root=settings.data_root, text_form=cfg.text_form)

    return publish_folder(tokenizer_folder(settings, cfg), train, complete=has_tokenizer)


def _init(arm: Arm, seed: int, tokens: int, settings: Settings, config: PretrainConfig | str) -> str | None:
    """What an arm starts from: a model name, the finished stage run of the same seed (a clear error before
    it finished), or None (scratch)."""
    stage = STUDY.stage_of(arm)
    if stage is None:
        return arm.init
    done = finished(stage, seed, tokens, settings, config)
    if done is None:
        raise MedibioError(f"arm #{arm.id} (seed {seed}) starts from the stage `{stage.id}`, which has not finished: "
                           f"`medibio study unit --arm {stage.id} --seed {seed} --tokens {tokens}` goes on with it")
    return model_reference(done)


def _call(arm: Arm, seed: int, tokens: int, settings: Settings, config: PretrainConfig | str) -> dict[str, Any]:
    """The arguments of :func:`medibio.pretrain.trainer.run_pretraining` for one arm and seed."""
    return {"config": arm_config(arm, seed, tokens, config), "corpus": arm.corpus, "variant": arm.text,
            "init": _init(arm, seed, tokens, settings, config),
            "tokenizer_dir": None if arm.init else study_tokenizer(settings, config),
            "tag": STUDY.tag(arm), "notes": [arm.description], "settings": settings}


def _plan(arm: Arm, seed: int, tokens: int, settings: Settings, config: PretrainConfig | str):
    call = _call(arm, seed, tokens, settings, config)
    cfg = effective_config(call["config"], limit=settings.limit)
    return plan_pretraining(cfg, call["corpus"], call["variant"], call["init"], call["tokenizer_dir"], call["tag"],
                            settings)


def _waits(arm: Arm, seed: int, tokens: int, settings: Settings, config: PretrainConfig | str) -> bool:
    """Whether an arm cannot be planned yet: the shared vocabulary is not built, or its stage not finished."""
    cfg = get_config(config) if isinstance(config, str) else config
    stage = STUDY.stage_of(arm)
    if stage is not None:
        return finished(stage, seed, tokens, settings, config) is None
    return arm.init is None and not has_tokenizer(tokenizer_folder(settings, cfg))


def finished(arm: Arm, seed: int, tokens: int, settings: Settings,
             config: PretrainConfig | str = CONFIG) -> rec.RunRecord | None:
    """The record of an arm's finished run, or None (nothing trained or built to find out)."""
    if _waits(arm, seed, tokens, settings, config):
        return None
    record = _plan(arm, seed, tokens, settings, config).key.path(settings.results_root)
    return rec.read_record(record) if record.exists() else None


def progress(arm: Arm, seed: int, tokens: int, settings: Settings,
             config: PretrainConfig | str = CONFIG) -> tuple[int, float]:
    """(steps, seconds of step time) an arm's run has behind it: its record's, else its newest checkpoint's,
    else (0, 0.0); also before the shared vocabulary exists, which this does not build, or before the stage it
    starts from has finished. The time is the trainer's own sum of step times, not counting loading."""
    if _waits(arm, seed, tokens, settings, config):
        return 0, 0.0
    plan = _plan(arm, seed, tokens, settings, config)
    record = plan.key.path(settings.results_root)
    if record.exists():
        done = rec.read_record(record)
        return int(done.details["steps_done"]), float(done.wall_time_s or 0.0)
    ckpt = latest_checkpoint(plan.key.work_path(settings.results_root))
    if ckpt is None:
        return 0, 0.0
    state = checkpoint_state(ckpt)
    return int(state["step"]), float(state["elapsed_s"])


def steps_done(arm: Arm, seed: int, tokens: int, settings: Settings, config: PretrainConfig | str = CONFIG) -> int:
    """Steps an arm's run has behind it (:func:`progress`)."""
    return progress(arm, seed, tokens, settings, config)[0]


def run_unit(arm: Arm, seed: int, tokens: int, settings: Settings, unit_steps: int = 25,
             config: PretrainConfig | str = CONFIG, progress: bool = False) -> rec.RunRecord | int:
    """Train one unit of an arm's run: at most ``unit_steps`` more steps (a multiple of the config's
    checkpoint interval, so that the unit ends on a checkpoint). Returns the record when the run finished,
    else the step it stopped at."""
    call = _call(arm, seed, tokens, settings, config)
    every = call["config"].save_every
    if unit_steps <= 0 or unit_steps % every:
        raise ValueError(f"a unit of {unit_steps} steps does not end on a checkpoint (every {every} steps)")
    stop = steps_done(arm, seed, tokens, settings, config) + unit_steps
    try:
        return run_pretraining(**call, stop_after=stop, progress=progress)
    except Stopped as stopped:
        return stopped.steps_done


def finetune_arms(settings: Settings, arms: Sequence[str] = PILOT_ARMS, tasks: Sequence[str] = PILOT_TASKS,
                  tokens: int = PILOT_TOKENS, pretrain_seeds: Sequence[int] = (1,),
                  seeds: Sequence[int] | None = None, profile: str = PROFILE,
                  config: PretrainConfig | str = CONFIG, probes: bool = False) -> dict[str, list[rec.RunRecord]]:
    """Fine-tune every arm's finished pretrained models on ``tasks`` with ``seeds`` (None: the profile's) and
    return the records by arm; with ``probes``, also the frozen-encoder probes of each model on the same tasks
    (no fine-tuning noise). The runs start from ``pretrain-run:`` names, so they are planned from the
    pretraining runs' identities and found without their weights. A pretraining run not finished stops it,
    naming the command that goes on with it."""
    records: dict[str, list[rec.RunRecord]] = {}
    for arm_id in arms:
        arm = STUDY.get_arm(arm_id)
        for pretrain_seed in pretrain_seeds:
            pretrained = finished(arm, pretrain_seed, tokens, settings, config)
            if pretrained is None:
                done = steps_done(arm, pretrain_seed, tokens, settings, config)
                total = arm_config(arm, pretrain_seed, tokens, config).max_steps
                raise MedibioError(f"arm #{arm.id} (pretraining seed {pretrain_seed}) has {done} of {total} steps; "
                                   f"`medibio study unit --arm {arm.id} --seed {pretrain_seed} --tokens {tokens}` "
                                   "goes on with it")
            model = model_reference(pretrained)
            records.setdefault(arm.id, []).extend(
                run_finetune(list(tasks), model=model, seeds=seeds, profile=profile,
                             variant=study_variant(arm.id, tokens), settings=settings))
            if probes:
                frozen.baselines(profile, list(tasks), model=model, settings=settings)
    return records


class FinetuneProgress(NamedTuple):
    """One pretrained model's fine-tuning in the study: runs recorded of those planned, frozen probes recorded,
    and the seconds they took (their records' wall times)."""

    runs: int
    planned: int
    probes: int
    seconds: float


def tuned_records(settings: Settings, profile: str = PROFILE) -> dict[str, list[rec.RunRecord]]:
    """The results root's fine-tuning runs and frozen probes of ``profile``, by kind: read once and passed to
    :func:`finetune_progress` for every arm and seed."""
    return {kind: rec.load_records(settings.results_root, profile=profile, kind=kind, legacy=False)
            for kind in ("finetune", "frozen")}


def finetune_progress(settings: Settings, arm: str, pretrain_seed: int, tokens: int = TOKENS,
                      profile: str = PROFILE, config: PretrainConfig | str = CONFIG,
                      tuned: Mapping[str, Sequence[rec.RunRecord]] | None = None) -> FinetuneProgress:
    """How far one arm's pretrained model is fine-tuned in the results root (nothing before its pretraining
    finished): the queue's step ``finetune`` plans the seven large sets with the profile's seeds, and a probe
    per set; the pilot (its budget) planned its three sets. ``tuned`` is :func:`tuned_records`' answer, read
    here when not given."""
    tasks = PILOT_TASKS if tokens == PILOT_TOKENS else registry.LARGE_SETS
    planned = len(tasks) * len(profiles.get(profile).seeds)
    pretrained = finished(STUDY.get_arm(arm), pretrain_seed, tokens, settings, config)
    if pretrained is None:
        return FinetuneProgress(0, planned, 0, 0.0)
    name = model_reference(pretrained)
    tuned = tuned_records(settings, profile) if tuned is None else tuned
    runs = [r for r in tuned["finetune"]
            if r.variant == study_variant(arm, tokens) and (r.model or {}).get("name") == name]
    probes = [r for r in tuned["frozen"] if (r.model or {}).get("name") == name]
    return FinetuneProgress(len(runs), planned, len(probes), sum(r.wall_time_s or 0.0 for r in [*runs, *probes]))


def status_lines(settings: Settings, tokens: int = TOKENS, profile: str = PROFILE,
                 config: PretrainConfig | str = CONFIG) -> list[str]:
    """Where every arm and pretraining seed of the study stands (``medibio study status``): steps and their
    step time, the time a run under way still needs at its own pace so far, its fine-tuning runs and frozen
    probes and their time; then the study's time in all. Each queue's step runs on one thread, so its seconds
    are one core's."""
    lines, pretrained, tuned, left = [], 0.0, 0.0, []
    records = tuned_records(settings, profile)
    stages = {arm.init for arm in STUDY.arms.values()}
    for arm in STUDY.arms.values():
        for seed in SEEDS:
            total = arm_config(arm, seed, tokens, config).max_steps
            steps, seconds = progress(arm, seed, tokens, settings, config)
            pretrained += seconds
            line = f"#{arm.id} seed {seed}: {steps}/{total} steps, {seconds / 3600:.2f} h"
            if 0 < steps < total:
                more = seconds / steps * (total - steps)
                left.append(more)
                line += f" (about {more / 3600:.1f} h more at its pace)"
            if arm.id not in stages:  # a stage is not fine-tuned
                ft = finetune_progress(settings, arm.id, seed, tokens, profile, config, records)
                tuned += ft.seconds
                line += f"; fine-tuned {ft.runs}/{ft.planned} runs, {ft.probes} frozen probes, {ft.seconds / 3600:.2f} h"
            lines.append(line)
    under_way = (f"; the runs under way need about {sum(left) / 3600:.1f} CPU-hours more of pretraining (the "
                 f"longest {max(left) / 3600:.1f} h)" if left else "")
    lines.append(f"step time at this budget so far: pretraining {pretrained / 3600:.2f} h, fine-tuning {tuned / 3600:.2f} h, "
                 f"{(pretrained + tuned) / 3600:.2f} CPU-hours in all (one thread a run){under_way}; "
                 "docs/pretraining.md estimates the rest")
    return lines


def pilot(settings: Settings, **options: Any) -> dict[str, Any]:
    """Fine-tune the pilot's arms (:func:`finetune_arms`) and judge the gate on their test scores."""
    records = finetune_arms(settings, **options)
    scores: dict[str, dict[str, list[float]]] = {arm: {} for arm in records}
    for arm, runs in records.items():
        for run in runs:
            if not run.ok or run.score_test is None:
                raise MedibioError(f"pilot arm {arm}: {run.run_id} has no test score ({run.status}: "
                                   f"{run.reason or 'no reason recorded'}); the gate needs every run")
            scores[arm].setdefault(run.dataset, []).append(float(run.score_test))
    return {"scores": scores, **pilot_gate(scores)}
