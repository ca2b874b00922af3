"""The 19 MAG top-level fields of study: canonical names, a fixed order and name normalisation.

Field lists in S2ORC/S2AG metadata spell fields as MAG does ("Computer Science"); other dumps lower-case
them or use underscores. Every name goes through :func:`name_key` so that all readers (DuckDB SQL and the
Python reference) agree on what counts as the same field. Each field owns one bit of a 19-bit mask, which
lets a whole paper's field set travel through SQL as one integer.
"""

from __future__ import annotations

import re

#: The 19 MAG level-0 fields in the order the Semantic Scholar API documents them (the canonical order).
FIELDS: tuple[str, ...] = (
    "Computer Science",
    "Medicine",
    "Chemistry",
    "Biology",
    "Materials Science",
    "Physics",
    "Geology",
    "Psychology",
    "Art",
    "History",
    "Geography",
    "Sociology",
    "Business",
    "Political Science",
    "Economics",
    "Philosophy",
    "Mathematics",
    "Engineering",
    "Environmental Science",
)

#: Categories the S2 field classifier adds on top of MAG; recognised, reported, but not part of the matrix.
S2_EXTRA_FIELDS: tuple[str, ...] = ("Agricultural And Food Sciences", "Education", "Law", "Linguistics")

_SEP = re.compile(r"[\s_\-]+")
#: SQL twin of :func:`name_key` (DuckDB regexp syntax); keep both in step.
SQL_NAME_KEY = "lower(trim(regexp_replace({x}, '[\\s_\\-]+', ' ', 'g')))"


def name_key(name: str) -> str:
    """Normalised spelling used for matching: lower case, runs of space/underscore/hyphen -> one space."""
    return _SEP.sub(" ", name).strip().lower()


FIELD_INDEX: dict[str, int] = {f: i for i, f in enumerate(FIELDS)}
KEY_TO_FIELD: dict[str, str] = {name_key(f): f for f in FIELDS}
EXTRA_KEYS: frozenset[str] = frozenset(name_key(f) for f in S2_EXTRA_FIELDS)


def canonical(name: str) -> str | None:
    """The canonical MAG spelling of ``name``, or None when it is not one of the 19 fields."""
    return KEY_TO_FIELD.get(name_key(name))


def resolve(name: str) -> str:
    """Like :func:`canonical` but raises a ValueError listing the valid names (for user input)."""
    field = canonical(name)
    if field is None:
        raise ValueError(f"unknown field of study {name!r}; expected one of: {', '.join(FIELDS)}")
    return field


def bit(field: str) -> int:
    """The mask bit of a canonical field."""
    return 1 << FIELD_INDEX[field]


def mask_of(fields: list[str] | tuple[str, ...] | set[str]) -> int:
    """Bit mask of canonical field names."""
    m = 0
    for f in fields:
        m |= bit(f)
    return m


def fields_of(mask: int) -> list[str]:
    """Canonical names whose bits are set in ``mask``, in canonical order."""
    return [f for i, f in enumerate(FIELDS) if mask >> i & 1]


def sql_key_map() -> str:
    """A DuckDB MAP literal from normalised key to bit value (0 for the S2-only categories)."""
    items = [f"'{k}': {1 << FIELD_INDEX[f]}" for k, f in KEY_TO_FIELD.items()]
    items += [f"'{k}': 0" for k in sorted(EXTRA_KEYS)]
    return "MAP {" + ", ".join(items) + "}"
