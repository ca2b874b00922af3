"""Fine-tuning results as every chapter shows them: a score never comes alone.

A reader judges a number by its uncertainty over test examples, where it comes from and what the encoder
scores without training, and a re-execution by the recorded results beside it.
The chapters with fine-tuning results (Tables 5–6, 1–2 and 7) build their tables with these functions, so
they cannot drift apart:

* :func:`scores_table`: :func:`medibio.results.aggregate.results_table` of the records a run function returned,
  with the 95% bootstrap interval over test examples
  (:func:`medibio.results.significance.add_bootstrap_interval`),
  the frozen-encoder baseline, what fine-tuning adds and the below-frozen flag
  (:func:`medibio.results.aggregate.beside_frozen`), and the provenance columns ``digest`` and ``commit``;
* :func:`frozen_tables`: the frozen baselines of every model among the records;
* :func:`show_recorded`: the recorded results of what a chapter ran (``reference/``), and, when the build
  is of their profile, the comparison (:func:`medibio.results.recorded.compare_with_recorded`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from medibio.baselines import frozen
from medibio.core.settings import Settings
from medibio.results import aggregate, significance
from medibio.results import recorded as reference

TEST_INTERVAL = "95% CI (test)"
FROZEN_COLUMNS = ("frozen encoder", "frozen 95% CI", "fine-tuning adds", "below frozen")
PROVENANCE = ("digest", "commit")
# what a dataset row of every results table shows, in this order (other columns go in between)
SHOWN = ("level", "n", "mean", "std", TEST_INTERVAL, *FROZEN_COLUMNS)


def _model_names(records: Iterable[Any]) -> dict[tuple[str, str], str]:
    """(model tag, variant) of a table row -> the model name its records were made with (the Table 5
    checkpoints share the tag ``model``; their variant tells them apart)."""
    return {(r.model_tag, r.variant): str(r.model["name"]) for r in records}


def frozen_tables(records: Iterable[Any], profile: str, *, settings: Settings,
                  overrides: Mapping[str, Any] | None = None) -> dict[str, pd.DataFrame]:
    """Model name -> :func:`medibio.baselines.frozen.baselines` on the datasets its records cover (records reused
    when their configuration is the same)."""
    datasets: dict[str, list[str]] = {}
    for rec in records:
        datasets.setdefault(str(rec.model["name"]), [])
        if rec.dataset not in datasets[str(rec.model["name"])]:
            datasets[str(rec.model["name"])].append(rec.dataset)
    return {name: frozen.baselines(profile, tasks, model=name, overrides=overrides, settings=settings)
            for name, tasks in datasets.items()}


def scores_table(records: Sequence[Any], results_root: Path, data_root: Path | None = None,
                 frozen: Mapping[str, pd.DataFrame] | None = None, aggregates: bool = True) -> pd.DataFrame:
    """The results table of ``records``: :func:`~medibio.results.aggregate.results_table` rows with
    :data:`TEST_INTERVAL` (``boot_low``/``boot_high`` too), and, given ``frozen`` (model name -> baselines,
    :func:`frozen_tables`), the :data:`FROZEN_COLUMNS`. Aggregate rows get no interval and no baseline."""
    table = aggregate.results_table(records, aggregates=aggregates)
    table = significance.add_bootstrap_interval(table, results_root, data_root=data_root)
    bounds = zip(table["boot_low"], table["boot_high"], strict=True)
    table[TEST_INTERVAL] = [significance.interval_text(low, high) for low, high in bounds]
    if frozen is None:
        return table
    names = _model_names(records)
    parts = []
    for (model, variant), part in table.groupby(["model", "variant"], sort=False):
        baselines = frozen.get(names.get((model, variant), ""))
        if baselines is None:
            raise ValueError(f"no frozen baselines for model {names.get((model, variant), model)!r} "
                           f"(have {', '.join(frozen)})")
        parts.append(aggregate.beside_frozen(part["row"], part["mean"], baselines))
    return table.join(pd.concat(parts)) if parts else table.assign(**dict.fromkeys(FROZEN_COLUMNS))


def shown(table: pd.DataFrame, index: Sequence[str], between: Sequence[str] = ()) -> pd.DataFrame:
    """The columns a results table shows, in the book's order: :data:`SHOWN`, then ``between`` (the
    chapter's own comparisons: paper, majority answer ...), then ``covers``, ``note`` and the provenance."""
    return table.set_index(list(index))[[*SHOWN, *between, "covers", "note", *PROVENANCE]]


