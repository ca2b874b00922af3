"""Budget sizing for the ``cpu`` profile: training *and* inference rates per task under a profile's settings.

``python -m medibio.finetune.benchmark --model minilm --examples 64`` trains one pass over a seeded sample of
each task's training set (after one warm-up batch) with the profile's max length, batch size and precision
(bf16 autocast where the CPU has it), once with dynamic padding + length buckets and once padded to the max
length, and predicts a dev sample; it prints examples/s (wall and per CPU second) and peak memory. These
rates size the caps in :mod:`medibio.finetune.presets`. ``benchmarks/finetune_speed.py`` is the
stand-alone padding comparison (fp32 training steps, one child process per measurement).
Peak memory is the process's resident peak on CPU (``ru_maxrss``: it only grows, so later rows include
earlier ones) and ``torch.cuda.max_memory_allocated`` per measurement on GPU.
"""

from __future__ import annotations

import argparse
import json
import resource
import time
from collections.abc import Sequence
from typing import Any

DEFAULT_TASKS = ("BC5-chem", "ChemProt", "GAD", "BIOSSES", "HoC", "PubMedQA")


def _peak_mb(device: Any) -> float:
    import torch

    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / 2**20
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure(task: str, model_name: str = "minilm", examples: int = 64, profile: str = "cpu",
            pad_to_max_length: bool = False, data_root: Any = None, seed: int = 0,
            max_length: int | None = None, fp32: bool = False) -> dict[str, Any]:
    """Train one pass over ``examples`` training examples and predict as many dev examples; time both.

    Besides wall-clock rates, rates per *CPU* second of this process are reported (``*_per_cpu_s``): on a
    machine shared with other jobs wall time mostly measures the neighbours, CPU time the work itself;
    ``quiet_*`` divides by the thread count to estimate the rate on an otherwise idle machine.
    """
    import torch
    from accelerate.utils import set_seed
    from torch.utils.data import DataLoader

    from medibio.blurb import registry
    from medibio.blurb.loaders import load_blurb
    from medibio.finetune import features, modeling, presets, trainer

    spec = registry.get(task)
    cfg = presets.preset(spec.name, profile).replace(pad_to_max_length=pad_to_max_length,
                                                     length_bucketing=not pad_to_max_length)
    if max_length:
        cfg = cfg.replace(max_length=max_length)
    if fp32:
        cfg = cfg.replace(mixed_precision="no")
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    set_seed(seed)
    data = load_blurb(spec.name, data_root, splits=["train", "dev"])
    tokenizer = modeling.load_tokenizer(model_name, spec.problem)
    model = modeling.build_model(spec, model_name, cfg.dropout).to(device)
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
    return {"task": spec.name, "problem": spec.problem.value, "padding": "max_length" if pad_to_max_length
            else "dynamic+buckets", "max_length": cfg.max_length, "batch_size": cfg.batch_size,
            "train_examples": n_train, "mean_tokens": round(sum(lengths) / len(lengths), 1),
            "padded_tokens_per_example": round(padded_tokens / n_train, 1),
            "train_examples_per_s": round(n_train / train_s, 2), "eval_examples_per_s": round(n_eval / eval_s, 2),
            "train_examples_per_cpu_s": round(n_train / train_cpu, 2),
            "eval_examples_per_cpu_s": round(n_eval / eval_cpu, 2),
            "quiet_train_examples_per_s": round(threads * n_train / train_cpu, 2),
            "quiet_eval_examples_per_s": round(threads * n_eval / eval_cpu, 2),
            "precision": "bf16" if use_amp else "fp32", "peak_memory_mb": round(_peak_mb(device), 1),
            "device": trainer.device_name(_FakeAcc(device))}


class _FakeAcc:
    """Just enough of an ``Accelerator`` for :func:`medibio.finetune.trainer.device_name`."""

    def __init__(self, device: Any) -> None:
        self.device = device
        self.num_processes = 1


def run(tasks: Sequence[str] = DEFAULT_TASKS, model: str = "minilm", examples: int = 64, profile: str = "cpu",
        compare_fixed: bool = True, max_length: int | None = None, fp32: bool = False) -> list[dict[str, Any]]:
    rows = []
    for task in tasks:
        rows.append(measure(task, model, examples, profile, max_length=max_length, fp32=fp32))
        if compare_fixed:
            rows.append(measure(task, model, examples, profile, pad_to_max_length=True, max_length=max_length,
                                fp32=fp32))
    return rows


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default=",".join(DEFAULT_TASKS))
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--examples", type=int, default=64, help="training (and dev) examples per measurement")
    parser.add_argument("--profile", default="cpu", help="whose max lengths and batch sizes to use")
    parser.add_argument("--no-fixed", action="store_true", help="skip the fixed max-length comparison")
    parser.add_argument("--max-length", type=int, default=None, help="override the profile's max lengths")
    parser.add_argument("--fp32", action="store_true", help="no bf16 autocast (default: the profile's setting)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    rows = run([t for t in args.tasks.split(",") if t], args.model, args.examples, args.profile, not args.no_fixed,
               args.max_length, args.fp32)
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    cols = ("task", "padding", "precision", "max_length", "mean_tokens", "padded_tokens_per_example", "train_examples_per_s",
            "eval_examples_per_s", "quiet_train_examples_per_s", "quiet_eval_examples_per_s", "peak_memory_mb")
    print(" | ".join(cols))
    for row in rows:
        print(" | ".join(str(row[c]) for c in cols))
    print(f"device: {rows[0]['device'] if rows else '-'}")


if __name__ == "__main__":
    main()
