"""Fine-tuning presets: the :class:`FinetuneConfig` of one task under one profile, and user overrides.

A *preset* combines the registry's per-task maximum length with what the profile decides
(:mod:`medibio.core.profiles`: the base fields and the per-task fields of ``smoke``, ``cpu``, ``gpu``, ``paper``).
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

from medibio.core import profiles, rules
from medibio.core.errors import InputFormatError, MedibioError, UnknownNameError
from medibio.core.precision import REQUESTS as PRECISIONS
from medibio.core.profiles import DEFAULT_PROFILE, INTERMEDIATE_HYPERPARAMETERS, Profile
from medibio.core.rules import InvalidValueError
from medibio.core.text import Where, yaml_mapping
from medibio.models.heads import POOLINGS
from medibio.tasks import registry
from medibio.tasks.spec import TaskSpec

# The BLURB paper's hyperparameter search space (Gu et al., section 6.2).
BLURB_LEARNING_RATES = (1e-5, 3e-5, 5e-5)
BLURB_BATCH_SIZES = (16, 32)
CLASS_WEIGHTINGS = ("none", "sqrt", "balanced")
# Under --limit, sequences are cut at this many sub-tokens too: a model pretrained for a few limited steps has a
# vocabulary learnt from a few sentences, which splits text into hundreds of pieces (512-token BIOSSES pairs,
# 4 s a forward pass on a 2-core CPU), and the check is that the code runs, not what it scores.
LIMITED_MAX_LENGTH = 128
CV_FOLDS = 5  # the folds of a cross-validated run (FinetuneConfig.cv_fold)


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
    # Stability methods (Tinn et al.); applied through medibio.training.stability.
    freeze_lower: bool = False
    llrd: float | None = None  # layer-wise learning-rate decay factor, e.g. 0.9
    reinit_top: int = 0
    bias_correction: bool = True
    longer_training: float = 1.0  # multiplies the epochs
    # Sequence-head pooling (medibio.models.heads.POOLINGS): "cls" = the architecture's pooler, "mean" =
    # masked mean of the last layer, "cosine" = bi-encoder cosine head (sentence-pair regression). Left out
    # of to_dict() at its default so earlier runs keep their digests.
    pooling: str = "cls"
    # The new task head learns at learning_rate x head_lr_scale (the encoder at learning_rate): a randomly
    # initialised head needs larger steps than pretrained weights. Left out of to_dict() at 1.0 (as pooling).
    head_lr_scale: float = 1.0
    # Intermediate fine-tuning stages use these instead of the task's own caps.
    intermediate_max_train_examples: int | None = None
    intermediate_epochs: int | None = None
    # Seed of the intermediate stages. None: a chain's stages are trained once per target seed. A number:
    # they are trained once, with that seed, and every target seed starts from that one encoder, so the
    # spread over seeds is the target stage's (the cpu profile: it saves two stage trainings per chain).
    # Left out of to_dict() when None (as pooling), so earlier runs keep their digests.
    intermediate_seed: int | None = None
    # Fold 1..CV_FOLDS of a cross-validation over all of a task's examples (medibio.training.features.cv_splits)
    # instead of the official splits: BIOSSES's 20 test pairs are too few to judge an IFT gain alone. Left out
    # of to_dict() when None (as pooling).
    cv_fold: int | None = None

    def __post_init__(self) -> None:
        for name, rule in OPTION_RULES.items():  # one check for flags, --config files, overrides and profiles
            try:
                setattr(self, name, rule(getattr(self, name)))
            except InvalidValueError as exc:
                raise OptionError(f"fine-tuning option {name}: {exc}") from None

    @property
    def effective_epochs(self) -> int:
        """Epochs after the ``longer_training`` factor."""
        return max(1, int(math.ceil(self.epochs * self.longer_training)))

    def replace(self, **changes: Any) -> FinetuneConfig:
        """A copy with some fields changed; unknown names raise ``ValueError`` listing the valid ones."""
        unknown = sorted(set(changes) - set(field_names()))
        if unknown:
            raise ValueError(f"unknown fine-tuning option(s) {unknown}; valid: {', '.join(field_names())}")
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        if data["pooling"] == "cls":
            del data["pooling"]
        if data["head_lr_scale"] == 1.0:
            del data["head_lr_scale"]
        if data["intermediate_seed"] is None:
            del data["intermediate_seed"]
        if data["cv_fold"] is None:
            del data["cv_fold"]
        data["effective_epochs"] = self.effective_epochs
        return data


def field_names() -> list[str]:
    return [f.name for f in dataclasses.fields(FinetuneConfig)]


class OptionError(MedibioError, ValueError):
    """A fine-tuning option (or a block of overrides) with a value no run can use; says what is allowed."""


# The allowed values of every FinetuneConfig field (medibio.core.rules): FinetuneConfig applies them on
# creation, check_overrides to config mappings, load_config_file with the file's lines, the CLI to its flags.
OPTION_RULES: dict[str, rules.Rule] = {
    "learning_rate": rules.positive(),
    "batch_size": rules.integer(1),
    "grad_accum": rules.integer(1),
    "epochs": rules.integer(1),
    "max_length": rules.integer(2),
    "warmup_ratio": rules.interval(0, 1),
    "weight_decay": rules.non_negative(),
    "dropout": rules.interval(0, 1, high_open=True),
    "max_grad_norm": rules.non_negative(),  # 0: no clipping
    "adam_epsilon": rules.positive(),
    "eval_batch_size": rules.integer(1),
    "max_train_examples": rules.integer(1).or_none(),
    "max_dev_examples": rules.integer(1).or_none(),
    "max_test_examples": rules.integer(1).or_none(),
    "mixed_precision": rules.choice(PRECISIONS),
    "length_bucketing": rules.flag(),
    "pad_to_max_length": rules.flag(),
    "class_weighting": rules.choice(CLASS_WEIGHTINGS),
    "freeze_lower": rules.flag(),
    "llrd": rules.interval(0, 1, low_open=True).or_none(),
    "reinit_top": rules.integer(0),
    "bias_correction": rules.flag(),
    "longer_training": rules.positive(),
    "pooling": rules.choice(POOLINGS),
    "head_lr_scale": rules.positive(),
    "intermediate_max_train_examples": rules.integer(1).or_none(),
    "intermediate_epochs": rules.integer(1).or_none(),
    "intermediate_seed": rules.integer(0).or_none(),
    "cv_fold": rules.integer(1, CV_FOLDS).or_none(),
}


def check_option(name: str, value: Any) -> Any:
    """``value`` converted by the option's rule (``"3e-5"`` -> 3e-05); :class:`InvalidValueError` if the
    rule refuses it, :class:`UnknownNameError` for a name that is no option."""
    if name not in OPTION_RULES:
        raise UnknownNameError("fine-tuning option", name, field_names())
    return OPTION_RULES[name](value)


def trainable_task(name: Any) -> TaskSpec:
    """A task a fine-tuning run or an intermediate stage trains on: a BLURB dataset or an intermediate task
    (aliases allowed); anything else is an :class:`UnknownNameError` listing both."""
    try:
        spec = registry.get(str(name))
    except UnknownNameError:
        spec = None
    if spec is None or spec.family not in ("blurb", "ift"):
        raise UnknownNameError("task", name, _known_tasks(), " (BLURB datasets and intermediate tasks)")
    return spec


def _known_tasks() -> list[str]:
    return [*registry.names("blurb"), *registry.names("ift")]


def check_overrides(overrides: Mapping[str, Any] | None, path: str | Path | None = None,
                    lines: Mapping[Where, int] | None = None) -> dict[str, Any]:
    """Validate a mapping of overrides (``--config`` file, ``run_finetune(config_overrides=...)``, a
    notebook's ``finetune_config``) and return it with values converted and ``tasks:`` keys canonical.

    Every value goes through its option's rule; unknown options and unknown dataset names are errors that
    list the known ones. ``None`` means "not given" in a mapping from code (dropped); in a file (``path``
    given) it is an error, and errors are :class:`InputFormatError` naming the file and the key's line.
    """
    if not overrides:
        return {}

    def fail(where: Where, expected: str, got: Any) -> Exception:
        if path is not None:
            return InputFormatError(path, (lines or {}).get(where), expected,
                                    got if isinstance(got, str) else repr(got))
        at = ".".join(map(str, where))
        return OptionError(f"fine-tuning overrides{' ' + at if at else ''}: expected {expected}, got {got!r}")

    def values(where: Where, changes: Any, top: bool) -> dict[str, Any]:
        if not isinstance(changes, Mapping):
            what = "a mapping of fine-tuning options" + (" (and 'tasks')" if top else "")
            raise fail(where, what, changes)
        out: dict[str, Any] = {}
        for key, value in changes.items():
            if top and key == "tasks":
                continue
            at = (*where, key)
            if key not in OPTION_RULES:
                raise fail(at, f"a fine-tuning option ({', '.join(sorted(OPTION_RULES))})"
                           + (" or 'tasks'" if top else f" under {'.'.join(map(str, where))}"), str(key))
            if value is None:
                if path is not None:
                    raise fail(at, f"{'.'.join(map(str, at))} to have a value (leave the key out to keep the "
                               "profile's)", "nothing")
                continue
            try:
                out[key] = OPTION_RULES[key](value)
            except InvalidValueError as exc:
                raise fail(at, f"{'.'.join(map(str, at))} to be {exc.expected}", value) from None
        return out

    out = values((), overrides, top=True)
    per_task = overrides.get("tasks")
    if per_task is None:
        return out
    if not isinstance(per_task, Mapping):
        raise fail(("tasks",), "tasks to map dataset names to their options, e.g. tasks: {BIOSSES: {epochs: 5}}",
                   per_task)
    out["tasks"] = {}
    for name, changes in per_task.items():
        try:
            canonical = trainable_task(name).name
        except KeyError:
            raise fail(("tasks", name), "a dataset under tasks: a BLURB dataset or intermediate task "
                       f"({', '.join(_known_tasks())})", str(name)) from None
        if canonical in out["tasks"]:
            raise fail(("tasks", name), f"each dataset once under tasks ({name!r} is {canonical} again)", str(name))
        out["tasks"][canonical] = values(("tasks", name), changes, top=False)
    return out


def preset(dataset: str, profile: str | Profile = DEFAULT_PROFILE, max_length: int | None = None) -> FinetuneConfig:
    """The fine-tuning config of one BLURB dataset under one profile (before any user override).

    ``max_length`` defaults to the registry's value; a profile may lower it.
    """
    prof = profiles.get(profile)
    spec = registry.get(dataset, "blurb")
    dataset, spec_len = spec.name, spec.max_length
    cfg = FinetuneConfig(max_length=max_length or spec_len)
    cfg = cfg.replace(**prof.finetune_base)
    cfg = cfg.replace(**prof.finetune_per_task.get(dataset, {}))
    if "max_length" in prof.finetune_base:  # a profile-wide length (smoke's) caps every task's own
        cfg = cfg.replace(max_length=min(cfg.max_length, prof.finetune_base["max_length"]))
    else:
        cfg = cfg.replace(max_length=min(cfg.max_length, max_length or spec_len))
    if prof.limit is not None:  # a check that the code path runs: few examples, short sequences
        cfg = cfg.replace(max_length=min(cfg.max_length, LIMITED_MAX_LENGTH),
                          max_train_examples=prof.cap(cfg.max_train_examples),
                          max_dev_examples=prof.cap(cfg.max_dev_examples),
                          max_test_examples=prof.cap(cfg.max_test_examples),
                          intermediate_max_train_examples=prof.cap(cfg.intermediate_max_train_examples))
    return cfg


def check_scorable(spec: TaskSpec, cfg: FinetuneConfig) -> None:
    """Refuse, before anything trains, caps too small for the task's metric: a correlation (Pearson, the
    regression tasks') needs two examples, so ``--limit 1`` on BIOSSES would train and then fail to score."""
    from medibio.tasks.spec import Problem

    if spec.problem is not Problem.REGRESSION:
        return
    for split, cap in (("train", cfg.max_train_examples), ("dev", cfg.max_dev_examples),
                       ("test", cfg.max_test_examples)):
        if cap is not None and cap < 2:
            raise MedibioError(f"{spec.name}: {cap} {split} example (--limit or max_{split}_examples) is too few; "
                               f"its metric ({spec.metric}) is a correlation and needs at least 2: use --limit 2 "
                               "or more")


def intermediate_preset(task: str, profile: str | Profile, max_length: int | None = None) -> FinetuneConfig:
    """Config of an intermediate fine-tuning stage (STS-B, SICK, or a BLURB dataset used as one)."""
    prof = profiles.get(profile)
    if registry.is_blurb(task):
        cfg = preset(task, prof)
    else:
        cfg = FinetuneConfig().replace(**{**INTERMEDIATE_HYPERPARAMETERS, **dict(prof.finetune_base)})
        if max_length:
            cfg = cfg.replace(max_length=min(cfg.max_length, max_length))
    changes: dict[str, Any] = {"max_train_examples": prof.cap(cfg.intermediate_max_train_examples),
                               "max_dev_examples": prof.cap(cfg.max_dev_examples),
                               "intermediate_seed": None}  # the stage's seed is given to it, not configured
    if cfg.intermediate_epochs:
        changes["epochs"] = cfg.intermediate_epochs
    return cfg.replace(**changes)


def load_config_file(path: str | Path) -> dict[str, Any]:
    """Read a YAML/JSON override file: top-level fields apply to every task, ``tasks:`` maps a dataset
    name to its own fields. The file is read under the one text policy (:mod:`medibio.core.text`) and
    checked by :func:`check_overrides`: any bad key or value is an ``InputFormatError`` naming the file,
    the key's line and what is allowed."""
    data, lines = yaml_mapping(path, "fine-tuning options")
    return check_overrides(data, path=Path(path), lines=lines) if data else {}


def apply_overrides(cfg: FinetuneConfig, dataset: str, overrides: Mapping[str, Any] | None) -> FinetuneConfig:
    """Apply user overrides (a config-file mapping and/or CLI flags; ``None`` values are ignored), checked
    by :func:`check_overrides` first."""
    checked = check_overrides(overrides)
    if not checked:
        return cfg
    cfg = cfg.replace(**{k: v for k, v in checked.items() if k != "tasks"})
    return cfg.replace(**checked.get("tasks", {}).get(trainable_task(dataset).name, {}))


def budget_table(profile: str = DEFAULT_PROFILE) -> list[dict[str, Any]]:
    """One row per BLURB dataset with the effective budget of a profile (for docs and the CLI)."""
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


def budget_frame(profile: str = DEFAULT_PROFILE) -> Any:
    """:func:`budget_table` as a DataFrame for the book: one row per dataset, "all" where nothing is capped
    and learning rates as printed (``1e-04``)."""
    import pandas as pd

    frame = pd.DataFrame(budget_table(profile)).set_index("dataset")
    for col in ("max_train_examples", "max_dev_examples"):
        frame[col] = [("all" if v is None or pd.isna(v) else str(int(v))) for v in frame[col]]
    for col in ("learning_rate", "head_learning_rate"):
        frame[col] = [f"{v:g}" for v in frame[col]]
    return frame


__all__ = ["BLURB_BATCH_SIZES", "BLURB_LEARNING_RATES", "DEFAULT_PROFILE", "OPTION_RULES", "FinetuneConfig",
           "OptionError", "apply_overrides", "budget_frame", "budget_table", "check_option", "check_overrides",
           "intermediate_preset", "load_config_file", "preset"]
