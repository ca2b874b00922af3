"""This machine's limit and how close a model gets to it: the measured matmul peak, model FLOPs, MFU.

**Peak.** :func:`matmul_peak` times ``torch.matmul`` of two square matrices (2048 x 2048 on a CPU; 8192 x 8192
on a GPU, which 2048 leaves partly idle) in bf16 and in fp32 on the device and thread count the benchmark
itself uses, after a warm-up, for at least ``seconds``: ``2 n^3`` FLOPs per product. This is what the same
hardware multiplies in practice (on this 2-core AMX CPU about 2.5 TFLOP/s in bf16, 0.42 in fp32), not a
datasheet number, so MFU means the same on a laptop, this CPU and an H100.

**Model FLOPs** per token of an encoder with P non-embedding parameters (every weight matrix used once per
token: 2 FLOPs per multiply-add), L layers, hidden size H, the padded length S of the token's batch and,
for DeBERTa, k relative-position buckets:

    forward   2 * P  +  L * 4 * S * H  +  L * 8 * k * H
              dense     Q.K^T and A.V     DeBERTa's c2p and p2c terms against 2k relative positions
    training  3 x forward (the backward pass costs twice the forward); with only the top T of the L
              layers learning (SciERC's ``train_layers``) backpropagation stops below them:
              (1 + 2 T / L) x forward

Embedding lookups are not matmuls and are left out (the word embeddings of MiniLM are half its weights);
a tied language-model head is a matmul and is counted (:func:`non_embedding_parameters`). MFU is achieved
model FLOP/s over the measured peak of the precision the run computes in; only real tokens count (padding
is work the model did not need), so padding lowers MFU.

**Drift.** On a shared machine the measured peak moves by up to 2x within minutes (other tenants' load), so a
peak measured once at the start of a long benchmark is a poor yardstick for a measurement taken later.
:func:`bracketed_peak` measures it right before and right after the timed block and gives their mean and spread.

**Ceiling.** :func:`record_matmuls` notes every matmul (``mm``, ``addmm``, ``bmm``, ``baddbmm``, with its
shapes, strides and dtype) that a forward and backward pass dispatches; :func:`replay_seconds` runs the same
calls again on random tensors of those layouts, each shape warmed up once (oneDNN builds a kernel per new
shape), and times them. That time is what the step's own matmuls cost at this machine's steady-state speed for
their shapes: model FLOPs over it is the MFU a step would reach if nothing but its matmuls ran.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any


def synchronize(device: Any) -> None:
    """Wait for the device's queued work (a no-op on the CPU), so that a timer measures what ran."""
    import torch

    if str(device).startswith("cuda"):
        torch.cuda.synchronize(device)


def matmul_peak(dtype: str = "bf16", n: int | None = None, seconds: float = 1.0, device: str = "cpu") -> float:
    """TFLOP/s of ``torch.matmul`` of two ``n x n`` matrices in ``dtype`` (measured, after one warm-up)."""
    import torch

    n = n or (8192 if str(device).startswith("cuda") else 2048)
    kind = {"bf16": torch.bfloat16, "fp32": torch.float32, "fp16": torch.float16}[dtype]
    gen = torch.Generator().manual_seed(0)
    a = torch.randn(n, n, generator=gen).to(device=device, dtype=kind)
    b = torch.randn(n, n, generator=gen).to(device=device, dtype=kind)

    for _ in range(2):
        torch.matmul(a, b)
    synchronize(device)
    reps, start = 0, time.perf_counter()
    while True:
        torch.matmul(a, b)
        reps += 1
        if reps % 4 == 0:
            synchronize(device)
            elapsed = time.perf_counter() - start
            if elapsed >= seconds:
                return 2 * n**3 * reps / elapsed / 1e12


@contextmanager
def bracketed_peak(dtype: str = "bf16", device: str = "cpu", seconds: float = 1.0) -> Iterator[dict[str, float]]:
    """The ``dtype`` matmul peak measured before and after the block (module docstring: drift): the yielded
    dict gets ``peak_before_tflops`` at once and ``peak_after_tflops``, ``peak_tflops`` (their mean) and
    ``peak_spread`` (their difference over the mean) when the block ends."""
    out = {"peak_before_tflops": round(matmul_peak(dtype, seconds=seconds, device=device), 3)}
    yield out
    after = round(matmul_peak(dtype, seconds=seconds, device=device), 3)
    mean = (out["peak_before_tflops"] + after) / 2
    out.update(peak_after_tflops=after, peak_tflops=round(mean, 3),
               peak_spread=round(abs(after - out["peak_before_tflops"]) / mean, 3))


Signature = tuple[Any, tuple[Any, ...], tuple[tuple[str, Any], ...]]


def _layout(value: Any) -> Any:
    import torch

    if isinstance(value, torch.Tensor):
        return ("tensor", tuple(value.shape), tuple(value.stride()), value.dtype, value.device.type)
    return value


