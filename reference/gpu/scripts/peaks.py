"""Device facts and the matmul peaks of benchmarks.limits on this machine, as JSON on stdout.

    python .gpu/peaks.py [cuda|cpu] [--sizes 2048,4096,8192] [--seconds 1.0]

The benchmarks bracket each timed run with limits.matmul_peak at its default size (n=2048 on a CPU, 8192 on a
GPU); the other sizes show how the rate depends on n.
"""

from __future__ import annotations

import json
import platform
import sys

from benchmarks import limits


def main() -> None:
    import torch
    import transformers

    args = sys.argv[1:]
    device = args[0] if args and not args[0].startswith("--") else ("cuda" if torch.cuda.is_available() else "cpu")
    sizes = [2048, 4096, 8192]
    seconds = 1.0
    if "--sizes" in args:
        sizes = [int(x) for x in args[args.index("--sizes") + 1].split(",")]
    if "--seconds" in args:
        seconds = float(args[args.index("--seconds") + 1])
    out = {"python": platform.python_version(), "torch": torch.__version__, "transformers": transformers.__version__,
           "cuda_runtime": torch.version.cuda, "device": device, "torch_threads": torch.get_num_threads()}
    if device == "cuda":
        p = torch.cuda.get_device_properties(0)
        out.update(gpu=p.name, multiprocessors=p.multi_processor_count, memory_gib=round(p.total_memory / 2**30, 1),
                   capability=f"{p.major}.{p.minor}", bf16_native=torch.cuda.is_bf16_supported(including_emulation=False),
                   tf32_matmul=torch.backends.cuda.matmul.allow_tf32)
    out["matmul_tflops"] = {f"{dtype}_n{n}": round(limits.matmul_peak(dtype, n=n, seconds=seconds, device=device), 2)
                            for dtype in ("bf16", "fp32") for n in sizes}
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
