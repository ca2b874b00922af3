"""One call from metadata files to everything Section III-B shows: counts, C, groups, shares."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from medibio.fields.cooccurrence import FieldCounts, count_fields
from medibio.fields.fos import FIELD_INDEX, FIELDS
from medibio.fields.groups import DEFAULT_SEEDS, FieldGroup, derive_groups, field_group_of, group_shares

ORDERS = ("group", "count", "canonical")


@dataclass
class FieldAnalysis:
    """Counts, the matrix C (fields in canonical order), derived groups and their union shares."""

    counts: FieldCounts
    c: pd.DataFrame
    groups: dict[str, FieldGroup]
    shares: pd.DataFrame

    @property
    def table(self) -> pd.DataFrame:
        """Per field: N_i, single-field papers, share of papers with a field, share of field labels, group."""
        n_i = self.counts.n_i()
        total = self.counts.papers_with_field
        labels = int(n_i.sum())
        grp = field_group_of(self.groups)
        df = pd.DataFrame({"field": list(FIELDS), "n_i": n_i.values, "single": self.counts.single().values})
        df["share_of_papers"] = df["n_i"] / total if total else 0.0
        df["share_of_labels"] = df["n_i"] / labels if labels else 0.0
        df["c_ii"] = [float(self.c.loc[f, f]) for f in FIELDS]
        df["group"] = df["field"].map(grp)
        return df

    @property
    def pairs(self) -> pd.DataFrame:
        """Tidy (field_i, field_j) table with n_ij, n_i and c_ij."""
        return self.counts.tidy()

    def order(self, how: str = "group") -> list[str]:
        """Field order for tables and figures: by group then size, by size, or canonical."""
        if how not in ORDERS:
            raise ValueError(f"order must be one of {ORDERS}, got {how!r}")
        if how == "canonical":
            return list(FIELDS)
        n_i = self.counts.n_i()
        by_size = sorted(FIELDS, key=lambda f: (-int(n_i[f]), FIELD_INDEX[f]))
        if how == "count":
            return by_size
        out: list[str] = []
        for g in self.groups.values():
            out.extend(g.fields)
        return out + [f for f in by_size if f not in out]

    def closest(self, field: str, k: int = 3) -> list[tuple[str, float]]:
        """The k fields j != field with the largest C[field, j]."""
        row = self.c.loc[field].drop(field).sort_values(ascending=False, kind="stable")
        return [(str(f), float(v)) for f, v in row.head(k).items()]

    def to_dict(self, order: str = "canonical") -> dict[str, Any]:
        """JSON-able view: summary, per-field table, C (rows in ``order``), groups and shares."""
        fields = self.order(order)
        return {
            "summary": self.counts.summary(),
            "fields": fields,
            "table": self.table.set_index("field").loc[fields].reset_index().to_dict(orient="records"),
            "c": {f: {g: round(float(self.c.loc[f, g]), 6) for g in fields} for f in fields},
            "groups": {k: g.as_dict() for k, g in self.groups.items()},
            "shares": self.shares.to_dict(orient="records"),
        }


def from_counts(
    counts: FieldCounts,
    seeds: Sequence[str] = DEFAULT_SEEDS,
    k: int = 3,
    min_share: float = 0.0,
    direction: str = "row",
) -> FieldAnalysis:
    """Build the analysis from counts already made (e.g. by the Python reference)."""
    c = counts.c_matrix()
    groups = derive_groups(c, counts.n_i(), seeds, k, min_share, direction)
    return FieldAnalysis(counts, c, groups, group_shares(counts, groups))


def analyse(
    inputs: str | Path | Sequence[str | Path],
    column: str | None = None,
    *,
    seeds: Sequence[str] = DEFAULT_SEEDS,
    k: int = 3,
    min_share: float = 0.0,
    direction: str = "row",
    **count_kwargs: Any,
) -> FieldAnalysis:
    """Count fields in ``inputs`` (see :func:`count_fields` for options) and derive C, groups and shares."""
    counts = count_fields(inputs, column, **count_kwargs)
    return from_counts(counts, seeds, k, min_share, direction)
