"""Fine-tuning throughput per task type: dynamic padding + length buckets against fixed max-length padding.

For each task (default: one per task type: token BC5-chem, relation ChemProt and GAD, regression BIOSSES,
multi-label HoC, sentence-pair QA PubMedQA) a model (default: the packaged MiniLM) trains one pass over a
seeded sample of the training set with the profile's max length, batch size and precision (bf16 autocast
where the CPU has it), after one untimed warm-up batch, then predicts as many dev examples. It prints
training and inference examples/s, padded tokens per example and peak memory, once per padding mode.
These rates size the caps of the ``cpu`` profile in :mod:`medibio.finetune.presets`.

Each measurement runs in its own child process: on CPU the peak is the process's maximum resident set
size (``ru_maxrss``), which only ever grows, so a shared process would hide the smaller mode's peak. On a
GPU the peak is ``torch.cuda.max_memory_allocated``. Rates per CPU second are printed too: on a machine
shared with other jobs, wall time measures the neighbours as much as the work.

    python -m medibio.finetune.benchmark                       # all default tasks, both padding modes
    python -m medibio.finetune.benchmark --tasks ChemProt --examples 128 --json
    python benchmarks/finetune_speed.py ...                     # the same command
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Sequence
from typing import Any

DEFAULT_TASKS = ("BC5-chem", "ChemProt", "GAD", "BIOSSES", "HoC", "PubMedQA")
MODES = ("dynamic", "fixed")


def _peak_mb(device: Any) -> float:
    import torch

    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / 2**20
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure(task: str, model_name: str = "minilm", examples: int = 64, profile: str = "cpu",
            pad_to_max_length: bool = False, data_root: Any = None, seed: int = 0,
            max_length: int | None = None, fp32: bool = False) -> dict[str, Any]:
    """Train one pass over ``examples`` training examples and predict as many dev examples; time both.

    Uses the engine's own tokenisation, collator, bucketing sampler and optimiser, so the rates describe
    the real training loop. ``quiet_*`` rates divide CPU time by the thread count: an estimate of the rate
    on an otherwise idle machine.
    """
    import torch
    from torch.utils.data import DataLoader
    from transformers.utils import logging as hf_logging

    from medibio.blurb import registry
    from medibio.blurb.loaders import load_blurb
    from medibio.finetune import features, modeling, presets, trainer

    hf_logging.set_verbosity_error()
    spec = registry.get(task)
    cfg = presets.preset(spec.name, profile).replace(pad_to_max_length=pad_to_max_length,
                                                     length_bucketing=not pad_to_max_length)
    if max_length:
        cfg = cfg.replace(max_length=max_length)
    if fp32:
        cfg = cfg.replace(mixed_precision="no")
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    data = load_blurb(spec.name, data_root, splits=["train", "dev"])
    tokenizer = modeling.load_tokenizer(model_name, spec.problem)
    model = modeling.build_model(spec, model_name, cfg.dropout, seed=seed).to(device)
    optimizer, _ = trainer.build_optimizer(model, cfg)
    collate = features.Collator(tokenizer, spec.problem, cfg.max_length if pad_to_max_length else None)
    use_amp = cfg.mixed_precision == "bf16" and (device.type == "cuda" or trainer.cpu_has_bf16())

    def loader(split: str, shuffle: bool, batch_size: int) -> tuple[DataLoader, int, list[int]]:
        raw = features.subsample(data[split], examples, seed)
        enc = features.encode(raw, spec, tokenizer, cfg.max_length, desc=f"tokenise {split}")
        sampler = features.LengthBucketSampler(enc["length"], batch_size, seed, shuffle=shuffle,
                                               bucketing=not pad_to_max_length)
        return DataLoader(enc, batch_sampler=sampler, collate_fn=collate), len(enc), enc["length"]

    def to_device(batch: dict) -> dict:
        batch.pop("index")
        return {k: v.to(device) for k, v in batch.items()}

    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    train_loader, n_train, lengths = loader("train", True, cfg.batch_size)
    batches = [to_device(b) for b in train_loader]
    model.train()
    for i, batch in enumerate([batches[0], *batches]):  # first: warm-up, not timed
        if i == 1:
            if device.type == "cuda":
                torch.cuda.synchronize()
            t0, c0 = time.perf_counter(), time.process_time()
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=use_amp):
            loss = model(**batch).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    if device.type == "cuda":
        torch.cuda.synchronize()
    train_s, train_cpu = time.perf_counter() - t0, time.process_time() - c0
    padded_tokens = sum(b["input_ids"].numel() for b in batches)
    real_tokens = sum(int(b["attention_mask"].sum()) for b in batches)
    eval_loader, n_eval, _ = loader("dev", False, cfg.eval_batch_size)
    model.eval()
    t0, c0 = time.perf_counter(), time.process_time()
    with torch.no_grad(), torch.autocast(device.type, dtype=torch.bfloat16, enabled=use_amp):
        for batch in eval_loader:
            model(**{k: v for k, v in to_device(batch).items() if k != "labels"})
    if device.type == "cuda":
        torch.cuda.synchronize()
    eval_s, eval_cpu = time.perf_counter() - t0, time.process_time() - c0
    threads = torch.get_num_threads()
    return {"task": spec.name, "problem": spec.problem.value,
            "padding": "max_length" if pad_to_max_length else "dynamic+buckets", "max_length": cfg.max_length,
            "batch_size": cfg.batch_size, "train_examples": n_train,
            "mean_tokens": round(sum(lengths) / len(lengths), 1),
            "padded_tokens_per_example": round(padded_tokens / n_train, 1),
            "padding_share": round(1 - real_tokens / padded_tokens, 3),
            "train_examples_per_s": round(n_train / train_s, 2), "eval_examples_per_s": round(n_eval / eval_s, 2),
            "train_examples_per_cpu_s": round(n_train / train_cpu, 2),
            "eval_examples_per_cpu_s": round(n_eval / eval_cpu, 2),
            "quiet_train_examples_per_s": round(threads * n_train / train_cpu, 2),
            "quiet_eval_examples_per_s": round(threads * n_eval / eval_cpu, 2),
            "precision": "bf16" if use_amp else "fp32", "peak_memory_mb": round(_peak_mb(device), 1),
            "memory_kind": "cuda max_memory_allocated" if device.type == "cuda" else "process max RSS",
            "device": trainer.device_name(_FakeAcc(device)), "torch_threads": threads}


class _FakeAcc:
    """Just enough of an ``Accelerator`` for :func:`medibio.finetune.trainer.device_name`."""

    def __init__(self, device: Any) -> None:
        self.device = device
        self.num_processes = 1


def measure_in_child(**kwargs: Any) -> dict[str, Any]:
    """:func:`measure` in a fresh interpreter, so that each measurement has its own memory peak."""
    cmd = [sys.executable, "-m", "medibio.finetune.benchmark", "--child", json.dumps(kwargs, default=str)]
    env = {**os.environ, "TOKENIZERS_PARALLELISM": "false"}
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"benchmark of {kwargs.get('task')} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def run(tasks: Sequence[str] = DEFAULT_TASKS, model: str = "minilm", examples: int = 64, profile: str = "cpu",
        modes: Sequence[str] = MODES, max_length: int | None = None, fp32: bool = False,
        isolate: bool = True, progress: bool = True) -> list[dict[str, Any]]:
    """Measure every task in every padding mode; one child process per measurement unless ``isolate=False``."""
    unknown = sorted(set(modes) - set(MODES))
    if unknown:
        raise ValueError(f"unknown padding mode(s) {unknown}; known: {', '.join(MODES)}")
    rows = []
    for task in tasks:
        for mode in modes:
            kwargs = {"task": task, "model_name": model, "examples": examples, "profile": profile,
                      "pad_to_max_length": mode == "fixed", "max_length": max_length, "fp32": fp32}
            row = measure_in_child(**kwargs) if isolate else measure(**kwargs)
            rows.append(row)
            if progress:
                print(f"  {row['task']:<10} {mode:<8} train {row['train_examples_per_s']:7.1f} ex/s  "
                      f"peak {row['peak_memory_mb']:.0f} MB", file=sys.stderr, flush=True)
    return rows


def table(rows: Sequence[dict[str, Any]]) -> str:
    """A fixed-width text table with the dynamic/fixed training speed-up per task."""
    head = (f"{'task':<12} {'type':<10} {'padding':<16} {'len':>4} {'tok/ex':>7} {'pad%':>5} {'train/s':>8} "
            f"{'quiet':>7} {'eval/s':>8} {'peak MB':>8} {'speed-up':>8}")
    lines = [head, "-" * len(head)]
    fixed = {r["task"]: r["train_examples_per_s"] for r in rows if r["padding"] == "max_length"}
    for r in rows:
        ratio = (r["train_examples_per_s"] / fixed[r["task"]]
                 if r["padding"] != "max_length" and fixed.get(r["task"]) else None)
        kind = r["problem"].replace("_classification", "")  # token, sequence, multilabel, regression
        lines.append(f"{r['task']:<12} {kind:<10} {r['padding']:<16} {r['max_length']:>4} "
                     f"{r['padded_tokens_per_example']:7.1f} {100 * r['padding_share']:4.0f}% "
                     f"{r['train_examples_per_s']:8.1f} {r['quiet_train_examples_per_s']:7.1f} "
                     f"{r['eval_examples_per_s']:8.1f} {r['peak_memory_mb']:8.0f} "
                     + (f"{ratio:7.1f}x" if ratio else ""))
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", default=",".join(DEFAULT_TASKS), help="comma list of BLURB datasets")
    parser.add_argument("--model", default="minilm", help="model name or folder (default: minilm)")
    parser.add_argument("--examples", type=int, default=64, help="training (and dev) examples per measurement")
    parser.add_argument("--profile", default="cpu", help="whose max lengths, batch sizes and precision to use")
    parser.add_argument("--modes", default=",".join(MODES), help="padding modes: dynamic,fixed")
    parser.add_argument("--max-length", type=int, default=None, help="override the profile's max lengths")
    parser.add_argument("--fp32", action="store_true", help="no bf16 autocast (default: the profile's setting)")
    parser.add_argument("--same-process", action="store_true",
                        help="measure in this process (faster; CPU memory peaks then accumulate)")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON instead of a table")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(measure(**json.loads(args.child))))
        return
    rows = run([t for t in args.tasks.split(",") if t], args.model, args.examples, args.profile,
               [m for m in args.modes.split(",") if m], args.max_length, args.fp32, isolate=not args.same_process)
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    first = rows[0] if rows else {}
    print(f"model={args.model} profile={args.profile} device={first.get('device')} "
          f"precision={first.get('precision')} examples={args.examples} memory={first.get('memory_kind')}")
    print(table(rows))


if __name__ == "__main__":
    main()
