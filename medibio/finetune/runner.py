"""Run fine-tuning jobs (tasks x seeds) and write one run record per job; the API notebooks call.

A job is planned first (:func:`plan_run`): the profile's preset plus the user's overrides give the effective
:class:`~medibio.finetune.presets.FinetuneConfig`; together with the model's fingerprint, the data files'
checksums and the intermediate chain it forms the configuration whose digest is the run's identity
(:class:`medibio.runs.identity.RunKey`). This is the one place a run's identity is computed: the runner, the
read-back after ``accelerate launch``, the book and ``medibio results list --stale`` all call it.

A planned run whose record exists is reused (unless ``force``); any other configuration runs into its own
record, so an old number can never stand in for a new request. Test predictions are written first and the
record last, both atomically, and a lock file keeps two processes from training the same run: a run killed
at any point leaves no record and is simply redone. Before the first run trains, every split the request
needs is parsed (:func:`check_data`): a missing or malformed file stops the request with an error naming it.
Only a split the registry documents as absent (EBM-PICO train, ``medibio.blurb.loaders.OPTIONAL_SPLITS``)
gives a ``skipped`` record stating why, and no score.

``run_finetune`` works in a plain Python process and under ``accelerate launch`` (every process runs the
same jobs; only the main process writes). ``launch`` starts the same thing through ``accelerate launch`` in
a subprocess, for several processes from a notebook.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from medibio import profiles
from medibio.finetune import features, modeling, presets, trainer
from medibio.profiles import Profile
from medibio.runs import identity

PROCESSES_ENV = "MEDIBIO_PROCESSES"  # >1: run_finetune goes through `accelerate launch` with that many processes
SUBSET_SEED = 12345  # train/dev caps pick the same subset for every seed and model (comparable runs)
# Part of every digest: bump it when a code change alters what a given configuration computes, so that
# records made by the old code are no longer taken for the new code's results.
PROTOCOL = 1


def variant_name(cfg: presets.FinetuneConfig, chain: Sequence[str] = (), base: str | None = None) -> str:
    """``base``, ``ift-STS-B``, ``llrd0.9``, ``ift-SICK+freeze+reinit2`` ...: the human name of a run family.

    The name is for people (folders, tables); what tells runs apart is the configuration digest. Stability
    options are part of it so that a table's row says what was changed.
    """
    from medibio.ift.chain import chain_label

    parts: list[str] = []
    if base:
        parts.append(base)
    elif chain:
        parts.append("ift-" + chain_label(chain))
    if cfg.freeze_lower:
        parts.append("freeze")
    if cfg.llrd:
        parts.append(f"llrd{cfg.llrd:g}")
    if cfg.reinit_top:
        parts.append(f"reinit{cfg.reinit_top}")
    if not cfg.bias_correction:
        parts.append("nobiascorr")
    if cfg.longer_training != 1.0:
        parts.append(f"long{cfg.longer_training:g}")
    return "+".join(parts) or "base"


@dataclass(frozen=True)
class RunPlan:
    """One job, fully resolved: what will run, and the key its record has."""

    spec: Any  # medibio.blurb.registry.DatasetSpec
    model: str
    seed: int
    profile: Profile
    config: presets.FinetuneConfig
    chain: tuple[str, ...]
    stages: tuple[dict[str, Any], ...]  # intermediate stage configurations (medibio.ift.chain.stage_config)
    variant: str
    model_hash: str
    payload: dict[str, Any]  # the effective configuration; its digest is the run's identity
    request: dict[str, Any]  # what was asked for, to plan the same run again later
    key: identity.RunKey


def _plain_overrides(overrides: Mapping[str, Any] | None) -> dict[str, Any]:
    """Overrides as stored in a record's request (``None`` values dropped, per-task blocks kept)."""
    if not overrides:
        return {}
    out = {k: v for k, v in overrides.items() if k != "tasks" and v is not None}
    if overrides.get("tasks"):
        out["tasks"] = {t: {k: v for k, v in (c or {}).items() if v is not None}
                        for t, c in overrides["tasks"].items()}
    return out


