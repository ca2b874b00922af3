"""Fine-tuning presets: the :class:`FinetuneConfig` of one task under one profile, and user overrides.

A *preset* combines the registry's per-task maximum length with what the profile decides
(:mod:`medibio.profiles`: the base fields and the per-task fields of ``smoke``, ``cpu``, ``gpu``, ``paper``).
Command-line flags and ``--config`` files override it; every effective field ends up in the run record and
in the digest that identifies the run (:mod:`medibio.runs.identity`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from medibio import profiles
from medibio.profiles import DEFAULT_PROFILE, INTERMEDIATE_HYPERPARAMETERS, Profile

# The BLURB paper's hyperparameter search space (Gu et al., section 6.2).
BLURB_LEARNING_RATES = (1e-5, 3e-5, 5e-5)
BLURB_BATCH_SIZES = (16, 32)
CLASS_WEIGHTINGS = ("none", "sqrt", "balanced")


@dataclass
class FinetuneConfig:
    """Every knob of one fine-tuning run (all of it is written into the run record)."""

    learning_rate: float = 3e-5
    batch_size: int = 32  # global (effective) batch: per-device batch x processes x accumulation
    grad_accum: int = 1
    epochs: int = 3
    max_length: int = 512
    warmup_ratio: float = 0.1
    weight_decay: float = 0.01
    dropout: float = 0.1
    max_grad_norm: float = 1.0
    adam_epsilon: float = 1e-8
    eval_batch_size: int = 64
    max_train_examples: int | None = None  # cap on training examples (a seeded random subset)
    max_dev_examples: int | None = None  # dev subsample for model selection (noted in the record)
    max_test_examples: int | None = None  # only the smoke profile caps test; scores are then not official
    mixed_precision: str = "bf16"  # autocast on GPU, and on CPUs with native bf16 (else fp32)
    length_bucketing: bool = True  # batches of similar length (less padding)
    pad_to_max_length: bool = False  # fixed-length padding (benchmarks compare it with dynamic padding)
    # Cross-entropy class weights for single-label tasks: "none", "sqrt" (1/sqrt(frequency)) or "balanced"
    # (1/frequency), normalised to mean 1 over the classes present in the training subset.
    class_weighting: str = "none"
    # Stability methods (Tinn et al.); applied through medibio.finetune.stability.
    freeze_lower: bool = False
    llrd: float | None = None  # layer-wise learning-rate decay factor, e.g. 0.9
    reinit_top: int = 0
    bias_correction: bool = True
    longer_training: float = 1.0  # multiplies the epochs
    # Sequence-head pooling (medibio.finetune.modeling.POOLINGS): "cls" = the architecture's pooler, "mean" =
    # masked mean of the last layer. Left out of to_dict() at its default so earlier runs keep their digests.
    pooling: str = "cls"
    # The new task head learns at learning_rate x head_lr_scale (the encoder at learning_rate): a randomly
    # initialised head needs larger steps than pretrained weights. Left out of to_dict() at 1.0 (as pooling).
    head_lr_scale: float = 1.0
    # Intermediate fine-tuning stages use these instead of the task's own caps.
    intermediate_max_train_examples: int | None = None
    intermediate_epochs: int | None = None

    def __post_init__(self) -> None:
        if self.pooling not in ("cls", "mean"):
            raise ValueError(f"pooling must be 'cls' or 'mean', not {self.pooling!r}")
        if self.class_weighting not in CLASS_WEIGHTINGS:
            raise ValueError(f"class_weighting must be one of {', '.join(CLASS_WEIGHTINGS)}, "
                             f"not {self.class_weighting!r}")

    @property
    def effective_epochs(self) -> int:
        """Epochs after the ``longer_training`` factor."""
        return max(1, int(math.ceil(self.epochs * self.longer_training)))

    def replace(self, **changes: Any) -> FinetuneConfig:
        """A copy with some fields changed; unknown names raise ``ValueError`` listing the valid ones."""
        unknown = sorted(set(changes) - set(field_names()))
        if unknown:
            raise ValueError(f"unknown fine-tuning option(s) {unknown}; valid: {', '.join(field_names())}")
        return dataclasses.replace(self, **{k: _coerce(k, v) for k, v in changes.items()})

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        if data["pooling"] == "cls":
            del data["pooling"]
        if data["head_lr_scale"] == 1.0:
            del data["head_lr_scale"]
        data["effective_epochs"] = self.effective_epochs
        return data


def field_names() -> list[str]:
    return [f.name for f in dataclasses.fields(FinetuneConfig)]


_TYPES = {f.name: f.type for f in dataclasses.fields(FinetuneConfig)}


def _coerce(name: str, value: Any) -> Any:
    """Values from YAML/CLI strings into the field's type (``"3e-5"`` -> 3e-05)."""
    if value is None:
        return None
    kind = str(_TYPES[name])
    if kind.startswith("bool"):
        if isinstance(value, str):
            return value.strip().lower() in ("1", "true", "yes", "on")
        return bool(value)
    if kind.startswith("int"):
        return int(value)
    if kind.startswith("float"):
        return float(value)
    return value


