"""Fine-tuning runs (BLURB datasets x seeds), one run record each, through the one run protocol.

A run is planned first (:func:`plan_run`): the profile's preset plus the user's overrides give the effective
:class:`~medibio.training.config.FinetuneConfig`; together with the model's fingerprint, the data files'
checksums and the intermediate chain it forms the configuration whose digest is the run's identity. The
runner, the read-back after ``accelerate launch``, the book and ``medibio results list --stale`` all plan
through it. :mod:`medibio.runs.protocol` then reuses the run's record or trains it under its lock.

Before the first run trains, every split the request needs is parsed (:func:`check_data`): a missing or
malformed file stops the request with an error naming it. Only a split the registry documents as absent
(EBM-PICO train, :data:`medibio.tasks.loaders.OPTIONAL_SPLITS`) gives a ``skipped`` record stating why, and
no score. ``run_finetune`` works in a plain process and under ``accelerate launch`` (every process runs the
same runs; only the main process writes); with ``settings.processes > 1`` it launches itself that way.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from medibio.core import profiles
from medibio.core.hashing import files_fingerprint
from medibio.core.precision import AcceleratorWhenTraining, precision_for
from medibio.core.profiles import Profile
from medibio.core.settings import Settings
from medibio.finetune.variants import variant_name
from medibio.ift import stages
from medibio.models import heads, zoo
from medibio.runs import protocol
from medibio.runs import records as rec
from medibio.runs.launch import launch_request, request_args
from medibio.runs.protocol import SUBSET_SEED, Outcome, Plan, RunContext
from medibio.tasks import datacheck, loaders, registry
from medibio.tasks.spec import TaskSpec
from medibio.training import config, features
from medibio.training.loop import Callback, SupervisedTask, fit

KIND = "finetune"


@dataclass(frozen=True)
class Job:
    """What training a planned fine-tuning run needs."""

    spec: TaskSpec
    model: str  # the name asked for (records and tags use it)
    seed: int
    profile: Profile
    config: config.FinetuneConfig
    chain: tuple[str, ...]
    stages: tuple[dict[str, Any], ...]  # intermediate stage configurations (medibio.ift.stages.stage_config)
    overrides: dict[str, Any]
    model_hash: str
    allow_overlap: bool = False  # train although splits share examples (noted in the record)


def plain_overrides(overrides: Mapping[str, Any] | None) -> dict[str, Any]:
    """Overrides as stored in a record's request (``None`` values dropped, per-task blocks kept)."""
    if not overrides:
        return {}
    out = {k: v for k, v in overrides.items() if k != "tasks" and v is not None}
    if overrides.get("tasks"):
        out["tasks"] = {t: {k: v for k, v in (c or {}).items() if v is not None}
                        for t, c in overrides["tasks"].items()}
    return out


def _precision_used(requested: str) -> dict[str, str]:
    """``{"precision": used}`` when this machine's precision decision departs from the requested one (bf16
    asked, fp32 on a CPU without bf16), else nothing: machines that decide alike share records."""
    used = precision_for(requested=requested)
    return {} if used == {"fp32": "no"}.get(requested, requested) else {"precision": used}