def versus_paper(ours: pd.DataFrame, paper: Mapping[str, Mapping[str, float]],
                 label: str = "ours") -> pd.DataFrame:
    """Dataset rows of a :func:`scores_table` (one model and variant) indexed by dataset, after the paper's
    columns (``paper``: column name -> dataset -> score): ``label``, its seed spread, :data:`TEST_INTERVAL`,
    the frozen columns present, then the provenance."""
    rows = ours[ours["level"] == "dataset"].set_index("row")
    if rows.index.duplicated().any():
        raise ValueError("versus_paper needs one model and variant per dataset; got several for "
                         f"{sorted(set(rows.index[rows.index.duplicated()]))}")
    out = pd.DataFrame({name: pd.Series(dict(scores), dtype=float) for name, scores in paper.items()})
    out = out.reindex(rows.index)
    out[label] = rows["mean"]
    out[f"{label} ± (sd over seeds)"] = rows["std"]
    out[TEST_INTERVAL] = rows[TEST_INTERVAL]
    for column in [c for c in (*FROZEN_COLUMNS, *PROVENANCE) if c in rows.columns]:
        out[column] = rows[column]
    out.index.name = "dataset"
    return out


def beside_ift(compared: pd.DataFrame, ift: pd.DataFrame, chosen: str | None, target: str) -> pd.DataFrame:
    """Add the chosen intermediate task's row of an :func:`medibio.results.ift.ift_table` to the
    ``target`` row of a :func:`versus_paper` table, right after the test interval: ``ours with IFT``, the
    gain over fine-tuning directly, its paired interval, p-value and significance."""
    columns = {"ours with IFT": "mean", "IFT gain": "gain over baseline",
               "95% CI of the IFT gain": "95% CI of the gain", "IFT gain p": "p",
               "IFT gain significant": "significant"}
    out = compared.copy()
    at = list(out.columns).index(TEST_INTERVAL) + 1
    for offset, (name, source) in enumerate(columns.items()):
        have = chosen is not None and target in out.index and source in ift.columns
        value = ift.loc[chosen, source] if have else None
        numeric = source in ("mean", "gain over baseline", "p")
        column = pd.Series(float("nan") if numeric else "", index=out.index,
                           dtype=float if numeric else object)
        if have:
            column[target] = value
        out.insert(at + offset, name, column)
    return out


def below_frozen(table: pd.DataFrame, label: str | Sequence[str] = "row") -> list[str]:
    """The rows a table flags as below their frozen baseline (a defect of our protocol, see the chapters),
    named by the ``label`` column(s), else by the index; several parts are joined with " / "."""
    flagged = table[table["below frozen"].eq(True)]
    columns = [label] if isinstance(label, str) else list(label)
    if all(c in flagged.columns for c in columns):
        names = list(zip(*(flagged[c] for c in columns), strict=True))
    else:
        names = [v if isinstance(v, tuple) else (v,) for v in flagged.index]
    return sorted(" / ".join(map(str, name)) for name in names)


def show_recorded(chapter: Any, records: Sequence[Any], artefact: str, section: str,
                  root: Path | None = None) -> pd.DataFrame | None:
    """The recorded results of the runs a chapter made (same variant and dataset, any profile), shown
    labelled as recorded; when this build re-executes their profile, each dataset's recorded mean beside
    ours, the difference and whether it lies inside the recorded seed spread. Notes the artefact as
    reproduced from these records too (the first page's index then says "recorded result"). Returns the
    comparison, or None when there is nothing to compare."""
    records = list({r.run_id: r for r in records}.values())  # a run two of the chapter's lists hold counts once
    asked = {(r.variant, r.dataset) for r in records}
    recorded = [r for r in reference.recorded(root=root or reference.REFERENCE_ROOT)
                if (r.variant, r.dataset) in asked]
    if not recorded:
        print("No recorded results for these runs: reference/ holds none of them (it holds the cpu profile's "
              "runs, and a GPU profile's only once a GPU has been lent to the project).")
        return None
    chapter.reproduces(artefact, [*records, *recorded], section=section)
    profiles = sorted({r.profile for r in recorded})
    chapter.table("recorded", reference.recorded_frame(recorded)
                  .set_index(["profile", "model", "variant", "dataset"]),
                  caption=f"Recorded results (reference/, profile {', '.join(profiles)})"
                          + ("" if chapter.profile in profiles else ": not re-executed here"))
    same = [r for r in recorded if r.profile == chapter.profile]
    if not same:
        return None
    versus = reference.compare_with_recorded(records, same)
    chapter.value("recorded_compared", int(len(versus)))
    chapter.table("recorded_vs_now", versus.set_index(["model", "variant", "dataset"]),
                  caption=f"This build's {chapter.profile} runs against the recorded ones (difference: "
                          "ours − recorded; inside the spread: within two recorded standard deviations)")
    return versus