def preset(dataset: str, profile: str | Profile = DEFAULT_PROFILE, max_length: int | None = None) -> FinetuneConfig:
    """The fine-tuning config of one task under one profile (before any user override).

    ``max_length`` defaults to the registry's value for BLURB datasets; a profile may lower it.
    """
    prof = profiles.get(profile)
    from medibio.blurb import registry

    try:
        spec = registry.get(dataset)
        dataset, spec_len = spec.name, spec.max_length
    except KeyError:  # an intermediate task (STS-B, SICK, ...)
        spec_len = max_length or INTERMEDIATE_HYPERPARAMETERS["max_length"]
    cfg = FinetuneConfig(max_length=max_length or spec_len)
    cfg = cfg.replace(**prof.finetune_base)
    cfg = cfg.replace(**prof.finetune_per_task.get(dataset, {}))
    if prof.name == "smoke":
        cfg = cfg.replace(max_length=min(cfg.max_length, prof.finetune_base["max_length"]))
    else:
        cfg = cfg.replace(max_length=min(cfg.max_length, max_length or spec_len))
    if prof.limit is not None:
        cfg = cfg.replace(max_train_examples=prof.cap(cfg.max_train_examples),
                          max_dev_examples=prof.cap(cfg.max_dev_examples),
                          max_test_examples=prof.cap(cfg.max_test_examples),
                          intermediate_max_train_examples=prof.cap(cfg.intermediate_max_train_examples))
    return cfg


def intermediate_preset(task: str, profile: str | Profile, max_length: int | None = None) -> FinetuneConfig:
    """Config of an intermediate fine-tuning stage (STS-B, SICK, or a BLURB dataset used as one)."""
    prof = profiles.get(profile)
    from medibio.blurb import registry

    try:
        registry.get(task)
        cfg = preset(task, prof)
    except KeyError:
        cfg = FinetuneConfig().replace(**{**INTERMEDIATE_HYPERPARAMETERS, **dict(prof.finetune_base)})
        if max_length:
            cfg = cfg.replace(max_length=min(cfg.max_length, max_length))
    changes: dict[str, Any] = {"max_train_examples": prof.cap(cfg.intermediate_max_train_examples),
                               "max_dev_examples": prof.cap(cfg.max_dev_examples)}
    if cfg.intermediate_epochs:
        changes["epochs"] = cfg.intermediate_epochs
    return cfg.replace(**changes)


def read_yaml_mapping(path: str | Path, what: str) -> dict[str, Any]:
    """A YAML/JSON file holding one mapping (``what`` names it in errors, which name the file and line)."""
    import yaml

    from medibio.errors import InputFormatError

    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        line = getattr(getattr(exc, "problem_mark", None), "line", None)
        raise InputFormatError(path, None if line is None else line + 1, "valid YAML", str(exc)) from exc
    if not isinstance(data, dict):
        raise InputFormatError(path, 1, f"a mapping of {what}", type(data).__name__)
    return data


def load_config_file(path: str | Path) -> dict[str, Any]:
    """Read a YAML/JSON override file: top-level fields apply to every task, ``tasks:`` maps a dataset
    name to its own fields. Unknown keys raise ``InputFormatError`` naming the file."""
    from medibio.errors import InputFormatError

    path = Path(path)
    data = read_yaml_mapping(path, "fine-tuning options")
    valid = set(field_names())
    for key in data:
        if key != "tasks" and key not in valid:
            raise InputFormatError(path, None, f"a fine-tuning option ({', '.join(sorted(valid))}) or 'tasks'",
                                   str(key))
    for task, changes in (data.get("tasks") or {}).items():
        bad = sorted(set(changes or {}) - valid)
        if bad:
            raise InputFormatError(path, None, f"fine-tuning options under tasks.{task}", ", ".join(bad))
    return data


def apply_overrides(cfg: FinetuneConfig, dataset: str, overrides: Mapping[str, Any] | None) -> FinetuneConfig:
    """Apply user overrides (a config-file mapping and/or CLI flags; ``None`` values are ignored)."""
    if not overrides:
        return cfg
    flat = {k: v for k, v in overrides.items() if k != "tasks" and v is not None}
    cfg = cfg.replace(**flat)
    per_task = overrides.get("tasks") or {}
    from medibio.blurb import registry

    for name, changes in per_task.items():
        try:
            same = registry.get(name).name == registry.get(dataset).name
        except KeyError:
            same = name == dataset
        if same:
            cfg = cfg.replace(**{k: v for k, v in (changes or {}).items() if v is not None})
    return cfg


def budget_table(profile: str = "cpu") -> list[dict[str, Any]]:
    """One row per BLURB dataset with the effective budget of a profile (for docs and the CLI)."""
    from medibio.blurb import registry

    prof = profiles.get(profile)
    rows = []
    for spec in registry.DATASETS:
        cfg = preset(spec.name, prof)
        rows.append({"dataset": spec.name, "group": spec.group.value, "max_train_examples": cfg.max_train_examples,
                     "max_dev_examples": cfg.max_dev_examples, "epochs": cfg.effective_epochs,
                     "max_length": cfg.max_length, "batch_size": cfg.batch_size,
                     "learning_rate": cfg.learning_rate, "head_learning_rate": cfg.learning_rate * cfg.head_lr_scale,
                     "pooling": cfg.pooling, "class_weighting": cfg.class_weighting,
                     "seeds": len(prof.default_seeds(spec.name))})
    return rows


def budget_frame(profile: str = "cpu") -> Any:
    """:func:`budget_table` as a DataFrame for the book: one row per dataset, "all" where nothing is capped
    and learning rates as printed (``1e-04``)."""
    import pandas as pd

    frame = pd.DataFrame(budget_table(profile)).set_index("dataset")
    for col in ("max_train_examples", "max_dev_examples"):
        frame[col] = [("all" if v is None or pd.isna(v) else str(int(v))) for v in frame[col]]
    for col in ("learning_rate", "head_learning_rate"):
        frame[col] = [f"{v:g}" for v in frame[col]]
    return frame


__all__ = ["BLURB_BATCH_SIZES", "BLURB_LEARNING_RATES", "DEFAULT_PROFILE", "FinetuneConfig", "apply_overrides",
           "budget_frame", "budget_table", "intermediate_preset", "load_config_file", "preset"]