def _precision_used(requested: str) -> dict[str, str]:
    """``{"precision": used}`` when this machine's precision decision (:func:`medibio.accel.precision_for`)
    departs from the requested one (bf16 asked, fp32 on a CPU without bf16), else nothing: identical machines
    share records, and records made before this entry keep their digests where nothing departs."""
    from medibio.accel import precision_for

    used = precision_for(requested=requested)
    return {} if used == {"fp32": "no"}.get(requested, requested) else {"precision": used}


def plan_run(dataset: str, model: str | None = None, seed: int = 1,
             profile: str | Profile = profiles.DEFAULT_PROFILE, overrides: Mapping[str, Any] | None = None,
             intermediate: str | Sequence[str] | None = None, variant: str | None = None,
             data_root: str | Path | None = None) -> RunPlan:
    """Resolve one job into its effective configuration and run key (nothing is trained)."""
    from medibio.blurb import loaders, registry
    from medibio.ift import chain as ift_chain
    from medibio.paths import data_root as resolve_data_root
    from medibio.runs import records as rec

    prof = profiles.get(profile)
    spec = registry.get(dataset)
    model = model or prof.model
    cfg = presets.apply_overrides(presets.preset(spec.name, prof), spec.name, overrides)
    chain = tuple(ift_chain.parse_chain(intermediate))
    if not chain and cfg.intermediate_seed is not None:  # no stage to seed: not part of this run's identity
        cfg = cfg.replace(intermediate_seed=None)
    stages = tuple(ift_chain.stage_config(t, prof, data_root, cfg) for t in chain)
    model_hash = rec.model_fingerprint(model)
    root = resolve_data_root(data_root, must_exist=False)
    files = [p for split in loaders.SPLITS for p in loaders.split_files(spec.name, split, data_root)]
    payload = {"protocol": PROTOCOL, "dataset": spec.name, "model": model_hash,
               "hyperparameters": cfg.to_dict(), "subset_seed": SUBSET_SEED, "intermediate": list(stages),
               "data": identity.files_fingerprint(files, root=root)}
    payload.update(_precision_used(cfg.mixed_precision))
    var = variant_name(cfg, chain, variant)
    request = {"dataset": spec.name, "model": str(model), "profile": prof.name, "seed": int(seed),
               "overrides": _plain_overrides(overrides), "intermediate": list(chain), "variant": variant}
    key = identity.RunKey(rec.KIND, prof.name, rec.model_tag(model), var, spec.name, int(seed),
                          identity.digest(payload))
    return RunPlan(spec, str(model), int(seed), prof, cfg, chain, stages, var, model_hash, payload, request, key)


def plan_runs(tasks: str | Sequence[str], model: str | None = None,
              seeds: int | str | Sequence[int] | None = None, profile: str | Profile = profiles.DEFAULT_PROFILE,
              overrides: Mapping[str, Any] | None = None, intermediate: str | Sequence[str] | None = None,
              variant: str | None = None, data_root: str | Path | None = None) -> list[RunPlan]:
    """Every (dataset, seed) job of a request, in registry order (seeds default to the profile's)."""
    from medibio.blurb import registry

    prof = profiles.get(profile)
    seed_list = profiles.parse_seeds(seeds)
    return [plan_run(spec.name, model, seed, prof, overrides, intermediate, variant, data_root)
            for spec in registry.resolve(tasks) for seed in (seed_list or list(prof.default_seeds(spec.name)))]


def replan(record: Any, data_root: str | Path | None = None) -> RunPlan:
    """The plan the request behind ``record`` gets today (for staleness checks)."""
    req = record.request
    return plan_run(req["dataset"], req["model"], req["seed"], req["profile"], req.get("overrides") or None,
                    req.get("intermediate") or None, req.get("variant"), data_root)


def _echo(accelerator: Any):
    from medibio import progress

    def log(message: str) -> None:
        if accelerator.is_main_process:
            progress.say(message)  # stderr / the launcher's terminal: stdout stays clean for --json

    return log


