"""SciERC runs: plan (identity), train through the shared loop, write one record per (model, seed).

A run's identity is the digest of its effective configuration — :class:`~medibio.scierc.presets.SciercConfig`,
the encoder's fingerprint, the SciERC files' checksums, the subset seed and :data:`PROTOCOL` — so a record
is reused only when the request's configuration equals it; anything else trains into a record of its own
(``<results>/scierc/<profile>/<model>/<mode>/SciERC/<digest>/seed<N>.json``, test predictions beside it).
The lock, the atomic writes and the "no record, no result" rule are those of the BLURB runs: a run killed
at any point leaves no record and is redone by the next request, while finished seeds are reused.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from medibio import profiles
from medibio.profiles import Profile
from medibio.runs import identity

KIND = "scierc"
DATASET = "SciERC"
SUBSET_SEED = 12345
PROTOCOL = 1
# what peak memory means in a CPU record (the trainer reads the process-wide maximum resident set size)
CPU_MEMORY_NOTE = ("peak_memory_mb on CPU: the process's largest resident set size so far (getrusage "
                   "ru_maxrss), not this run's alone: later seeds in one process report at least the earlier ones' "
                   "peak")


@dataclass(frozen=True)
class RunPlan:
    """One SciERC job, fully resolved."""

    model: str
    seed: int
    profile: Profile
    config: Any  # SciercConfig
    payload: dict[str, Any]
    request: dict[str, Any]
    key: identity.RunKey


def plan_run(model: str | None = None, seed: int = 1, profile: str | Profile = profiles.DEFAULT_PROFILE,
             overrides: Mapping[str, Any] | None = None, data_root: str | Path | None = None) -> RunPlan:
    """Resolve one job into its configuration and run key (nothing is trained)."""
    from medibio.paths import data_root as resolve_data_root
    from medibio.runs import records as rec
    from medibio.scierc import data, presets

    prof = profiles.get(profile)
    model = str(model or prof.model)
    cfg = presets.preset(prof, overrides)
    root = resolve_data_root(data_root, must_exist=False)
    files = [data.split_path(s, data_root) for s in data.SPLITS]
    payload = {"protocol": PROTOCOL, "dataset": DATASET, "model": rec.model_fingerprint(model),
               "scierc": cfg.to_dict(), "subset_seed": SUBSET_SEED,
               "data": identity.files_fingerprint(files, root=root)}
    request = {"model": model, "profile": prof.name, "seed": int(seed),
               "overrides": {k: v for k, v in (overrides or {}).items() if v is not None}}
    key = identity.RunKey(KIND, prof.name, rec.model_tag(model), cfg.mode, DATASET, int(seed),
                          identity.digest(payload))
    return RunPlan(model, int(seed), prof, cfg, payload, request, key)


def plan_runs(model: str | None = None, seeds: int | str | Sequence[int] | None = None,
              profile: str | Profile = profiles.DEFAULT_PROFILE, overrides: Mapping[str, Any] | None = None,
              data_root: str | Path | None = None) -> list[RunPlan]:
    from medibio.scierc import presets

    prof = profiles.get(profile)
    return [plan_run(model, s, prof, overrides, data_root)
            for s in (profiles.parse_seeds(seeds) or list(presets.seeds(prof)))]


def replan(record: Any, data_root: str | Path | None = None) -> RunPlan:
    """The plan the request behind ``record`` gets today (``medibio results list --stale``)."""
    req = record.request
    return plan_run(req["model"], req["seed"], req["profile"], req.get("overrides") or None, data_root)


def run_scierc(model: str | None = None, seeds: int | str | Sequence[int] | None = None,
               profile: str | Profile = profiles.DEFAULT_PROFILE, overrides: Mapping[str, Any] | None = None,
               results_root: str | Path | None = None, data_root: str | Path | None = None,
               force: bool = False, callbacks: Sequence[Any] = ()) -> list[Any]:
    """Train (or reuse) one SciERC run per seed and return the records (the profile's seeds by default).

    ``overrides`` are :class:`~medibio.scierc.presets.SciercConfig` fields (``mode="pipeline"``, ``epochs``,
    caps ...). Works in a plain process and under ``accelerate launch`` (only the main process writes).
    ``callbacks`` are the training loop's (``callback("epoch_end", epoch=..., ...)``). With
    ``$MEDIBIO_PROCESSES`` above 1 (``medibio book --processes N``) the request goes through ``accelerate
    launch`` in that many processes (:func:`launch`), as fine-tuning does.
    """
    from medibio.finetune import trainer
    from medibio.finetune.runner import PROCESSES_ENV, launch_processes
    from medibio.paths import results_root as default_results_root

    processes = launch_processes()
    if processes > 1:
        if callbacks:
            raise ValueError(f"callbacks cannot follow runs into {processes} launched processes; unset "
                             f"${PROCESSES_ENV} to run in this process")
        return launch(model, seeds, profile, overrides, results_root, data_root, force, num_processes=processes)
    plans = plan_runs(model, seeds, profile, overrides, data_root)
    root = default_results_root(results_root)
    accelerator = trainer.make_accelerator(plans[0].config.mixed_precision if plans else "no")
    return [run_plan(plan, root, force, data_root, accelerator, callbacks) for plan in plans]


def launch(model: str | None = None, seeds: int | str | Sequence[int] | None = None,
           profile: str | Profile = profiles.DEFAULT_PROFILE, overrides: Mapping[str, Any] | None = None,
           results_root: str | Path | None = None, data_root: str | Path | None = None, force: bool = False,
           num_processes: int = 2) -> list[Any]:
    """The same request as ``medibio scierc train`` in ``num_processes`` processes of ``accelerate launch``
    (overrides travel as a YAML ``--config`` file); the records are found by planning the request here."""
    import os
    import tempfile

    import yaml

    from medibio.finetune.runner import accelerate_launch, launch_env
    from medibio.paths import results_root as default_results_root
    from medibio.runs import records as rec

    root = default_results_root(results_root)
    args = ["scierc", "train", "--profile", profiles.get(profile).name, "--results-root", str(root)]
    if model:
        args += ["--model", str(model)]
    seed_list = profiles.parse_seeds(seeds)
    if seed_list:
        args += ["--seeds", ",".join(map(str, seed_list))]
    if data_root:
        args += ["--data-root", str(data_root)]
    if force:
        args.append("--force")
    plain = {k: v for k, v in (overrides or {}).items() if v is not None}
    config_file = None
    if plain:
        (root / ".launch").mkdir(parents=True, exist_ok=True)
        fd, config_file = tempfile.mkstemp(suffix=".yaml", dir=root / ".launch")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            yaml.safe_dump(plain, fh)
        args += ["--config", config_file]
    try:
        accelerate_launch(args, num_processes, env=launch_env(num_processes))
    finally:
        if config_file:
            os.unlink(config_file)
    found = [rec.find_record(root, plan.key) for plan in plan_runs(model, seeds, profile, plain, data_root)]
    return [r for r in found if r is not None]


def _label(plan: RunPlan) -> str:
    return f"SciERC seed {plan.seed} [{plan.config.mode}] {plan.key.model_tag}"


def run_plan(plan: RunPlan, results_root: Path, force: bool, data_root: str | Path | None, accelerator: Any,
             callbacks: Sequence[Any] = ()) -> Any:
    """One job: reuse its record, else train, write predictions then the record (both atomically)."""
    from medibio.runs.execution import run_once

    return run_once(plan.key, results_root, force, accelerator, _label(plan),
                    lambda: train(plan, results_root, data_root, accelerator, callbacks), _score_text)


def _score_text(record: Any) -> str:
    t = record.test
    return (f"dev {record.score_dev:.2f} (epoch {record.best_epoch}); test NER {t.get('ner_f1', 0):.1f}, "
            f"REL {t.get('rel_f1', 0):.1f}, REL+ {t.get('relplus_f1', 0):.1f}, Coref {t.get('coref_f1', 0):.1f}")


def subsample(docs: list[Any], cap: int | None) -> list[Any]:
    """A seeded random subset of ``cap`` documents in their original order (the same for every seed/model)."""
    if cap is None or len(docs) <= cap:
        return docs
    keep = sorted(random.Random(SUBSET_SEED).sample(range(len(docs)), cap))
    return [docs[i] for i in keep]


def _build(plan: RunPlan, heads: Sequence[str], typed: bool) -> Any:
    from accelerate.utils import set_seed
    from transformers import AutoModel
    from transformers.utils import logging as hf_logging

    from medibio import modelzoo
    from medibio.scierc.model import SpanModel

    set_seed(plan.seed)
    level = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    try:
        encoder = AutoModel.from_pretrained(modelzoo.resolve(plan.model))
    finally:
        hf_logging.set_verbosity(level)
    if plan.config.train_layers is not None:
        from medibio.finetune.stability import freeze_all_but_top

        freeze_all_but_top(encoder, plan.config.train_layers)
    return SpanModel(encoder, plan.config, heads, typed_relations=typed)


def _groups(model: Any, cfg: Any) -> list[dict[str, Any]]:
    """AdamW groups: encoder at ``learning_rate``, heads at ``head_learning_rate``; no decay on biases/norms."""
    groups: list[dict[str, Any]] = []
    for part, lr in (("encoder", cfg.learning_rate), ("heads", cfg.head_learning_rate)):
        named = [(n, p) for n, p in model.named_parameters()
                 if p.requires_grad and n.startswith("encoder.") == (part == "encoder")]
        decay = [p for n, p in named if p.ndim > 1 and "norm" not in n.lower()]
        plain = [p for n, p in named if not (p.ndim > 1 and "norm" not in n.lower())]
        groups += [{"params": decay, "lr": lr, "weight_decay": cfg.weight_decay, "name": f"{part}/decay"},
                   {"params": plain, "lr": lr, "weight_decay": 0.0, "name": f"{part}/no_decay"}]
    return [g for g in groups if g["params"]]


def train(plan: RunPlan, results_root: Path, data_root: str | Path | None, accelerator: Any,
          callbacks: Sequence[Any] = ()) -> tuple[Any, list[dict[str, Any]]]:
    """Train and evaluate one planned run (joint: one model; pipeline: entity model, then relation model).

    The record's ``wall_time_s`` is this whole function: reading and featurising the data, loading the
    encoder(s), training with the dev evaluation of every epoch, predicting and scoring test."""
    import time

    from medibio.blurb.registry import Problem
    from medibio.finetune import modeling, trainer
    from medibio.runs import records as rec
    from medibio.scierc import data, metrics
    from medibio.scierc.task import SciercTask

    started = time.perf_counter()
    cfg = plan.config
    full = {s: data.load_split(s, data_root) for s in data.SPLITS}
    splits = {"train": subsample(full["train"], cfg.max_train_docs), "dev": subsample(full["dev"], cfg.max_dev_docs),
              "test": subsample(full["test"], cfg.max_test_docs)}
    notes = [n for d in splits["train"] for n in d.notes]
    for split, cap in (("train", cfg.max_train_docs), ("dev", cfg.max_dev_docs)):
        if cap is not None and len(full[split]) > cap:
            notes.append(f"{split}: random subset of {len(splits[split])} of {len(full[split])} documents "
                         f"(seed {SUBSET_SEED})" + ("; model selection and dev scores on this subset"
                                                    if split == "dev" else ""))
    if cfg.max_test_docs is not None and len(full["test"]) > cfg.max_test_docs:
        notes.append(f"test: capped to {len(splits['test'])} of {len(full['test'])} documents "
                     f"({plan.profile.name} profile): NOT an official score")
    if cfg.train_layers is not None:
        notes.append(f"encoder: embeddings and all but the top {cfg.train_layers} layers frozen")
    tokenizer = modeling.load_tokenizer(plan.model, Problem.TOKEN)
    fcfg = cfg.finetune_config()
    stages: list[Any] = []
    if cfg.mode == "joint":
        task = SciercTask(splits, tokenizer, cfg, ("ner", "relation", "coref"))
        net = _build(plan, task.heads, typed=False)
        result = trainer.fit_task(net, task, fcfg, accelerator, plan.seed, callbacks,
                                  parameter_groups=_groups(net, cfg))
        stages.append(("joint", result, net))
        predictions = result.test_predictions
        test, dev = result.test, result.dev
    else:
        ent_task = SciercTask(splits, tokenizer, cfg, ("ner", "coref"), name="SciERC entities")
        ent_net = _build(plan, ent_task.heads, typed=False)
        ent = trainer.fit_task(ent_net, ent_task, fcfg, accelerator, plan.seed, callbacks,
                               parameter_groups=_groups(ent_net, cfg))
        predicted = {split: {p["doc_key"]: p["entities"] for p in ent_task.predict(ent_net, split)}
                     for split in ("dev", "test")}
        rel_task = SciercTask(splits, tokenizer, cfg, ("relation",), name="SciERC relations", entities=predicted)
        rel_net = _build(plan, rel_task.heads, typed=True)
        rel = trainer.fit_task(rel_net, rel_task, fcfg, accelerator, plan.seed, callbacks,
                               parameter_groups=_groups(rel_net, cfg))
        stages += [("entity", ent, ent_net), ("relation", rel, rel_net)]
        rel_by_doc = {p["doc_key"]: p["relations"] for p in rel.test_predictions}
        predictions = [{**p, "relations": rel_by_doc.get(p["doc_key"], [])} for p in ent.test_predictions]
        test = metrics.flat(metrics.score_documents(splits["test"], predictions))
        test["score"] = round((test["ner_f1"] + test["rel_f1"] + test["coref_f1"]) / 3, 4)
        dev = {**ent.dev, **{k: v for k, v in rel.dev.items() if k.startswith("rel")}}
        dev["score"] = round((dev["ner_f1"] + dev["rel_f1"] + dev["coref_f1"]) / 3, 4)
    main = stages[-1][1]
    lost = (task if cfg.mode == "joint" else ent_task).lost_words()
    if any(lost.values()):
        notes.append(f"words beyond max_length={cfg.max_length} in a single sentence (no span there): {lost}")
    curve = [{**entry, "stage": name} for name, res, _ in stages for entry in res.dev_curve]
    env = rec.environment_info()
    info = rec.model_info(plan.model)
    info["parameters"] = sum(sum(p.numel() for p in net.parameters()) for _, _, net in stages)
    if accelerator.device.type != "cuda":
        notes.append(CPU_MEMORY_NOTE)
    train_time = sum(res.train_time_s for _, res, _ in stages)
    seen = sum(res.train_examples_per_s * res.train_time_s for _, res, _ in stages)
    hyper = cfg.to_dict()
    hyper.update(per_device_batch_size=main.per_device_batch_size,
                 optimizer_steps=sum(res.optimizer_steps for _, res, _ in stages), subset_seed=SUBSET_SEED,
                 dev_examples=main.dev_examples, mixed_precision_used=str(accelerator.mixed_precision))
    record = rec.RunRecord(
        dataset=DATASET, model=info, profile=plan.profile.name, seed=plan.seed, variant=cfg.mode, kind=KIND,
        group="SciERC", problem="span", hyperparameters=hyper, dev_curve=curve,
        best_epoch=stages[0][1].best_epoch, dev=dev, test=test, score_dev=dev.get("score"),
        score_test=test.get("score"), predictions=plan.key.predictions_path(results_root).name,
        train_examples=len(splits["train"]), eval_examples=len(splits["test"]),
        wall_time_s=round(time.perf_counter() - started, 2),
        train_examples_per_s=round(seen / train_time, 3) if train_time else 0.0,
        peak_memory_mb=round(max(res.peak_memory_mb for _, res, _ in stages), 1),
        device=trainer.device_name(accelerator), num_processes=accelerator.num_processes, versions=env["versions"],
        git_commit=env["git_commit"],
        notes=notes + [n for _, res, _ in stages for n in res.notes] + _stage_notes(stages),
        config_digest=plan.key.config_digest, config=plan.payload, request=plan.request,
    )
    for _, _, net in stages:
        del net
    accelerator.free_memory()
    return record, predictions


def _stage_notes(stages: Sequence[tuple[str, Any, Any]]) -> list[str]:
    if len(stages) == 1:
        return []
    return [f"pipeline {name} model: best dev epoch {res.best_epoch} (dev score {res.dev.get('score', 0):.2f})"
            for name, res, _ in stages]
