"""Effective batch arithmetic: per-device batch x processes x gradient-accumulation steps.

The paper states its MediBioDeBERTa batch as 4,096 per device x 3 nodes x 4 accumulation steps = 49,152.
To reproduce a *requested* effective batch on other hardware, the per-device batch is fixed by memory and
the process count by the machine, so only the accumulation count is free: it must divide exactly, otherwise
the run would silently train with a different batch than the one asked for.
"""

from __future__ import annotations

from dataclasses import dataclass

from medibio.core.errors import MedibioError


class BatchArithmeticError(MedibioError, ValueError):
    """A requested effective batch cannot be reached exactly with the hardware at hand."""


@dataclass(frozen=True)
class BatchLayout:
    """How one optimizer step's examples are spread over devices and accumulation steps."""

    per_device: int
    processes: int
    accumulation: int

    def __post_init__(self) -> None:
        for name in ("per_device", "processes", "accumulation"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise BatchArithmeticError(f"{name} must be a positive integer, got {value!r}")

    @property
    def effective(self) -> int:
        """Examples per optimizer step."""
        return self.per_device * self.processes * self.accumulation

    @property
    def per_micro_step(self) -> int:
        """Examples in one forward/backward pass across all processes."""
        return self.per_device * self.processes

    def describe(self) -> str:
        return f"{self.per_device} per device x {self.processes} processes x {self.accumulation} accumulation " \
               f"= {self.effective}"


def effective_batch(per_device: int, processes: int = 1, accumulation: int = 1) -> int:
    """Per-device batch x processes x accumulation steps (the paper: 4,096 x 3 x 4 = 49,152)."""
    return BatchLayout(per_device, processes, accumulation).effective


def plan_batch(effective: int, per_device: int, processes: int = 1, shrink_per_device: bool = True) -> BatchLayout:
    """Accumulation steps that reach ``effective`` exactly with ``per_device`` examples on each process.

    When the effective batch is smaller than one micro-step (``per_device x processes``) and
    ``shrink_per_device`` is true, the per-device batch is lowered to ``effective / processes`` (with one
    accumulation step) instead of overshooting. Raises ``BatchArithmeticError`` when no exact layout exists.
    """
    if effective < 1 or per_device < 1 or processes < 1:
        raise BatchArithmeticError(
            f"effective batch, per-device batch and processes must be positive, got {effective}, {per_device}, "
            f"{processes}")
    micro = per_device * processes
    if effective < micro and shrink_per_device:
        if effective % processes:
            raise BatchArithmeticError(
                f"effective batch {effective} is not divisible by {processes} processes; "
                f"use a multiple of {processes}")
        return BatchLayout(effective // processes, processes, 1)
    if effective % micro:
        lower = effective // micro * micro
        upper = lower + micro
        raise BatchArithmeticError(
            f"effective batch {effective} is not a multiple of per-device batch {per_device} x {processes} "
            f"processes = {micro}; choose {lower or micro} or {upper}, or change the per-device batch")
    return BatchLayout(per_device, processes, effective // micro)
