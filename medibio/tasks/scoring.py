"""Aggregate per-dataset scores into the two numbers people quote.

* **BLURB score** (Gu et al.): the macro average of the six *group* averages (NER, PICO, RE, SS, DC, QA),
  each group being the plain average of its datasets. A dataset with many siblings (NER has five) weighs
  less per dataset than BIOSSES, which forms a group alone.
* **Paper "BLURB Avg."** (MediBioDeBERTa Tables 5-7): the plain average over the 13 datasets. Table 6's
  column #1 averages to 78.03 this way (checked by ``medibio audit``), so this is the paper's reading.

Both take scores on the 0-100 scale and report which groups/datasets they cover, so an aggregate over an
incomplete set (EBM PICO has no train split in the data root) never passes for a full one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from medibio.tasks import registry
from medibio.tasks.blurb import GROUP_ORDER


@dataclass(frozen=True)
class Aggregate:
    """An aggregate score and what it was computed from."""

    value: float | None  # None when nothing it needs is present
    covered: tuple[str, ...]  # groups (BLURB score) or datasets (paper average) that entered the mean
    missing: tuple[str, ...] = field(default=())  # groups/datasets that did not

    @property
    def complete(self) -> bool:
        return not self.missing and self.value is not None

    def describe(self) -> str:
        """Human-readable note, e.g. ``"72.32 (all 6 groups)"`` or ``"... (5/6 groups; missing PICO)"``."""
        if self.value is None:
            return "n/a (nothing to average)"
        total = len(self.covered) + len(self.missing)
        if not self.missing:
            return f"{self.value:.2f} (all {total})"
        return f"{self.value:.2f} ({len(self.covered)}/{total}; missing {', '.join(self.missing)})"


def _canonical(scores: Mapping[str, float | None]) -> dict[str, float]:
    out: dict[str, float] = {}
    for name, value in scores.items():
        if value is None:
            continue
        out[registry.get(name, "blurb").name] = float(value)
    return out


def group_averages(scores: Mapping[str, float | None]) -> dict[str, float]:
    """Average per BLURB group, over the datasets of that group that have a score.

    A group appears only when *all* of its datasets are scored; a partial group would change the meaning
    of the number (use :func:`partial_group_averages` to inspect those).
    """
    canon = _canonical(scores)
    out: dict[str, float] = {}
    for group in GROUP_ORDER:
        names = [s.name for s in registry.by_group(group)]
        if all(n in canon for n in names):
            out[group.value] = sum(canon[n] for n in names) / len(names)
    return out


def partial_group_averages(scores: Mapping[str, float | None]) -> dict[str, tuple[float, int, int]]:
    """Per group: (average over the scored datasets, number scored, number in the group)."""
    canon = _canonical(scores)
    out: dict[str, tuple[float, int, int]] = {}
    for group in GROUP_ORDER:
        names = [s.name for s in registry.by_group(group)]
        have = [canon[n] for n in names if n in canon]
        if have:
            out[group.value] = (sum(have) / len(have), len(have), len(names))
    return out


def blurb_score(scores: Mapping[str, float | None]) -> Aggregate:
    """The official BLURB score: macro average over the six group averages."""
    groups = group_averages(scores)
    covered = tuple(g.value for g in GROUP_ORDER if g.value in groups)
    missing = tuple(g.value for g in GROUP_ORDER if g.value not in groups)
    value = sum(groups[g] for g in covered) / len(covered) if covered else None
    return Aggregate(value, covered, missing)


def paper_average(scores: Mapping[str, float | None]) -> Aggregate:
    """The paper's "BLURB Avg.": plain mean over the datasets (13 when complete)."""
    canon = _canonical(scores)
    covered = tuple(n for n in registry.names() if n in canon)
    missing = tuple(n for n in registry.names() if n not in canon)
    value = sum(canon[n] for n in covered) / len(covered) if covered else None
    return Aggregate(value, covered, missing)
