"""The one precision decision of medibio, and the one place that creates ``accelerate.Accelerator`` objects.

accelerate keeps process-wide state: once an ``Accelerator`` exists, a second one with another mixed
precision raises "AcceleratorState has already been initialized". A notebook or test that pretrains (fp32
on CPU) and then fine-tunes (bf16 on CPUs with native bf16) in one process needs both. In a single-process
run the state is reset before building an accelerator with another precision; in a distributed run (launched
by ``accelerate launch``/``torchrun``) the precision is fixed by the launcher and a mismatch is an error.

:func:`precision_for` decides the numeric precision of every run (fine-tuning, SciERC, pretraining, the
frozen baselines' encoding):

========================  ===========================  ==================  =================================
device                    requested ``auto``/``bf16``  requested ``gpu``   requested ``fp16`` / ``no`` (fp32)
========================  ===========================  ==================  =================================
GPU with native bf16      ``bf16``                     ``bf16``            ``fp16`` (loss-scaled) / ``no``
GPU without bf16 (V100)   ``fp16`` (loss-scaled)       ``fp16``            ``fp16`` (loss-scaled) / ``no``
CPU with AVX512-BF16/AMX  ``bf16``                     ``no``              ``no`` / ``no``
other CPU                 ``no``                       ``no``              ``no`` / ``no``
========================  ===========================  ==================  =================================

A fine-tuned model's evaluation under bf16 on the CPU (:func:`evaluation_model`) runs a bf16 copy of the
weights without autocast: autocast's casts around every layer norm and GELU were 40% of a MiniLM evaluation
batch there (505 against 296 ms for 64 sequences of 64 tokens on one thread). Training keeps autocast over fp32
weights (the optimiser needs them), GPUs keep autocast for both, and so do the frozen baselines, whose probes
lost up to 3.8 points on bf16 weights (docs/benchmarks.md).

On a CPU with native bf16 ``auto`` roughly halves the cost of fine-tuning and inference. ``gpu`` keeps
a CPU run in fp32: the pretraining configurations that predate the Table 5 study ask for it, and keep their
digests; the study's (``study``) asks for ``auto``, so it pretrains under bf16 autocast where the CPU
computes bf16 natively. Elsewhere bf16 is emulated and slow: on the AVX2-only AMD EPYC of the development
machine a 2048x384 by 384x1536 matmul ran at 1.2 GFLOP/s in bf16 against 48 in fp32 (one thread), so
``auto`` keeps such a CPU at fp32.

What a killed pretraining run's resume guarantees is the same in both precisions: it ends with the losses
and weights, bit for bit, of an uninterrupted run on the same machine, thread count and library versions.
Its checkpoints hold the fp32 master weights, the optimiser's moments, the schedule and the RNG states, and
autocast keeps no state: it casts from the fp32 weights afresh at every step
(``tests/test_pretrain_trainer.py``, bf16 forced on a CPU that emulates it). Not guaranteed, in either
precision: the same bits on another CPU or thread count (AMX and AVX512-BF16 kernels, like fp32 kernels
under another blocking, sum in another order). A bf16 run and an fp32 run of one configuration are two runs
with two digests (the plan records the precision used).

bf16 keeps fp32's exponent range, so nothing overflows; fp16 does not, and accelerate pairs it with a
dynamic loss scaler (``torch.amp.GradScaler``: gradients scaled up against underflow, steps with inf/NaN
gradients skipped and the scale lowered). DeBERTa's known fp16 overflow (attention scores beyond 65504 in
mDeBERTa/DeBERTa-v3, microsoft/DeBERTa#77) is handled inside transformers, which we rely on rather than
patch: since huggingface/transformers#24116 (v4.31) ``DisentangledSelfAttention`` divides the key (and the
c2p/p2c position terms) by ``sqrt(d * scale_factor)`` *before* the matmul, and masks padded positions with
``torch.finfo(dtype).min`` of the compute dtype (a fixed ``-1e4``/``-inf`` would overflow or give NaN rows);
under autocast softmax, layer norm and the losses run in fp32. ``tests/test_core_precision.py`` checks that the
installed transformers still scales before the matmul and that the tiny DeBERTa's fp16 forward pass on CPU
stays finite and close to fp32.

On a GPU, bf16 attention runs without cuDNN's kernels (:func:`attention_kernels`).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from medibio.core.errors import MedibioError

REQUESTS = ("auto", "bf16", "gpu", "fp16", "no", "fp32")
# Whether this process may use the CPU's native bf16 (Settings.native_bf16, set by the command-line boundary through
# allow_native_bf16): off, a configuration asking for ``auto`` computes in fp32 on a CPU with bf16 too, with the
# request (and so the digest) of a run made in fp32 on a CPU without it. The CPU Table 5 study declares fp32 for
# every later run; its configuration asks for ``auto`` to keep its recorded digests.
_native_bf16 = True


@dataclass(frozen=True)
class Device:
    """What :func:`precision_for` needs to know about the training device."""

    kind: str  # "cuda" or "cpu"
    native_bf16: bool  # bf16 arithmetic in hardware (Ampere+ GPU; AVX512-BF16 or AMX CPU)


def cpu_has_bf16() -> bool:
    """True when the CPU computes bf16 natively (AVX512-BF16 or AMX): autocast then roughly halves the cost
    of MiniLM fine-tuning; elsewhere bf16 is emulated and slower, so runs stay fp32. False as well where this
    process's settings switch native bf16 off (:func:`allow_native_bf16`)."""
    if not _native_bf16:
        return False
    try:
        flags = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


