"""The tables of the intermediate fine-tuning experiments: a target with and without IFT, and a STILT-style
transfer matrix, each built from exactly the records the experiment's runs returned
(:mod:`medibio.experiments.ift_runs`), so a chapter can never show a number from a run with another configuration.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from medibio.experiments.ift_runs import BASELINE, Runs
from medibio.results.aggregate import beside_frozen, provenance, seed_stats
from medibio.results.significance import compare_records, interval_text, records_interval

__all__ = ["BASELINE", "Runs", "best_intermediate", "ift_table", "transfer_gain", "transfer_matrix",
           "transfer_significance", "transfer_table"]


def _stats(records: Sequence[Any]) -> dict[str, Any]:
    scores = [float(r.score_test) for r in records if r.ok and r.score_test is not None]
    n, mean, std, _ = seed_stats(scores)
    dev = [float(r.score_dev) for r in records if r.ok and r.score_dev is not None]
    return {"mean": mean, "std": std, "n": n, "dev mean": seed_stats(dev)[1], **provenance(records)}


def _paired(runs: Runs, label: str, results_root: Path, data_root: Path | None) -> Any:
    """Paired test of ``label``'s runs minus the baseline's, on the same test examples (seeds pooled): the
    difference, its interval and its sign are those of the gain."""
    records = runs[label]
    dataset = next((r.dataset for r in records), None)
    if dataset is None:
        return None
    return compare_records(records, runs[BASELINE], results_root, dataset, label_a=label, label_b=BASELINE,
                           data_root=data_root)


def _test_interval(records: Sequence[Any], results_root: Path, data_root: Path | None) -> str:
    dataset = next((r.dataset for r in records), None)
    found = records_interval(records, results_root, dataset, data_root=data_root) if dataset else None
    return interval_text(found.low, found.high) if found is not None else ""


def ift_table(runs: Runs, results_root: Path | None = None, data_root: Path | None = None,
              frozen: pd.DataFrame | Mapping[str, pd.DataFrame] | None = None,
              paper: Mapping[str, float] | None = None) -> pd.DataFrame:
    """One row per intermediate task (and the baseline): what the book shows for each.

    Always: mean, std and seeds of the target's test score, the mean dev score (what an intermediate task
    is chosen by, :func:`best_intermediate`) and the gain over the baseline. Given the results root, where
    the test predictions are: the row's 95% bootstrap interval over test examples, and the gain's paired
    bootstrap interval, p-value and whether it is significant at 95% (:mod:`medibio.results.significance`).
    Given ``paper`` (label -> the paper's number): that number and ours minus it. Given ``frozen`` (a
    :func:`medibio.baselines.frozen.baselines` table holding the target, or model name -> such tables, as
    :func:`medibio.book.results.frozen_tables` returns): the frozen-encoder baseline, its
    interval, what fine-tuning adds and the below-frozen flag (:func:`medibio.results.aggregate.beside_frozen`).
    The records' digest and commit close the row."""
    frame = pd.DataFrame([{"intermediate": label, **_stats(records)} for label, records in runs.items()])
    frame = frame.set_index("intermediate")
    front = ["mean", "std", "n"]
    if results_root is not None:
        frame["95% CI (test)"] = [_test_interval(runs[label], results_root, data_root)
                                  for label in frame.index]
        front.append("95% CI (test)")
    if paper is not None:
        frame["paper"] = [paper.get(label, float("nan")) for label in frame.index]
        frame["diff (ours − paper)"] = frame["mean"] - frame["paper"]
        front += ["paper", "diff (ours − paper)"]
    front.append("dev mean")
    frame["gain over baseline"] = frame["mean"] - frame.loc[BASELINE, "mean"]
    front.append("gain over baseline")
    if results_root is not None:
        tests = {label: _paired(runs, label, results_root, data_root) for label in runs if label != BASELINE}
        frame["95% CI of the gain"] = [_interval(tests.get(label)) for label in frame.index]
        frame["p"] = [tests[label].p_value if tests.get(label) else float("nan") for label in frame.index]
        frame["significant"] = [("yes" if tests[label].significant else "no") if tests.get(label) else ""
                                for label in frame.index]
        front += ["95% CI of the gain", "p", "significant"]
    if frozen is not None:
        if not isinstance(frozen, pd.DataFrame):
            frozen = frozen[next(str(r.model["name"]) for records in runs.values() for r in records)]
        target = pd.Series([_target(runs)] * len(frame), index=frame.index)
        beside = beside_frozen(target, frame["mean"], frozen)
        frame = frame.join(beside)
        front += list(beside.columns)
    return frame[[*front, "digest", "commit"]]


def _target(runs: Runs) -> str | None:
    return next((r.dataset for records in runs.values() for r in records), None)


def _interval(test: Any) -> str:
    return f"[{test.low:+.2f}, {test.high:+.2f}]" if test is not None else ""


def best_intermediate(runs: Runs) -> str | None:
    """The intermediate task whose runs have the best mean *dev* score (never the test score, which the
    table reports and would otherwise be selected on); None when no intermediate run has a dev score."""
    dev = {label: _stats(records)["dev mean"] for label, records in runs.items() if label != BASELINE}
    scored = {label: value for label, value in dev.items() if value == value}  # NaN: no dev score
    return max(scored, key=scored.__getitem__) if scored else None


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


def transfer_table(matrix_runs: Mapping[str, Runs], results_root: Path, data_root: Path | None = None,
                   frozen: pd.DataFrame | None = None) -> pd.DataFrame:
    """Every cell of the transfer matrix as a row (target, intermediate): :func:`ift_table` per target, so a
    cell carries its test interval, its gain's interval and p-value, the frozen baseline and its provenance."""
    parts = {target: ift_table(runs, results_root, data_root, frozen) for target, runs in matrix_runs.items()}
    frame = pd.concat(parts, names=["target", "intermediate"])
    return frame


def transfer_gain(matrix: pd.DataFrame) -> pd.DataFrame:
    """Each cell minus its row's baseline: what the intermediate task added (the STILT view)."""
    return matrix.drop(columns=BASELINE).sub(matrix[BASELINE], axis=0)