def _label(plan: RunPlan) -> str:
    """How a run is named in progress lines: ``BIOSSES seed 2 [ift-STS-B] minilm``."""
    return f"{plan.spec.name} seed {plan.seed} [{plan.variant}] {plan.key.model_tag}"


def run_finetune(tasks: str | Sequence[str], model: str | None = None,
                 seeds: int | str | Sequence[int] | None = None, profile: str = profiles.DEFAULT_PROFILE,
                 config_overrides: Mapping[str, Any] | None = None,
                 intermediate: str | Sequence[str] | None = None, results_root: str | Path | None = None,
                 force: bool = False, data_root: str | Path | None = None, variant: str | None = None,
                 callbacks: Sequence[trainer.Callback] = ()) -> list[Any]:
    """Fine-tune ``model`` on each task x seed and return the run records (new or reused).

    ``tasks``: a dataset, a group (``NER``), a comma list or ``"all"``. ``model``: a name for
    ``medibio.modelzoo`` (default: the profile's model). ``seeds``: default the profile's (three for
    BIOSSES/PubMedQA/BioASQ on ``cpu``). ``config_overrides``: fields of :class:`FinetuneConfig`
    (and ``tasks: {dataset: {...}}``), applied over the profile's preset. ``intermediate``: an IFT chain.
    """
    from medibio.paths import results_root as default_results_root

    presets.check_overrides(config_overrides)  # a bad value stops here, also before launching processes
    processes = launch_processes()
    if processes > 1:
        if callbacks:
            raise ValueError(f"callbacks cannot follow runs into {processes} launched processes; unset "
                             f"${PROCESSES_ENV} to run in this process")
        return _launch_request(tasks, model, seeds, profile, config_overrides, intermediate, results_root, force,
                               data_root, variant, processes)
    plans = plan_runs(tasks, model, seeds, profile, config_overrides, intermediate, variant, data_root)
    root = default_results_root(results_root)
    check_data(plans, root, force, data_root)
    first_cfg = plans[0].config if plans else presets.FinetuneConfig()
    accelerator = trainer.make_accelerator(first_cfg.mixed_precision)
    return [run_plan(plan, root, force, data_root, accelerator, callbacks) for plan in plans]


def check_data(plans: Sequence[RunPlan], results_root: Path, force: bool,
               data_root: str | Path | None = None) -> None:
    """Parse every split that the request's runs will train on, before the first run starts.

    A missing, empty or malformed split of any dataset (or of an intermediate task of the chain) raises
    its error now, naming the file and line, instead of after the runs before it have trained. Runs whose
    record already exists (and that are not forced) read no data and are not checked.
    """
    from medibio.blurb import loaders, registry
    from medibio.ift import tasks as ift_tasks
    from medibio.runs import records as rec

    todo = [p for p in plans if force or rec.find_record(results_root, p.key) is None]
    for name in dict.fromkeys(p.spec.name for p in todo):
        loaders.validate_dataset(name, data_root)
    for task in dict.fromkeys(t for p in todo for t in p.chain):
        if task in registry.names():
            loaders.validate_dataset(task, data_root)
        else:
            ift_tasks.read_task_rows(task, data_root)


def launch_processes() -> int:
    """How many processes :func:`run_finetune` should use: ``$MEDIBIO_PROCESSES`` (set by ``medibio book
    --processes``), 1 inside a process that accelerate already launched."""
    import os

    text = os.environ.get(PROCESSES_ENV, "").strip()
    if not text or "WORLD_SIZE" in os.environ or "LOCAL_RANK" in os.environ:
        return 1
    if not text.isdigit() or int(text) < 1:
        from medibio.errors import MedibioError

        raise MedibioError(f"${PROCESSES_ENV} must be a whole number >= 1, not {text!r}")
    return int(text)


