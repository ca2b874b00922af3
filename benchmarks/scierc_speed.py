"""SciERC span-model throughput: training and evaluation documents per second under a profile.

Times the real code path (featurised documents, the span model, the shared training loop's optimiser and
precision) on a few training documents for one epoch, then prediction on dev documents, and prints one JSON
line per measurement (also the cost of one chapter seed extrapolated from it):

    python benchmarks/scierc_speed.py                                  # MiniLM, cpu profile, 16 documents
    python benchmarks/scierc_speed.py --docs 32 --threads 1,2           # threads compared
    python benchmarks/scierc_speed.py --profile gpu --model minilm      # on a GPU machine
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from typing import Any


def measure(profile: str, model: str | None, docs: int, mode: str) -> dict[str, Any]:
    """One measurement in this process (threads are set by the caller through OMP_NUM_THREADS)."""
    import torch

    from medibio import profiles
    from medibio.blurb.registry import Problem
    from medibio.finetune import modeling, trainer
    from medibio.scierc import data, presets, runner
    from medibio.scierc.task import SciercTask

    prof = profiles.get(profile)
    cfg = presets.preset(prof, {"mode": mode, "epochs": 1})
    model = model or prof.model
    train = data.load_split("train")[:docs]
    dev = data.load_split("dev")[:docs]
    tokenizer = modeling.load_tokenizer(model, Problem.TOKEN)
    heads = ("ner", "relation", "coref") if mode == "joint" else ("ner", "coref")
    task = SciercTask({"train": train, "dev": dev}, tokenizer, cfg, heads)
    plan = runner.plan_run(model, 1, prof, {"mode": mode, "epochs": 1})
    net = runner._build(plan, heads, typed=False)
    accelerator = trainer.make_accelerator(cfg.mixed_precision)
    result = trainer.fit_task(net, task, cfg.finetune_config(), accelerator, 1, run_test=False,
                              parameter_groups=runner._groups(net, cfg))
    t0 = time.perf_counter()
    task.predict(net, "dev")
    eval_s = time.perf_counter() - t0
    full = presets.preset(prof)
    n_train = min(full.max_train_docs or 350, 350)
    n_dev = min(full.max_dev_docs or 50, 50)
    seed_s = (n_train * full.epochs / result.train_examples_per_s + (n_dev * full.epochs + 100) * eval_s / len(dev))
    return {"profile": prof.name, "model": model, "mode": mode, "docs": docs, "threads": torch.get_num_threads(),
            "train_docs_per_s": round(result.train_examples_per_s, 3), "eval_docs_per_s": round(len(dev) / eval_s, 3),
            "device": trainer.device_name(accelerator), "peak_memory_mb": round(result.peak_memory_mb, 1),
            "estimated_seconds_per_seed": round(seed_s, 1), "load_average_1m": os.getloadavg()[0]}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="cpu")
    parser.add_argument("--model", default=None)
    parser.add_argument("--docs", type=int, default=16, help="training (and dev) documents to time")
    parser.add_argument("--mode", default="joint", choices=("joint", "pipeline"))
    parser.add_argument("--threads", default="", help="comma list of torch thread counts, one child each")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child or not args.threads:
        print(json.dumps(measure(args.profile, args.model, args.docs, args.mode)), flush=True)
        return
    for threads in [t for t in args.threads.split(",") if t.strip()]:
        cmd = [sys.executable, __file__, "--child", "--profile", args.profile, "--docs", str(args.docs),
               "--mode", args.mode] + (["--model", args.model] if args.model else [])
        subprocess.run(cmd, check=True, env={**os.environ, "OMP_NUM_THREADS": threads.strip()})


if __name__ == "__main__":
    main()
