"""Masked-LM pretraining throughput: tokens/s, peak memory and (on a GPU) model FLOPs utilisation.

Runs the trainer's model and optimizer (``medibio.pretrain.mlm.new_model``, AdamW, bf16 autocast on GPU)
on random token blocks with 15% of positions labelled, so that the figure is the model's speed and not
the corpus reader's. The first ``--warmup`` steps are not timed.

FLOPs per token (training = forward + backward = 3 x forward), for L layers, hidden H, sequence S,
relative-position buckets k and P parameters:

    6 * P                      dense matmuls (every weight used once per token; includes the tied LM head)
  + 3 * L * 4 * S * H          content-to-content attention: Q.K^T and A.V, 2*S*H multiply-adds each
  + 3 * L * 8 * k * H          DeBERTa's c2p and p2c terms: queries/keys against 2k relative positions

MFU = achieved FLOP/s / the GPU's dense bf16 peak (H100/H200 SXM: 989 TFLOP/s; A100: 312; override with
--peak-tflops). The 6P term slightly overcounts (embedding lookups are not matmuls), so MFU is an
upper-side estimate. CPU runs report tokens/s and peak RSS only.

    python benchmarks/pretrain_speed.py                      # mini on CPU
    python benchmarks/pretrain_speed.py --configs mini,gpu-mini --steps 50 --json
"""

from __future__ import annotations

import argparse
import json
import resource
import time

GPU_BF16_PEAK_TFLOPS = {"H100": 989.0, "H200": 989.0, "A100": 312.0, "L40S": 362.0, "A10": 125.0}


def flops_per_token(params: int, layers: int, hidden: int, seq: int, buckets: int) -> float:
    """Training FLOPs per token (see the module docstring)."""
    return 6 * params + 3 * layers * 4 * seq * hidden + 3 * layers * 8 * buckets * hidden


def gpu_peak_tflops(name: str, override: float | None) -> float | None:
    if override:
        return override
    return next((v for k, v in GPU_BF16_PEAK_TFLOPS.items() if k in name), None)


def bench(config_name: str, steps: int, warmup: int, device: str, batch: int | None,
          peak_override: float | None) -> dict:
    import torch

    from medibio.pretrain.configs import get_config
    from medibio.pretrain.mlm import new_model

    cfg = get_config(config_name)
    shape = cfg.model
    per_device = batch or cfg.per_device_batch
    fake_tokenizer = type("Vocab", (), {"pad_token_id": 0, "__len__": lambda self: shape.vocab_size})()
    model = new_model(shape, fake_tokenizer).to(device)
    params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.learning_rate, weight_decay=cfg.weight_decay)
    use_bf16 = device == "cuda" and torch.cuda.is_bf16_supported()
    gen = torch.Generator().manual_seed(0)
    ids = torch.randint(5, shape.vocab_size, (per_device, cfg.seq_length), generator=gen)
    labels = torch.where(torch.rand(ids.shape, generator=gen) < cfg.mlm_probability, ids, torch.full_like(ids, -100))
    batch_t = {"input_ids": ids.to(device), "attention_mask": torch.ones_like(ids).to(device),
               "labels": labels.to(device)}
    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    model.train()
    timed = 0.0
    for i in range(warmup + steps):
        if device == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        with torch.autocast(device_type=device, dtype=torch.bfloat16, enabled=use_bf16):
            loss = model(**batch_t).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.max_grad_norm)
        opt.step()
        opt.zero_grad(set_to_none=True)
        if device == "cuda":
            torch.cuda.synchronize()
        if i >= warmup:
            timed += time.perf_counter() - t0
    tokens = steps * per_device * cfg.seq_length
    tps = tokens / timed
    fpt = flops_per_token(params, shape.layers, shape.hidden, cfg.seq_length, shape.position_buckets)
    out = {"config": cfg.name, "device": device, "per_device_batch": per_device, "seq_length": cfg.seq_length,
           "parameters": params, "steps_timed": steps, "tokens_per_s": round(tps, 1),
           "step_s": round(timed / steps, 4), "flops_per_token": fpt, "achieved_tflops": round(tps * fpt / 1e12, 4),
           "precision": "bf16" if use_bf16 else "fp32", "torch_threads": torch.get_num_threads()}
    if device == "cuda":
        name = torch.cuda.get_device_name()
        peak = gpu_peak_tflops(name, peak_override)
        out.update(gpu=name, peak_memory_mb=round(torch.cuda.max_memory_allocated() / 2**20, 1),
                   peak_tflops_bf16=peak, mfu=round(tps * fpt / (peak * 1e12), 4) if peak else None)
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
    parser.add_argument("--peak-tflops", type=float, default=None, help="GPU bf16 peak for MFU")
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
            results.append(bench(name, args.steps, args.warmup, device, args.batch, args.peak_tflops))
    if args.json:
        print(json.dumps(results, indent=2))
        return
    for r in results:
        line = (f"{r['config']:>9} {r['device']:>4} {r['precision']}: {r['tokens_per_s']:>12,.0f} tokens/s  "
                f"{r['step_s']:.3f} s/step  peak {r['peak_memory_mb']:,.0f} MB  params {r['parameters']:,}  "
                f"{r['achieved_tflops']:.3f} TFLOP/s")
        if r.get("mfu") is not None:
            line += f"  MFU {100 * r['mfu']:.1f}% of {r['peak_tflops_bf16']:.0f}"
        print(line)


if __name__ == "__main__":
    main()
