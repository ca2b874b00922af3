"""Intermediate fine-tuning experiments: a target with and without IFT, and a STILT-style transfer matrix.

Both are loops over :func:`medibio.finetune.runner.run_finetune` (which reuses a run's record only when its
configuration is the one asked for). The run functions return the records they stand on, keyed by the
intermediate task; the tables are built from exactly those records, so a chapter can never show a number
from a run with another configuration.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

BASELINE = "none (baseline)"

Runs = dict[str, list[Any]]  # intermediate label (BASELINE for none) -> run records of the target


def run_ift(target: str, intermediates: Sequence[str], *, profile: str, model: str | None = None,
            seeds: Sequence[int] | None = None, results_root: Path, data_root: Path | None = None,
            overrides: Mapping[str, Any] | None = None) -> Runs:
    """Fine-tune ``target`` directly and after each intermediate task; records reused when present."""
    from medibio.finetune.runner import run_finetune

    return {chain or BASELINE: run_finetune(target, model=model, seeds=seeds, profile=profile,
                                            config_overrides=overrides, intermediate=chain,
                                            results_root=results_root, data_root=data_root)
            for chain in (None, *intermediates)}


def _stats(records: Sequence[Any]) -> dict[str, Any]:
    from medibio.runs.aggregate import provenance, seed_stats

    scores = [float(r.score_test) for r in records if r.ok and r.score_test is not None]
    n, mean, std, _ = seed_stats(scores)
    return {"mean": mean, "std": std, "n": n, **provenance(records)}


def _paired(runs: Runs, label: str, results_root: Path, data_root: Path | None) -> Any:
    """Paired test of ``label``'s runs against the baseline's, on the same test examples (seeds pooled)."""
    from medibio.runs.significance import compare_records

    records = runs[label]
    dataset = next((r.dataset for r in records), None)
    if dataset is None:
        return None
    return compare_records(runs[BASELINE], records, results_root, dataset, label_a=BASELINE, label_b=label,
                           data_root=data_root)


def ift_table(runs: Runs, results_root: Path | None = None, data_root: Path | None = None) -> pd.DataFrame:
    """One row per intermediate task (and the baseline): mean, std and seeds of the target's test score,
    the gain over the baseline and — given the results root, where the test predictions are — the gain's
    95% paired-bootstrap interval over test examples, its p-value and whether it is significant at 95%
    (:mod:`medibio.runs.significance`); then the records' digest and commit."""
    frame = pd.DataFrame([{"intermediate": label, **_stats(records)} for label, records in runs.items()])
    frame = frame.set_index("intermediate")
    frame.insert(3, "gain over baseline", frame["mean"] - frame.loc[BASELINE, "mean"])
    if results_root is not None:
        tests = {label: _paired(runs, label, results_root, data_root) for label in runs if label != BASELINE}
        frame.insert(4, "95% CI of the gain", [_interval(tests.get(label)) for label in frame.index])
        frame.insert(5, "p", [tests[label].p_value if tests.get(label) else float("nan") for label in frame.index])
        frame.insert(6, "significant", [("yes" if tests[label].significant else "no") if tests.get(label) else ""
                                        for label in frame.index])
    return frame


def _interval(test: Any) -> str:
    return f"[{test.low:+.2f}, {test.high:+.2f}]" if test is not None else ""


def run_transfer_matrix(tasks: Sequence[str], *, profile: str, model: str | None = None,
                        seeds: Sequence[int] | None = None, results_root: Path,
                        data_root: Path | None = None) -> dict[str, Runs]:
    """Every ordered pair (intermediate, target) of ``tasks``, plus each target's baseline:
    ``{target: {intermediate or BASELINE: records}}``."""
    return {target: run_ift(target, [t for t in tasks if t != target], profile=profile, model=model, seeds=seeds,
                            results_root=results_root, data_root=data_root)
            for target in tasks}


def transfer_matrix(matrix_runs: Mapping[str, Runs]) -> pd.DataFrame:
    """Targets as rows, intermediate tasks as columns (the baseline first): mean test score over seeds."""
    tasks = list(matrix_runs)
    columns = [BASELINE, *tasks]
    frame = pd.DataFrame({target: pd.Series({label: _stats(records)["mean"] for label, records in runs.items()})
                          .reindex(columns) for target, runs in matrix_runs.items()}).T
    frame.index.name = "target"
    frame.columns.name = "intermediate"
    return frame


def transfer_significance(matrix_runs: Mapping[str, Runs], results_root: Path,
                          data_root: Path | None = None) -> pd.DataFrame:
    """Every cell of the transfer matrix tested against its row's baseline (paired bootstrap over the target's
    test examples): targets as rows, intermediate tasks as columns, the p-value in each cell."""
    rows = {}
    for target, runs in matrix_runs.items():
        tests = {label: _paired(runs, label, results_root, data_root) for label in runs if label != BASELINE}
        rows[target] = {label: (t.p_value if t is not None else float("nan")) for label, t in tests.items()}
    frame = pd.DataFrame(rows).T.reindex(columns=list(matrix_runs))
    frame.index.name = "target"
    frame.columns.name = "intermediate"
    return frame


def transfer_gain(matrix: pd.DataFrame) -> pd.DataFrame:
    """Each cell minus its row's baseline: what the intermediate task added (the STILT view)."""
    return matrix.drop(columns=BASELINE).sub(matrix[BASELINE], axis=0)