def plan_run(dataset: str, model: str | None = None, seed: int = 1,
             profile: str | Profile = profiles.DEFAULT_PROFILE, overrides: Mapping[str, Any] | None = None,
             intermediate: str | Sequence[str] | None = None, variant: str | None = None,
             settings: Settings | None = None, allow_overlap: bool = False) -> Plan:
    """Resolve one run into its effective configuration and run key (nothing is trained).

    ``allow_overlap`` lets it train on splits that share examples beyond BLURB's own documented overlaps;
    it is not part of the run's identity (it changes no computation: without it the run is refused), but
    the request and the record say so."""
    settings = settings or Settings()
    prof = settings.profile(profile)
    spec = registry.get(dataset, "blurb")
    model = str(model or prof.model)
    cfg = config.apply_overrides(config.preset(spec.name, prof), spec.name, overrides)
    config.check_scorable(spec, cfg)
    chain = tuple(stages.parse_chain(intermediate))
    if not chain and cfg.intermediate_seed is not None:  # no stage to seed: not part of this run's identity
        cfg = cfg.replace(intermediate_seed=None)
    stage_configs = tuple(stages.stage_config(t, prof, settings.data_root, cfg) for t in chain)
    model_hash = zoo.fingerprint(model, settings.cache_root)
    files = loaders.task_files(spec.name, settings.data_root)
    configuration = {"dataset": spec.name, "model": model_hash, "hyperparameters": cfg.to_dict(),
                     "subset_seed": SUBSET_SEED, "intermediate": list(stage_configs),
                     "data": files_fingerprint(files, root=settings.data_root),
                     **_precision_used(cfg.mixed_precision)}
    var = variant_name(cfg, chain, variant)
    request = {"dataset": spec.name, "model": model, "profile": prof.name, "limit": prof.limit, "seed": int(seed),
               "overrides": plain_overrides(overrides), "intermediate": list(chain), "variant": variant,
               **({"allow_overlap": True} if allow_overlap else {})}
    tag = zoo.model_tag(model)
    job = Job(spec, model, int(seed), prof, cfg, chain, stage_configs, plain_overrides(overrides), model_hash,
              allow_overlap)
    return protocol.plan(KIND, prof.name, tag, var, spec.name, seed, configuration, request,
                         f"{spec.name} seed {seed} [{var}] {tag}", job, machine=("precision",))


def plan_runs(tasks: str | Sequence[str], model: str | None = None,
              seeds: int | str | Sequence[int] | None = None, profile: str | Profile = profiles.DEFAULT_PROFILE,
              overrides: Mapping[str, Any] | None = None, intermediate: str | Sequence[str] | None = None,
              variant: str | None = None, settings: Settings | None = None,
              allow_overlap: bool = False) -> list[Plan]:
    """Every (dataset, seed) run of a request, in registry order (seeds default to the profile's)."""
    settings = settings or Settings()
    prof = settings.profile(profile)
    seed_list = profiles.parse_seeds(seeds)
    return [plan_run(spec.name, model, seed, prof, overrides, intermediate, variant, settings, allow_overlap)
            for spec in registry.resolve(tasks) for seed in (seed_list or list(prof.default_seeds(spec.name)))]


