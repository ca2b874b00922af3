"""Run fine-tuning jobs (tasks x seeds) and write one run record per job; the API notebooks call.

A job is (dataset, model, seed, profile, overrides, intermediate chain). Its record path is a pure
function of those (``medibio.runs.records.record_path``), so an existing record means "done": the job is
skipped unless ``force``. Test predictions are written first and the record last, both atomically, so a
run killed at any point leaves no record and is simply redone. Datasets without a train split in the data
root (EBM-PICO) get a ``skipped`` record stating why, and no score.

``run_finetune`` works in a plain Python process and under ``accelerate launch`` (every process runs the
same jobs; only the main process writes). ``launch`` starts the same thing through ``accelerate launch`` in
a subprocess, for several processes from a notebook.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from medibio.atomic import write_jsonl
from medibio.finetune import features, ift, modeling, presets, trainer

SUBSET_SEED = 12345  # train/dev caps pick the same subset for every seed and model (comparable runs)


def variant_name(cfg: presets.FinetuneConfig, chain: Sequence[str] = (), base: str | None = None) -> str:
    """``base``, ``ift-STS-B``, ``llrd0.9``, ``ift-SICK+freeze+reinit2`` ...: what sets a run apart.

    Stability options are part of the variant so that they never collide with (or get skipped because of)
    the plain run's record.
    """
    parts: list[str] = []
    if base:
        parts.append(base)
    elif chain:
        parts.append("ift-" + ift.chain_label(chain))
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


def _parse_seeds(seeds: int | str | Sequence[int] | None) -> list[int] | None:
    if seeds is None:
        return None
    if isinstance(seeds, int):
        return [seeds]
    if isinstance(seeds, str):
        return [int(s) for s in seeds.split(",") if s.strip()]
    return [int(s) for s in seeds]


def _echo(accelerator: Any):
    from tqdm.auto import tqdm

    def log(message: str) -> None:
        if accelerator.is_main_process:
            tqdm.write(message, file=sys.stderr)  # stdout stays clean for --json

    return log


def run_finetune(tasks: str | Sequence[str], model: str | None = None,
                 seeds: int | str | Sequence[int] | None = None, profile: str = presets.DEFAULT_PROFILE,
                 config_overrides: Mapping[str, Any] | None = None,
                 intermediate: str | Sequence[str] | None = None, results_root: str | Path | None = None,
                 force: bool = False, data_root: str | Path | None = None, variant: str | None = None,
                 callbacks: Sequence[trainer.Callback] = ()) -> list[Any]:
    """Fine-tune ``model`` on each task x seed and return the run records (new or existing).

    ``tasks``: a dataset, a group (``NER``), a comma list or ``"all"``. ``model``: a name for
    ``medibio.modelzoo`` (default: the profile's model). ``seeds``: default the profile's (three for
    BIOSSES/PubMedQA/BioASQ on ``cpu``). ``config_overrides``: fields of :class:`FinetuneConfig`
    (and ``tasks: {dataset: {...}}``), applied over the profile's preset. ``intermediate``: an IFT chain.
    """
    from medibio.blurb import registry
    from medibio.paths import results_root as default_results_root

    prof = presets.get_profile(profile)
    model = model or prof.model
    specs = registry.resolve(tasks)
    seed_list = _parse_seeds(seeds)
    root = default_results_root(results_root)
    chain = ift.parse_chain(intermediate)
    first_cfg = presets.preset(specs[0].name, prof) if specs else presets.FinetuneConfig()
    accelerator = trainer.make_accelerator(first_cfg.mixed_precision)
    records = []
    for spec in specs:
        for seed in seed_list or list(prof.default_seeds(spec.name)):
            records.append(run_one(spec, model, seed, prof, config_overrides, chain, root, force, data_root,
                                   accelerator, variant=variant, callbacks=callbacks))
    return records


def run_one(spec: Any, model: str, seed: int, profile: presets.Profile,
            config_overrides: Mapping[str, Any] | None, chain: Sequence[str], results_root: Path, force: bool,
            data_root: str | Path | None, accelerator: Any, variant: str | None = None,
            callbacks: Sequence[trainer.Callback] = ()) -> Any:
    """One job: skip when recorded, else train, predict test and write predictions + record."""
    from medibio.blurb.loaders import available_splits, load_blurb
    from medibio.runs import records as rec

    log = _echo(accelerator)
    cfg = presets.apply_overrides(presets.preset(spec.name, profile), spec.name, config_overrides)
    var = variant_name(cfg, chain, variant)
    tag = rec.model_tag(model)
    path = rec.record_path(results_root, profile.name, tag, var, spec.name, seed)
    if path.is_file() and not force:
        existing = rec.read_record(path)
        changed = _differs(existing.hyperparameters, cfg) if existing.ok else []
        if changed:
            log(f"{spec.name} seed {seed}: skipped, but its record ({path}) has other values of "
                f"{', '.join(changed)}; kept. Use force=True (--force) or another variant to rerun.")
        else:
            log(f"{spec.name} seed {seed}: done before ({path}), skipped")
        return existing

    splits_here = available_splits(spec.name, data_root)
    if "train" not in splits_here:
        record = rec.skipped_record(
            spec.name, rec.model_info(model), profile.name, seed,
            reason=f"train split absent in the data root (has {', '.join(splits_here)}); no score is "
                   f"reported. Get it from: {spec.source}",
            variant=var, intermediate=list(chain), hyperparameters=cfg.to_dict(),
        )
        if accelerator.is_main_process:
            rec.write_record(record, results_root)
        log(f"{spec.name} seed {seed}: skipped (train split absent)")
        return record

    data = load_blurb(spec.name, data_root)
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
                     f"({profile.name} profile): NOT an official score")

    source: str | Path = model
    init_from = None
    if chain:
        init_from = ift.prepare_encoder(model, chain, seed, profile, results_root, data_root, accelerator,
                                        force=False, log=log)
        source = init_from
    net = modeling.build_model(spec, model, cfg.dropout, init_from=init_from, seed=seed)
    tokenizer = modeling.load_tokenizer(source, spec.problem)
    parameters = modeling.count_parameters(net)
    try:
        result = trainer.fit(net, tokenizer, spec, splits, cfg, accelerator, seed, callbacks=callbacks)
    finally:
        del net
        accelerator.free_memory()

    pred_path = rec.predictions_path(results_root, profile.name, tag, var, spec.name, seed)
    env = rec.environment_info()
    hyper = cfg.to_dict()
    hyper.update(per_device_batch_size=result.per_device_batch_size, optimizer_steps=result.optimizer_steps,
                 subset_seed=SUBSET_SEED, dev_examples=result.dev_examples,
                 mixed_precision_used=str(accelerator.mixed_precision))  # CPU runs are always fp32
    info = rec.model_info(model)
    info["parameters"] = parameters
    record = rec.RunRecord(
        dataset=spec.name, model=info, profile=profile.name, seed=seed, variant=var,
        intermediate=list(chain), hyperparameters=hyper, dev_curve=result.dev_curve,
        best_epoch=result.best_epoch, dev=result.dev, test=result.test,
        score_dev=result.dev.get("score"), score_test=result.test.get("score"), predictions=pred_path.name,
        train_examples=result.train_examples, eval_examples=result.test_examples,
        wall_time_s=round(result.wall_time_s, 2), train_examples_per_s=round(result.train_examples_per_s, 2),
        peak_memory_mb=round(result.peak_memory_mb, 1), device=trainer.device_name(accelerator),
        num_processes=accelerator.num_processes, versions=env["versions"], git_commit=env["git_commit"],
        notes=notes + result.notes + ([f"encoder from intermediate fine-tuning: {init_from}"] if chain else []),
    )
    if accelerator.is_main_process:
        write_jsonl(pred_path, result.test_predictions)
        rec.write_record(record, results_root)
    accelerator.wait_for_everyone()
    log(f"{spec.name} seed {seed} [{var}]: dev {record.score_dev:.2f} (epoch {record.best_epoch}) "
        f"test {record.score_test:.2f}  {record.wall_time_s:.0f}s, {record.train_examples_per_s:.1f} ex/s")
    return record


def _differs(recorded: Mapping[str, Any], cfg: presets.FinetuneConfig) -> list[str]:
    """Config fields whose recorded value differs from the requested one."""
    return [k for k, v in cfg.to_dict().items() if k in recorded and recorded[k] != v]


def command_args(tasks: str | Sequence[str], model: str | None = None,
                 seeds: int | str | Sequence[int] | None = None, profile: str = presets.DEFAULT_PROFILE,
                 config_file: str | Path | None = None, intermediate: str | Sequence[str] | None = None,
                 results_root: str | Path | None = None, force: bool = False,
                 data_root: str | Path | None = None, variant: str | None = None,
                 **flags: Any) -> list[str]:
    """``medibio finetune`` arguments for the same job (used by :func:`launch`)."""
    task_text = tasks if isinstance(tasks, str) else ",".join(tasks)
    args = ["finetune", "--task", task_text, "--profile", profile]
    if model:
        args += ["--model", str(model)]
    seed_list = _parse_seeds(seeds)
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


def launch(tasks: str | Sequence[str], model: str | None = None, seeds: int | str | Sequence[int] | None = None,
           profile: str = presets.DEFAULT_PROFILE, num_processes: int = 2, multi_gpu: bool = True,
           accelerate_args: Sequence[str] = (), check: bool = True, env: Mapping[str, str] | None = None,
           **kwargs: Any) -> list[Any]:
    """Run the same jobs through ``accelerate launch`` in a subprocess (``--multi_gpu`` also works on CPU:
    accelerate then starts ``num_processes`` gloo processes) and return the records it wrote.

    ``kwargs`` are those of :func:`command_args` plus :class:`FinetuneConfig` fields, passed on as CLI
    flags (``learning_rate=3e-5``, ``max_train_examples=100``, ``llrd=0.9``, ``bias_correction=False``).
    """
    import os

    from medibio.blurb import registry
    from medibio.paths import results_root as default_results_root
    from medibio.runs import records as rec

    args = command_args(tasks, model, seeds, profile, **kwargs)
    cmd = [sys.executable, "-m", "accelerate.commands.launch", "--num_processes", str(num_processes)]
    if multi_gpu and num_processes > 1:
        cmd.append("--multi_gpu")
    cmd += ["--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no", *accelerate_args,
            "-m", "medibio", *args]
    full_env = {**os.environ, **(env or {})}
    subprocess.run(cmd, check=check, env=full_env)
    prof = presets.get_profile(profile)
    root = default_results_root(kwargs.get("results_root"))
    chain = ift.parse_chain(kwargs.get("intermediate"))
    overrides = {k: v for k, v in kwargs.items() if k in presets.field_names()}
    out = []
    for spec in registry.resolve(tasks):
        cfg = presets.apply_overrides(presets.preset(spec.name, prof), spec.name, overrides)
        var = variant_name(cfg, chain, kwargs.get("variant"))
        for seed in _parse_seeds(seeds) or list(prof.default_seeds(spec.name)):
            path = rec.record_path(root, prof.name, rec.model_tag(model or prof.model), var, spec.name, seed)
            if path.is_file():
                out.append(rec.read_record(path))
    return out


def shell_command(*args: Any, **kwargs: Any) -> str:
    """The ``medibio finetune`` command line of a job, for logs and docs."""
    return "python -m medibio " + shlex.join(command_args(*args, **kwargs))
