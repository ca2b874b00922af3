"""Masked-LM pretraining throughput: tokens/s, peak memory and model FLOPs utilisation (MFU).

Runs the trainer's model and optimizer (``medibio.pretrain.mlm.new_model``, AdamW, the precision the
trainer chooses for the config's request: ``medibio.core.precision.precision_for``) on random token blocks
with 15% of positions labelled, so that the figure is the model's speed and not the corpus reader's. The
first ``--warmup`` steps are not timed. ``--logits all`` times transformers' own forward, which projects
every position onto the vocabulary (the trainer before issue 40); the default ``masked`` is the trainer's
:class:`medibio.pretrain.mlm.MaskedPositionsLM`. ``--precision`` overrides the config's request and
``--assume-native-bf16`` lets a CPU without native bf16 run bf16 autocast anyway (emulated; to measure it).

FLOPs per token and the measured matmul peak come from :mod:`benchmarks.limits` (training = 3 x forward;
forward = 2 x non-embedding parameters, the tied LM head included, + attention + DeBERTa's relative-position
terms), the head's share counted at the labelled positions only where only those are computed. MFU =
achieved model FLOP/s over the bf16 (or fp32) ``torch.matmul`` peak measured in the same run on the same
device and threads (``--peak-tflops`` overrides it).

    python -m benchmarks.pretrain_speed                      # mini on CPU
    python -m benchmarks.pretrain_speed --configs mini,gpu-mini --steps 50 --json
    python -m benchmarks.pretrain_speed --device cpu --configs study --logits all   # before issue 40
    python -m benchmarks.pretrain_speed --device cpu --configs study --init minilm  # the study's arm #2
"""

from __future__ import annotations

import argparse
import json
import resource
import time
from typing import Any

from benchmarks import limits


def _model(cfg: Any, init: str | None) -> tuple[Any, dict[str, int], int]:
    """(masked-LM model, its encoder shape, vocabulary size): the config's shape from scratch, or ``init`` as
    the trainer loads it for continued pretraining (MiniLM with its new head)."""
    import torch

    from medibio.models import zoo
    from medibio.pretrain.mlm import load_checkpoint, new_model

    if init is None:
        shape = cfg.model
        fake_tokenizer = type("Vocab", (), {"pad_token_id": 0, "__len__": lambda self: shape.vocab_size})()
        return (new_model(shape, fake_tokenizer), {"layers": shape.layers, "hidden": shape.hidden,
                                                   "buckets": shape.position_buckets}, shape.vocab_size)
    torch.manual_seed(0)
    model = load_checkpoint(zoo.resolve(init))[0]
    return model, limits.encoder_shape(model), model.get_input_embeddings().num_embeddings


