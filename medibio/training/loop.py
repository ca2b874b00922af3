"""The one training loop behind every fine-tuning run: BLURB datasets, intermediate tasks and SciERC's span
model (any encoder, 1..n processes).

:func:`fit` trains a :class:`TrainingTask`: the task owns its batches, its loss and its evaluation
(:class:`SupervisedTask` for the BLURB and intermediate tasks; SciERC brings its own); the loop owns
everything else: AdamW with linear warm-up then linear decay (``get_linear_schedule_with_warmup``),
gradient clipping and accumulation, mixed precision through accelerate, the dev curve and the choice of the
best epoch. After every epoch the model is evaluated on dev with the task's own metric; the weights of the
best dev epoch are kept in CPU memory and the test predictions come from them (the test set is never looked
at for selection). Evaluation batches are gathered across processes and put back in dataset order by their
row index.
"""

from __future__ import annotations

import math
import resource
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from medibio.core import precision, progress
from medibio.core.errors import MedibioError
from medibio.tasks.metrics import score
from medibio.tasks.spec import Problem, TaskSpec
from medibio.training import features
from medibio.training.config import FinetuneConfig
from medibio.training.options import StabilityOptions

Callback = Callable[..., None]  # callback(event, **info); events: "epoch_end"


class TrainingDivergedError(MedibioError, ArithmeticError):
    """The training loss became NaN or infinite: the weights are garbage from here on, so the run stops at once
    (instead of ending in NaN predictions that the prediction checks blame on one test example)."""

    def __init__(self, step: int, epoch: int, learning_rate: float, outputs: str = "") -> None:
        self.step = step
        what = (f"training diverged (NaN/inf in the {outputs} outputs after" if outputs
                else "the loss diverged (NaN/inf at")
        super().__init__(f"{what} step {step}, epoch {epoch}); lower --lr (the learning rate was {learning_rate:g})")


def _everywhere(accelerator: Any, holds: bool) -> bool:
    """Whether ``holds`` is true in every process: all of them must take the same branch before the next
    collective operation (one process raising alone would leave the others waiting in it)."""
    if accelerator.num_processes == 1:
        return holds
    import torch

    flag = torch.tensor([0.0 if holds else 1.0], device=accelerator.device)
    return float(accelerator.reduce(flag, reduction="sum").item()) == 0.0


class _NonFiniteOutputs(ArithmeticError):
    """An evaluation met NaN/inf logits; :func:`_train_epochs` says at which step training diverged."""


@dataclass
class FitResult:
    """What one training run produced; the runner turns it into a run record."""

    dev_curve: list[dict[str, Any]]
    best_epoch: int
    dev: dict[str, float]
    test: dict[str, float]
    test_predictions: list[dict[str, Any]]  # {"id", "prediction"} in test-set order
    train_examples: int
    dev_examples: int
    test_examples: int
    optimizer_steps: int
    per_device_batch_size: int
    train_time_s: float
    wall_time_s: float
    train_examples_per_s: float
    peak_memory_mb: float
    notes: list[str] = field(default_factory=list)




@runtime_checkable
class TrainingTask(Protocol):
    """What :func:`fit` trains, without knowing its data.

    ``setup`` builds what training needs before the optimiser exists (the training loader and its batch
    sampler, whose ``set_epoch`` is called when present; the dev evaluation) and adds notes for the record;
    ``evaluate`` returns metrics (``score`` on 0-100 selects the dev epoch) and predictions of a split, given
    the model as the loop holds it; for ``test`` it also gets the selected epoch's dev metrics (a decision
    threshold chosen on dev).
    """

    name: str

    def setup(self, accelerator: Any, per_device_batch_size: int, seed: int, notes: list[str]) -> tuple[Any, Any]:
        """The training DataLoader and its batch sampler."""

    def loss(self, model: Any, batch: Any) -> Any:
        """The scalar training loss of one batch."""

    def batch_examples(self, batch: Any) -> int:
        """How many training examples a batch holds (for examples/s)."""

    def evaluate(self, model: Any, split: str, selected: dict[str, float] | None = None
                 ) -> tuple[dict[str, float], list[Any]]:
        """Metrics and predictions of ``split``."""

    def split_size(self, split: str) -> int:
        """Examples in a split (0 when absent)."""


