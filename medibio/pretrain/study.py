"""The CPU Table 5 study's pretraining: its arms, their shared vocabulary, and resumable units.

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

The study's design (its arms, budgets, queues and the pilot's gate) is :mod:`medibio.pretrain.study_design`,
which loads no torch so that the command line reads it at once; its names are this module's too.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from medibio.core.atomic import publish_folder
from medibio.core.errors import MedibioError
from medibio.core.settings import Settings
from medibio.pretrain.configs import PretrainConfig, get_config
from medibio.pretrain.plan import effective_config, plan_pretraining
from medibio.pretrain.study_design import ARMS as ARMS
from medibio.pretrain.study_design import CONFIG as CONFIG
from medibio.pretrain.study_design import CS_STAGE as CS_STAGE
from medibio.pretrain.study_design import GO_MARGIN as GO_MARGIN
from medibio.pretrain.study_design import PILOT_TOKENS as PILOT_TOKENS
from medibio.pretrain.study_design import PROFILE as PROFILE
from medibio.pretrain.study_design import QUEUES as QUEUES
from medibio.pretrain.study_design import SEEDS as SEEDS
from medibio.pretrain.study_design import TOKENS as TOKENS
from medibio.pretrain.study_design import Arm as Arm
from medibio.pretrain.study_design import get_arm as get_arm
from medibio.pretrain.study_design import pilot_gate as pilot_gate
from medibio.pretrain.trainer import (
    Stopped,
    checkpoint_state,
    has_tokenizer,
    latest_checkpoint,
    model_reference,
    run_pretraining,
)
from medibio.pretrain.vocab import train_corpus_vocabulary
from medibio.runs import records as rec


def work_settings(settings: Settings) -> Settings:
    """The settings the study's runs use: results and cache under ``settings.study_root``, outside the
    checkout, so that a next session resumes them."""
    return settings.replace(results_root=settings.study_root / "results", cache_root=settings.study_root / "cache")


def steps_for(tokens: int, config: PretrainConfig) -> int:
    """Optimizer steps that see at least ``tokens`` tokens (whole steps of the config's batch)."""
    return math.ceil(tokens / (config.effective_batch * config.seq_length))


def arm_config(arm: Arm, seed: int, tokens: int, config: PretrainConfig | str = CONFIG) -> PretrainConfig:
    """The pretraining configuration of one arm and seed: ``tokens`` worth of steps (none for #0, half for the
    ``cs`` stage)."""
    base = get_config(config) if isinstance(config, str) else config
    steps = steps_for(tokens // 2 if arm.id == CS_STAGE else tokens, base) if arm.pretrained else 0
    return base.with_overrides(seed=seed, max_steps=steps)


def tokenizer_folder(settings: Settings, config: PretrainConfig) -> Path:
    """Where :func:`study_tokenizer` keeps the shared vocabulary."""
    return Path(settings.cache_root) / "study" / f"tokenizer-{config.name}"


def study_tokenizer(settings: Settings, config: PretrainConfig | str = CONFIG) -> Path:
    """The vocabulary #0, #3 and #4 share, trained once on the abstracts in the SumPubMed form, in the cache
    root (``study/tokenizer-<config>``). Both queues of ``make study`` ask for it first: the one that comes
    second waits for the first to publish it (:func:`medibio.core.atomic.publish_folder`)."""
    cfg = get_config(config) if isinstance(config, str) else config

    def train(folder: Path) -> None:
        train_corpus_vocabulary(ARMS["3"].corpus, folder, cfg.model.vocab_size, variant=ARMS["3"].variant,
                                max_mb=cfg.vocab_sample_mb, root=settings.data_root, text_form=cfg.text_form)

    return publish_folder(tokenizer_folder(settings, cfg), train, complete=has_tokenizer)


def _init(arm: Arm, seed: int, tokens: int, settings: Settings, config: PretrainConfig | str) -> str | None:
    """What an arm starts from: a model name, the finished stage run of the same seed (a clear error before
    it finished), or None (scratch)."""
    if arm.init != CS_STAGE:
        return arm.init
    stage = finished(ARMS[CS_STAGE], seed, tokens, settings, config)
    if stage is None:
        raise MedibioError(f"arm #{arm.id} (seed {seed}) starts from the stage `{CS_STAGE}`, which has not finished: "
                           f"`medibio study unit --arm {CS_STAGE} --seed {seed} --tokens {tokens}` goes on with it")
    return model_reference(stage)


def _call(arm: Arm, seed: int, tokens: int, settings: Settings, config: PretrainConfig | str) -> dict[str, Any]:
    """The arguments of :func:`medibio.pretrain.trainer.run_pretraining` for one arm and seed."""
    return {"config": arm_config(arm, seed, tokens, config), "corpus": arm.corpus, "variant": arm.variant,
            "init": _init(arm, seed, tokens, settings, config),
            "tokenizer_dir": None if arm.init else study_tokenizer(settings, config),
            "tag": arm.name, "notes": [arm.description], "settings": settings}


def _plan(arm: Arm, seed: int, tokens: int, settings: Settings, config: PretrainConfig | str):
    call = _call(arm, seed, tokens, settings, config)
    cfg = effective_config(call["config"], limit=settings.limit)
    return plan_pretraining(cfg, call["corpus"], call["variant"], call["init"], call["tokenizer_dir"], call["tag"],
                            settings)


def _waits(arm: Arm, seed: int, tokens: int, settings: Settings, config: PretrainConfig | str) -> bool:
    """Whether an arm cannot be planned yet: the shared vocabulary is not built, or its stage not finished."""
    cfg = get_config(config) if isinstance(config, str) else config
    if arm.init == CS_STAGE:
        return finished(ARMS[CS_STAGE], seed, tokens, settings, config) is None
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
