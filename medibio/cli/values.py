"""Parse-time checks of command-line values, shared by every verb.

A mistake on the command line (``--epochs 0``, ``--seeds a,b``, ``--task BOGUS``, ``--lr -1``) must stop
before any work starts, in one line that names the option, the value and what is allowed. Each function
here returns a Typer ``callback`` that checks the value and hands it on unchanged (so command bodies keep
their types); a bad value raises ``typer.BadParameter``, which :func:`medibio.cli.main` prints as one line
with exit code 2. Name lookups reuse the library's own registries, so the list of allowed names in the
message is the one the library accepts.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from typing import Any

import typer

from medibio.core import rules
from medibio.core.settings import LIMIT_WHY, MAX_LIMIT

Callback = Callable[[typer.CallbackParam, Any], Any]


def _checked(check: Callable[[Any], object]) -> Callback:
    """A callback that runs ``check`` on a given value; library lookup errors become usage errors."""

    def callback(param: typer.CallbackParam, value: Any) -> Any:
        if value is None:
            return value
        try:
            check(value)
        except typer.BadParameter:
            raise
        except (LookupError, ValueError) as exc:  # UnknownNameError, InvalidValueError, KeyError of a registry
            message = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
            raise typer.BadParameter(str(message)) from None
        return value

    return callback


def _bad(expected: str, value: Any) -> typer.BadParameter:
    return typer.BadParameter(f"expected {expected}, got {value!r}")


def at_least(minimum: int) -> Callback:
    """An integer ``>= minimum`` (``--epochs``, ``--batch-size``: 1; ``--reinit-top``: 0)."""
    return _checked(rules.integer(minimum))


def bounded(minimum: int, maximum: int, why: str | Callable[[], str]) -> Callback:
    """An integer in ``[minimum, maximum]``; a value above ``maximum`` is told ``why`` the bound is there (``why``
    may be a function, for a reason computed from a configuration only when a value is refused)."""
    at_least_minimum, inside = rules.integer(minimum), rules.integer(minimum, maximum)

    def check(value: Any) -> None:
        at_least_minimum(value)  # too small: the plain rule's message
        try:
            inside(value)
        except rules.InvalidValueError as exc:
            raise typer.BadParameter(f"{exc}: {why() if callable(why) else why}") from None

    return _checked(check)


def limit() -> Callback:
    """``--limit``: at most :data:`~medibio.core.settings.MAX_LIMIT` (the bound ``$MEDIBIO_LIMIT`` has too)."""
    return bounded(1, MAX_LIMIT, LIMIT_WHY)


def seed() -> Callback:
    """One seed in [0, 2^32 - 1] (numpy's range: checked before training)."""
    return _checked(rules.seed())


def multiple_of(step: Callable[[], int], why: str) -> Callback:
    """A positive multiple of ``step()`` (looked up only when a value is given: ``--unit-steps`` and the study's
    checkpoint interval), with ``why`` it must be one."""

    def check(value: int) -> None:
        every = step()
        if value < 1 or value % every:
            raise _bad(f"a positive multiple of {every} ({why})", value)

    return _checked(check)


def positive() -> Callback:
    """A finite number ``> 0`` (``--lr``, ``--longer-training``)."""
    return _checked(rules.positive())


def non_negative() -> Callback:
    """A finite number ``>= 0`` (``--max-mb``, where 0 means no limit)."""
    return _checked(rules.non_negative())


def interval(low: float, high: float, *, low_open: bool = False, high_open: bool = False) -> Callback:
    """A finite number in an interval, e.g. ``--llrd`` in (0, 1]."""
    return _checked(rules.interval(low, high, low_open=low_open, high_open=high_open))


def option(name: str) -> Callback:
    """A fine-tuning option's flag (``--epochs``, ``--lr``), checked by the very rule that
    :class:`~medibio.training.config.FinetuneConfig` and ``--config`` files apply to that option."""

    def check(value: Any) -> None:
        from medibio.training import config

        config.check_option(name, value)

    return _checked(check)


def _items(text: str) -> list[str]:
    return [part.strip() for part in str(text).split(",")]


def int_list(minimum: int, example: str = "1,2,3", maximum: int | None = None) -> Callback:
    """A comma list of distinct integers ``>= minimum`` (and ``<= maximum`` when given: ``--seeds 1,2,3``,
    ``--batch-sizes 16,32``)."""
    bounds = f">= {minimum}" if maximum is None else f"in [{minimum}, {maximum}]"
    expected = f"a comma list of distinct integers {bounds}, e.g. {example}"

    def check(text: str) -> None:
        items = _items(text)
        if not items or any(not re.fullmatch(r"[+-]?\d+", i) for i in items):
            raise _bad(expected, text)
        values = [int(i) for i in items]
        too_big = maximum is not None and max(values) > maximum
        if min(values) < minimum or too_big or len(set(values)) != len(values):
            raise _bad(expected, text)

    return _checked(check)


def seeds() -> Callback:
    """A comma list of distinct seeds, each in [0, 2^32 - 1] (numpy's range: checked before training)."""
    return int_list(0, maximum=rules.MAX_SEED)


def name(what: str) -> Callback:
    """A name that may not be empty (``--model ''`` is refused like every other empty option)."""

    def check(value: str) -> None:
        if not value.strip() or value != value.strip():
            raise _bad(f"a {what} (not empty, no surrounding spaces)", value)

    return _checked(check)


def positive_list(example: str = "1e-5,3e-5,5e-5") -> Callback:
    """A comma list of distinct finite numbers ``> 0`` (``--lrs``)."""
    expected = f"a comma list of distinct numbers > 0, e.g. {example}"

    def check(text: str) -> None:
        try:
            values = [float(i) for i in _items(text)]
        except ValueError:
            raise _bad(expected, text) from None
        if not all(math.isfinite(v) and v > 0 for v in values) or len(set(values)) != len(values):
            raise _bad(expected, text)

    return _checked(check)


def choice(allowed: Iterable[str] | Callable[[], Iterable[str]]) -> Callback:
    """One of a fixed set of words (``--order group|count|canonical``).

    ``allowed`` may be a function returning the words, so that a module's own constant can be used
    without importing that module when the CLI starts.
    """

    def check(value: str) -> None:
        options = tuple(allowed() if callable(allowed) else allowed)
        if value not in options:
            raise _bad(f"one of {', '.join(options)}", value)

    return _checked(check)


def lookup(find: Callable[[Any], object]) -> Callback:
    """A name the library resolves with ``find`` (a registry lookup); its error lists the known names."""
    return _checked(find)


def path_component(what: str) -> Callback:
    """A name used as one folder of a path (``--variant``): no separators, not ``.``/``..``, not empty."""

    def check(value: str) -> None:
        if not value or "/" in value or "\\" in value or value in (".", "..") or value != value.strip():
            raise _bad(f"a {what} usable as a folder name (no '/', not '.' or '..', no surrounding spaces)",
                       value)

    return _checked(check)


_SIZE = re.compile(r"\d+(\.\d+)?\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)", re.IGNORECASE)


def memory_size() -> Callback:
    """A memory size such as ``1GB`` or ``512MiB`` (DuckDB's ``memory_limit``)."""

    def check(value: str) -> None:
        if not _SIZE.fullmatch(value.strip()):
            raise _bad("a size such as 512MB, 1GB or 4GiB", value)

    return _checked(check)
