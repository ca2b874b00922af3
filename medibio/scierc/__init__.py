"""SciERC (paper Table 4): entities, relations and coreference with a span model trained here.

``run_scierc`` trains (or reuses) one run per seed and writes run records; ``scierc_table`` summarises
them. See :mod:`medibio.scierc.presets` for how the joint and pipeline modes map to DyGIE++ and PURE.
"""

from __future__ import annotations

from typing import Any


def run_scierc(*args: Any, **kwargs: Any) -> list[Any]:
    from medibio.scierc.runner import run_scierc as run

    return run(*args, **kwargs)


def scierc_table(*args: Any, **kwargs: Any) -> Any:
    from medibio.scierc.report import scierc_table as table

    return table(*args, **kwargs)


__all__ = ["run_scierc", "scierc_table"]