def allow_native_bf16(allowed: bool) -> None:
    """The boundary's :attr:`medibio.core.settings.Settings.native_bf16`, for every precision decision of this
    process (``$MEDIBIO_CPU_BF16=off`` turns it off; the study's commands do)."""
    global _native_bf16
    _native_bf16 = allowed


# The device files a GPU driver makes (NVIDIA's, ROCm's, WSL's): without any of them torch finds no GPU
GPU_DEVICE_FILES = ("/dev/nvidiactl", "/proc/driver/nvidia", "/dev/kfd", "/dev/dxg")


def gpu_possible() -> bool:
    """Whether torch could find a GPU here: it is imported already (asking it costs nothing), or a GPU driver's
    device files exist. Planning a run asks for its precision; on a machine without a driver the answer needs
    no torch, whose import took 2 s in every chapter's kernel that only plans and reads recorded runs."""
    return "torch" in sys.modules or any(Path(p).exists() for p in GPU_DEVICE_FILES)


def current_device() -> Device:
    """The device this process trains on: the GPU when there is one, else the CPU."""
    if not gpu_possible():
        return Device("cpu", cpu_has_bf16())
    import torch

    if torch.cuda.is_available():
        return Device("cuda", bool(torch.cuda.is_bf16_supported(including_emulation=False)))
    return Device("cpu", cpu_has_bf16())


def precision_for(device: Device | None = None, requested: str = "auto") -> str:
    """The accelerate ``mixed_precision`` (``"bf16"``, ``"fp16"`` or ``"no"``) for ``requested`` on ``device``
    (default: :func:`current_device`); the table in this module's docstring."""
    if requested not in REQUESTS:
        raise MedibioError(f"unknown precision {requested!r}; known: {', '.join(REQUESTS)}")
    if requested in ("no", "fp32"):
        return "no"
    device = device or current_device()
    if device.kind == "cuda":
        if requested == "fp16":
            return "fp16"
        return "bf16" if device.native_bf16 else "fp16"
    return "bf16" if requested in ("auto", "bf16") and device.native_bf16 else "no"


def label(used: str | None) -> str:
    """A run's recorded accelerate ``mixed_precision`` as pages name it (``no`` computes in fp32)."""
    return {"no": "fp32", None: "a precision not recorded"}.get(used, str(used))


def cpu_precision(requested: str = "auto") -> str:
    """``"bf16"`` or ``"fp32"``: what work that always runs on this CPU (the frozen baselines' encoding)
    computes with for ``requested``."""
    return "bf16" if precision_for(Device("cpu", cpu_has_bf16()), requested) == "bf16" else "fp32"


