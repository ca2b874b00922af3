"""A short measurement of this CPU's training speed, to scale recorded wall times to this machine.

Recorded runs say how long they took where they were made (``wall_time_s``), not how fast that machine was, so
a build's time here is estimated as recorded time × (this machine's step / the recording machine's step) of one
fixed workload: a training step of one MiniLM-sized transformer layer (hidden 384, 12 heads, feed-forward 1536)
on a batch of 16 × 64 tokens — forward, backward, no optimiser — in the precision the runs will compute in, on
the threads they train with (one, in the book's two one-thread processes). Its matmuls, softmax, layer norms
and GELU are the operators of a fine-tuning step, in about their proportions, so CPUs whose vector units or
bf16 support differ are compared on the work that matters, and a machine under load measures slower, as its
build will run. About a second; no model or data is read.

A build from recorded runs trains nothing: its time is the interpreter's (reading gzip'd JSON predictions,
counting per unit, NumPy's resampling, writing tables), which a loaded or slower CPU slows otherwise than a
vectorised training step. :func:`rendering_work_seconds` measures that kind of work instead, in about a third
of a second and without importing torch.
"""

from __future__ import annotations

import gzip
import json
import statistics
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


def rendering_work_seconds(repeats: int = 9, warmup: int = 1,
                           clock: Callable[[], float] = time.perf_counter) -> float:
    """Median seconds of a fixed piece of what rendering recorded runs does, in wall time (the load counts):
    decompress and parse 12,000 JSON prediction lines, sum them per document in Python, draw 200 bootstrap
    resamples of the documents with NumPy and format the sums as HTML table rows. Each window lasts tens of
    milliseconds, longer than the scheduler's slices, so that a process sharing the core is seen; the median
    of nine (about 0.3 s on a quiet Intel Xeon) because a virtual machine's speed wavers by a third from one
    window to the next."""
    import numpy as np

    lines = [{"id": f"doc{i // 9}.s{i % 9}", "prediction": [i % 5, (i * 7) % 3, i % 2]} for i in range(12_000)]
    blob = gzip.compress(json.dumps(lines).encode(), compresslevel=1)
    rng = np.random.default_rng(0)
    times = []
    for i in range(warmup + repeats):
        start = clock()
        per_document: dict[str, int] = {}
        for line in json.loads(gzip.decompress(blob)):
            document = line["id"].partition(".")[0]
            per_document[document] = per_document.get(document, 0) + sum(line["prediction"])
        counts = np.fromiter(per_document.values(), dtype=float)
        n = len(counts)
        draws = rng.integers(0, n, size=(200, n)) + n * np.arange(200)[:, None]
        np.bincount(draws.ravel(), minlength=200 * n).reshape(200, n) @ counts
        "".join(f"<tr><td>{doc}</td><td>{value:.2f}</td></tr>" for doc, value in per_document.items())
        if i >= warmup:
            times.append(clock() - start)
    return statistics.median(times)