def _launch_request(tasks: str | Sequence[str], model: str | None, seeds: Any, profile: str,
                    config_overrides: Mapping[str, Any] | None, intermediate: Any, results_root: Any, force: bool,
                    data_root: Any, variant: str | None, processes: int) -> list[Any]:
    """The same request through ``accelerate launch`` (overrides travel as a YAML file)."""
    import os
    import tempfile

    import yaml

    from medibio.paths import results_root as default_results_root

    root = default_results_root(results_root)
    config_file = None
    if config_overrides:
        folder = root / ".launch"
        folder.mkdir(parents=True, exist_ok=True)
        fd, config_file = tempfile.mkstemp(suffix=".yaml", dir=folder)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            yaml.safe_dump(_plain_overrides(config_overrides), fh)
    try:
        return launch(tasks, model, seeds, profile, num_processes=processes, config_file=config_file,
                      intermediate=intermediate, results_root=root, force=force, data_root=data_root,
                      variant=variant, env=launch_env(processes))
    finally:
        if config_file:
            os.unlink(config_file)


def launch_env(processes: int) -> dict[str, str]:
    """Environment of launched processes: the CPU threads shared out between them (unless set already)."""
    import os

    threads = str(max(1, (os.cpu_count() or processes) // processes))
    return {"OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", threads)}


def run_plan(plan: RunPlan, results_root: Path, force: bool, data_root: str | Path | None, accelerator: Any,
             callbacks: Sequence[trainer.Callback] = (), wait: bool = True) -> Any:
    """One job: reuse its record, else train, predict test and write predictions + record (``wait=False``:
    a run another process is training raises :class:`medibio.runs.records.RunLockedError`)."""
    from medibio.runs.execution import run_once

    log = _echo(accelerator)
    return run_once(plan.key, results_root, force, accelerator, _label(plan),
                    lambda: _train(plan, results_root, data_root, accelerator, callbacks, log), _score_text, wait)


def help_finetune(tasks: str | Sequence[str], model: str | None = None,
                  seeds: int | str | Sequence[int] | None = None, profile: str = profiles.DEFAULT_PROFILE,
                  results_root: str | Path | None = None, data_root: str | Path | None = None) -> list[Any]:
    """Train the jobs of a request from its *last* one backwards, and stop at the first one that another
    process is training or has finished: a second process helping a :func:`run_finetune` of the same
    request, which works from the first job onwards, until they meet (the book's background process on the
    cpu profile, :mod:`medibio.book.background`). Returns the records of the jobs it took."""
    from medibio.paths import results_root as default_results_root
    from medibio.runs import records as rec

    plans = plan_runs(tasks, model, seeds, profile, None, None, None, data_root)
    root = default_results_root(results_root)
    accelerator = trainer.make_accelerator(plans[0].config.mixed_precision) if plans else None
    written = []
    for plan in reversed(plans):
        if rec.find_record(root, plan.key) is not None:
            break
        try:
            written.append(run_plan(plan, root, False, data_root, accelerator, wait=False))
        except rec.RunLockedError:
            break
    return written


def _score_text(record: Any) -> str:
    if not record.ok:
        return f"skipped: {record.reason}"
    return f"dev {record.score_dev:.2f} (epoch {record.best_epoch}), test {record.score_test:.2f}"


def _train(plan: RunPlan, results_root: Path, data_root: str | Path | None, accelerator: Any,
           callbacks: Sequence[trainer.Callback], log: Any) -> tuple[Any, list[dict[str, Any]] | None]:
    """Train and evaluate one planned run; return its record and test predictions (None when skipped)."""
    from medibio.blurb.loaders import OPTIONAL_SPLITS, load_blurb
    from medibio.ift import chain as ift_chain
    from medibio.runs import records as rec

    spec, cfg, seed, model = plan.spec, plan.config, plan.seed, plan.model
    ident = {"config_digest": plan.key.config_digest, "config": plan.payload, "request": plan.request,
             "variant": plan.variant, "intermediate": list(plan.chain)}
    data = load_blurb(spec.name, data_root)  # a missing split raises, unless the registry documents it absent
    if "train" not in data:
        return rec.skipped_record(
            spec.name, rec.model_info(model), plan.profile.name, seed,
            reason=f"train split absent in the data root (has {', '.join(data)}); no score is reported. "
                   f"{OPTIONAL_SPLITS[(spec.name, 'train')]}",
            hyperparameters=cfg.to_dict(), **ident), None

    notes: list[str] = []
    splits = {"train": features.subsample(data["train"], cfg.max_train_examples, SUBSET_SEED),
              "dev": features.subsample(data["dev"], cfg.max_dev_examples, SUBSET_SEED),
              "test": features.subsample(data["test"], cfg.max_test_examples, SUBSET_SEED)}
    for split, limit in (("train", cfg.max_train_examples), ("dev", cfg.max_dev_examples)):
        if limit is not None and len(data[split]) > limit:
            notes.append(f"{split}: random subset of {len(splits[split])} of {len(data[split])} examples "
                         f"(seed {SUBSET_SEED})" + ("; model selection and dev scores on this subset"
                                                    if split == "dev" else ""))
    if cfg.max_test_examples is not None and len(data["test"]) > cfg.max_test_examples:
        notes.append(f"test: capped to {len(splits['test'])} of {len(data['test'])} examples "
                     f"({plan.profile.name} profile): NOT an official score")

    source: str | Path = model
    init_from = None
    if plan.chain:
        stage_seed = seed if cfg.intermediate_seed is None else cfg.intermediate_seed
        init_from = ift_chain.prepare_encoder(model, plan.stages, plan.model_hash, stage_seed, plan.profile,
                                              results_root, data_root, accelerator, log=log)
        source = init_from
    net = modeling.build_model(spec, model, cfg.dropout, init_from=init_from, seed=seed, pooling=cfg.pooling)
    tokenizer = modeling.load_tokenizer(source, spec.problem)
    parameters = modeling.count_parameters(net)
    try:
        result = trainer.fit(net, tokenizer, spec, splits, cfg, accelerator, seed, callbacks=callbacks)
    finally:
        del net
        accelerator.free_memory()

    env = rec.environment_info()
    hyper = cfg.to_dict()
    hyper.update(per_device_batch_size=result.per_device_batch_size, optimizer_steps=result.optimizer_steps,
                 subset_seed=SUBSET_SEED, dev_examples=result.dev_examples,
                 mixed_precision_used=str(accelerator.mixed_precision))  # CPU runs are always fp32
    info = rec.model_info(model)
    info["parameters"] = parameters
    record = rec.RunRecord(
        dataset=spec.name, model=info, profile=plan.profile.name, seed=seed, hyperparameters=hyper,
        dev_curve=result.dev_curve, best_epoch=result.best_epoch, dev=result.dev,
        test=result.test,
        score_dev=result.dev.get("score"), score_test=result.test.get("score"),
        predictions=plan.key.predictions_path(results_root).name,
        train_examples=result.train_examples, eval_examples=result.test_examples,
        wall_time_s=round(result.wall_time_s, 2), train_examples_per_s=round(result.train_examples_per_s, 2),
        peak_memory_mb=round(result.peak_memory_mb, 1), device=trainer.device_name(accelerator),
        num_processes=accelerator.num_processes, versions=env["versions"], git_commit=env["git_commit"],
        notes=notes + result.notes + ([f"encoder from intermediate fine-tuning: {init_from}"] if plan.chain else []),
        **ident,
    )
    return record, result.test_predictions


def command_args(tasks: str | Sequence[str], model: str | None = None,
                 seeds: int | str | Sequence[int] | None = None, profile: str = profiles.DEFAULT_PROFILE,
                 config_file: str | Path | None = None, intermediate: str | Sequence[str] | None = None,
                 results_root: str | Path | None = None, force: bool = False,
                 data_root: str | Path | None = None, variant: str | None = None,
                 **flags: Any) -> list[str]:
    """``medibio finetune`` arguments for the same job (used by :func:`launch`)."""
    task_text = tasks if isinstance(tasks, str) else ",".join(tasks)
    args = ["finetune", "--task", task_text, "--profile", profile]
    if model:
        args += ["--model", str(model)]
    seed_list = profiles.parse_seeds(seeds)
    if seed_list:
        args += ["--seeds", ",".join(map(str, seed_list))]
    if config_file:
        args += ["--config", str(config_file)]
    if intermediate:
        args += ["--intermediate", intermediate if isinstance(intermediate, str) else ",".join(intermediate)]
    if results_root:
        args += ["--results-root", str(results_root)]
    if data_root:
        args += ["--data-root", str(data_root)]
    if variant:
        args += ["--variant", variant]
    if force:
        args.append("--force")
    for key, value in flags.items():
        if key == "bias_correction":
            args += [] if value in (None, True) else ["--no-bias-correction"]
            continue
        if value is None or value is False:
            continue
        option = "--" + key.replace("_", "-")
        args += [option] if value is True else [option, str(value)]
    return args


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def launch(tasks: str | Sequence[str], model: str | None = None, seeds: int | str | Sequence[int] | None = None,
           profile: str = profiles.DEFAULT_PROFILE, num_processes: int = 2, multi_gpu: bool = True,
           accelerate_args: Sequence[str] = (), check: bool = True, env: Mapping[str, str] | None = None,
           **kwargs: Any) -> list[Any]:
    """Run the same jobs through ``accelerate launch`` in a subprocess (``--multi_gpu`` also works on CPU:
    accelerate then starts ``num_processes`` gloo processes) and return the records it wrote.

    ``kwargs`` are those of :func:`command_args` plus :class:`FinetuneConfig` fields, passed on as CLI
    flags (``learning_rate=3e-5``, ``max_train_examples=100``, ``llrd=0.9``, ``bias_correction=False``).
    The records are found by planning the same request here (:func:`plan_runs`), not by rebuilding paths.
    """
    from medibio.paths import results_root as default_results_root
    from medibio.runs import records as rec

    args = command_args(tasks, model, seeds, profile, **kwargs)
    accelerate_launch(args, num_processes, multi_gpu, accelerate_args, check, env)
    root = default_results_root(kwargs.get("results_root"))
    overrides = {k: v for k, v in kwargs.items() if k in presets.field_names()}
    if kwargs.get("config_file"):
        overrides = {**presets.load_config_file(kwargs["config_file"]), **overrides}
    plans = plan_runs(tasks, model, seeds, profile, overrides, kwargs.get("intermediate"), kwargs.get("variant"),
                      kwargs.get("data_root"))
    found = [rec.find_record(root, plan.key) for plan in plans]
    return [r for r in found if r is not None]


def accelerate_launch(medibio_args: Sequence[str], num_processes: int = 2, multi_gpu: bool = True,
                      accelerate_args: Sequence[str] = (), check: bool = True,
                      env: Mapping[str, str] | None = None) -> None:
    """``python -m medibio <medibio_args>`` in ``num_processes`` processes of ``accelerate launch`` (a
    subprocess; fine-tuning and SciERC runs both go through it)."""
    import os

    cmd = [sys.executable, "-m", "accelerate.commands.launch", "--num_processes", str(num_processes)]
    if multi_gpu and num_processes > 1:
        cmd.append("--multi_gpu")
    cmd += ["--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no", *accelerate_args]
    if multi_gpu and num_processes > 1 and not any(a.startswith("--main_process_port") for a in accelerate_args):
        # a free port, not accelerate's fixed 29500: two launches on one machine must not meet on it
        cmd += ["--main_process_port", str(_free_port())]
    cmd += ["-m", "medibio", *medibio_args]
    subprocess.run(cmd, check=check, env={**os.environ, **(env or {})})


def shell_command(*args: Any, **kwargs: Any) -> str:
    """The ``medibio finetune`` command line of a job, for logs and docs."""
    return "python -m medibio " + shlex.join(command_args(*args, **kwargs))
