"""S2ORC field-of-study co-occurrence (paper Section III-B, Figures 2-4) and the medicine-related subset.

Python API (names load lazily so ``medibio --help`` does not import pandas/duckdb)::

    from medibio import fields
    a = fields.analyse(path_or_folder)          # FieldAnalysis: counts, C, groups, shares
    a.c, a.table, a.pairs, a.groups["medicine"].fields, a.closest("Medicine")
    fields.plots.figure2(a, out_dir)            # also figure3, figure4 -> [png, svg]
    fields.write_subset(path, out_dir, "medicine", text="abstract")
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "analyse": "medibio.fields.analysis",
    "from_counts": "medibio.fields.analysis",
    "FieldAnalysis": "medibio.fields.analysis",
    "count_fields": "medibio.fields.cooccurrence",
    "count_fields_python": "medibio.fields.cooccurrence",
    "FieldCounts": "medibio.fields.cooccurrence",
    "derive_groups": "medibio.fields.groups",
    "FieldGroup": "medibio.fields.groups",
    "write_subset": "medibio.fields.subset",
    "FIELDS": "medibio.fields.fos",
}
_SUBMODULES = ("plots", "fos", "reader", "cooccurrence", "groups", "subset", "analysis", "synthetic")

__all__ = sorted([*_EXPORTS, *_SUBMODULES])


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    if name in _SUBMODULES:
        return importlib.import_module(f"medibio.fields.{name}")
    raise AttributeError(f"module 'medibio.fields' has no attribute {name!r}")
