"""Intermediate fine-tuning (IFT): train on one or more intermediate tasks, then hand the *encoder* on.

A chain ``STS-B,SICK`` fine-tunes the base model on STS-B, carries its encoder into a fresh SICK model,
fine-tunes that, and carries that encoder into the target task, whose head is always freshly initialised
(STILTs-style transfer; a head trained for another label space would only leak the intermediate task).
Each stage's encoder is saved once under ``<results_root>/ift/<profile>/<model_tag>/<chain>/seed<seed>/``
with a ``stage.json`` written last, so a chain shared by several targets is trained once and a killed
stage is redone rather than reused half-written. Intermediate tasks are the ones of
:mod:`medibio.ift.tasks` (STS-B, SICK, ClinicalSTS, SciRepEval) or any BLURB dataset.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from medibio.atomic import write_json
from medibio.finetune import features, modeling, presets, trainer


def parse_chain(intermediate: str | Sequence[str] | None) -> list[str]:
    """``"STS-B,SICK"`` or ``["STS-B", "SICK"]`` -> canonical task names, in training order."""
    if not intermediate:
        return []
    items = intermediate.split(",") if isinstance(intermediate, str) else list(intermediate)
    return [task_spec(i.strip()).name for i in items if i.strip()]


def chain_label(chain: Sequence[str]) -> str:
    """Path-safe name of a chain (``STS-B+SICK``), used in variants (``ift-STS-B+SICK``) and folders."""
    return "+".join(chain)


def task_spec(name: str) -> Any:
    """Spec of an intermediate task: a BLURB dataset, else one of :mod:`medibio.ift.tasks`."""
    from medibio.blurb import registry

    try:
        return registry.get(name)
    except KeyError:
        from medibio.ift import tasks

        return tasks.get_task(name)


def load_task(name: str, data_root: str | Path | None = None) -> Any:
    """The DatasetDict of an intermediate task (BLURB schema)."""
    from medibio.blurb import registry

    try:
        registry.get(name)
    except KeyError:
        from medibio.ift import tasks

        return tasks.load_task(name, data_root)
    from medibio.blurb.loaders import load_blurb

    return load_blurb(name, data_root)


def stage_dir(results_root: str | Path, profile: str, model_tag: str, chain: Sequence[str], seed: int) -> Path:
    return Path(results_root) / "ift" / profile / model_tag / chain_label(chain) / f"seed{int(seed)}"


def prepare_encoder(model_name: str, chain: Sequence[str], seed: int, profile: presets.Profile,
                    results_root: str | Path, data_root: str | Path | None, accelerator: Any,
                    force: bool = False, log: Any = print) -> Path:
    """Run (or reuse) every stage of ``chain``; return the folder with the last stage's encoder."""
    from medibio.runs.records import model_tag

    tag = model_tag(model_name)
    source: str | Path = model_name
    folder = Path()
    for k in range(len(chain)):
        prefix = list(chain[:k + 1])
        folder = stage_dir(results_root, profile.name, tag, prefix, seed)
        if (folder / "stage.json").is_file() and not force:
            log(f"IFT stage {chain_label(prefix)} seed {seed}: reusing {folder}")
        else:
            run_stage(source, prefix[-1], folder, seed, profile, data_root, accelerator, prefix, log=log)
        source = folder / "encoder"
    return folder / "encoder"


def run_stage(source: str | Path, task: str, folder: Path, seed: int, profile: presets.Profile,
              data_root: str | Path | None, accelerator: Any, chain: Sequence[str], log: Any = print) -> None:
    """Fine-tune ``source`` on one intermediate task and save its encoder (main process) to ``folder``."""
    spec = task_spec(task)
    cfg = presets.intermediate_preset(spec.name, profile, getattr(spec, "max_length", None))
    data = load_task(spec.name, data_root)
    if "train" not in data or "dev" not in data:
        raise ValueError(f"intermediate task {spec.name} needs train and dev splits, has {list(data)}")
    splits = {"train": features.subsample(data["train"], cfg.max_train_examples, 0),
              "dev": features.subsample(data["dev"], cfg.max_dev_examples, 0)}
    is_path = Path(str(source)).is_dir() and (Path(str(source)) / "config.json").is_file()
    model = modeling.build_model(spec, source, cfg.dropout, init_from=source if is_path else None, seed=seed)
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
