"""SciERC span-model throughput: training and evaluation documents per second under a profile.

Times the real code path (featurised documents, the span model, the shared training loop's optimiser and
precision) on a few training documents for the profile's epochs, then prediction on dev documents, and prints
one JSON line per measurement (also the cost of one chapter seed extrapolated from it). Model FLOP/s and MFU
against the matmul peak measured in the same run (:mod:`benchmarks.limits`) count the encoder only, each
document's windows at their own padded length (the span heads and the padding to a batch's longest document
are left out): a lower bound of the work done. Where the frozen lower layers run once per document
(``reuse_frozen_layers``, :mod:`medibio.models.split`) they are counted once, not at every epoch.

    python -m benchmarks.scierc_speed                                  # MiniLM, cpu profile, 16 documents
    python -m benchmarks.scierc_speed --docs 32 --threads 1,2           # threads compared
    python -m benchmarks.scierc_speed --profile gpu --model minilm      # on a GPU machine
    python -m benchmarks.scierc_speed --docs 32 --full-encoder          # frozen layers at every step
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from typing import Any

from benchmarks import limits
from medibio.core.paths import REPO_ROOT
from medibio.core.settings import Settings


def measure(profile: str, model: str | None, docs: int, mode: str, settings: Settings | None = None,
            epochs: int | None = None, full_encoder: bool = False) -> dict[str, Any]:
    """One measurement in this process (threads are set by the caller through OMP_NUM_THREADS)."""
    import torch

    from medibio.core.precision import accelerator as make_accelerator
    from medibio.core.precision import attention_kernels
    from medibio.models import heads as modeling
    from medibio.models import zoo
    from medibio.runs.protocol import device_name
    from medibio.scierc import presets, runner
    from medibio.scierc.model import collate, heads_in_fp32
    from medibio.scierc.task import SciercTask
    from medibio.tasks import scierc as data
    from medibio.tasks.spec import Problem
    from medibio.training.loop import fit

    settings = settings or Settings.from_env()
    prof = settings.profile(profile)
    overrides: dict[str, Any] = {"mode": mode, "epochs": epochs or presets.preset(prof).epochs}
    if full_encoder:
        overrides["reuse_frozen_layers"] = False
    cfg = presets.preset(prof, overrides)
    plan = runner.plan_run(model, 1, prof, overrides, settings)
    source = zoo.resolve(plan.job.model, settings.cache_root)
    train = data.load_split("train", settings.data_root)[:docs]
    dev = data.load_split("dev", settings.data_root)[:docs]
    tokenizer = modeling.load_tokenizer(source, Problem.TOKEN)
    heads = ("ner", "relation", "coref") if mode == "joint" else ("ner", "coref")
    task = SciercTask({"train": train, "dev": dev}, tokenizer, cfg, heads)
    net = runner._build(plan.job, source, heads, typed=False)
    accelerator = make_accelerator(cfg.mixed_precision)
    precision = "bf16" if str(accelerator.mixed_precision) == "bf16" else "fp32"
    with attention_kernels():  # as runs train (medibio.runs.protocol)
        with limits.bracketed_peak(precision, accelerator.device.type) as peak:
            result = fit(net, task, cfg.finetune_config(), accelerator, 1, run_test=False,
                         parameter_groups=runner._groups(net, cfg))
        t0 = time.perf_counter()
        task.predict(net, "dev")
        eval_s = time.perf_counter() - t0
    train_s = result.train_time_s

    batches = {split: [collate([f], task.pad_id, cfg.pad_to_multiple_of, accelerator.device)
                       for f in task.features[split]] for split in ("train", "dev")}

    def forward(split: str) -> float:
        return limits.batch_flops(net.encoder, batches[split], False)

    def heads(split: str, training: bool) -> float:
        """The span heads' matmul FLOPs over the split's documents (one pass), on the encoder's output."""
        total = 0.0
        net.train(training)
        for batch in batches[split]:
            with torch.no_grad():
                embs = net.span_embeddings(batch)
            embs = [e.requires_grad_(training) for e in embs]

            def step(batch: dict[str, Any] = batch, embs: list[torch.Tensor] = embs) -> None:
                with heads_in_fp32(accelerator.device), torch.set_grad_enabled(training):
                    if training:
                        net._losses(batch, embs, False)["loss"].backward()
                    else:
                        net._predictions(batch, embs, None)

            total += limits.matmul_flops(limits.record_matmuls(step))
        net.zero_grad()
        return total

    layers, learning = limits.encoder_shape(net.encoder)["layers"], limits.trained_layers(net.encoder)
    top = learning / layers  # the share of a forward pass above the frozen layers
    if net.split is not None:  # frozen layers once per document, then the top layers every epoch
        encoder_train = forward("train") * ((1 - top) + cfg.epochs * 3 * top)
        encoder_eval = forward("dev") * top  # the dev windows' frozen output is kept from the epochs' evaluations
    else:
        encoder_train = forward("train") * cfg.epochs * (1 + 2 * top)
        encoder_eval = forward("dev")
    train_flops = encoder_train + cfg.epochs * heads("train", True)
    eval_flops = encoder_eval + heads("dev", False)
    at = peak["peak_tflops"]
    trained, evaluated = limits.utilisation(train_flops, train_s, at), limits.utilisation(eval_flops, eval_s, at)
    full = presets.preset(prof)
    n_train = min(full.max_train_docs or 350, 350)
    n_dev = min(full.max_dev_docs or 50, 50)
    seed_s = (n_train * full.epochs / result.train_examples_per_s + (n_dev * full.epochs + 100) * eval_s / len(dev))
    return {"profile": prof.name, "model": plan.job.model, "mode": mode, "docs": docs, "epochs": cfg.epochs,
            "reuse_frozen_layers": net.split is not None,
            "threads": torch.get_num_threads(),
            "train_docs_per_s": round(result.train_examples_per_s, 3), "eval_docs_per_s": round(len(dev) / eval_s, 3),
            "train_model_tflops": trained["tflops"], "train_mfu": trained["mfu"],
            "eval_model_tflops": evaluated["tflops"], "eval_mfu": evaluated["mfu"],
            "encoder_train_mfu": limits.utilisation(encoder_train, train_s, at)["mfu"],
            "encoder_eval_mfu": limits.utilisation(encoder_eval, eval_s, at)["mfu"],
            "heads_share_of_train_flops": round(1 - encoder_train / train_flops, 3),
            "precision": precision, **peak,
            "device": device_name(accelerator), "peak_memory_mb": round(result.peak_memory_mb, 1),
            "estimated_seconds_per_seed": round(seed_s, 1), "load_average_1m": os.getloadavg()[0]}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="cpu")
    parser.add_argument("--model", default=None)
    parser.add_argument("--docs", type=int, default=16, help="training (and dev) documents to time")
    parser.add_argument("--mode", default="joint", choices=("joint", "pipeline"))
    parser.add_argument("--epochs", type=int, default=None, help="training epochs (default: the profile's)")
    parser.add_argument("--full-encoder", action="store_true",
                        help="run the frozen lower layers at every step, with dropout (reuse_frozen_layers=False)")
    parser.add_argument("--threads", default="", help="comma list of torch thread counts, one child each")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child or not args.threads:
        print(json.dumps(measure(args.profile, args.model, args.docs, args.mode, epochs=args.epochs,
                                 full_encoder=args.full_encoder)), flush=True)
        return
    for threads in [t for t in args.threads.split(",") if t.strip()]:
        cmd = [sys.executable, "-m", "benchmarks.scierc_speed", "--child", "--profile", args.profile,
               "--docs", str(args.docs), "--mode", args.mode] + (["--model", args.model] if args.model else []) \
            + (["--epochs", str(args.epochs)] if args.epochs else []) + (["--full-encoder"] if args.full_encoder else [])
        subprocess.run(cmd, check=True, env={**os.environ, "OMP_NUM_THREADS": threads.strip()},
                       cwd=REPO_ROOT)


if __name__ == "__main__":
    main()
