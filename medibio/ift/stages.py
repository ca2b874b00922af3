"""Intermediate fine-tuning (IFT) chains: train on one or more intermediate tasks, then hand the *encoder* on.

A chain ``STS-B,SICK`` fine-tunes the base model on STS-B, carries its encoder into a fresh SICK model,
fine-tunes that, and carries that encoder into the target task, whose head is always freshly initialised
(STILTs-style transfer; a head trained for another label space would only leak the intermediate task).
Each stage is a run of kind ``ift-stage`` through the one run protocol: its identity covers the base model
and every stage up to it (hyperparameters, data files), its encoder is an artifact of its record
(``<record folder>/seed<N>/encoder``), published together with the record, so a chain shared by several
targets is trained once, a killed stage is redone rather than reused half-written, and a stage whose
configuration changed trains into a record of its own. Intermediate tasks are the registry's IFT tasks and
its BLURB datasets (:func:`medibio.training.config.trainable_task`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from medibio.core import profiles
from medibio.core.hashing import files_fingerprint
from medibio.core.profiles import Profile
from medibio.core.settings import Settings
from medibio.ift.variants import chain_label
from medibio.models import heads, zoo
from medibio.runs import protocol
from medibio.runs import records as rec
from medibio.runs.protocol import Outcome, Plan, RunContext
from medibio.tasks import loaders
from medibio.tasks.spec import Problem, TaskSpec
from medibio.training import config, features
from medibio.training.loop import SupervisedTask, fit

KIND = "ift-stage"
# The seed an intermediate stage draws its training and dev subsets with (targets use
# medibio.runs.protocol.SUBSET_SEED); part of every stage's identity through its results.
STAGE_SUBSET_SEED = 0


def parse_chain(intermediate: str | Sequence[str] | None) -> list[str]:
    """``"STS-B,SICK"`` or ``["STS-B", "SICK"]`` -> canonical task names, in training order."""
    if not intermediate:
        return []
    items = intermediate.split(",") if isinstance(intermediate, str) else list(intermediate)
    return [config.trainable_task(i.strip()).name for i in items if i.strip()]


def stage_preset(task: str, profile: Profile, target: config.FinetuneConfig | None = None
                 ) -> config.FinetuneConfig:
    """The fine-tuning config of one stage: the profile's intermediate preset with the intermediate budget
    (``intermediate_epochs``, ``intermediate_max_train_examples``) of the ``target`` run's effective config,
    so that a budget set by ``--config`` or an override trains the stage, not just renames the target."""
    spec = config.trainable_task(task)
    cfg = config.intermediate_preset(spec.name, profile, spec.max_length)
    if target is None:
        return cfg
    changes: dict[str, Any] = {"max_train_examples": profile.cap(target.intermediate_max_train_examples),
                               "intermediate_max_train_examples": target.intermediate_max_train_examples,
                               "intermediate_epochs": target.intermediate_epochs}
    if target.intermediate_epochs:
        changes["epochs"] = target.intermediate_epochs
    if target.pooling == "cosine" and Problem(spec.problem) is Problem.REGRESSION:
        # a bi-encoder target learns best from a stage trained in the same geometry (both sentences encoded
        # apart, cosine); a cross-encoder stage would hand on an encoder tuned for the other use
        changes.update(pooling="cosine", head_lr_scale=target.head_lr_scale)
    return cfg.replace(**changes)


def stage_config(task: str, profile: Profile, data_root: str | Path | None,
                 target: config.FinetuneConfig | None = None) -> dict[str, Any]:
    """What determines one stage's result besides its input encoder: its hyperparameters (see
    :func:`stage_preset`) and data files. A stage trains with exactly these hyperparameters."""
    spec = config.trainable_task(task)
    cfg = stage_preset(spec.name, profile, target)
    config.check_scorable(spec, cfg)
    return {"task": spec.name, "hyperparameters": cfg.to_dict(),
            "data": files_fingerprint(loaders.task_files(spec.name, data_root), root=data_root)}


def stage_hyperparameters(stage: Mapping[str, Any]) -> config.FinetuneConfig:
    """The :class:`FinetuneConfig` a stage configuration (from :func:`stage_config`) names."""
    fields = {k: v for k, v in stage["hyperparameters"].items() if k != "effective_epochs"}
    return config.FinetuneConfig().replace(**fields)


@dataclass(frozen=True)
class Job:
    """What training a planned stage needs: its task, the encoder it starts from, its hyperparameters."""

    spec: TaskSpec
    source: str  # the base model's name (first stage; resolved when it trains) or the previous stage's encoder
    seed: int
    profile: Profile
    chain: tuple[str, ...]  # the chain up to and including this stage
    config: config.FinetuneConfig
    model: str  # the chain's base model (records name it)

    def start(self, settings: Settings) -> str:
        """The folder (or hub id) the stage trains from: the previous stage's encoder, or the chain's base model
        resolved here (a ``pretrain-run:`` model under the results root it was trained under)."""
        return zoo.resolve(self.source, settings.cache_root, settings.results_root)


def plan_stage(model: str, stage_configs: Sequence[Mapping[str, Any]], model_hash: str, seed: int, profile: Profile,
               source: str, target: str, overrides: Mapping[str, Any] | None) -> Plan:
    """The plan of the last stage of ``stage_configs`` (the chain's stages up to it); ``target`` and
    ``overrides`` are the fine-tuning request that asked for the chain (staleness checks plan it again)."""
    chain = tuple(s["task"] for s in stage_configs)
    configuration = {"model": model_hash, "stages": [dict(s) for s in stage_configs]}
    request = {"model": model, "profile": profile.name, "limit": profile.limit, "seed": int(seed),
               "chain": list(chain), "target": target, "overrides": dict(overrides or {})}
    job = Job(config.trainable_task(chain[-1]), str(source), int(seed), profile, chain,
              stage_hyperparameters(stage_configs[-1]), model)
    return protocol.plan(KIND, profile.name, zoo.model_tag(model), chain_label(chain), chain[-1], seed,
                         configuration, request, f"IFT stage {chain_label(chain)} seed {seed}", job)


def prepare_encoder(model: str, stage_configs: Sequence[Mapping[str, Any]], model_hash: str, seed: int,
                    profile: Profile, target: str, overrides: Mapping[str, Any] | None, ctx: RunContext) -> Path:
    """Run (or reuse) every stage of a chain inside the fine-tuning run of ``ctx`` (its settings,
    accelerator and CPU threads); return the folder of the last stage's encoder."""
    source = model
    for k in range(len(stage_configs)):
        plan = plan_stage(model, stage_configs[:k + 1], model_hash, seed, profile, source, target, overrides)
        record, _ = protocol.run(STAGES, plan, ctx.settings, ctx.accelerator, threads=ctx.threads)
        source = str(record.artifact("encoder", ctx.settings.results_root))
    return Path(source)


class StageKind:
    """Intermediate stages as a kind of run (:class:`medibio.runs.protocol.Kind`)."""

    name = KIND

    def replan(self, request: Mapping[str, Any], settings: Settings) -> Plan:
        prof = profiles.get(request["profile"]).limited(request.get("limit"))
        settings = dataclasses.replace(settings, limit=request.get("limit"))
        target = config.apply_overrides(config.preset(request["target"], prof), request["target"],
                                        request.get("overrides") or None)
        chain = list(request["chain"])
        stage_configs = [stage_config(t, prof, settings.data_root, target) for t in chain]
        model = request["model"]
        # the plan's identity needs no weights: a recorded stage of a pretraining run whose model is absent here
        # (reference/ keeps none) is still checked for staleness
        return plan_stage(model, stage_configs, zoo.fingerprint(model, settings.cache_root), request["seed"], prof,
                          model, request["target"], request.get("overrides"))

    def describe(self, record: rec.RunRecord) -> str:
        return f"dev {record.score_dev if record.score_dev is not None else float('nan'):.2f}"

    def train(self, plan: Plan, ctx: RunContext) -> Outcome:
        """Fine-tune the stage's source encoder on its task and save the encoder (main process) into the
        run's work folder, from where the protocol publishes it with the record."""
        job: Job = plan.job
        spec, cfg, accelerator = job.spec, job.config, ctx.accelerator
        data = loaders.load_task(spec.name, ctx.settings.data_root)
        if "train" not in data or "dev" not in data:
            raise ValueError(f"intermediate task {spec.name} needs train and dev splits, has {list(data)}")
        splits, notes = features.capped_splits(
            {"train": data["train"], "dev": data["dev"]},
            {"train": cfg.max_train_examples, "dev": cfg.max_dev_examples},
            STAGE_SUBSET_SEED, "examples", job.profile.name)
        source = job.start(ctx.settings)
        is_path = Path(source).is_dir() and (Path(source) / "config.json").is_file()
        model = heads.build_model(spec, source, cfg.dropout, init_from=source if is_path else None,
                                  seed=job.seed, pooling=cfg.pooling)
        tokenizer = heads.load_tokenizer(source, spec.problem)
        try:
            result = fit(model, SupervisedTask(spec, tokenizer, splits, cfg, job.seed), cfg, accelerator, job.seed,
                         run_test=False)
            if accelerator.is_main_process:
                heads.save_encoder(accelerator.unwrap_model(model), tokenizer, ctx.workdir / "encoder")
        finally:
            accelerator.wait_for_everyone()
            accelerator.free_memory()
        record = ctx.record(
            model=zoo.model_info(job.model, cache_root=ctx.settings.cache_root,
                                 results_root=ctx.settings.results_root), hyperparameters=cfg.to_dict(),
            dev_curve=result.dev_curve, best_epoch=result.best_epoch, dev=result.dev,
            score_dev=result.dev.get("score"), train_examples=result.train_examples,
            eval_examples=result.dev_examples, wall_time_s=round(result.wall_time_s, 2),
            train_examples_per_s=round(result.train_examples_per_s, 2),
            peak_memory_mb=round(result.peak_memory_mb, 1), notes=notes + result.notes,
            details={"chain": list(job.chain), "source": source, "subset_seed": STAGE_SUBSET_SEED})
        return Outcome(record, None, ("encoder",))


STAGES = StageKind()
