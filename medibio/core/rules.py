"""Value rules shared by command-line flags, option files and library calls: one check, one message.

A rule converts a value to its type and checks its range; what it refuses raises
:class:`InvalidValueError` ("expected an integer >= 1, got 0"). The same rule object checks ``--epochs 0``
(:mod:`medibio.cli.values` turns the error into a usage error), ``epochs: 0`` in a ``--config`` file (the
file's reader adds the file and line) and ``FinetuneConfig(epochs=0)`` (the config names the field), so a
value is never accepted by one entry point and refused by another.

Conversion is lenient only where text is the normal carrier: ``"3e-5"`` is a number (YAML reads ``3e-5``
as a string, the command line passes text), ``"4"`` an integer, ``"true"`` a flag. Booleans are never
numbers, whole floats are not integers, and NaN or infinity is never a number.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

from medibio.core.errors import MedibioError

_INTEGER = re.compile(r"[+-]?\d+")
MAX_SEED = 2**32 - 1  # numpy's and torch's seeding take at most 32 bits: larger fails after training starts
_TRUE = ("true", "yes", "on", "1")
_FALSE = ("false", "no", "off", "0")


class InvalidValueError(MedibioError, ValueError):
    """A value of the wrong type or outside the allowed range; says what was expected."""

    def __init__(self, expected: str, value: Any) -> None:
        self.expected = expected
        self.value = value
        super().__init__(f"expected {expected}, got {value!r}")


@dataclass(frozen=True)
class Rule:
    """Convert a value (``convert`` raises ``TypeError``/``ValueError`` on a wrong type), then ``accept`` it."""

    expected: str
    convert: Callable[[Any], Any]
    accept: Callable[[Any], bool] = lambda _: True
    optional: bool = False  # None is a value (e.g. "no cap")

    def __call__(self, value: Any) -> Any:
        """The converted value, or :class:`InvalidValueError`."""
        if value is None and self.optional:
            return None
        try:
            converted = self.convert(value)
        except (TypeError, ValueError):
            raise InvalidValueError(self.expected, value) from None
        if not self.accept(converted):
            raise InvalidValueError(self.expected, value)
        return converted

    def or_none(self) -> Rule:
        """The same rule with ``None`` allowed."""
        return replace(self, optional=True)


def _to_int(value: Any) -> int:
    if isinstance(value, bool):
        raise TypeError(value)
    if isinstance(value, int):
        return value
    if isinstance(value, str) and _INTEGER.fullmatch(value.strip()):
        return int(value)
    raise TypeError(value)


def _to_float(value: Any) -> float:
    if isinstance(value, bool):
        raise TypeError(value)
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        return float(value.strip())
    raise TypeError(value)


def _to_flag(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in _TRUE + _FALSE:
        return value.strip().lower() in _TRUE
    raise TypeError(value)


def _to_text(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(value)
    return value


def integer(minimum: int, maximum: int | None = None) -> Rule:
    """A whole number ``>= minimum`` (epochs, batch sizes: 1; layers to re-initialise: 0), and
    ``<= maximum`` where there is one (a fold number)."""
    if maximum is None:
        return Rule(f"an integer >= {minimum}", _to_int, lambda x: x >= minimum)
    return Rule(f"an integer in [{minimum}, {maximum}]", _to_int, lambda x: minimum <= x <= maximum)


def seed() -> Rule:
    """A random seed: a whole number in [0, 2^32 - 1], the range every seeded library accepts."""
    return Rule(f"a seed, an integer in [0, {MAX_SEED}]", _to_int, lambda x: 0 <= x <= MAX_SEED)


def positive() -> Rule:
    """A finite number ``> 0`` (learning rates, factors)."""
    return Rule("a finite number > 0", _to_float, lambda x: math.isfinite(x) and x > 0)


def non_negative() -> Rule:
    """A finite number ``>= 0`` (weight decay; 0 meaning "none" or "no limit")."""
    return Rule("a finite number >= 0", _to_float, lambda x: math.isfinite(x) and x >= 0)


def interval(low: float, high: float, *, low_open: bool = False, high_open: bool = False) -> Rule:
    """A finite number in an interval, e.g. a decay factor in (0, 1]."""
    text = f"{'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"

    def inside(x: float) -> bool:
        return (math.isfinite(x) and low <= x <= high and not (low_open and x == low)
                and not (high_open and x == high))

    return Rule(f"a number in {text}", _to_float, inside)


def choice(options: Iterable[str]) -> Rule:
    """One of a fixed set of words."""
    words = tuple(options)
    return Rule(f"one of {', '.join(words)}", _to_text, lambda x: x in words)


def flag() -> Rule:
    """True or False (also the words true/false, yes/no, on/off, 1/0)."""
    return Rule("true or false", _to_flag)
