"""Intermediate fine-tuning experiments of the book: baseline vs IFT, and a STILT-style transfer matrix.

Both are thin loops over :func:`medibio.finetune.runner.run_finetune` (which reuses existing run records)
and read their results back through :func:`medibio.runs.aggregate.results_table`, so a chapter shows the
same numbers whether it trained them now or in an earlier build.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

BASELINE = "none (baseline)"


def _model(model: str | None, profile: str) -> str:
    from medibio.finetune import presets

    return model or presets.get_profile(profile).model


def _variant(intermediate: str | None) -> str:
    from medibio.finetune import ift

    return "base" if not intermediate else "ift-" + ift.chain_label(ift.parse_chain(intermediate))


def run_ift(target: str, intermediates: Sequence[str], *, profile: str, model: str | None = None,
            seeds: Sequence[int] | None = None, results_root: Path, data_root: Path | None = None) -> list[Any]:
    """Fine-tune ``target`` directly and after each intermediate task (records reused when present)."""
    from medibio.finetune.runner import run_finetune

    records = []
    for chain in (None, *intermediates):
        records += run_finetune(target, model=model, seeds=seeds, profile=profile, intermediate=chain,
                                results_root=results_root, data_root=data_root)
    return records


def ift_table(target: str, intermediates: Sequence[str], *, profile: str, model: str | None = None,
              results_root: Path) -> pd.DataFrame:
    """One row per intermediate task (and the baseline): mean, std, seeds of the target's test score."""
    from medibio.runs.aggregate import results_table

    rows = []
    for chain in (None, *intermediates):
        part = results_table(results_root, profile=profile, model=_model(model, profile),
                             variant=_variant(chain), dataset=target, aggregates=False)
        part = part[part["level"] == "dataset"]
        mean, std, n = ((float(part["mean"].iloc[0]), float(part["std"].iloc[0]), int(part["n"].iloc[0]))
                        if len(part) else (float("nan"), float("nan"), 0))
        rows.append({"intermediate": chain or BASELINE, "mean": mean, "std": std, "n": n})
    frame = pd.DataFrame(rows).set_index("intermediate")
    frame["gain over baseline"] = frame["mean"] - frame.loc[BASELINE, "mean"]
    return frame


def run_transfer_matrix(tasks: Sequence[str], *, profile: str, model: str | None = None,
                        seeds: Sequence[int] | None = None, results_root: Path,
                        data_root: Path | None = None) -> list[Any]:
    """Every ordered pair (intermediate, target) of ``tasks``, plus each target's baseline."""
    from medibio.finetune.runner import run_finetune

    records = []
    for target in tasks:
        for source in (None, *[t for t in tasks if t != target]):
            records += run_finetune(target, model=model, seeds=seeds, profile=profile, intermediate=source,
                                    results_root=results_root, data_root=data_root)
    return records


def transfer_matrix(tasks: Sequence[str], *, profile: str, model: str | None = None,
                    results_root: Path) -> pd.DataFrame:
    """Targets as rows, intermediate tasks as columns (plus the baseline): mean test score over seeds."""
    table = {target: ift_table(target, [t for t in tasks if t != target], profile=profile, model=model,
                               results_root=results_root)["mean"] for target in tasks}
    columns = [BASELINE, *tasks]
    frame = pd.DataFrame({t: s.reindex(columns) for t, s in table.items()}).T
    frame.index.name = "target"
    frame.columns.name = "intermediate"
    return frame


def transfer_gain(matrix: pd.DataFrame) -> pd.DataFrame:
    """Each cell minus its row's baseline: what the intermediate task added (the STILT view)."""
    return matrix.drop(columns=BASELINE).sub(matrix[BASELINE], axis=0)
