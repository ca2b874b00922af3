"""One place that creates ``accelerate.Accelerator`` objects for every training loop in medibio.

accelerate keeps process-wide state: once an ``Accelerator`` exists, a second one with another mixed
precision raises "AcceleratorState has already been initialized". A notebook or test that pretrains (fp32
on CPU) and then fine-tunes (bf16 on CPUs with native bf16) in one process needs both. In a single-process
run the state is reset before building an accelerator with another precision; in a distributed run (launched
by ``accelerate launch``/``torchrun``) the precision is fixed by the launcher and a mismatch is an error.
"""

from __future__ import annotations

from typing import Any

from medibio.errors import MedibioError


def accelerator(mixed_precision: str = "no", cpu: bool | None = None) -> Any:
    """An ``Accelerator`` with ``mixed_precision``; ``cpu=None`` means CPU exactly when no GPU is present."""
    import torch
    from accelerate import Accelerator
    from accelerate.state import AcceleratorState, GradientState, PartialState

    if cpu is None:
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


def is_main_process() -> bool:
    """True in the process that writes files (rank 0), without touching the mixed-precision state."""
    from accelerate.state import PartialState

    return PartialState().is_main_process
