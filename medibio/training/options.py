"""The fine-tuning stability options (:mod:`medibio.training.stability` says what each does), each spelled once:
its configuration field, the note a run record carries and its part of a run's variant name.

Torch-free, so that naming a run (:func:`medibio.finetune.variants.variant_name`) needs no model;
:mod:`medibio.training.stability` applies the options to a model and its optimiser.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from medibio.training.config import FinetuneConfig


@dataclass(frozen=True)
class StabilityOptions:
    """Which stabilisation methods to apply (defaults: plain AdamW fine-tuning)."""

    freeze_lower: bool = False
    layerwise_lr_decay: float | None = None
    reinit_top_k: int = 0
    bias_correction: bool = True
    longer_training: float = 1.0
    head_lr_scale: float = 1.0  # the freshly initialised task head learns at lr x this

    def __post_init__(self) -> None:
        if not self.head_lr_scale > 0:
            raise ValueError(f"head_lr_scale must be > 0, got {self.head_lr_scale}")
        if self.layerwise_lr_decay is not None and not 0.0 < self.layerwise_lr_decay <= 1.0:
            raise ValueError(f"layerwise_lr_decay must be in (0, 1], got {self.layerwise_lr_decay}")
        if self.reinit_top_k < 0:
            raise ValueError(f"reinit_top_k must be >= 0, got {self.reinit_top_k}")
        if not self.longer_training > 0:
            raise ValueError(f"longer_training must be > 0, got {self.longer_training}")

    @property
    def uses_layers(self) -> bool:
        """True when some option needs the per-layer structure of the encoder."""
        return (self.freeze_lower or self.layerwise_lr_decay is not None or self.reinit_top_k > 0
                or self.head_lr_scale != 1.0)

    @classmethod
    def from_config(cls, cfg: FinetuneConfig) -> StabilityOptions:
        """The options a fine-tuning configuration sets."""
        return cls(**{switch.option: getattr(cfg, switch.config) for switch in SWITCHES})

    def changed(self) -> list[tuple[Switch, Any]]:
        """The switches set away from plain AdamW fine-tuning and their values, in :data:`SWITCHES` order."""
        return [(switch, getattr(self, switch.option)) for switch in SWITCHES
                if getattr(self, switch.option) != _DEFAULTS[switch.option]]

    def describe(self) -> list[str]:
        """Notes for run records, e.g. ``["layer-wise lr decay 0.9", "task head lr x100"]``."""
        return [switch.note(value) for switch, value in self.changed()]

    def variant_parts(self) -> list[str]:
        """The parts of a run family's variant name, e.g. ``["freeze", "llrd0.9"]``."""
        return [switch.label(value) for switch, value in self.changed() if switch.label is not None]


@dataclass(frozen=True)
class Switch:
    """One stability option, spelled once: the :class:`StabilityOptions` field, the fine-tuning option that
    sets it, the note a run record carries when it is on, and its part of a variant name (None: not named)."""

    option: str
    config: str
    note: Callable[[Any], str]
    label: Callable[[Any], str] | None


SWITCHES: tuple[Switch, ...] = (
    Switch("freeze_lower", "freeze_lower", lambda on: "freeze embeddings + lower half of the encoder",
           lambda on: "freeze"),
    Switch("layerwise_lr_decay", "llrd", lambda decay: f"layer-wise lr decay {decay}",
           lambda decay: f"llrd{decay:g}"),
    Switch("reinit_top_k", "reinit_top", lambda k: f"re-initialise top {k} layers", lambda k: f"reinit{k}"),
    Switch("bias_correction", "bias_correction", lambda on: "Adam without bias correction (BertAdam)",
           lambda on: "nobiascorr"),
    Switch("longer_training", "longer_training", lambda factor: f"epochs x{factor}",
           lambda factor: f"long{factor:g}"),
    # Not in variant names: a per-task preset of the profiles, like the learning rate and the pooling, rather
    # than a method that runs are compared on; the recorded runs' names (cpu: x100 or x500) leave it out.
    Switch("head_lr_scale", "head_lr_scale", lambda scale: f"task head lr x{scale:g}", None),
)
_DEFAULTS = {field.name: field.default for field in dataclasses.fields(StabilityOptions)}
