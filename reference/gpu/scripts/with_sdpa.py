"""Run a module (python -m style) with torch's scaled-dot-product-attention backends chosen by environment:

    SDPA_NO_CUDNN=1 python .gpu/with_sdpa.py benchmarks.finetune_engine --same-process ...

Prints the enabled backends to stderr first. Only meaningful when the module computes in this process.
It made the H200 run 1's cuDNN-off rows (reference/gpu/README.md). From commit 0c8fcab on, runs and benchmarks
choose their attention kernels inside (medibio.core.precision.attention_kernels), which overrides these flags,
so run.sh no longer calls it.
"""

import os
import runpy
import sys

import torch

if os.environ.get("SDPA_NO_CUDNN"):
    torch.backends.cuda.enable_cudnn_sdp(False)
print("sdpa backends: cudnn", torch.backends.cuda.cudnn_sdp_enabled(), "flash", torch.backends.cuda.flash_sdp_enabled(),
      "mem_efficient", torch.backends.cuda.mem_efficient_sdp_enabled(), "math", torch.backends.cuda.math_sdp_enabled(),
      file=sys.stderr, flush=True)
module = sys.argv[1]
sys.argv = [module, *sys.argv[2:]]
runpy.run_module(module, run_name="__main__", alter_sys=True)