class FinetuneKind:
    """Fine-tuning as a kind of run (:class:`medibio.runs.protocol.Kind`); ``callbacks`` follow training."""

    name = KIND

    def __init__(self, callbacks: Sequence[Callback] = ()) -> None:
        self.callbacks = tuple(callbacks)

    def replan(self, request: Mapping[str, Any], settings: Settings) -> Plan:
        return plan_run(request["dataset"], request["model"], request["seed"], request["profile"],
                        request.get("overrides") or None, request.get("intermediate") or None,
                        request.get("variant"), dataclasses.replace(settings, limit=request.get("limit")),
                        bool(request.get("allow_overlap")))

    def describe(self, record: rec.RunRecord) -> str:
        if not record.ok:
            return f"skipped: {record.reason}"
        return f"dev {record.score_dev:.2f} (epoch {record.best_epoch}), test {record.score_test:.2f}"

    def train(self, plan: Plan, ctx: RunContext) -> Outcome:
        """Train and evaluate one planned run; its record and test predictions (none when skipped)."""
        job: Job = plan.job
        spec, cfg, seed, accelerator = job.spec, job.config, job.seed, ctx.accelerator
        data_root = ctx.settings.data_root
        # a missing split raises, unless documented absent; so do undocumented overlaps, unless allowed
        data, overlaps = loaders.load_blurb_checked(spec.name, data_root, allow_overlap=job.allow_overlap)
        data_notes = [f"splits overlap (allowed by --allow-overlap): {o.describe()}" for o in overlaps
                      if not o.known]
        sizes = {split: d.select_columns(["tags"]) if "tags" in d.column_names else d for split, d in data.items()}
        data_notes += [f"not BLURB's official {d}" for d in datacheck.departures(spec, sizes)]
        roots = {"cache_root": ctx.settings.cache_root, "results_root": ctx.settings.results_root}
        source = zoo.resolve(job.model, **roots)
        details = {"intermediate": list(job.chain), "official_splits": not data_notes, **_pretraining_of(source)}
        if "train" not in data:
            return Outcome(ctx.record(
                model=zoo.model_info(job.model, **roots), status="skipped",
                reason=f"train split absent in the data root (has {', '.join(data)}); no score is reported. "
                       f"{loaders.OPTIONAL_SPLITS[(spec.name, 'train')]}",
                hyperparameters=cfg.to_dict(), details=details))

        official = {split: data[split] for split in ("train", "dev", "test")}
        if cfg.cv_fold:
            official, note = features.cv_splits(official, cfg.cv_fold, config.CV_FOLDS, SUBSET_SEED)
            data_notes.append(note)
            details.update(cv_fold=cfg.cv_fold, cv_folds=config.CV_FOLDS, official_splits=False)
        splits, notes = features.capped_splits(
            official,
            {"train": cfg.max_train_examples, "dev": cfg.max_dev_examples, "test": cfg.max_test_examples},
            SUBSET_SEED, "examples", job.profile.name)
        init_from = None
        if job.chain:
            stage_seed = seed if cfg.intermediate_seed is None else cfg.intermediate_seed
            init_from = stages.prepare_encoder(job.model, job.stages, job.model_hash, stage_seed, job.profile,
                                               spec.name, job.overrides, ctx)
            source = str(init_from)
        net = heads.build_model(spec, source, cfg.dropout, init_from=init_from, seed=seed, pooling=cfg.pooling)
        tokenizer = heads.load_tokenizer(source, spec.problem)
        parameters = heads.count_parameters(net)
        try:
            result = fit(net, SupervisedTask(spec, tokenizer, splits, cfg, seed), cfg, accelerator, seed,
                         callbacks=self.callbacks)
        finally:
            del net
            accelerator.free_memory()

        hyper = cfg.to_dict()
        hyper.update(per_device_batch_size=result.per_device_batch_size, optimizer_steps=result.optimizer_steps,
                     subset_seed=SUBSET_SEED, dev_examples=result.dev_examples,
                     mixed_precision_used=str(accelerator.mixed_precision))
        info = zoo.model_info(job.model, **roots)
        info["parameters"] = parameters
        record = ctx.record(
            model=info, hyperparameters=hyper, dev_curve=result.dev_curve, best_epoch=result.best_epoch,
            dev=result.dev, test=result.test, score_dev=result.dev.get("score"),
            score_test=result.test.get("score"), train_examples=result.train_examples,
            eval_examples=result.test_examples, wall_time_s=round(result.wall_time_s, 2),
            train_examples_per_s=round(result.train_examples_per_s, 2),
            peak_memory_mb=round(result.peak_memory_mb, 1), details=details,
            notes=data_notes + notes + result.notes + ([f"encoder from intermediate fine-tuning: {init_from}"]
                                          if job.chain else []),
        )
        return Outcome(record, result.test_predictions)


def _pretraining_of(model: str) -> dict[str, Any]:
    """The scale of the model a run starts from when one of our pretraining runs made it (the tokens it saw,
    its run id), for the verdicts' scale column; nothing for a model made elsewhere."""
    made = rec.producer_of(model)
    if made is None or made.kind != "pretrain":
        return {}
    return {"pretraining_tokens": made.details.get("tokens_seen"), "pretraining_run": made.run_id}


def check_data(plans: Sequence[Plan], settings: Settings, force: bool) -> None:
    """Parse every split that the request's runs will train on, before the first run starts.

    A missing, empty or malformed split of any dataset (or of an intermediate task of the chain) raises
    its error now, naming the file and line, instead of after the runs before it have trained. Runs whose
    record already exists (and that are not forced) read no data and are not checked.
    """
    todo = [p for p in plans if force or rec.find_record(settings.results_root, p.key) is None]
    for name in dict.fromkeys(p.job.spec.name for p in todo):
        allowed = any(p.job.allow_overlap for p in todo if p.job.spec.name == name)
        loaders.validate_dataset(name, settings.data_root, allow_overlap=allowed)
    for task in dict.fromkeys(t for p in todo for t in p.job.chain):
        loaders.validate_task(task, settings.data_root)


