"""Intermediate fine-tuning (IFT) chains: train on one or more intermediate tasks, then hand the *encoder* on.

A chain ``STS-B,SICK`` fine-tunes the base model on STS-B, carries its encoder into a fresh SICK model,
fine-tunes that, and carries that encoder into the target task, whose head is always freshly initialised
(STILTs-style transfer; a head trained for another label space would only leak the intermediate task).
Each stage's encoder is saved once under
``<results_root>/ift/<profile>/<model_tag>/<chain>/<stage_digest>/seed<seed>/`` with a ``stage.json``
written last, so a chain shared by several targets is trained once, a killed stage is redone rather than
reused half-written, and a stage whose configuration changed (hyperparameters, data, base model) is trained
into a folder of its own. Intermediate tasks are those of :mod:`medibio.ift.tasks` — its IFT-only tasks and
every BLURB dataset, behind one interface.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from medibio.atomic import write_json
from medibio.blurb.registry import Problem
from medibio.finetune import features, modeling, presets, trainer
from medibio.ift import tasks
from medibio.profiles import Profile
from medibio.runs import identity


def parse_chain(intermediate: str | Sequence[str] | None) -> list[str]:
    """``"STS-B,SICK"`` or ``["STS-B", "SICK"]`` -> canonical task names, in training order."""
    if not intermediate:
        return []
    items = intermediate.split(",") if isinstance(intermediate, str) else list(intermediate)
    return [tasks.get_task(i.strip()).name for i in items if i.strip()]


def chain_label(chain: Sequence[str]) -> str:
    """Path-safe name of a chain (``STS-B+SICK``), used in variants (``ift-STS-B+SICK``) and folders."""
    return "+".join(chain)


def stage_preset(task: str, profile: Profile, target: presets.FinetuneConfig | None = None
                 ) -> presets.FinetuneConfig:
    """The fine-tuning config of one stage: the profile's intermediate preset with the intermediate budget
    (``intermediate_epochs``, ``intermediate_max_train_examples``) of the ``target`` run's effective config,
    so that a budget set by ``--config`` or an override trains the stage, not just renames the target."""
    spec = tasks.get_task(task)
    cfg = presets.intermediate_preset(spec.name, profile, getattr(spec, "max_length", None))
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
                 target: presets.FinetuneConfig | None = None) -> dict[str, Any]:
    """What determines one stage's result besides its input encoder: its hyperparameters (see
    :func:`stage_preset`) and data files. :func:`run_stage` trains with exactly these hyperparameters."""
    from medibio.paths import data_root as resolve_data_root

    spec = tasks.get_task(task)
    cfg = stage_preset(spec.name, profile, target)
    root = resolve_data_root(data_root, must_exist=False)
    return {"task": spec.name, "hyperparameters": cfg.to_dict(),
            "data": identity.files_fingerprint(tasks.data_files(spec.name, data_root), root=root)}


def stage_hyperparameters(stage: dict[str, Any]) -> presets.FinetuneConfig:
    """The :class:`FinetuneConfig` a stage configuration (from :func:`stage_config`) names."""
    fields = {k: v for k, v in stage["hyperparameters"].items() if k != "effective_epochs"}
    return presets.FinetuneConfig().replace(**fields)


def stage_digest(model_hash: str, stages: Sequence[dict[str, Any]]) -> str:
    """Digest of a chain prefix: the base model and every stage up to this one."""
    return identity.digest({"model": model_hash, "stages": list(stages)})


def stage_dir(results_root: str | Path, profile: str, model_tag: str, chain: Sequence[str], digest: str,
              seed: int) -> Path:
    return (Path(results_root) / "ift" / profile / model_tag / chain_label(chain) / digest
            / f"seed{int(seed)}")


def prepare_encoder(model_name: str, stages: Sequence[dict[str, Any]], model_hash: str, seed: int,
                    profile: Profile, results_root: str | Path, data_root: str | Path | None, accelerator: Any,
                    force: bool = False, log: Callable[[str], None] = print) -> Path:
    """Run (or reuse) every stage of a chain (``stages`` from :func:`stage_config`); return the folder with
    the last stage's encoder."""
    from medibio.runs.records import model_tag

    tag = model_tag(model_name)
    chain = [s["task"] for s in stages]
    source: str | Path = model_name
    folder = Path()
    for k in range(len(stages)):
        prefix = chain[:k + 1]
        folder = stage_dir(results_root, profile.name, tag, prefix, stage_digest(model_hash, stages[:k + 1]), seed)
        if (folder / "stage.json").is_file() and not force:
            log(f"IFT stage {chain_label(prefix)} seed {seed}: reusing {folder}")
        else:
            run_stage(source, stages[k], folder, seed, profile, data_root, accelerator, prefix, log=log)
        source = folder / "encoder"
    return folder / "encoder"


def run_stage(source: str | Path, stage: dict[str, Any], folder: Path, seed: int, profile: Profile,
              data_root: str | Path | None, accelerator: Any, chain: Sequence[str],
              log: Callable[[str], None] = print) -> None:
    """Fine-tune ``source`` on one intermediate task with the stage's own configuration (``stage`` from
    :func:`stage_config`: the one its folder's digest covers) and save its encoder (main process) to
    ``folder``."""
    spec = tasks.get_task(stage["task"])
    cfg = stage_hyperparameters(stage)
    data = tasks.load_task(spec.name, data_root)
    if "train" not in data or "dev" not in data:
        raise ValueError(f"intermediate task {spec.name} needs train and dev splits, has {list(data)}")
    splits = {"train": features.subsample(data["train"], cfg.max_train_examples, 0),
              "dev": features.subsample(data["dev"], cfg.max_dev_examples, 0)}
    is_path = Path(str(source)).is_dir() and (Path(str(source)) / "config.json").is_file()
    model = modeling.build_model(spec, source, cfg.dropout, init_from=source if is_path else None, seed=seed,
                                 pooling=cfg.pooling)
    tokenizer = modeling.load_tokenizer(source, spec.problem)
    try:
        result = trainer.fit(model, tokenizer, spec, splits, cfg, accelerator, seed, run_test=False)
        if accelerator.is_main_process:
            tmp = folder / "encoder.tmp"
            if tmp.exists():
                shutil.rmtree(tmp)
            modeling.save_encoder(accelerator.unwrap_model(model), tokenizer, tmp)
            if (folder / "encoder").exists():
                shutil.rmtree(folder / "encoder")
            tmp.rename(folder / "encoder")
            write_json(folder / "stage.json", {
                "kind": "ift-stage", "task": spec.name, "chain": list(chain), "source": str(source), "seed": seed,
                "profile": profile.name, "hyperparameters": cfg.to_dict(), "dev_curve": result.dev_curve,
                "best_epoch": result.best_epoch, "dev": result.dev, "train_examples": result.train_examples,
                "dev_examples": result.dev_examples, "wall_time_s": result.wall_time_s,
            })
            log(f"IFT stage {chain_label(chain)} seed {seed}: dev {result.dev.get('score', float('nan')):.2f}")
    finally:
        accelerator.wait_for_everyone()
        accelerator.free_memory()