def record_matmuls(step: Callable[[], Any]) -> Counter[Signature]:
    """How often ``step()`` dispatches each matmul call (op, argument layouts and scalars), below autograd:
    the backward pass's matmuls are included."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    aten = torch.ops.aten
    kinds = {aten.mm, aten.addmm, aten.bmm, aten.baddbmm}
    calls: Counter[Signature] = Counter()

    class Recorder(TorchDispatchMode):
        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            kwargs = kwargs or {}
            if func.overloadpacket in kinds:
                calls[(func, tuple(_layout(a) for a in args),
                       tuple(sorted((k, _layout(v)) for k, v in kwargs.items())))] += 1
            return func(*args, **kwargs)

    with Recorder():
        step()
    return calls


def matmul_flops(calls: Counter[Signature]) -> float:
    """FLOPs of the recorded calls: 2 per multiply-add (``bias`` and ``beta`` terms not counted)."""
    total = 0.0
    for (func, args, _), count in calls.items():
        name = func.overloadpacket.__name__
        a, b = (args[1], args[2]) if name in ("addmm", "baddbmm") else (args[0], args[1])
        shape_a, shape_b = a[1], b[1]
        batch = shape_a[0] if len(shape_a) == 3 else 1
        total += count * 2 * batch * shape_a[-2] * shape_a[-1] * shape_b[-1]
    return total


def _materialise(value: Any) -> Any:
    import torch

    if not (isinstance(value, tuple) and value and value[0] == "tensor"):
        return value
    _, shape, stride, dtype, device = value
    size = 1 + sum((n - 1) * s for n, s in zip(shape, stride, strict=True)) if all(shape) else 0
    return torch.randn(size, device=device).to(dtype).as_strided(shape, stride)


def replay_seconds(calls: Counter[Signature]) -> float:
    """Seconds the recorded calls take again, as often as recorded, on random tensors of the same layouts;
    each distinct call runs once untimed first."""
    import torch

    total = 0.0
    for (func, args, kwargs), count in calls.items():
        real_args = [_materialise(a) for a in args]
        real_kwargs = {k: _materialise(v) for k, v in kwargs}
        device = next(a.device for a in real_args if isinstance(a, torch.Tensor))
        func(*real_args, **real_kwargs)
        synchronize(device)
        start = time.perf_counter()
        for _ in range(count):
            func(*real_args, **real_kwargs)
        synchronize(device)
        total += time.perf_counter() - start
    return total


def non_embedding_parameters(model: Any) -> int:
    """Parameters used as matmul weights per token: all, minus the input embedding tables (word, position,
    token type) that a token only looks up. A language-model head tied to the word embeddings multiplies
    every token, so it is counted once (as the head)."""
    embeddings = {id(p): p for name, module in model.named_modules() if _is_input_embedding(name, module)
                  for p in module.parameters(recurse=False)}
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    tied = {id(p) for p in head.parameters()} if head is not None else set()
    return sum(p.numel() for p in model.parameters()
               if id(p) not in embeddings or id(p) in tied)


def _is_input_embedding(name: str, module: Any) -> bool:
    import torch

    return isinstance(module, torch.nn.Embedding) and ".embeddings." in f".{name}"


def encoder_shape(model: Any) -> dict[str, int]:
    """Layers, hidden size and relative-position buckets (0 without them) of a Hugging Face encoder."""
    cfg = model.config
    relative = bool(getattr(cfg, "relative_attention", False))
    buckets = getattr(cfg, "position_buckets", -1)
    if relative and (buckets is None or buckets <= 0):
        buckets = getattr(cfg, "max_relative_positions", -1)
        if buckets is None or buckets <= 0:
            buckets = cfg.max_position_embeddings
    return {"layers": cfg.num_hidden_layers, "hidden": cfg.hidden_size, "buckets": int(buckets) if relative else 0}


def flops_per_token(params: int, layers: int, hidden: int, seq: int, buckets: int = 0,
                    training: bool = True, trained: int | None = None) -> float:
    """Model FLOPs of one token in a batch padded to ``seq`` (the formula of the module docstring);
    ``trained``: how many of the top layers learn (None: all)."""
    forward = 2 * params + layers * 4 * seq * hidden + layers * 8 * buckets * hidden
    if not training:
        return forward
    learning = layers if trained is None else trained
    return forward * (1 + 2 * learning / layers)


def trained_layers(model: Any) -> int:
    """Encoder layers with a parameter that learns: backpropagation runs through these only (the layers
    below a frozen bottom, :func:`medibio.training.stability.freeze_all_but_top`, are never differentiated)."""
    from medibio.training.stability import encoder_layers

    return sum(any(p.requires_grad for p in layer.parameters()) for layer in encoder_layers(model))


def batch_flops(model: Any, batches: Iterable[Any], training: bool = True) -> float:
    """Model FLOPs of ``batches`` (dicts with ``attention_mask``): each batch's real tokens at its padded length."""
    params, shape = non_embedding_parameters(model), encoder_shape(model)
    trained = trained_layers(model) if training else None
    total = 0.0
    for batch in batches:
        mask = batch["attention_mask"]
        total += float(mask.sum()) * flops_per_token(params, shape["layers"], shape["hidden"], mask.shape[-1],
                                                     shape["buckets"], training, trained)
    return total


def utilisation(flops: float, seconds: float, peak_tflops: float | None) -> dict[str, float | None]:
    """Achieved TFLOP/s and MFU (a fraction of ``peak_tflops``, None without a peak)."""
    achieved = flops / seconds / 1e12 if seconds > 0 else 0.0
    return {"tflops": round(achieved, 4),
            "mfu": round(achieved / peak_tflops, 4) if peak_tflops else None}
