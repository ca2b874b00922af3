"""The variant name of a fine-tuning run: the human name of a run family (``base``, ``ift-STS-B``, ``llrd0.9``,
``ift-SICK+freeze+reinit2``, ``cv2``), the one place that composes it.

Torch-free, so that the claims find a cross-validation fold's runs by name without loading the trainer.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from medibio.ift import variants
from medibio.runs.records import BASE_VARIANT
from medibio.training import config
from medibio.training.options import StabilityOptions


def variant_name(cfg: config.FinetuneConfig, chain: Sequence[str] = (), base: str | None = None) -> str:
    """``base``, ``ift-STS-B``, ``llrd0.9``, ``ift-SICK+freeze+reinit2`` ...: the human name of a run family.

    The name is for people (folders, tables); what tells runs apart is the configuration digest. Stability
    options are part of it so that a table's row says what was changed.
    """
    parts: list[str] = []
    if base:
        parts.append(base)
    elif chain:
        parts.append(variants.of_chain(chain))
    parts += StabilityOptions.from_config(cfg).variant_parts()  # named as in medibio.training.options
    if cfg.cv_fold:
        parts.append(f"cv{cfg.cv_fold}")
    return "+".join(parts) or BASE_VARIANT


_FOLD = re.compile(r"(?:^|\+)(cv\d+)$")


def fold_of(variant: str) -> tuple[str, str]:
    """The inverse of a fold's part in :func:`variant_name`: (arm, cross-validation fold), ``ift-STS-B+cv2`` ->
    (``ift-STS-B``, ``cv2``), ``cv2`` -> (``base``, ``cv2``), ``ift-GAD`` -> (``ift-GAD``, "")."""
    found = _FOLD.search(variant)
    if not found:
        return variant, ""
    return variant[:found.start()] or BASE_VARIANT, found.group(1)
