"""SciERC runs: plan (identity), train through the shared loop, write one record per (model, seed).

A run's identity is the digest of its effective configuration — :class:`~medibio.scierc.presets.SciercConfig`,
the encoder's fingerprint, the SciERC files' checksums and the subset seed — so a record is reused only when
the request's configuration equals it; anything else trains into a record of its own
(``<results>/scierc/<profile>/<model>/<mode>/SciERC/<digest>/seed<N>.json``, test predictions beside it).
Lock, atomic writes and reuse are those of every run (:mod:`medibio.runs.protocol`): a run killed at any
point leaves no record and is redone by the next request, while finished seeds are reused.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from medibio.core import profiles
from medibio.core.hashing import files_fingerprint
from medibio.core.precision import AcceleratorWhenTraining
from medibio.core.profiles import Profile
from medibio.core.settings import Settings
from medibio.models import heads, zoo
from medibio.runs import protocol
from medibio.runs import records as rec
from medibio.runs.launch import launch_request, request_args
from medibio.runs.protocol import SUBSET_SEED, Outcome, Plan, RunContext
from medibio.scierc import presets
from medibio.scierc.presets import SPAN_MODEL
from medibio.tasks import scierc, scierc_metrics
from medibio.tasks.spec import Problem
from medibio.training import features
from medibio.training.loop import fit

if TYPE_CHECKING:
    from medibio.scierc.model import SpanModel

KIND = "scierc"
DATASET = scierc.SPEC.name
# what peak memory means in a CPU record (the trainer reads the process-wide maximum resident set size)
CPU_MEMORY_NOTE = ("peak_memory_mb on CPU: the process's largest resident set size so far (getrusage "
                   "ru_maxrss), not this run's alone: later seeds in one process report at least the earlier ones' "
                   "peak")


@dataclass(frozen=True)
class Job:
    """What training a planned SciERC run needs."""

    model: str
    seed: int
    profile: Profile
    config: presets.SciercConfig


def plan_run(model: str | None = None, seed: int = 1, profile: str | Profile = profiles.DEFAULT_PROFILE,
             overrides: Mapping[str, Any] | None = None, settings: Settings | None = None) -> Plan:
    """Resolve one run into its configuration and run key (nothing is trained)."""
    settings = settings or Settings()
    prof = settings.profile(profile)
    model = str(model or prof.model)
    cfg = presets.preset(prof, overrides)
    files = [scierc.split_path(s, settings.data_root) for s in scierc.SPLITS]
    configuration = {"dataset": DATASET, "model": zoo.fingerprint(model, settings.cache_root),
                     "scierc": cfg.to_dict(), "span_model": SPAN_MODEL, "subset_seed": SUBSET_SEED,
                     "data": files_fingerprint(files, root=settings.data_root)}
    request = {"model": model, "profile": prof.name, "limit": prof.limit, "seed": int(seed),
               "overrides": {k: v for k, v in (overrides or {}).items() if v is not None}}
    tag = zoo.model_tag(model)
    return protocol.plan(KIND, prof.name, tag, cfg.mode, DATASET, seed, configuration, request,
                         f"SciERC seed {seed} [{cfg.mode}] {tag}", Job(model, int(seed), prof, cfg))


def plan_runs(model: str | None = None, seeds: int | str | Sequence[int] | None = None,
              profile: str | Profile = profiles.DEFAULT_PROFILE, overrides: Mapping[str, Any] | None = None,
              settings: Settings | None = None) -> list[Plan]:
    settings = settings or Settings()
    prof = settings.profile(profile)
    return [plan_run(model, s, prof, overrides, settings)
            for s in (profiles.parse_seeds(seeds) or list(presets.seeds(prof)))]


def run_scierc(model: str | None = None, seeds: int | str | Sequence[int] | None = None,
               profile: str | Profile = profiles.DEFAULT_PROFILE, overrides: Mapping[str, Any] | None = None,
               force: bool = False, callbacks: Sequence[Any] = (), settings: Settings | None = None) -> list[Any]:
    """Train (or reuse) one SciERC run per seed and return the records (the profile's seeds by default).

    ``overrides`` are :class:`~medibio.scierc.presets.SciercConfig` fields (``mode="pipeline"``, ``epochs``,
    caps ...). Works in a plain process and under ``accelerate launch`` (only the main process writes).
    ``callbacks`` are the training loop's (``callback("epoch_end", epoch=..., ...)``). With
    ``settings.processes`` above 1 (``medibio book --processes N``) the request goes through ``accelerate
    launch`` in that many processes, as fine-tuning does.
    """
    settings = settings or Settings()
    plain = {k: v for k, v in (overrides or {}).items() if v is not None}
    if settings.processes > 1:
        if callbacks:
            raise ValueError(f"callbacks cannot follow runs into {settings.processes} launched processes; "
                             "run with one process")
        args = request_args(["scierc", "train"], profiles.get(profile).name, model, profiles.parse_seeds(seeds),
                            force)
        launch_request(args, plain, settings)
        found = [rec.find_record(settings.results_root, plan.key)
                 for plan in plan_runs(model, seeds, profile, plain, settings)]
        return [r for r in found if r is not None]
    plans = plan_runs(model, seeds, profile, overrides, settings)
    accelerator = AcceleratorWhenTraining(plans[0].job.config.mixed_precision if plans else "no", settings.launched)
    kind = SciercKind(callbacks)
    return [protocol.run(kind, plan, settings, accelerator, force)[0] for plan in plans]


def _build(job: Job, source: str, head_names: Sequence[str], typed: bool) -> SpanModel:
    from accelerate.utils import set_seed
    from transformers import AutoModel
    from transformers.utils import logging as hf_logging

    from medibio.scierc.model import SpanModel  # torch, as the task: imported where a model trains
    from medibio.training.stability import freeze_all_but_top

    set_seed(job.seed)
    level = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    try:
        encoder = AutoModel.from_pretrained(source)
    finally:
        hf_logging.set_verbosity(level)
    if job.config.train_layers is not None:
        freeze_all_but_top(encoder, job.config.train_layers)
    return SpanModel(encoder, job.config, head_names, typed_relations=typed)


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


class SciercKind:
    """SciERC as a kind of run (:class:`medibio.runs.protocol.Kind`); ``callbacks`` follow training."""

    name = KIND

    def __init__(self, callbacks: Sequence[Any] = ()) -> None:
        self.callbacks = tuple(callbacks)

    def replan(self, request: Mapping[str, Any], settings: Settings) -> Plan:
        return plan_run(request["model"], request["seed"], request["profile"], request.get("overrides") or None,
                        dataclasses.replace(settings, limit=request.get("limit")))

    def describe(self, record: rec.RunRecord) -> str:
        t = record.test
        return (f"dev {record.score_dev:.2f} (epoch {record.best_epoch}); test NER {t.get('ner_f1', 0):.1f}, "
                f"REL {t.get('rel_f1', 0):.1f}, REL+ {t.get('relplus_f1', 0):.1f}, Coref {t.get('coref_f1', 0):.1f}")

    def train(self, plan: Plan, ctx: RunContext) -> Outcome:
        """Train and evaluate one planned run (joint: one model; pipeline: entity model, then relation model).

        The record's ``wall_time_s`` is this whole method: reading and featurising the data, loading the
        encoder(s), training with the dev evaluation of every epoch, predicting and scoring test."""
        from medibio.scierc.task import SciercTask

        job: Job = plan.job
        accelerator, callbacks = ctx.accelerator, self.callbacks
        started = time.perf_counter()
        cfg = job.config
        full = {s: scierc.load_split(s, ctx.settings.data_root) for s in scierc.SPLITS}
        splits, notes = features.capped_splits(
            full, {"train": cfg.max_train_docs, "dev": cfg.max_dev_docs, "test": cfg.max_test_docs},
            SUBSET_SEED, "documents", job.profile.name)
        notes = [n for d in splits["train"] for n in d.notes] + notes
        source = zoo.resolve(job.model, ctx.settings.cache_root)
        tokenizer = heads.load_tokenizer(source, Problem.TOKEN)
        fcfg = cfg.finetune_config()
        parts: list[Any] = []
        if cfg.mode == "joint":
            task = SciercTask(splits, tokenizer, cfg, ("ner", "relation", "coref"))
            net = _build(job, source, task.heads, typed=False)
            result = fit(net, task, fcfg, accelerator, job.seed, callbacks, parameter_groups=_groups(net, cfg))
            parts.append(("joint", result, net))
            predictions = result.test_predictions
            test, dev = result.test, result.dev
        else:
            ent_task = SciercTask(splits, tokenizer, cfg, ("ner", "coref"), name="SciERC entities")
            ent_net = _build(job, source, ent_task.heads, typed=False)
            ent = fit(ent_net, ent_task, fcfg, accelerator, job.seed, callbacks,
                      parameter_groups=_groups(ent_net, cfg))
            predicted = {split: {p["doc_key"]: p["entities"] for p in ent_task.predict(ent_net, split)}
                         for split in ("dev", "test")}
            rel_task = SciercTask(splits, tokenizer, cfg, ("relation",), name="SciERC relations",
                                  entities=predicted)
            rel_net = _build(job, source, rel_task.heads, typed=True)
            rel = fit(rel_net, rel_task, fcfg, accelerator, job.seed, callbacks,
                      parameter_groups=_groups(rel_net, cfg))
            parts += [("entity", ent, ent_net), ("relation", rel, rel_net)]
            rel_by_doc = {p["doc_key"]: p["relations"] for p in rel.test_predictions}
            predictions = [{**p, "relations": rel_by_doc.get(p["doc_key"], [])} for p in ent.test_predictions]
            test = scierc_metrics.flat(scierc_metrics.score_documents(splits["test"], predictions))
            test["score"] = round((test["ner_f1"] + test["rel_f1"] + test["coref_f1"]) / 3, 4)
            dev = {**ent.dev, **{k: v for k, v in rel.dev.items() if k.startswith("rel")}}
            dev["score"] = round((dev["ner_f1"] + dev["rel_f1"] + dev["coref_f1"]) / 3, 4)
        main = parts[-1][1]
        if cfg.train_layers is not None:
            notes.append(f"encoder: embeddings and all but the top {cfg.train_layers} layers frozen"
                         + ("; they run once per document window, without dropout"
                            if any(net.split is not None for _, _, net in parts) else ""))
        lost = (task if cfg.mode == "joint" else ent_task).lost_words()
        if any(lost.values()):
            notes.append(f"words beyond max_length={cfg.max_length} in a single sentence (no span there): {lost}")
        curve = [{**entry, "part": name} for name, res, _ in parts for entry in res.dev_curve]
        info = zoo.model_info(job.model, cache_root=ctx.settings.cache_root)
        info["parameters"] = sum(sum(p.numel() for p in net.parameters()) for _, _, net in parts)
        if accelerator.device.type != "cuda":
            notes.append(CPU_MEMORY_NOTE)
        train_time = sum(res.train_time_s for _, res, _ in parts)
        seen = sum(res.train_examples_per_s * res.train_time_s for _, res, _ in parts)
        hyper = cfg.to_dict()
        hyper.update(per_device_batch_size=main.per_device_batch_size,
                     optimizer_steps=sum(res.optimizer_steps for _, res, _ in parts), subset_seed=SUBSET_SEED,
                     dev_examples=main.dev_examples, mixed_precision_used=str(accelerator.mixed_precision))
        record = ctx.record(
            model=info, group="SciERC", problem="span", hyperparameters=hyper, dev_curve=curve,
            best_epoch=parts[0][1].best_epoch, dev=dev, test=test, score_dev=dev.get("score"),
            score_test=test.get("score"), train_examples=len(splits["train"]), eval_examples=len(splits["test"]),
            wall_time_s=round(time.perf_counter() - started, 2),
            train_examples_per_s=round(seen / train_time, 3) if train_time else 0.0,
            peak_memory_mb=round(max(res.peak_memory_mb for _, res, _ in parts), 1),
            notes=notes + [n for _, res, _ in parts for n in res.notes] + _part_notes(parts))
        for _, _, net in parts:
            del net
        accelerator.free_memory()
        return Outcome(record, predictions)


def _part_notes(parts: Sequence[tuple[str, Any, Any]]) -> list[str]:
    if len(parts) == 1:
        return []
    return [f"pipeline {name} model: best dev epoch {res.best_epoch} (dev score {res.dev.get('score', 0):.2f})"
            for name, res, _ in parts]
