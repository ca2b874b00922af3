"""Fine-tuning throughput: dynamic padding with length bucketing against fixed max-length padding.

For each task type (token: BC5-chem, classify: ChemProt, pair: PubMedQA, multi-label: HoC, regression:
BIOSSES) a model (default: the packaged MiniLM) trains for ``--steps`` optimiser steps on real training
examples, once per padding mode, and the script prints training examples/s, padded tokens per example
and peak memory.

Each (task, mode) runs in its own child process: the CPU peak is the process's maximum resident set size
(``getrusage``), which only ever grows, so sharing a process would hide the smaller mode's peak. On a GPU
the peak is ``torch.cuda.max_memory_allocated``. The first ``--warmup`` steps are not timed.

It uses the engine's own tokenisation, collator and bucketing sampler (``medibio.finetune.features``)
when present, so the numbers describe the real training loop; otherwise a local equivalent.

    python benchmarks/finetune_speed.py --steps 30 --batch-size 16
    python benchmarks/finetune_speed.py --tasks ChemProt,BIOSSES --steps 5 --device cuda --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

TASKS = {"token": "BC5-chem", "classify": "ChemProt", "pair": "PubMedQA", "multilabel": "HoC",
         "regression": "BIOSSES"}
MODES = ("dynamic", "fixed")


# --- feature code: the engine's when available, else a small local equivalent ---------------------------

def _engine():
    try:
        from medibio.finetune import features, modeling
    except ImportError:
        return None
    return features, modeling


def _local_encode(ds: Any, spec: Any, tokenizer: Any, max_length: int) -> list[dict]:
    from medibio.blurb.registry import Problem

    labels = list(spec.labels)
    rows = []
    for i, ex in enumerate(ds):
        if spec.problem is Problem.TOKEN:
            enc = tokenizer(ex["tokens"], is_split_into_words=True, truncation=True, max_length=max_length)
            prev, lab = None, []
            for w in enc.word_ids():
                lab.append(-100 if w is None or w == prev else labels.index(ex["tags"][w]))
                prev = w if w is not None else prev
        else:
            enc = tokenizer(ex["text"], ex["text_pair"] or None, truncation="longest_first", max_length=max_length)
            if spec.problem is Problem.CLASSIFY:
                lab = labels.index(ex["label"])
            elif spec.problem is Problem.MULTILABEL:
                lab = [1.0 if name in ex["label"] else 0.0 for name in labels]
            else:
                lab = float(ex["label"])
        rows.append({**dict(enc), "labels": lab, "length": len(enc["input_ids"]), "index": i})
    return rows


class _LocalCollator:
    def __init__(self, tokenizer: Any, problem: Any, pad_to: int | None) -> None:
        self.tokenizer, self.problem, self.pad_to = tokenizer, problem, pad_to

    def __call__(self, rows: list[dict]) -> dict:
        import torch

        from medibio.blurb.registry import Problem

        inputs = [{k: r[k] for k in ("input_ids", "attention_mask", "token_type_ids") if k in r} for r in rows]
        padding = {"padding": "max_length", "max_length": self.pad_to} if self.pad_to else {"padding": "longest"}
        batch = dict(self.tokenizer.pad(inputs, return_tensors="pt", **padding))
        width = batch["input_ids"].shape[1]
        if self.problem is Problem.TOKEN:
            batch["labels"] = torch.tensor([r["labels"] + [-100] * (width - len(r["labels"])) for r in rows])
        elif self.problem is Problem.CLASSIFY:
            batch["labels"] = torch.tensor([r["labels"] for r in rows])
        else:
            batch["labels"] = torch.tensor([r["labels"] for r in rows], dtype=torch.float)
        return batch


def _batches(lengths: list[int], batch_size: int, bucketing: bool, seed: int) -> list[list[int]]:
    engine = _engine()
    if engine is not None:
        return engine[0].LengthBucketSampler(lengths, batch_size, seed, shuffle=True, bucketing=bucketing).batches()
    order = list(range(len(lengths)))
    rng = random.Random(seed)
    rng.shuffle(order)
    if bucketing:
        pool = batch_size * 50
        order = [i for s in range(0, len(order), pool) for i in sorted(order[s:s + pool], key=lengths.__getitem__)]
    out = [order[i:i + batch_size] for i in range(0, len(order), batch_size)]
    rng.shuffle(out)
    return out


# --- one measurement (child process) -----------------------------------------------------------------

def measure(task: str, mode: str, model_name: str, steps: int, warmup: int, batch_size: int,
            max_length: int | None, device: str, seed: int, threads: int | None = None) -> dict[str, Any]:
    """Train ``warmup + steps`` steps of one task in one padding mode; return throughput and memory."""
    import torch

    if threads:
        torch.set_num_threads(threads)
    from transformers.utils import logging as hf_logging

    from medibio import modelzoo
    from medibio.blurb import registry
    from medibio.blurb.loaders import load_blurb

    hf_logging.set_verbosity_error()
    torch.manual_seed(seed)
    spec = registry.get(task)
    length = max_length or spec.max_length
    train = load_blurb(spec.name, splits=["train"])["train"]
    need = (steps + warmup) * batch_size
    rng = random.Random(seed)
    picked = sorted(rng.sample(range(len(train)), min(need, len(train))))
    ds = train.select(picked)
    engine = _engine()
    if engine is not None:
        features, modeling = engine
        tokenizer = modeling.load_tokenizer(model_name, spec.problem)
        encoded = features.encode(ds, spec, tokenizer, length, desc=f"{task}")
        rows = [encoded[i] for i in range(len(encoded))]
        collate = features.Collator(tokenizer, spec.problem, pad_to=length if mode == "fixed" else None)
        model = modeling.build_model(spec, model_name)
    else:
        from transformers import AutoModelForSequenceClassification, AutoModelForTokenClassification

        from medibio.blurb.registry import Problem

        tokenizer = modelzoo.load_tokenizer(model_name)
        rows = _local_encode(ds, spec, tokenizer, length)
        collate = _LocalCollator(tokenizer, spec.problem, length if mode == "fixed" else None)
        n_labels = 1 if spec.problem is Problem.REGRESSION else len(spec.labels)
        cls = AutoModelForTokenClassification if spec.problem is Problem.TOKEN else AutoModelForSequenceClassification
        problem_type = {Problem.MULTILABEL: "multi_label_classification", Problem.REGRESSION: "regression",
                        Problem.CLASSIFY: "single_label_classification"}.get(spec.problem)
        model = cls.from_pretrained(modelzoo.resolve(model_name), num_labels=n_labels, problem_type=problem_type)
    dev = torch.device(device)
    model.to(dev).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5)
    lengths = [int(r["length"]) for r in rows]
    order = _batches(lengths, batch_size, bucketing=(mode == "dynamic"), seed=seed)
    while len(order) < steps + warmup:  # small datasets (BIOSSES: 64 pairs): go round again
        order += _batches(lengths, batch_size, bucketing=(mode == "dynamic"), seed=seed + len(order))
    rss_loaded = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    if dev.type == "cuda":
        torch.cuda.reset_peak_memory_stats(dev)
    examples = tokens = real_tokens = 0
    elapsed = 0.0
    for k, idx in enumerate(order[:steps + warmup]):
        batch = collate([rows[i] for i in idx])
        batch = {key: v.to(dev) for key, v in batch.items() if key in
                 ("input_ids", "attention_mask", "token_type_ids", "labels")}
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)
        start = time.perf_counter()
        loss = model(**batch).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)
        if k >= warmup:
            elapsed += time.perf_counter() - start
            examples += len(idx)
            tokens += int(batch["input_ids"].numel())
            real_tokens += int(batch["attention_mask"].sum())
    peak = (torch.cuda.max_memory_allocated(dev) / 2**20 if dev.type == "cuda"
            else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    return {"task": spec.name, "type": spec.problem.value, "mode": mode, "steps": steps,
            "batch_size": batch_size, "max_length": length, "examples": examples, "seconds": elapsed,
            "examples_per_s": examples / elapsed if elapsed else float("nan"),
            "tokens_per_example": tokens / examples if examples else float("nan"),
            "padding_share": 1 - real_tokens / tokens if tokens else float("nan"),
            "peak_memory_mb": peak, "rss_after_load_mb": rss_loaded if dev.type != "cuda" else None,
            "memory_kind": "cuda max_memory_allocated" if dev.type == "cuda" else "process max RSS",
            "device": str(dev), "torch_threads": torch.get_num_threads(),
            "feature_code": "medibio.finetune.features" if engine is not None else "local"}


# --- driver ------------------------------------------------------------------------------------------

def _run_child(args: argparse.Namespace, task: str, mode: str) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--child", task, mode, "--model", args.model, "--steps", str(args.steps),
           "--warmup", str(args.warmup), "--batch-size", str(args.batch_size), "--device", args.device,
           "--seed", str(args.seed)]
    if args.max_length:
        cmd += ["--max-length", str(args.max_length)]
    if args.threads:
        cmd += ["--threads", str(args.threads)]
    env = {**os.environ, "TOKENIZERS_PARALLELISM": "false"}
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise SystemExit(f"{task}/{mode} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _table(results: list[dict[str, Any]]) -> str:
    head = (f"{'task':<10} {'type':<26} {'mode':<8} {'ex/s':>8} {'tok/ex':>7} {'pad%':>6} {'peak MB':>9} "
            f"{'speed-up':>8}")
    lines = [head, "-" * len(head)]
    fixed = {r["task"]: r["examples_per_s"] for r in results if r["mode"] == "fixed"}
    for r in results:
        ratio = r["examples_per_s"] / fixed[r["task"]] if r["mode"] == "dynamic" and r["task"] in fixed else None
        lines.append(f"{r['task']:<10} {r['type']:<26} {r['mode']:<8} {r['examples_per_s']:8.1f} "
                     f"{r['tokens_per_example']:7.0f} {100 * r['padding_share']:5.0f}% {r['peak_memory_mb']:9.0f} "
                     + (f"{ratio:7.1f}x" if ratio else ""))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", default=",".join(TASKS.values()),
                        help="comma list of BLURB datasets (default: one per task type)")
    parser.add_argument("--model", default="minilm", help="model name or folder (default: minilm)")
    parser.add_argument("--steps", type=int, default=20, help="timed optimiser steps per task and mode")
    parser.add_argument("--warmup", type=int, default=2, help="untimed steps first")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--max-length", type=int, default=None, help="override the tasks' max lengths")
    parser.add_argument("--modes", default=",".join(MODES), help="dynamic,fixed")
    parser.add_argument("--device", default="auto", help="cpu, cuda or auto")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--threads", type=int, default=None,
                        help="torch CPU threads (default: torch's choice; on a busy shared machine 1 can be "
                        "much faster than 2, because OpenMP threads spin while waiting for a core)")
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    parser.add_argument("--child", nargs=2, metavar=("TASK", "MODE"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.device == "auto":
        import torch

        args.device = "cuda" if torch.cuda.is_available() else "cpu"
    if args.child:
        result = measure(args.child[0], args.child[1], args.model, args.steps, args.warmup, args.batch_size,
                         args.max_length, args.device, args.seed, args.threads)
        print(json.dumps(result))
        return
    results = []
    for task in [t.strip() for t in args.tasks.split(",") if t.strip()]:
        for mode in [m.strip() for m in args.modes.split(",") if m.strip()]:
            res = _run_child(args, task, mode)
            results.append(res)
            print(f"  {res['task']:<10} {mode:<8} {res['examples_per_s']:7.1f} ex/s", file=sys.stderr, flush=True)
    first = results[0] if results else {}
    print(f"model={args.model} device={first.get('device')} threads={first.get('torch_threads')} "
          f"batch={args.batch_size} steps={args.steps} (+{args.warmup} warm-up) "
          f"features={first.get('feature_code')} memory={first.get('memory_kind')}")
    print(_table(results))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
