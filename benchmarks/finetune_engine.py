"""Fine-tuning speed per task type: our engine against the Hugging Face ``Trainer``, and padding modes.

**Against the Trainer** (:func:`compare`): for one task of each type (NER BC5-chem, relation ChemProt,
multi-label HoC, sentence-similarity regression BIOSSES) the same model, the same seeded train/dev/test
subsets, epochs, learning rate, batch size, warm-up, weight decay, clipping, precision and seed go through
(a) ``medibio.finetune.runner.run_finetune`` (length-bucketed dynamic padding, best dev epoch kept in
memory) and (b) ``transformers.Trainer`` as a user would set it up: ``DataCollatorWithPadding``
(``DataCollatorForTokenClassification`` for NER, the same dynamic padding plus label padding), random
batches, evaluation on dev and a checkpoint every epoch, ``load_best_model_at_end``. The Trainer gets the
same model (head and pooling), loss (class weighting) and optimiser parameter groups (head learning rate) as
our engine, so that the two differ only in the loop around them and reach comparable scores. Both are
scored on test by the same code. Printed: training examples/s (time inside the epochs' training loops), end-to-end
wall time, peak memory, test score and the speed ratio.

For each task (default: one per task type: token BC5-chem, relation ChemProt and GAD, regression BIOSSES,
multi-label HoC, sentence-pair QA PubMedQA) a model (default: the packaged MiniLM) trains one pass over a
seeded sample of the training set with the profile's max length, batch size and precision (bf16 autocast
where the CPU has it), after one untimed warm-up batch, then predicts as many dev examples. It prints
training and inference examples/s, padded tokens per example and peak memory, once per padding mode, and
the MFU of training (whole and per epoch) and inference against the matmul peak measured around the run,
beside the share of an epoch's time its matmuls would take alone (:mod:`benchmarks.limits`). These rates size the caps of the
``cpu`` profile in :mod:`medibio.training.config`.

The folders (data, cache) come from a :class:`~medibio.core.settings.Settings` (``settings=``; the command
line builds it from ``MEDIBIO_*``), and child processes get it through their environment.

Each measurement runs in its own child process: on CPU the peak is the process's maximum resident set
size (``ru_maxrss``), which only ever grows, so a shared process would hide the smaller mode's peak. On a
GPU the peak is ``torch.cuda.max_memory_allocated``. Rates per CPU second are printed too: on a machine
shared with other jobs, wall time measures the neighbours as much as the work.

    python -m benchmarks.finetune_engine                       # Trainer comparison + padding modes
    python -m benchmarks.finetune_engine --quick               # the same in a few minutes
    python -m benchmarks.finetune_engine --only padding --tasks ChemProt --examples 128 --json
    python -m benchmarks.finetune_speed ...                     # the same command
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from benchmarks import limits
from medibio.core.paths import REPO_ROOT
from medibio.core.settings import Settings

DEFAULT_TASKS = ("BC5-chem", "ChemProt", "GAD", "BIOSSES", "HoC", "PubMedQA")
MODES = ("dynamic", "fixed")
COMPARE_TASKS = ("BC5-chem", "ChemProt", "HoC", "BIOSSES")  # token, relation, multi-label, regression
ENGINES = ("medibio", "hf-trainer")
# examples per split (train, dev, test) and epochs: the default measurement and --quick
COMPARE_SIZES = {"default": (64, 32, 64, 2), "quick": (32, 16, 32, 1)}
UNSTEADY = 0.25  # peak_spread above which a row's MFU is flagged (the shared machine's speed moved)


def _peak_mb(device: Any) -> float:
    import torch

    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / 2**20
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@dataclass
class Engine:
    """The engine's pieces for one task, as ``medibio finetune`` builds them: model, optimiser, precision and
    the tokenised, length-bucketed batches of a seeded sample (shared by :func:`measure` and the profiler)."""

    spec: Any
    cfg: Any
    model: Any
    optimizer: Any
    device: Any
    use_amp: bool
    loader: Callable[[str, bool, int], tuple[Any, int, list[int]]]
    forward: Any  # what a training step calls: ``model``, or ``torch.compile(model)`` under ``compiled``

    def to_device(self, batch: dict) -> dict:
        batch.pop("index")
        return {k: v.to(self.device) for k, v in batch.items()}

    def autocast(self) -> Any:
        import torch

        return torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.use_amp)


def prepare(task: str, model_name: str = "minilm", examples: int = 64, profile: str = "cpu",
            pad_to_max_length: bool = False, seed: int = 0, max_length: int | None = None, fp32: bool = False,
            settings: Settings | None = None, batch_size: int | None = None,
            frozen_word_embeddings: bool = False, compiled: bool = False) -> Engine:
    """Build :class:`Engine` for ``task`` from the profile's preset (``fp32``: no bf16 autocast; ``batch_size``:
    another training batch; ``frozen_word_embeddings``: the word-embedding matrix does not learn, which bounds
    what any sparse or lazy update of its rows could save; ``compiled``: training steps go through
    ``torch.compile(model, dynamic=True)``, with PyTorch's dropout, which inductor fuses, instead of
    :mod:`medibio.models.dropout`, whose ``random_`` breaks the graph at every dropout)."""
    import torch
    from torch.utils.data import DataLoader
    from transformers.utils import logging as hf_logging

    from medibio.core import precision as accel
    from medibio.models import heads as modeling
    from medibio.models import zoo
    from medibio.models.dropout import use_cheap_dropout
    from medibio.tasks import registry
    from medibio.tasks.loaders import load_blurb
    from medibio.training import config as presets
    from medibio.training import features
    from medibio.training import loop as trainer

    hf_logging.set_verbosity_error()
    settings = settings or Settings()
    spec = registry.get(task, "blurb")
    model_name = zoo.resolve(model_name, settings.cache_root)
    cfg = presets.preset(spec.name, profile).replace(pad_to_max_length=pad_to_max_length,
                                                     length_bucketing=not pad_to_max_length)
    if max_length:
        cfg = cfg.replace(max_length=max_length)
    if fp32:
        cfg = cfg.replace(mixed_precision="no")
    if batch_size:
        cfg = cfg.replace(batch_size=batch_size)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    data = load_blurb(spec.name, settings.data_root, splits=["train", "dev"])
    tokenizer = modeling.load_tokenizer(model_name, spec.problem)
    model = modeling.build_model(spec, model_name, cfg.dropout, seed=seed).to(device)
    if not compiled:
        use_cheap_dropout(model, device)  # as fit() does
    if frozen_word_embeddings:
        model.get_input_embeddings().weight.requires_grad_(False)
    optimizer, _ = trainer.build_optimizer(model, cfg)
    collate = features.Collator(tokenizer, spec.problem, cfg.max_length if pad_to_max_length else None)
    use_amp = accel.precision_for(requested=cfg.mixed_precision) == "bf16"

    def loader(split: str, shuffle: bool, batch_size: int) -> tuple[DataLoader, int, list[int]]:
        raw = features.subsample(data[split], examples, seed)
        enc = features.encode(raw, spec, tokenizer, cfg.max_length, desc=f"tokenise {split}")
        sampler = features.LengthBucketSampler(enc["length"], batch_size, seed, shuffle=shuffle,
                                               bucketing=not pad_to_max_length)
        return DataLoader(enc, batch_sampler=sampler, collate_fn=collate), len(enc), enc["length"]

    forward = torch.compile(model, dynamic=True) if compiled else model
    return Engine(spec, cfg, model, optimizer, device, use_amp, loader, forward)


def measure(task: str, model_name: str = "minilm", examples: int = 64, profile: str = "cpu",
            pad_to_max_length: bool = False, seed: int = 0, max_length: int | None = None, fp32: bool = False,
            settings: Settings | None = None, epochs: int | None = None, batch_size: int | None = None,
            frozen_word_embeddings: bool = False, compiled: bool = False) -> dict[str, Any]:
    """Train ``epochs`` passes (default: the preset's) over ``examples`` training examples and predict as many
    dev examples; time both, and each epoch. The first epoch is slower than the next on a CPU in bf16: each new
    batch shape costs oneDNN a kernel build, and a run meets its shapes again from its second epoch on.

    Uses the engine's own tokenisation, collator, bucketing sampler, optimiser, clipping and schedule, so the
    rates describe the real training step. ``quiet_*`` rates divide CPU time by the thread count: an estimate
    of the rate on an otherwise idle machine. MFU is against the matmul peak measured right before and after
    training (:func:`benchmarks.limits.bracketed_peak`), for the whole training and per epoch; ``matmul_share``
    is the time an epoch's matmuls take alone (:func:`benchmarks.limits.replay_seconds`) over the last epoch's.
    """
    import torch

    from medibio.core import precision as accel
    from medibio.runs.protocol import device_name
    from medibio.training import loop as trainer

    engine = prepare(task, model_name, examples, profile, pad_to_max_length, seed, max_length, fp32, settings,
                     batch_size, frozen_word_embeddings, compiled)
    spec, cfg, model, optimizer, device = engine.spec, engine.cfg, engine.model, engine.optimizer, engine.device
    loader, to_device, use_amp = engine.loader, engine.to_device, engine.use_amp

    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    train_loader, n_train, lengths = loader("train", True, cfg.batch_size)
    batches = [to_device(b) for b in train_loader]
    epochs = epochs or cfg.effective_epochs
    scheduler = trainer.linear_schedule(optimizer, cfg, epochs * len(batches) + 1)  # + the warm-up step
    precision = "bf16" if use_amp else "fp32"

    def forward_backward(batch: dict, forward: Any = model) -> None:
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=use_amp):
            loss = forward(**batch).loss
        loss.backward()

    def step(batch: dict) -> None:  # the engine's step (medibio.training.loop): clip, AdamW, schedule
        forward_backward(batch, engine.forward)
        if cfg.max_grad_norm:
            torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.max_grad_norm)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()

    model.train()
    epoch_s: list[float] = []
    with accel.attention_kernels(), limits.bracketed_peak(precision, device.type) as peak:  # as runs train
        step(batches[0])  # warm-up, not timed (under ``compiled``: the compilation)
        limits.synchronize(device)
        c0 = time.process_time()
        for _ in range(epochs):
            t0 = time.perf_counter()
            for batch in batches:
                step(batch)
            limits.synchronize(device)
            epoch_s.append(time.perf_counter() - t0)
        train_s, train_cpu = sum(epoch_s), time.process_time() - c0
    padded_tokens = sum(b["input_ids"].numel() for b in batches)
    real_tokens = sum(int(b["attention_mask"].sum()) for b in batches)
    eval_loader, n_eval, _ = loader("dev", False, cfg.eval_batch_size)
    eval_batches = [to_device(b) for b in eval_loader]
    model.eval()
    t0, c0 = time.perf_counter(), time.process_time()
    copied = accel.evaluation_copy(model, device.type, "bf16" if use_amp else "no")  # as the engine evaluates
    net = model if copied is None else copied
    with (torch.no_grad(), accel.attention_kernels(),
          torch.autocast(device.type, dtype=torch.bfloat16, enabled=use_amp and copied is None)):
        for batch in eval_batches:
            net(**{k: v for k, v in batch.items() if k != "labels"})
    limits.synchronize(device)
    eval_s, eval_cpu = time.perf_counter() - t0, time.process_time() - c0
    model.train()  # an epoch's matmuls alone (benchmarks.limits: ceiling)
    matmuls = limits.record_matmuls(lambda: [forward_backward(b) for b in batches])
    optimizer.zero_grad()
    matmul_s = limits.replay_seconds(matmuls)
    threads = torch.get_num_threads()
    encoder = model.base_model
    epoch_flops = limits.batch_flops(encoder, batches, training=True)
    eval_flops = limits.batch_flops(encoder, eval_batches, training=False)
    eval_tokens = sum(int(b["attention_mask"].sum()) for b in eval_batches)
    top = peak["peak_tflops"]
    trained, evaluated = (limits.utilisation(epoch_flops * epochs, train_s, top),
                          limits.utilisation(eval_flops, eval_s, top))
    seen = n_train * epochs
    return {"task": spec.name, "problem": spec.problem.value,
            "padding": "max_length" if pad_to_max_length else "dynamic+buckets", "max_length": cfg.max_length,
            "batch_size": cfg.batch_size, "train_examples": n_train,
            "word_embeddings": "frozen" if frozen_word_embeddings else "trained", "compiled": compiled,
            "mean_tokens": round(sum(lengths) / len(lengths), 1),
            "padded_tokens_per_example": round(padded_tokens / n_train, 1),
            "padding_share": round(1 - real_tokens / padded_tokens, 3),
            "epochs": epochs,
            "train_examples_per_s": round(seen / train_s, 2), "eval_examples_per_s": round(n_eval / eval_s, 2),
            "train_examples_per_cpu_s": round(seen / train_cpu, 2),
            "eval_examples_per_cpu_s": round(n_eval / eval_cpu, 2),
            "quiet_train_examples_per_s": round(threads * seen / train_cpu, 2),
            "quiet_eval_examples_per_s": round(threads * n_eval / eval_cpu, 2),
            "train_tokens_per_s": round(real_tokens * epochs / train_s, 1),
            "eval_tokens_per_s": round(eval_tokens / eval_s, 1),
            "train_model_tflops": trained["tflops"], "eval_model_tflops": evaluated["tflops"],
            "train_mfu": trained["mfu"], "eval_mfu": evaluated["mfu"],
            "epoch_mfu": [limits.utilisation(epoch_flops, t, top)["mfu"] for t in epoch_s], **peak,
            "matmul_only_s": round(matmul_s, 3), "matmul_share": round(matmul_s / epoch_s[-1], 3),
            "matmul_tflops": round(limits.matmul_flops(matmuls) / matmul_s / 1e12, 4),
            "non_embedding_parameters": limits.non_embedding_parameters(encoder),
            "precision": precision, "peak_memory_mb": round(_peak_mb(device), 1),
            "memory_kind": "cuda max_memory_allocated" if device.type == "cuda" else "process max RSS",
            "device": device_name(_FakeAcc(device)), "torch_threads": threads}


class _FakeAcc:
    """Just enough of an ``Accelerator`` for :func:`medibio.runs.protocol.device_name`."""

    def __init__(self, device: Any) -> None:
        self.device = device
        self.num_processes = 1


def measure_in_child(settings: Settings | None = None, **kwargs: Any) -> dict[str, Any]:
    """:func:`measure` in a fresh interpreter, so that each measurement has its own memory peak."""
    return _child("measure", kwargs, str(kwargs.get("task")), settings)


def run(tasks: Sequence[str] = DEFAULT_TASKS, model: str = "minilm", examples: int = 64, profile: str = "cpu",
        modes: Sequence[str] = MODES, max_length: int | None = None, fp32: bool = False,
        isolate: bool = True, progress: bool = True, settings: Settings | None = None,
        epochs: int | None = None, batch_size: int | None = None,
        frozen_word_embeddings: bool = False, compiled: bool = False) -> list[dict[str, Any]]:
    """Measure every task in every padding mode; one child process per measurement unless ``isolate=False``.
    Each row carries its MFU against the peak measured around its own training (:func:`measure`).
    """
    unknown = sorted(set(modes) - set(MODES))
    if unknown:
        raise ValueError(f"unknown padding mode(s) {unknown}; known: {', '.join(MODES)}")
    rows = []
    for task in tasks:
        for mode in modes:
            kwargs = {"task": task, "model_name": model, "examples": examples, "profile": profile,
                      "pad_to_max_length": mode == "fixed", "max_length": max_length, "fp32": fp32, "epochs": epochs,
                      "batch_size": batch_size, "frozen_word_embeddings": frozen_word_embeddings,
                      "compiled": compiled}
            row = measure_in_child(settings, **kwargs) if isolate else measure(**kwargs, settings=settings)
            rows.append(row)
            if progress:
                print(f"  {row['task']:<10} {mode:<8} train {row['train_examples_per_s']:7.1f} ex/s  "
                      f"peak {row['peak_memory_mb']:.0f} MB", file=sys.stderr, flush=True)
    return rows


def table(rows: Sequence[dict[str, Any]]) -> str:
    """A fixed-width text table with the dynamic/fixed training speed-up per task."""
    head = (f"{'task':<12} {'type':<10} {'padding':<16} {'len':>4} {'tok/ex':>7} {'pad%':>5} {'train/s':>8} "
            f"{'quiet':>7} {'eval/s':>8} {'tok/s':>7} {'TFLOP/s':>7} {'peak':>6} {'MFU':>5} {'per epoch':>11} {'mm%':>4} "
            f"{'evalMFU':>7} {'peak MB':>8} "
            f"{'speed-up':>8}")
    lines = [head, "-" * len(head)]
    fixed = {r["task"]: r["train_examples_per_s"] for r in rows if r["padding"] == "max_length"}
    for r in rows:
        ratio = (r["train_examples_per_s"] / fixed[r["task"]]
                 if r["padding"] != "max_length" and fixed.get(r["task"]) else None)
        kind = r["problem"].replace("_classification", "")  # token, sequence, multilabel, regression
        lines.append(f"{r['task']:<12} {kind:<10} {r['padding']:<16} {r['max_length']:>4} "
                     f"{r['padded_tokens_per_example']:7.1f} {100 * r['padding_share']:4.0f}% "
                     f"{r['train_examples_per_s']:8.1f} {r['quiet_train_examples_per_s']:7.1f} "
                     f"{r['eval_examples_per_s']:8.1f} {r['train_tokens_per_s']:7.0f} "
                     f"{r['train_model_tflops']:7.3f} {r['peak_tflops']:5.2f}{'!' if _unsteady(r) else ' '} "
                     f"{_percent(r.get('train_mfu')):>5} "
                     f"{'/'.join(_percent(m) for m in r['epoch_mfu']):>11} {100 * r['matmul_share']:3.0f}% "
                     f"{_percent(r.get('eval_mfu')):>7} {r['peak_memory_mb']:8.0f} "
                     + (f"{ratio:7.1f}x" if ratio else ""))
    if any(_unsteady(r) for r in rows):
        lines.append(f"! the peak moved by more than {UNSTEADY:.0%} between before and after training "
                     "(peak_before_tflops, peak_after_tflops): that row's MFU measures the machine as much as the engine")
    return "\n".join(lines)


def _unsteady(row: dict[str, Any]) -> bool:
    return row.get("peak_spread", 0.0) > UNSTEADY


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def compare_config(task: str, profile: str, sizes: tuple[int, int, int, int]) -> Any:
    """The fine-tuning config both engines use: the profile's preset with the benchmark's caps and epochs."""
    from medibio.training import config as presets

    train, dev, test, epochs = sizes
    return presets.preset(task, profile).replace(max_train_examples=train, max_dev_examples=dev,
                                                 max_test_examples=test, epochs=epochs, longer_training=1.0)


def _overrides(sizes: tuple[int, int, int, int]) -> dict[str, Any]:
    train, dev, test, epochs = sizes
    return {"max_train_examples": train, "max_dev_examples": dev, "max_test_examples": test, "epochs": epochs,
            "longer_training": 1.0}


def run_medibio(task: str, model_name: str, profile: str, sizes: tuple[int, int, int, int], seed: int,
                settings: Settings | None = None) -> dict[str, Any]:
    """One run of our engine exactly as ``medibio finetune`` makes it (into a throw-away results folder)."""
    from medibio.core import precision as accel
    from medibio.finetune import runner

    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        (rec,) = runner.run_finetune(task, model_name, seeds=seed, profile=profile, config_overrides=_overrides(sizes),
                                     force=True, settings=(settings or Settings()).replace(results_root=tmp))
        wall = time.perf_counter() - t0
    epochs = sizes[3]
    return {"engine": "medibio", "task": rec.dataset, "problem": rec.problem, "train_examples": rec.train_examples,
            "epochs": epochs, "train_examples_per_s": round(rec.train_examples_per_s, 2),
            "wall_s": round(wall, 1), "peak_memory_mb": round(rec.peak_memory_mb, 1),
            "test_score": round(rec.test["score"], 2), "dev_score": round(rec.dev["score"], 2),
            "best_epoch": rec.best_epoch,
            "precision": accel.precision_for(requested=rec.hyperparameters.get("mixed_precision", "no")),
            "device": rec.device}


def run_hf_trainer(task: str, model_name: str, profile: str, sizes: tuple[int, int, int, int], seed: int,
                   settings: Settings | None = None) -> dict[str, Any]:
    """The same run through ``transformers.Trainer`` set up the way its documentation shows."""
    import torch
    from transformers import (
        DataCollatorForTokenClassification,
        DataCollatorWithPadding,
        Trainer,
        TrainerCallback,
        TrainingArguments,
    )
    from transformers.utils import logging as hf_logging

    from medibio.core import precision as accel
    from medibio.models import heads as modeling
    from medibio.models import zoo
    from medibio.runs.protocol import SUBSET_SEED, device_name
    from medibio.tasks import registry
    from medibio.tasks.loaders import load_blurb
    from medibio.tasks.metrics import score
    from medibio.tasks.spec import Problem
    from medibio.training import features
    from medibio.training import loop as trainer

    hf_logging.set_verbosity_error()
    settings = settings or Settings()
    model_name = zoo.resolve(model_name, settings.cache_root)
    spec = registry.get(task, "blurb")
    cfg = compare_config(spec.name, profile, sizes)
    problem = Problem(spec.problem)
    t_start = time.perf_counter()  # from data loading on, like the medibio run's wall time
    data = load_blurb(spec.name, settings.data_root)
    splits = {"train": features.subsample(data["train"], cfg.max_train_examples, SUBSET_SEED),
              "dev": features.subsample(data["dev"], cfg.max_dev_examples, SUBSET_SEED),
              "test": features.subsample(data["test"], cfg.max_test_examples, SUBSET_SEED)}
    model = modeling.build_model(spec, model_name, cfg.dropout, seed=seed, pooling=cfg.pooling)
    tokenizer = modeling.load_tokenizer(model_name, spec.problem)
    keep = {*features.MODEL_INPUTS, "labels"}

    def hf_columns(ds: Any) -> Any:
        return ds.remove_columns([c for c in ds.column_names if c not in keep])

    train = hf_columns(features.encode(splits["train"], spec, tokenizer, cfg.max_length))
    dev_encoded = features.encode(splits["dev"], spec, tokenizer, cfg.max_length)
    accelerator = accel.accelerator(cfg.mixed_precision)
    dev_eval = trainer.Evaluator(splits["dev"], spec, tokenizer, cfg, accelerator, "dev")

    def compute_metrics(pred: Any) -> dict[str, float]:
        logits = pred.predictions[0] if isinstance(pred.predictions, tuple) else pred.predictions
        if problem is Problem.TOKEN:
            outputs = [row.argmax(-1)[:len(dev_eval.word_ids[i])].tolist() for i, row in enumerate(logits)]
        else:
            outputs = [row.tolist() for row in logits]
        preds, _ = dev_eval.decode(outputs)
        return {"score": score(spec, dev_eval.references, preds, splits["dev"]["id"])["score"]}

    class EpochTimer(TrainerCallback):
        """Time inside the training loop of each epoch (evaluation and checkpoints come after on_epoch_end)."""

        def __init__(self) -> None:
            self.seconds = 0.0

        def on_epoch_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.t0 = time.perf_counter()

        def on_epoch_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.seconds += time.perf_counter() - self.t0

    collator = (DataCollatorForTokenClassification(tokenizer) if problem is Problem.TOKEN
                else DataCollatorWithPadding(tokenizer))
    # The same model, loss and optimiser parameter groups as our engine (pooling, class-weighted loss, head
    # learning rate): what differs is only the training loop around them, which is what is measured.
    loss_fn = trainer.class_weighted_loss(cfg, spec, train["labels"], accelerator.device, [])
    optimizer, _ = trainer.build_optimizer(model, cfg)

    def compute_loss(outputs: Any, labels: Any, num_items_in_batch: Any = None) -> Any:
        return loss_fn(outputs.logits, labels) if loss_fn is not None else outputs.loss
    precision = accel.precision_for(requested=cfg.mixed_precision)
    timer = EpochTimer()
    with tempfile.TemporaryDirectory() as tmp:
        args = TrainingArguments(
            output_dir=tmp, per_device_train_batch_size=max(1, cfg.batch_size // cfg.grad_accum),
            gradient_accumulation_steps=cfg.grad_accum, per_device_eval_batch_size=cfg.eval_batch_size,
            learning_rate=cfg.learning_rate, weight_decay=cfg.weight_decay, warmup_steps=float(cfg.warmup_ratio),
            lr_scheduler_type="linear", max_grad_norm=cfg.max_grad_norm, num_train_epochs=cfg.effective_epochs,
            seed=seed, data_seed=seed, eval_strategy="epoch", save_strategy="epoch", save_total_limit=1,
            load_best_model_at_end=True, metric_for_best_model="score", greater_is_better=True,
            bf16=precision == "bf16", fp16=precision == "fp16", use_cpu=accelerator.device.type == "cpu",
            report_to=[], logging_strategy="no", disable_tqdm=True, dataloader_num_workers=0)
        hf = Trainer(model=model, args=args, train_dataset=train,
                     eval_dataset=hf_columns(dev_encoded), data_collator=collator,
                     compute_metrics=compute_metrics, callbacks=[timer], optimizers=(optimizer, None),
                     compute_loss_func=compute_loss if loss_fn is not None else None)
        hf.train()
        best = hf.state.best_metric
        model = hf.model
    test_metrics, _, _ = trainer.Evaluator(splits["test"], spec, tokenizer, cfg, accelerator, "test").evaluate(model)
    wall = time.perf_counter() - t_start
    return {"engine": "hf-trainer", "task": spec.name, "problem": problem.value, "train_examples": len(train),
            "epochs": cfg.effective_epochs,
            "train_examples_per_s": round(len(train) * cfg.effective_epochs / timer.seconds, 2),
            "wall_s": round(wall, 1), "peak_memory_mb": round(_peak_mb(accelerator.device), 1),
            "test_score": round(test_metrics["score"], 2), "dev_score": round(best or 0.0, 2),
            "best_epoch": None, "precision": precision, "device": device_name(accelerator),
            "torch_threads": torch.get_num_threads()}


def _engine_child(engine: str, settings: Settings | None = None, **kwargs: Any) -> dict[str, Any]:
    runner = run_medibio if engine == "medibio" else run_hf_trainer
    return runner(**kwargs, settings=settings)


def compare(tasks: Sequence[str] = COMPARE_TASKS, model: str = "minilm", profile: str = "cpu",
            sizes: tuple[int, int, int, int] = COMPARE_SIZES["default"], seed: int = 1,
            isolate: bool = True, progress: bool = True, settings: Settings | None = None) -> list[dict[str, Any]]:
    """Both engines on every task, each in its own child process (its own memory peak), ours first."""
    rows = []
    for task in tasks:
        for engine in ENGINES:
            kwargs = {"engine": engine, "task": task, "model_name": model, "profile": profile, "sizes": list(sizes),
                      "seed": seed}
            if isolate:
                row = _child("compare", kwargs, f"{engine} on {task}", settings)
            else:
                row = _engine_child(**{**kwargs, "sizes": tuple(sizes)}, settings=settings)
            rows.append(row)
            if progress:
                print(f"  {task:<10} {engine:<10} train {row['train_examples_per_s']:7.1f} ex/s  "
                      f"test {row['test_score']:6.2f}  peak {row['peak_memory_mb']:.0f} MB  wall {row['wall_s']:.0f} s",
                      file=sys.stderr, flush=True)
    return rows


def compare_table(rows: Sequence[dict[str, Any]]) -> str:
    """One line per task and engine, with the speed ratio medibio / Trainer on the Trainer's line."""
    head = (f"{'task':<10} {'type':<10} {'engine':<11} {'train/s':>8} {'wall s':>7} {'peak MB':>8} "
            f"{'test':>7} {'dev':>7} {'speed-up':>8}")
    lines = [head, "-" * len(head)]
    ours = {r["task"]: r for r in rows if r["engine"] == "medibio"}
    for r in rows:
        mine = ours.get(r["task"])
        ratio = (mine["train_examples_per_s"] / r["train_examples_per_s"]
                 if r["engine"] != "medibio" and mine and r["train_examples_per_s"] else None)
        kind = r["problem"].replace("_classification", "")
        lines.append(f"{r['task']:<10} {kind:<10} {r['engine']:<11} {r['train_examples_per_s']:8.1f} "
                     f"{r['wall_s']:7.0f} {r['peak_memory_mb']:8.0f} {r['test_score']:7.2f} {r['dev_score']:7.2f} "
                     + (f"{ratio:7.2f}x" if ratio else ""))
    speedups = [ours[r["task"]]["train_examples_per_s"] / r["train_examples_per_s"] for r in rows
                if r["engine"] != "medibio" and r["task"] in ours and r["train_examples_per_s"]]
    if speedups:
        import statistics

        lines.append(f"training speed medibio / Trainer: geometric mean {statistics.geometric_mean(speedups):.2f}x "
                     f"(min {min(speedups):.2f}x, max {max(speedups):.2f}x)")
    return "\n".join(lines)


def _child(kind: str, kwargs: dict[str, Any], what: str, settings: Settings | None = None) -> dict[str, Any]:
    """A measurement in a fresh interpreter, which rebuilds ``settings`` from its environment."""
    from medibio.core import launch

    cmd = [sys.executable, "-m", "benchmarks.finetune_engine", f"--child-{kind}", json.dumps(kwargs, default=str)]
    done = launch.run(cmd, settings, {"TOKENIZERS_PARALLELISM": "false"}, capture_output=True, text=True,
                      check=False, cwd=REPO_ROOT)  # where `-m benchmarks...` resolves, whatever the caller's cwd
    if done.returncode != 0:
        raise RuntimeError(f"benchmark of {what} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", choices=("trainer", "padding"), default=None,
                        help="run only the Trainer comparison or only the padding-mode table (default: both)")
    parser.add_argument("--quick", action="store_true",
                        help=f"small sizes (train/dev/test/epochs {COMPARE_SIZES['quick']}, padding: 32 examples)")
    parser.add_argument("--tasks", default=None, help="comma list of BLURB datasets "
                        f"(default: {','.join(COMPARE_TASKS)} against the Trainer, {','.join(DEFAULT_TASKS)} padding)")
    parser.add_argument("--model", default="minilm", help="model name or folder (default: minilm)")
    parser.add_argument("--examples", type=int, default=None, help="padding table: training (and dev) examples")
    parser.add_argument("--epochs", type=int, default=None, help="padding table: epochs (default: the preset's)")
    parser.add_argument("--sizes", default=None, help="Trainer comparison: train,dev,test,epochs "
                        f"(default {','.join(map(str, COMPARE_SIZES['default']))})")
    parser.add_argument("--seed", type=int, default=1, help="Trainer comparison: the seed of both engines")
    parser.add_argument("--profile", default="cpu", help="whose max lengths, batch sizes and precision to use")
    parser.add_argument("--modes", default=",".join(MODES), help="padding modes: dynamic,fixed")
    parser.add_argument("--max-length", type=int, default=None, help="override the profile's max lengths")
    parser.add_argument("--fp32", action="store_true", help="no bf16 autocast (default: the profile's setting)")
    parser.add_argument("--batch-size", type=int, default=None,
                        help="padding table: training batch size (default: the preset's)")
    parser.add_argument("--frozen-word-embeddings", action="store_true",
                        help="padding table: the word embeddings do not learn (what a sparse row update could save)")
    parser.add_argument("--compile", action="store_true",
                        help="padding table: train through torch.compile(model, dynamic=True), PyTorch's dropout")
    parser.add_argument("--same-process", action="store_true",
                        help="measure in this process (faster; CPU memory peaks then accumulate)")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON instead of tables")
    parser.add_argument("--child-measure", "--child", dest="child_measure", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--child-compare", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    settings = Settings.from_env()  # this command is a boundary: the only place its settings are read
    if args.child_measure:
        print(json.dumps(measure(**json.loads(args.child_measure), settings=settings)))
        return
    if args.child_compare:
        kwargs = json.loads(args.child_compare)
        print(json.dumps(_engine_child(**{**kwargs, "sizes": tuple(kwargs["sizes"])}, settings=settings)))
        return
    tasks = [t for t in args.tasks.split(",") if t] if args.tasks else None
    out: dict[str, Any] = {}
    if args.only in (None, "trainer"):
        sizes = (tuple(int(x) for x in args.sizes.split(",")) if args.sizes
                 else COMPARE_SIZES["quick" if args.quick else "default"])
        if len(sizes) != 4:
            parser.error(f"--sizes: expected train,dev,test,epochs (four integers), got {args.sizes!r}")
        rows = compare(tasks or COMPARE_TASKS, args.model, args.profile, sizes, args.seed,  # type: ignore[arg-type]
                       isolate=not args.same_process, settings=settings)
        out["trainer"] = rows
        if not args.json:
            first = rows[0] if rows else {}
            print(f"medibio vs transformers.Trainer: model={args.model} profile={args.profile} "
                  f"device={first.get('device')} precision={first.get('precision')} "
                  f"train/dev/test/epochs={','.join(map(str, sizes))} seed={args.seed}")
            print(compare_table(rows))
    if args.only in (None, "padding"):
        examples = args.examples or (32 if args.quick else 64)
        rows = run(tasks or DEFAULT_TASKS, args.model, examples, args.profile,
                   [m for m in args.modes.split(",") if m], args.max_length, args.fp32, isolate=not args.same_process,
                   settings=settings, epochs=args.epochs, batch_size=args.batch_size,
                   frozen_word_embeddings=args.frozen_word_embeddings, compiled=args.compile)
        out["padding"] = rows
        if not args.json:
            first = rows[0] if rows else {}
            print(f"\npadding modes: model={args.model} profile={args.profile} device={first.get('device')} "
                  f"precision={first.get('precision')} examples={examples} memory={first.get('memory_kind')} "
                  f"batch={first.get('batch_size')} word embeddings {first.get('word_embeddings')}"
                  f"{' torch.compile' if first.get('compiled') else ''}")
            print(table(rows))
    if args.json:
        print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
