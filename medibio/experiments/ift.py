"""Intermediate fine-tuning as experiments: a target fine-tuned directly (``base``) and after intermediate tasks
(``ift-<chain>``, :mod:`medibio.ift.variants`), made once and recorded.

* :data:`RECORDED` — the IFT claims' runs on this CPU, filed under their own profile
  (:data:`medibio.core.profiles.IFT`: five seeds, a full-data intermediate stage per seed), made once outside
  the book and recorded in ``reference/`` (docs/verdicts.md lists the commands); the claims page of the
  ``cpu`` book judges them.

:mod:`medibio.experiments.ift_runs` makes their runs. Torch-free, so the claims read the design without a model.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from medibio.core import profiles
from medibio.experiments.registry import register
from medibio.ift import variants
from medibio.runs.records import BASE_VARIANT


@dataclass(frozen=True)
class Design:
    """An IFT experiment: its name, a sentence, and the profile its runs are filed under (None: the build's)."""

    name: str
    description: str
    profile: str | None = None

    @staticmethod
    def arm(chain: Sequence[str] = ()) -> str:
        """The variant of the arm after ``chain`` (``ift-STS-B``), ``base`` for none."""
        return variants.of_chain(chain) if chain else BASE_VARIANT


RECORDED = register(Design("ift-recorded", "the IFT claims' runs on this CPU: a target directly and after one "
                                           "intermediate task, 5 seeds, recorded", profiles.IFT))
