"""Related-field groups derived from the matrix C, and their union shares B_i.

Rule (documented in docs/fields.md): seeds are processed in order; a seed's related fields are the ``k``
fields j with the largest C[seed, j] (the share of the seed's papers that also carry j), among fields that
are neither a seed nor already in an earlier group, keeping only those with C[seed, j] > ``min_share``.
Ties go to the field with more papers, then to canonical order. Groups are therefore disjoint, which
matches the three-way split (medicine-related, mathematics-related, other) of the paper's Figure 4.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from medibio.fields.cooccurrence import FieldCounts
from medibio.fields.fos import FIELD_INDEX, FIELDS, mask_of, resolve

DEFAULT_SEEDS = ("Medicine", "Mathematics")
DIRECTIONS = ("row", "col", "mean")


@dataclass(frozen=True)
class FieldGroup:
    """A seed field and the fields most associated with it (the seed comes first in ``fields``)."""

    name: str
    seed: str
    related: tuple[str, ...]
    scores: tuple[float, ...]  # the C value that selected each related field

    @property
    def fields(self) -> tuple[str, ...]:
        return (self.seed, *self.related)

    @property
    def mask(self) -> int:
        return mask_of(self.fields)

    def as_dict(self) -> dict[str, object]:
        return {"name": self.name, "seed": self.seed, "related": list(self.related),
                "scores": [round(s, 6) for s in self.scores], "fields": list(self.fields)}


def group_name(seed: str) -> str:
    """``medicine`` for Medicine, ``computer_science`` for Computer Science (CLI-friendly)."""
    return seed.lower().replace(" ", "_")


def derive_groups(
    c: pd.DataFrame,
    n_i: pd.Series,
    seeds: Sequence[str] = DEFAULT_SEEDS,
    k: int = 3,
    min_share: float = 0.0,
    direction: str = "row",
) -> dict[str, FieldGroup]:
    """Disjoint related-field groups, one per seed, by top-k of C (see module docstring)."""
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be one of {DIRECTIONS}, got {direction!r}")
    seeds = [resolve(s) for s in seeds]
    taken = set(seeds)
    groups: dict[str, FieldGroup] = {}
    for seed in seeds:
        if direction == "row":
            score = c.loc[seed]
        elif direction == "col":
            score = c[seed]
        else:
            score = (c.loc[seed] + c[seed]) / 2
        cands = [f for f in FIELDS if f not in taken and float(score[f]) > min_share]
        cands.sort(key=lambda f: (-float(score[f]), -int(n_i[f]), FIELD_INDEX[f]))
        chosen = cands[:k]
        taken.update(chosen)
        groups[group_name(seed)] = FieldGroup(group_name(seed), seed, tuple(chosen),
                                              tuple(float(score[f]) for f in chosen))
    return groups


def union_papers(counts: FieldCounts, fields: Sequence[str]) -> int:
    """Papers carrying at least one of ``fields`` (the set B_i behind the paper's union notation)."""
    m = mask_of(fields)
    return int(sum(v for mask, v in counts.masks.items() if mask & m))


def group_shares(counts: FieldCounts, groups: dict[str, FieldGroup]) -> pd.DataFrame:
    """Papers and share (of papers with >= 1 field) for each group, the overlap of groups, and 'other'."""
    total = counts.papers_with_field
    rows = []
    any_group = 0
    for g in groups.values():
        n = union_papers(counts, g.fields)
        any_group |= g.mask
        rows.append({"group": g.name, "fields": ", ".join(g.fields), "papers": n})
    if len(groups) > 1:
        overlap = sum(v for mask, v in counts.masks.items()
                      if sum(1 for g in groups.values() if mask & g.mask) > 1)
        rows.append({"group": "overlap", "fields": "papers in more than one group", "papers": int(overlap)})
    other_fields = [f for f in FIELDS if not any_group & (1 << FIELD_INDEX[f])]
    other = sum(v for mask, v in counts.masks.items() if mask and not mask & any_group)
    rows.append({"group": "other", "fields": ", ".join(other_fields), "papers": int(other)})
    df = pd.DataFrame(rows)
    df["share"] = df["papers"] / total if total else 0.0
    return df


def field_group_of(groups: dict[str, FieldGroup]) -> dict[str, str]:
    """Field -> group name ('other' for fields in no group)."""
    out = {f: "other" for f in FIELDS}
    for g in groups.values():
        for f in g.fields:
            out[f] = g.name
    return out