def run_plans(plans: Sequence[Plan], settings: Settings, force: bool = False, callbacks: Sequence[Callback] = (),
              wait: bool = True) -> list[rec.RunRecord]:
    """Run planned fine-tuning runs in this process (one accelerator for all of them); records in plan order.

    A run that another process is training is put off until the others are done, then waited for (or, with
    ``wait=False``, raises :class:`medibio.runs.records.RunLockedError`): two processes working through one
    list, such as a chapter and the book's background process, then keep both cores busy. Under several
    launched processes every run is taken in order (the lock is the main process's alone)."""
    if not plans:
        return []
    accelerator = AcceleratorWhenTraining(plans[0].job.config.mixed_precision, settings.launched)
    kind = FinetuneKind(callbacks)
    records: dict[int, rec.RunRecord] = {}
    put_off = []
    for i, p in enumerate(plans):
        try:
            records[i] = protocol.run(kind, p, settings, accelerator, force, wait and accelerator.num_processes > 1)[0]
        except rec.RunLockedError:
            put_off.append(i)
    for i in put_off:
        records[i] = protocol.run(kind, plans[i], settings, accelerator, force, wait)[0]
    return [records[i] for i in range(len(plans))]


def run_finetune(tasks: str | Sequence[str], model: str | None = None,
                 seeds: int | str | Sequence[int] | None = None, profile: str = profiles.DEFAULT_PROFILE,
                 config_overrides: Mapping[str, Any] | None = None,
                 intermediate: str | Sequence[str] | None = None, force: bool = False,
                 variant: str | None = None, callbacks: Sequence[Callback] = (),
                 settings: Settings | None = None, allow_overlap: bool = False) -> list[rec.RunRecord]:
    """Fine-tune ``model`` on each task x seed and return the run records (new or reused).

    ``tasks``: a dataset, a group (``NER``), a comma list or ``"all"``. ``model``: a name for
    :mod:`medibio.models.zoo` (default: the profile's model). ``seeds``: default the profile's (three for
    BIOSSES/PubMedQA/BioASQ on ``cpu``). ``config_overrides``: fields of :class:`FinetuneConfig`
    (and ``tasks: {dataset: {...}}``), applied over the profile's preset. ``intermediate``: an IFT chain.
    ``settings``: data, results, limit and processes (default: the repository's folders).
    ``allow_overlap``: train although splits share examples (beyond BLURB's own, documented overlaps).
    """
    settings = settings or Settings()
    config.check_overrides(config_overrides)  # a bad value stops here, also before launching processes
    if settings.processes > 1:
        if callbacks:
            raise ValueError(f"callbacks cannot follow runs into {settings.processes} launched processes; "
                             "run with one process")
        launch_request(command_args(tasks, model, seeds, profile, intermediate, force, variant, allow_overlap),
                       plain_overrides(config_overrides), settings)
        plans = plan_runs(tasks, model, seeds, profile, config_overrides, intermediate, variant, settings,
                          allow_overlap)
        return [r for r in (rec.find_record(settings.results_root, p.key) for p in plans) if r is not None]
    plans = plan_runs(tasks, model, seeds, profile, config_overrides, intermediate, variant, settings, allow_overlap)
    check_data(plans, settings, force)
    return run_plans(plans, settings, force, callbacks)


def command_args(tasks: str | Sequence[str], model: str | None = None,
                 seeds: int | str | Sequence[int] | None = None, profile: str | Profile = profiles.DEFAULT_PROFILE,
                 intermediate: str | Sequence[str] | None = None, force: bool = False,
                 variant: str | None = None, allow_overlap: bool = False) -> list[str]:
    """``medibio finetune`` arguments of the same request (the launched processes run them)."""
    task_text = tasks if isinstance(tasks, str) else ",".join(tasks)
    options = []
    if intermediate:
        options += ["--intermediate", intermediate if isinstance(intermediate, str) else ",".join(intermediate)]
    if variant:
        options += ["--variant", variant]
    if allow_overlap:
        options.append("--allow-overlap")
    return request_args(["finetune", "--task", task_text], profiles.get(profile).name, model,
                        profiles.parse_seeds(seeds), force, options)