def accelerator(requested: str = "no") -> Any:
    """An ``Accelerator`` on the GPU(s) when present, else the CPU (gloo when several processes were
    launched), with the precision :func:`precision_for` decides for ``requested``."""
    import torch
    from accelerate import Accelerator
    from accelerate.state import AcceleratorState, GradientState, PartialState

    mixed_precision = precision_for(requested=requested)
    cpu = not torch.cuda.is_available()
    if AcceleratorState._shared_state:
        current = str(AcceleratorState().mixed_precision)
        if current != mixed_precision:
            if PartialState().num_processes > 1:
                raise MedibioError(
                    f"this distributed run was started with mixed precision {current!r}; a training step "
                    f"asked for {mixed_precision!r}. Launch it again with --mixed_precision {mixed_precision}."
                )
            AcceleratorState._reset_state()
            GradientState._reset_state()
    return Accelerator(cpu=cpu, mixed_precision=mixed_precision)


class AcceleratorWhenTraining:
    """The :func:`accelerator` of a list of runs, made when one of them trains (:attr:`made`): a chapter whose
    runs are all on record imports no torch and accelerate (2-3 s each). Until then a process that no launcher
    started (``launched``: the settings say) is the only process, and the main one."""

    def __init__(self, requested: str = "no", launched: bool = False) -> None:
        self.requested, self.launched = requested, launched
        self._made: Any = None

    @property
    def made(self) -> Any:
        if self._made is None:
            self._made = accelerator(self.requested)
        return self._made

    def _needed(self) -> bool:
        return self._made is not None or self.launched

    @property
    def num_processes(self) -> int:
        return self.made.num_processes if self._needed() else 1

    @property
    def is_main_process(self) -> bool:
        return self.made.is_main_process if self._needed() else True

    def wait_for_everyone(self) -> None:
        if self._needed():
            self.made.wait_for_everyone()


def made(found: Any) -> Any:
    """The accelerator itself, made now where ``found`` waited for a run to train."""
    return found.made if isinstance(found, AcceleratorWhenTraining) else found


def evaluation_copy(model: Any, device_type: str, mixed_precision: str) -> Any | None:
    """A bf16 copy of ``model``'s weights in eval mode, to call without autocast, where evaluation on
    ``device_type`` under ``mixed_precision`` runs one (on the CPU under bf16: module docstring); else None."""
    import copy

    import torch

    if device_type != "cpu" or mixed_precision != "bf16":
        return None
    net = copy.deepcopy(model)
    for wrapper in ("forward", "_original_forward"):  # accelerate's autocast around forward: not on the copy
        vars(net).pop(wrapper, None)
    return net.to(torch.bfloat16).eval()


def evaluation_model(model: Any, accelerator: Any) -> Any:
    """What evaluates ``model``, trained through ``accelerator``: :func:`evaluation_copy` of it, or the
    model itself."""
    net = evaluation_copy(accelerator.unwrap_model(model), accelerator.device.type, str(accelerator.mixed_precision))
    return model if net is None else net


@contextmanager
def attention_kernels() -> Iterator[None]:
    """On a GPU, torch's scaled-dot-product attention with the flash, memory-efficient and math kernels but
    not cuDNN's; on a CPU nothing changes.

    torch picks cuDNN's attention first for bf16 on Hopper GPUs, and under dynamic padding, where most batches
    bring a new shape, it was slow until it had seen each shape once (a per-shape execution plan, by all
    appearances). On an H200 (BERT-base shape, the ``gpu`` profile, 1,024 examples, two epochs;
    reference/gpu/README.md) two epochs of GAD trained at 27.0K real tokens/s without it against 5.6K with it
    (BC5-chem 26.1K against 17.0K, ChemProt 57.7K against 30.7K), a first evaluation pass ran 13-18x as fast,
    and once the shapes had been seen the two ran at the same rate.
    """
    import torch

    if not torch.cuda.is_available():
        yield
        return
    from torch.nn.attention import SDPBackend, sdpa_kernel

    with sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]):
        yield


def is_main_process() -> bool:
    """True in the process that writes files (rank 0), without touching the mixed-precision state."""
    from accelerate.state import PartialState

    return PartialState().is_main_process


def shutdown() -> None:
    """Leave a multi-process run cleanly: every process meets at a barrier, then the process group is
    destroyed before the interpreter exits.

    Without it a process that finishes first can tear down while gloo's threads still talk to the others:
    under ``accelerate launch`` on CPU a run that only reused its record ended in ``terminate called without
    an active exception`` (SIGABRT) about once in ten launches.
    """
    dist = sys.modules.get("torch.distributed")
    if dist is None or not dist.is_available() or not dist.is_initialized():
        return
    dist.barrier()
    dist.destroy_process_group()