def bench(config_name: str, steps: int, warmup: int, device: str, batch: int | None,
          peak_override: float | None, logits: str = "masked", requested: str | None = None,
          assume_native_bf16: bool = False, init: str | None = None) -> dict:
    import torch

    from medibio.core import precision
    from medibio.pretrain.configs import get_config
    from medibio.pretrain.mlm import MaskedPositionsLM

    cfg = get_config(config_name)
    per_device = batch or cfg.per_device_batch
    model, shape, vocab_size = _model(cfg, init)
    model = model.to(device)
    params = limits.non_embedding_parameters(model)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.learning_rate, weight_decay=cfg.weight_decay)
    here = precision.Device("cpu", assume_native_bf16 or precision.cpu_has_bf16()) if device == "cpu" \
        else precision.current_device()
    use_bf16 = precision.precision_for(here, requested or cfg.mixed_precision) == "bf16"  # as the trainer decides
    net = model if logits == "all" else MaskedPositionsLM(model)
    loss_of = (lambda b: net(**b).loss) if logits == "all" else (lambda b: net(**b))
    gen = torch.Generator().manual_seed(0)
    ids = torch.randint(5, vocab_size, (per_device, cfg.seq_length), generator=gen)
    labels = torch.where(torch.rand(ids.shape, generator=gen) < cfg.mlm_probability, ids, torch.full_like(ids, -100))
    batch_t = {"input_ids": ids.to(device), "attention_mask": torch.ones_like(ids).to(device),
               "labels": labels.to(device)}
    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    model.train()
    timed = 0.0
    for i in range(warmup + steps):
        limits.synchronize(device)
        t0 = time.perf_counter()
        with torch.autocast(device_type=device, dtype=torch.bfloat16, enabled=use_bf16):
            loss = loss_of(batch_t)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.max_grad_norm)
        opt.step()
        opt.zero_grad(set_to_none=True)
        limits.synchronize(device)
        if i >= warmup:
            timed += time.perf_counter() - t0
    tokens = steps * per_device * cfg.seq_length
    tps = tokens / timed
    # the head (transform and vocabulary projection) runs at the labelled positions only under --logits masked
    head = sum(p.numel() for p in model.cls.parameters())
    executed = params if logits == "all" else params - head * (1 - float((labels != -100).float().mean()))
    fpt = limits.flops_per_token(round(executed), shape["layers"], shape["hidden"], cfg.seq_length, shape["buckets"])
    dtype = "bf16" if use_bf16 else "fp32"
    peak = peak_override or limits.matmul_peak(dtype, device=device)
    out = {"config": cfg.name if init is None else f"{cfg.name}+{init}", "device": device, "logits": logits, "per_device_batch": per_device,
           "seq_length": cfg.seq_length,
           "non_embedding_parameters": params, "steps_timed": steps, "tokens_per_s": round(tps, 1),
           "step_s": round(timed / steps, 4), "flops_per_token": fpt,
           "precision": dtype, "torch_threads": torch.get_num_threads(),
           "peak_tflops": round(peak, 3), "peak_kind": "given" if peak_override else f"measured {dtype} matmul",
           **limits.utilisation(tps * fpt, 1.0, peak)}
    if device == "cuda":
        out.update(gpu=torch.cuda.get_device_name(),
                   peak_memory_mb=round(torch.cuda.max_memory_allocated() / 2**20, 1))
    else:
        out.update(peak_memory_mb=round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", default="mini", help="comma-separated pretraining configs")
    parser.add_argument("--steps", type=int, default=10, help="timed steps")
    parser.add_argument("--warmup", type=int, default=2, help="untimed steps first")
    parser.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    parser.add_argument("--batch", type=int, default=None, help="per-device batch (default: the config's)")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    parser.add_argument("--peak-tflops", type=float, default=None,
                        help="the peak for MFU (default: measured with torch.matmul in this run)")
    parser.add_argument("--logits", default="masked", choices=["masked", "all"],
                        help="vocabulary logits at the masked positions only (the trainer) or at all positions")
    parser.add_argument("--precision", default=None, help="precision request (default: the config's)")
    parser.add_argument("--assume-native-bf16", action="store_true",
                        help="treat this CPU as computing bf16 natively (measures emulated bf16 elsewhere)")
    parser.add_argument("--init", default=None,
                        help="a model to continue from, as the trainer loads it (e.g. minilm: study arm #2)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    args = parser.parse_args()
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    devices = ["cpu", "cuda"] if args.device == "auto" and torch.cuda.is_available() else \
        ["cpu" if args.device == "auto" else args.device]
    results = []
    for device in devices:
        for name in args.configs.split(","):
            if device == "cpu" and name != "mini" and args.device == "auto":
                continue  # only the CPU profile is timed on the CPU by default
            results.append(bench(name, args.steps, args.warmup, device, args.batch, args.peak_tflops, args.logits,
                                 args.precision, args.assume_native_bf16, args.init))
    if args.json:
        print(json.dumps(results, indent=2))
        return
    for r in results:
        print(f"{r['config']:>11} {r['device']:>4} {r['precision']} logits {r['logits']}: "
              f"{r['tokens_per_s']:>12,.0f} tokens/s  "
              f"{r['step_s']:.3f} s/step  peak {r['peak_memory_mb']:,.0f} MB  "
              f"non-embedding params {r['non_embedding_parameters']:,}  {r['tflops']:.3f} TFLOP/s  "
              f"MFU {100 * r['mfu']:.1f}% of {r['peak_tflops']:.2f} ({r['peak_kind']})")


if __name__ == "__main__":
    main()