def _peak_memory_mb(accelerator: Any) -> float:
    import torch

    if accelerator.device.type == "cuda":
        return torch.cuda.max_memory_allocated(accelerator.device) / 2**20
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def batch_layout(accelerator: Any, cfg: FinetuneConfig) -> tuple[int, list[str]]:
    """Per-device batch that keeps the configured effective batch over processes x accumulation (set on
    the accelerator), and a note when the effective batch cannot be met exactly."""
    nproc = accelerator.num_processes
    per_device = max(1, cfg.batch_size // (nproc * cfg.grad_accum))
    notes: list[str] = []
    if per_device * nproc * cfg.grad_accum != cfg.batch_size:
        notes.append(f"effective batch {per_device * nproc * cfg.grad_accum} (asked {cfg.batch_size}: "
                     f"{nproc} processes x {cfg.grad_accum} accumulation steps)")
    accelerator.gradient_accumulation_steps = cfg.grad_accum
    return per_device, notes


def stability_options(cfg: FinetuneConfig) -> StabilityOptions:
    """The config's stability switches as :class:`medibio.training.options.StabilityOptions`."""
    return StabilityOptions.from_config(cfg)


def build_optimizer(model: Any, cfg: FinetuneConfig) -> tuple[Any, list[str]]:
    """Apply the stability options (re-initialisation, freezing) in place and build AdamW over the
    parameter groups (no weight decay on biases/LayerNorm, optional layer-wise LR decay).

    Returns the optimiser and notes for the record on what was changed.
    """
    from medibio.training import stability  # torch: imported where a model trains, not where runs are planned

    opts = stability_options(cfg)
    done = stability.apply_model_surgery(model, opts)
    groups = stability.param_groups(model, cfg.learning_rate, cfg.weight_decay, opts)
    optimizer = stability.make_optimizer(groups, lr=cfg.learning_rate, opts=opts, eps=cfg.adam_epsilon)
    notes = opts.describe()
    if done.get("reinitialised_layers"):
        notes.append(f"re-initialised encoder layers {done['reinitialised_layers']}")
    if done.get("frozen_parameters"):
        notes.append(f"frozen: {', '.join(done['frozen_tiers'])} ({done['frozen_parameters']} parameters)")
    return optimizer, notes


def linear_schedule(optimizer: Any, cfg: FinetuneConfig, total_steps: int) -> Any:
    """Linear warm-up over ``cfg.warmup_ratio`` of ``total_steps`` optimiser steps, then linear decay to 0."""
    from transformers import get_linear_schedule_with_warmup

    return get_linear_schedule_with_warmup(optimizer, math.ceil(cfg.warmup_ratio * total_steps), total_steps)


class Evaluator:
    """Predictions for one split (encoded once, dataloader prepared once, reused every epoch)."""

    def __init__(self, raw: Any, spec: TaskSpec, tokenizer: Any, cfg: FinetuneConfig, accelerator: Any,
                 split: str) -> None:
        from torch.utils.data import DataLoader

        self.raw = raw
        self.spec = spec
        self.split = split
        self.problem = Problem(spec.problem)
        self.labels = features.label_list(spec)
        self.accelerator = accelerator
        self.encoded = features.encode(raw, spec, tokenizer, cfg.max_length, desc=f"tokenise {split}")
        sampler = features.LengthBucketSampler(self.encoded["length"], cfg.eval_batch_size, seed=0, shuffle=False)
        collate = features.Collator(tokenizer, self.problem, cfg.max_length if cfg.pad_to_max_length else None)
        self.loader = accelerator.prepare(DataLoader(self.encoded, batch_sampler=sampler, collate_fn=collate))
        if self.problem is Problem.TOKEN:
            self.word_ids = list(self.encoded["word_ids"])  # read once: a datasets column is slow row by row
            self.n_words = list(self.encoded["n_words"])
        self.references = features.references(raw, self.problem)

    def predict(self, model: Any, threshold: float = 0.5) -> tuple[list[Any], int]:
        """Predictions in split order in the scoring format, and the number of words never seen."""
        self.last_outputs = self._outputs(model)
        return self.decode(self.last_outputs, threshold)

    def _outputs(self, model: Any) -> list[Any]:
        """Raw per-example outputs (token label ids, or logits) in split order."""
        import torch

        acc = self.accelerator
        model.eval()
        net = precision.evaluation_model(model, acc)
        outputs: dict[int, Any] = {}
        finite = True
        bar = progress.bar(f"{self.spec.name} {self.split}", len(self.loader), unit="batch",
                           disable=not acc.is_local_main_process, minor=True)
        with torch.no_grad(), bar:
            for batch in self.loader:
                bar.update(1)
                index = batch.pop("index")
                batch.pop("labels", None)
                logits = net(**batch).logits
                finite = finite and bool(torch.isfinite(logits).all())
                if self.problem is Problem.TOKEN:
                    out = acc.pad_across_processes(logits.argmax(-1), dim=1, pad_index=-1)
                else:
                    out = logits.float()
                # processes hold whole batches of different sizes (the sampler's note): pad the rows to a common
                # count for the gather, then drop the padding (index -1) and the examples seen twice
                index = acc.pad_across_processes(index, dim=0, pad_index=-1)
                out = acc.pad_across_processes(out, dim=0, pad_index=-1)
                index, out = acc.gather((index, out))
                for i, row in zip(index.tolist(), out.cpu().tolist(), strict=True):
                    if i >= 0:
                        outputs.setdefault(i, row)
        if not _everywhere(acc, finite):  # every process stops together (a lone raise would hang the others)
            raise _NonFiniteOutputs(self.split)
        missing_rows = [i for i in range(len(self.raw)) if i not in outputs]
        if missing_rows:
            raise RuntimeError(f"{self.spec.name} {self.split}: no prediction for rows {missing_rows[:5]}")
        return [outputs[i] for i in range(len(self.raw))]

    def decode(self, outputs: list[Any], threshold: float = 0.5) -> tuple[list[Any], int]:
        """Turn raw outputs into predictions in the scoring format."""
        preds: list[Any] = []
        unseen = 0
        default = features.outside_label(self.spec) if self.problem is Problem.TOKEN else None
        for i in range(len(self.raw)):
            if self.problem is Problem.TOKEN:
                tags, lost = features.decode_token_predictions(outputs[i], self.word_ids[i], self.n_words[i],
                                                               self.labels, default)
                preds.append(tags)
                unseen += lost
            else:
                preds.append(features.decode_sequence_prediction(outputs[i], self.problem, self.labels,
                                                                 threshold))
        return preds, unseen

    def evaluate(self, model: Any, threshold: float = 0.5) -> tuple[dict[str, float], list[Any], int]:
        preds, unseen = self.predict(model, threshold)
        return score(self.spec, self.references, preds, self.raw["id"]), preds, unseen

    def evaluate_tuned(self, model: Any) -> tuple[dict[str, float], float]:
        """Dev metrics at the best multi-label decision threshold (selection on dev, never on test).

        Small or imbalanced multi-label training sets (HoC: most hallmarks are absent from most abstracts)
        leave every sigmoid under 0.5 early in training, which scores 0 at the default cut-off although
        the ranking of labels is already informative. Other problems use the plain evaluation.
        """
        metrics, _, _ = self.evaluate(model)
        if self.problem is not Problem.MULTILABEL:
            return metrics, 0.5
        best, best_t = metrics, 0.5
        for t in features.MULTILABEL_THRESHOLDS[1:]:
            preds, _ = self.decode(self.last_outputs, t)
            candidate = score(self.spec, self.references, preds, self.raw["id"])
            if candidate["score"] > best["score"]:
                best, best_t = candidate, t
        return {**best, "threshold": best_t}, best_t


def class_weighted_loss(cfg: FinetuneConfig, spec: TaskSpec, train_labels: Sequence[int], device: Any,
                        notes: list[str]) -> Callable[[Any, Any], Any] | None:
    """The weighted cross-entropy of ``cfg.class_weighting`` (``None``: the model's own loss).

    Only single-label tasks use it; elsewhere the option is noted as ignored. The weights go into ``notes``
    so that the run record says what the loss was.
    """
    import torch

    if cfg.class_weighting == "none":
        return None
    if Problem(spec.problem) is not Problem.CLASSIFY:
        notes.append(f"class_weighting={cfg.class_weighting!r} ignored: only single-label tasks use it")
        return None
    labels = features.label_list(spec)
    weights = features.class_weights(train_labels, len(labels), cfg.class_weighting)
    notes.append(f"class-weighted loss ({cfg.class_weighting}): "
                 + ", ".join(f"{name} {w:.2f}" for name, w in zip(labels, weights, strict=True)))
    weight = torch.tensor(weights, dtype=torch.float, device=device)

    def loss(logits: Any, target: Any) -> Any:
        return torch.nn.functional.cross_entropy(logits.float(), target, weight=weight)

    return loss


class SupervisedTask:
    """A BLURB dataset or an intermediate task as a :class:`TrainingTask`: ``splits`` are the loaders' raw
    splits, already capped by the caller; inputs are encoded with :func:`medibio.training.features.encode`,
    batches bucketed by length, the loss is the model's own or :func:`class_weighted_loss`."""

    def __init__(self, spec: TaskSpec, tokenizer: Any, splits: Any, cfg: FinetuneConfig, seed: int) -> None:
        self.spec = spec
        self.name = f"{spec.name} seed {seed}"
        self.tokenizer = tokenizer
        self.splits = splits
        self.cfg = cfg
        self.problem = Problem(spec.problem)
        self.loss_fn: Callable[[Any, Any], Any] | None = None
        self.dev: Evaluator | None = None

    def setup(self, accelerator: Any, per_device_batch_size: int, seed: int, notes: list[str]) -> tuple[Any, Any]:
        from torch.utils.data import DataLoader

        cfg = self.cfg
        self.accelerator, self.notes = accelerator, notes
        train = features.encode(self.splits["train"], self.spec, self.tokenizer, cfg.max_length,
                                desc="tokenise train")
        sampler = features.LengthBucketSampler(train["length"], per_device_batch_size, seed=seed, shuffle=True,
                                               bucketing=cfg.length_bucketing)
        collate = features.Collator(self.tokenizer, self.problem, cfg.max_length if cfg.pad_to_max_length else None)
        loader = DataLoader(train, batch_sampler=sampler, collate_fn=collate)
        self.dev = Evaluator(self.splits["dev"], self.spec, self.tokenizer, cfg, accelerator, "dev")
        self.loss_fn = class_weighted_loss(cfg, self.spec, train["labels"], accelerator.device, notes)
        return loader, sampler

    def loss(self, model: Any, batch: Any) -> Any:
        batch.pop("index")
        if self.loss_fn is None:
            return model(**batch).loss
        target = batch.pop("labels")
        return self.loss_fn(model(**batch).logits, target)

    def batch_examples(self, batch: Any) -> int:
        return batch["input_ids"].shape[0]

    def split_size(self, split: str) -> int:
        return len(self.splits[split]) if split in self.splits else 0

    def evaluate(self, model: Any, split: str, selected: dict[str, float] | None = None
                 ) -> tuple[dict[str, float], list[Any]]:
        if split == "dev":
            assert self.dev is not None, "setup() first"
            metrics, _ = self.dev.evaluate_tuned(model)
            return metrics, []
        threshold = (selected or {}).get("threshold", 0.5)
        test = Evaluator(self.splits[split], self.spec, self.tokenizer, self.cfg, self.accelerator, split)
        metrics, preds, unseen = test.evaluate(model, threshold)
        if self.problem is Problem.MULTILABEL:
            self.notes.append(f"multi-label decision threshold {threshold} chosen on dev")
        if unseen:
            self.notes.append(f"{unseen} {split} words beyond max_length={self.cfg.max_length} predicted as "
                              f"{features.outside_label(self.spec)!r}")
        ids = self.splits[split]["id"]
        return metrics, [{"id": i, "prediction": p} for i, p in zip(ids, preds, strict=True)]


@dataclass
class _Loop:
    curve: list[dict[str, Any]]
    best_epoch: int
    best_dev: dict[str, float]
    best_state: dict[str, Any] | None
    step: int
    train_time: float
    seen: int


def _train_epochs(model: Any, optimizer: Any, scheduler: Any, train_loader: Any, sampler: Any,
                  cfg: FinetuneConfig, accelerator: Any, epochs: int, step_loss: Callable[[Any], Any],
                  count: Callable[[Any], int], evaluate_dev: Callable[[Any], dict[str, float]],
                  callbacks: Sequence[Callback], title: str) -> _Loop:
    """The epochs of every run: accumulate, clip, step, evaluate on dev, keep the best epoch's weights."""
    nproc = accelerator.num_processes
    curve: list[dict[str, Any]] = []
    best_score, best_epoch, best_state, best_dev = -math.inf, 0, None, {}
    step, train_time, seen = 0, 0.0, 0
    bar = progress.bar(title, len(train_loader) * epochs, disable=not accelerator.is_local_main_process)
    for epoch in range(1, epochs + 1):
        if hasattr(sampler, "set_epoch"):
            sampler.set_epoch(epoch)
        model.train()
        t0 = time.perf_counter()
        loss_sum, loss_n = 0.0, 0
        for batch in train_loader:
            n_examples = count(batch)
            with accelerator.accumulate(model):
                loss = step_loss(batch)
                value = loss.detach().float().item()
                if not _everywhere(accelerator, math.isfinite(value)):  # the optimiser step in progress is step + 1
                    raise TrainingDivergedError(step + 1, epoch, cfg.learning_rate)
                accelerator.backward(loss)
                if accelerator.sync_gradients:
                    if cfg.max_grad_norm:
                        accelerator.clip_grad_norm_(model.parameters(), cfg.max_grad_norm)
                    step += 1
                optimizer.step()
                if accelerator.sync_gradients and not accelerator.optimizer_step_was_skipped:
                    scheduler.step()
                optimizer.zero_grad()
            loss_sum += value
            loss_n += 1
            seen += n_examples * nproc
            bar.set_postfix_str(f"epoch {epoch}/{epochs}, loss {loss_sum / loss_n:.4f}", refresh=False)
            bar.update(1)
        train_time += time.perf_counter() - t0
        try:
            dev_metrics = evaluate_dev(model)
        except _NonFiniteOutputs:
            raise TrainingDivergedError(step, epoch, cfg.learning_rate, "dev") from None
        entry = {"epoch": epoch, "step": step, "train_loss": loss_sum / max(1, loss_n), "dev": dev_metrics}
        curve.append(entry)
        if dev_metrics["score"] > best_score:  # strict: ties keep the earlier (cheaper) epoch
            best_score, best_epoch, best_dev = dev_metrics["score"], epoch, dev_metrics
            unwrapped = accelerator.unwrap_model(model)
            best_state = {k: v.detach().to("cpu", copy=True) for k, v in unwrapped.state_dict().items()}
        for cb in callbacks:
            cb("epoch_end", epoch=epoch, model=accelerator.unwrap_model(model), dev=dev_metrics, step=step)
    bar.close()
    return _Loop(curve, best_epoch, best_dev, best_state, step, train_time, seen)


def fit(model: Any, task: TrainingTask, cfg: FinetuneConfig, accelerator: Any, seed: int,
        callbacks: Sequence[Callback] = (), run_test: bool = True,
        parameter_groups: list[dict[str, Any]] | None = None) -> FitResult:
    """Train ``task`` on its training split, select the epoch on dev, predict test; the model gets the best
    dev epoch's weights back at the end (so the caller can save its encoder for intermediate fine-tuning).
    ``parameter_groups`` replaces the encoder-style AdamW groups of :func:`build_optimizer` (task heads
    that learn faster than the encoder)."""
    import torch
    from accelerate.utils import set_seed

    from medibio.models.dropout import use_cheap_dropout
    from medibio.training import stability

    started = time.perf_counter()
    if accelerator.device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(accelerator.device)
    set_seed(seed)
    per_device, notes = batch_layout(accelerator, cfg)
    train_loader, sampler = task.setup(accelerator, per_device, seed, notes)
    if parameter_groups is None:
        optimizer, stability_notes = build_optimizer(model, cfg)
        notes.extend(stability_notes)
    else:
        optimizer = stability.make_optimizer(parameter_groups, lr=cfg.learning_rate, opts=stability_options(cfg),
                                             eps=cfg.adam_epsilon)
    use_cheap_dropout(model, accelerator.device)
    model, optimizer, train_loader = accelerator.prepare(model, optimizer, train_loader)
    epochs = cfg.effective_epochs
    scheduler = linear_schedule(optimizer, cfg, math.ceil(len(train_loader) / cfg.grad_accum) * epochs)

    def evaluate_dev(net: Any) -> dict[str, float]:
        return task.evaluate(net, "dev")[0]

    loop = _train_epochs(model, optimizer, scheduler, train_loader, sampler, cfg, accelerator, epochs,
                         lambda batch: task.loss(model, batch), task.batch_examples, evaluate_dev, callbacks,
                         f"{task.name} train")
    if loop.best_state is not None:
        accelerator.unwrap_model(model).load_state_dict(loop.best_state)
    test_metrics: dict[str, float] = {}
    test_preds: list[Any] = []
    if run_test and task.split_size("test"):
        test_metrics, test_preds = task.evaluate(model, "test", loop.best_dev)
    return FitResult(
        dev_curve=loop.curve, best_epoch=loop.best_epoch, dev=loop.best_dev, test=test_metrics,
        test_predictions=test_preds, train_examples=task.split_size("train"), dev_examples=task.split_size("dev"),
        test_examples=task.split_size("test") if run_test else 0, optimizer_steps=loop.step,
        per_device_batch_size=per_device, train_time_s=loop.train_time, wall_time_s=time.perf_counter() - started,
        train_examples_per_s=loop.seen / loop.train_time if loop.train_time else 0.0,
        peak_memory_mb=_peak_memory_mb(accelerator), notes=notes,
    )
