"""A short measurement of this CPU's training speed, to scale recorded wall times to this machine.

Recorded runs say how long they took where they were made (``wall_time_s``), not how fast that machine was, so
a build's time here is estimated as recorded time × (this machine's step / the recording machine's step) of one
fixed workload: a training step of one MiniLM-sized transformer layer (hidden 384, 12 heads, feed-forward 1536)
on a batch of 16 × 64 tokens — forward, backward, no optimiser — in the precision the runs will compute in, on
the threads they train with (one, in the book's two one-thread processes). Its matmuls, softmax, layer norms
and GELU are the operators of a fine-tuning step, in about their proportions, so CPUs whose vector units or
bf16 support differ are compared on the work that matters, and a machine under load measures slower, as its
build will run. About a second; no model or data is read.

A build from recorded runs trains nothing: its time is the interpreter's (every chapter's kernel starts by
importing the chapters' library, pandas and NumPy; then gzip'd JSON predictions are parsed, units counted, tables
and figures written), which a vectorised training step does not measure.
:func:`kernel_import_seconds` times that start itself, in fresh interpreters: about half a second each on a quiet
AMD EPYC, without torch. A shorter in-process measurement of parsing and resampling (a third of a second, tried
before) read the CPU types and the load otherwise than the builds ran: a quarter of the Intel Xeon's time on an
AMD EPYC whose builds took half of it (docs/benchmarks.md).
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from collections.abc import Callable

BATCH, LENGTH, HIDDEN, HEADS, FEED_FORWARD = 16, 64, 384, 12, 1536


def training_step_seconds(precision: str = "no", threads: int = 1, steps: int = 5, warmup: int = 2,
                          clock: Callable[[], float] = time.perf_counter) -> float:
    """Median seconds of one training step of the fixed layer (module docstring); ``precision`` is accelerate's
    ``mixed_precision`` of the runs (``"bf16"``: under bf16 autocast, ``"no"``: fp32). ``clock``: wall time
    (what a build will take under the present load) or ``time.process_time`` (the CPU's own speed, for a
    calibration on a loaded machine)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        generator = torch.Generator().manual_seed(0)
        layer = torch.nn.TransformerEncoderLayer(HIDDEN, HEADS, FEED_FORWARD, dropout=0.0, activation="gelu",
                                                 batch_first=True)
        x = torch.randn(BATCH, LENGTH, HIDDEN, generator=generator)
        times = []
        for i in range(warmup + steps):
            start = clock()
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bf16"):
                out = layer(x)
            out.float().square().mean().backward()
            layer.zero_grad(set_to_none=True)
            if i >= warmup:
                times.append(clock() - start)
        return statistics.median(times)
    finally:
        torch.set_num_threads(before)


def kernel_import_seconds(module: str = "medibio.book.notebook", repeats: int = 8,
                          clock: Callable[[], float] = time.perf_counter) -> float:
    """Median wall seconds (the load counts) of a fresh interpreter that imports ``module``: what each chapter's
    kernel does before its first cell. Eight of them, about four seconds on a quiet AMD EPYC: on a virtual
    machine whose speed wavers from one minute to the next, the median of three followed the next build's time
    less closely (the ratio of the two varied by 21% against 13%, docs/benchmarks.md)."""
    command = [sys.executable, "-c", f"import {module}"]
    times = []
    for _ in range(repeats):
        start = clock()
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        times.append(clock() - start)
        if done.returncode != 0:
            raise RuntimeError(f"`{' '.join(command)}` failed: {done.stderr.strip()[-500:]}")
    return statistics.median(times)
