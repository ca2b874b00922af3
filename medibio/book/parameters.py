"""A chapter's parameters: checked in its first cell, and every value left at ``None`` taken from the profile.

Papermill passes whatever a user typed (``-p tasks BIOSSES`` arrives as a string, ``-p seeds 1`` as an int),
JupyterLab users edit the parameters cell, and ``medibio book`` injects ``profile`` (and ``model`` with
``--model``: the encoder every other default then names, e.g. ``models``). :func:`resolve`
turns all of these into the same validated values — a comma-separated string or list syntax (papermill
``-p seeds "[1, 2]"``) is a list, names are checked against their registries, a bad value is one
:class:`ParameterError` naming the parameter, the whole value and what is allowed — and fills the rest from
:class:`medibio.core.profiles.Profile`, so the same profile runs the same thing however the chapter was started.
"""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from medibio.core import profiles
from medibio.core.errors import MedibioError
from medibio.core.paths import REPO_ROOT
from medibio.core.profiles import Profile
from medibio.core.rules import MAX_SEED
from medibio.pretrain.configs import CONFIGS
from medibio.tasks import registry
from medibio.training.config import load_config_file, trainable_task


class ParameterError(MedibioError, ValueError):
    """A chapter parameter with a value the chapter cannot run with."""


def _items(name: str, value: Any) -> list[Any]:
    """The items of a list parameter: a list, one int, a comma string ``1,2`` or list syntax ``[1, 2]``
    (papermill ``-p seeds "[1, 2]"`` passes that text as is); quotes around names are dropped."""
    if isinstance(value, str):
        text = value.strip()
        if text[:1] + text[-1:] in ("[]", "()"):
            try:
                parsed = ast.literal_eval(text)
            except (ValueError, SyntaxError):  # [BIOSSES, GAD]: names without quotes
                parsed = None
            if isinstance(parsed, (list, tuple)):
                return list(parsed)
            text = text[1:-1]
        items = (v.strip().strip("'\"").strip() for v in text.split(","))
        return [v for v in items if v]
    if isinstance(value, (list, tuple)):
        return list(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return [value]
    raise ParameterError(f"parameter {name}: expected a list (or a comma-separated string), got "
                         f"{type(value).__name__} {value!r}")


def _whole(value: Any, item: Any) -> str:
    """`` in <the whole value>`` when an item was cut out of a longer value, so the error shows both."""
    return f" in {value!r}" if value != item else ""


def _names(lookup: Callable[[str], Any]) -> Callable[[str, Any], list[str]]:
    def check(name: str, value: Any) -> list[str]:
        out = []
        for item in _items(name, value):
            if not isinstance(item, str):
                raise ParameterError(f"parameter {name}: expected names, got {item!r}{_whole(value, item)}")
            try:
                out.extend(lookup(item))
            except KeyError as exc:
                raise ParameterError(f"parameter {name}: {exc.args[0] if exc.args else exc}"
                                     f"{_whole(value, item)}") from None
        if not out:
            raise ParameterError(f"parameter {name}: empty; give at least one name or None for the profile's")
        return out
    return check


def _blurb(item: str) -> list[str]:
    return [s.name for s in registry.resolve(item)]


def _ift_task(item: str) -> list[str]:
    return [trainable_task(item).name]


def _model(item: str) -> list[str]:
    return [item]


def _one_model(name: str, value: Any) -> str:
    """One encoder: a :mod:`medibio.models.zoo` name, a local folder or a hub id (loaded when a run needs it)."""
    if not isinstance(value, (str, Path)) or not str(value).strip():
        raise ParameterError(f"parameter {name}: expected a model name, folder or hub id, got {value!r}")
    return str(value).strip()


def _seeds(name: str, value: Any) -> list[int]:
    out = []
    for item in _items(name, value):
        try:
            seed = int(item)
        except (TypeError, ValueError):
            raise ParameterError(f"parameter {name}: seeds are whole numbers, got {item!r}"
                                 f"{_whole(value, item)}") from None
        if isinstance(item, float) and item != seed or not 0 <= seed <= MAX_SEED:
            raise ParameterError(f"parameter {name}: seeds are whole numbers in [0, {MAX_SEED}], got {item!r}"
                                 f"{_whole(value, item)}")
        out.append(seed)
    if not out:
        raise ParameterError(f"parameter {name}: empty; give seeds or None for the profile's")
    return out


def _flag(name: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false", "yes", "no", "1", "0"):
        return value.strip().lower() in ("true", "yes", "1")
    raise ParameterError(f"parameter {name}: expected True or False, got {value!r}")


def _pretrain_config(name: str, value: Any) -> str:
    if not isinstance(value, str) or value not in CONFIGS:
        raise ParameterError(f"parameter {name}: unknown pretraining config {value!r}; known: {', '.join(CONFIGS)}")
    return value


def _finetune_config(name: str, value: Any) -> dict[str, Any]:
    """A YAML of fine-tuning overrides (``medibio finetune --config``): "" means none."""
    text = _text(name, value).strip()
    if not text:
        return {}
    path = Path(text).expanduser()
    if not path.is_absolute() and not path.is_file():
        path = REPO_ROOT / path
    if not path.is_file():
        raise ParameterError(f"parameter {name}: no such file {text!r} (a YAML of fine-tuning options)")
    return load_config_file(path)


def _text(name: str, value: Any) -> str:
    if not isinstance(value, str):
        raise ParameterError(f"parameter {name}: expected a string, got {type(value).__name__} {value!r}")
    return value


# parameter -> (check of a given value, the profile's value when None)
_RULES: dict[str, tuple[Callable[[str, Any], Any], Callable[[Profile], Any]]] = {
    "tasks": (_names(_blurb), lambda p: _names(_blurb)("tasks", list(p.book.tasks))),
    "model": (_one_model, lambda p: p.model),
    "models": (_names(_model), lambda p: [p.model]),
    "seeds": (_seeds, lambda p: None),  # None: each dataset's default seeds of the profile
    "ift_tasks": (_names(_ift_task), lambda p: _names(_ift_task)("ift_tasks", list(p.book.ift_tasks))),
    "stilt_tasks": (_names(_blurb), lambda p: list(p.book.stilt_tasks)),
    "stilt_seeds": (_seeds, lambda p: list(p.book.stilt_seeds) if p.book.stilt_seeds else None),
    "pretrain_config": (_pretrain_config, lambda p: p.pretrain_config),
    "table5_experiments": (_flag, lambda p: p.book.table5_experiments),
    "field_metadata": (_text, lambda p: "s2orc/v2020-07-05_metadata_sample.jsonl"),
    "finetune_config": (_finetune_config, lambda p: {}),
}


def names() -> list[str]:
    """Every parameter a chapter may declare besides ``profile``, ``data_root`` and ``results_root``."""
    return list(_RULES)


def resolve(profile: str, **given: Any) -> SimpleNamespace:
    """Validated values of a chapter's parameters; ``None`` takes the profile's value."""
    try:
        prof = profiles.get(profile)
    except KeyError as exc:
        raise ParameterError(f"parameter profile: {exc}") from None
    unknown = sorted(set(given) - set(_RULES))
    if unknown:
        raise ParameterError(f"unknown chapter parameter(s) {unknown}; known: profile, data_root, results_root, "
                             + ", ".join(_RULES))
    values = {"profile": prof.name}
    if given.get("model") is not None:  # the book built for another model: every default names that model
        prof = dataclasses.replace(prof, model=_one_model("model", given["model"]))
    for key, value in given.items():
        check, default = _RULES[key]
        values[key] = default(prof) if value is None else check(key, value)
    return SimpleNamespace(**values)
