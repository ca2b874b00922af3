"""How a fine-tuning run after intermediate stages is named: the variant ``ift-<chain>`` (``ift-STS-B``,
``ift-STS-B+SICK``), the one place that spells it.

The name is for people (folders, tables); the configuration digest tells runs apart. Torch-free, so that the
claims and the command line read it without loading a model.
"""

from __future__ import annotations

from collections.abc import Sequence

PREFIX = "ift-"


def chain_label(chain: Sequence[str]) -> str:
    """Path-safe name of a chain (``STS-B+SICK``), used in variants (``ift-STS-B+SICK``) and folders."""
    return "+".join(chain)


def of_chain(chain: Sequence[str]) -> str:
    """The variant of a run after the intermediate ``chain`` (``ift-STS-B``)."""
    return PREFIX + chain_label(chain)


def is_ift(variant: str) -> bool:
    """True for a run after intermediate stages (``ift-STS-B``, ``ift-STS-B+cv2``)."""
    return variant.startswith(PREFIX)


def chain_of(arm: str) -> list[str]:
    """The intermediate chain of a declared arm (``ift-STS-B`` → ``["STS-B"]``, ``base`` → ``[]``); an arm names
    a chain alone, no stability option or fold."""
    return arm[len(PREFIX):].split("+") if is_ift(arm) else []
