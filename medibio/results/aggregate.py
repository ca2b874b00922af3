"""Turn run records into result tables: mean, spread and a 95% interval over seeds, then the aggregates.

One table row per (profile, model, variant) and *row*, where a row is a BLURB dataset, a BLURB group
(average of its datasets' means) or one of the two aggregates (``BLURB score``: macro average over the six
groups; ``BLURB Avg.``: the paper's plain mean over datasets). The ``covers`` column states what an
aggregate was computed from, so a table without EBM-PICO reads "5/6 groups; missing PICO" instead of
passing for a complete score. Datasets whose runs were all skipped keep a row with the reason.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from pathlib import Path

import pandas as pd

from medibio.models.zoo import model_tag
from medibio.runs.records import RunRecord, load_records
from medibio.tasks import registry, scoring, student
from medibio.tasks.spec import TaskSpec

BLURB_SCORE = "BLURB score"
PAPER_AVG = "BLURB Avg."

COLUMNS = ("profile", "model", "variant", "row", "level", "group", "metric", "n", "mean", "std", "ci95",
           "seeds", "covers", "note", "digest", "commit")


def provenance(records: Iterable[RunRecord]) -> dict[str, str]:
    """The provenance cells of a table row: the configuration digest(s) and short git commit(s) of the
    records behind it (``legacy`` for records written before run identities; several values joined)."""
    recs = list(records)
    digests = sorted({r.config_digest or "legacy" for r in recs})
    commits = sorted({(r.git_commit or "unknown")[:8] + ("+dirty" if (r.git_commit or "").endswith("+dirty")
                                                          else "") for r in recs})
    return {"digest": ", ".join(digests), "commit": ", ".join(commits)}


def seed_stats(values: list[float]) -> tuple[int, float, float, float]:
    """(n, mean, sample std with ddof=1, half-width of the two-sided 95% Student-t interval).

    With one value the spread is unknown: std and interval are NaN rather than a misleading 0.
    """
    n = len(values)
    if n == 0:
        return 0, math.nan, math.nan, math.nan
    mean = sum(values) / n
    if n == 1:
        return 1, mean, math.nan, math.nan
    std = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = student.t_quantile(0.975, n - 1) * std / math.sqrt(n)
    return n, mean, std, half


def _score(rec: RunRecord, split: str) -> float | None:
    return rec.score_test if split == "test" else rec.score_dev


def _dataset_rows(key: tuple[str, str, str], recs: list[RunRecord], split: str) -> list[dict]:
    rows = []
    by_dataset: dict[str, list[RunRecord]] = {}
    for rec in recs:
        by_dataset.setdefault(rec.dataset, []).append(rec)
    for dataset, items in by_dataset.items():
        ok = [r for r in items if r.ok and _score(r, split) is not None]
        n, mean, std, half = seed_stats([float(_score(r, split)) for r in ok])
        spec = _spec(dataset)
        notes = sorted({r.reason for r in items if not r.ok and r.reason})
        incomplete = [r.seed for r in items if r.ok and _score(r, split) is None]
        if incomplete:
            notes.append(f"no {split} score for seeds {incomplete}")
        limited = items[0].limited  # one configuration per row (newest_configurations)
        if limited is not None:
            notes.insert(0, f"LIMITED run (--limit {limited} examples per split), not the profile's")
        rows.append({
            "profile": key[0], "model": key[1], "variant": key[2], "row": dataset, "level": "dataset",
            "group": spec.group.value if spec else "", "metric": spec.metric if spec else "",
            "n": n, "mean": mean, "std": std, "ci95": half, "seeds": sorted(r.seed for r in ok),
            "covers": f"{n} seed{'s' if n != 1 else ''}",
            "note": ("skipped: " if n == 0 else "") + "; ".join(notes), **provenance(items),
            "limited": limited,  # not a column: keeps limited rows out of a full system's aggregates
        })
    return rows


def _spec(name: str) -> TaskSpec | None:
    """The BLURB dataset a table row names (None for groups, aggregates and other tasks)."""
    return registry.get(name) if registry.is_blurb(name) else None


def _aggregate_rows(key: tuple[str, str, str], dataset_rows: list[dict]) -> list[dict]:
    """Group averages and both BLURB aggregates of one system; a limited dataset row enters them only when
    every row is limited alike (a limited system, marked as such), never beside the profile's runs."""
    limits = {r["limited"] for r in dataset_rows}
    means = {r["row"]: r["mean"] for r in dataset_rows
             if _spec(r["row"]) is not None and r["n"] > 0 and (r["limited"] is None or len(limits) == 1)}
    base = {"profile": key[0], "model": key[1], "variant": key[2], "metric": "", "n": math.nan,
            "std": math.nan, "ci95": math.nan, "seeds": [], "note": "", "digest": "", "commit": ""}
    rows = []
    for group, (value, have, total) in scoring.partial_group_averages(means).items():
        missing = [s.name for s in registry.by_group(group) if s.name not in means]
        covers = f"{have}/{total} datasets" + (f"; missing {', '.join(missing)}" if missing else "")
        rows.append({**base, "row": group, "level": "group", "group": group, "mean": value, "covers": covers,
                     "note": "partial group: not used in the BLURB score" if missing else ""})
    for label, agg, unit in ((BLURB_SCORE, scoring.blurb_score(means), "groups"),
                             (PAPER_AVG, scoring.paper_average(means), "datasets")):
        total = len(agg.covered) + len(agg.missing)
        covers = f"{len(agg.covered)}/{total} {unit}" + (f"; missing {', '.join(agg.missing)}" if agg.missing
                                                           else "")
        rows.append({**base, "row": label, "level": "aggregate", "group": "",
                     "mean": math.nan if agg.value is None else agg.value, "covers": covers})
    return rows


def with_aggregates(scores: Mapping[str, float]) -> dict[str, float | None]:
    """Per-dataset scores with both BLURB aggregates added under the rows' names (``BLURB score``, ``BLURB
    Avg.``), so that a set of printed scores lines up with a results table's aggregate rows."""
    return {**scores, BLURB_SCORE: scoring.blurb_score(scores).value, PAPER_AVG: scoring.paper_average(scores).value}


def newest_configurations(records: Iterable[RunRecord]) -> tuple[list[RunRecord], dict[tuple, int]]:
    """Keep, per (profile, model, variant, dataset; and seed for a pretraining run), the records of the most
    recently created configuration — of the profile's own runs when there are any: a run made under ``--limit``
    never takes their place, however new (:attr:`~medibio.runs.records.RunRecord.limited`) — and return them
    and the number of other configurations per (profile, model, variant, dataset), the key a table row has."""
    by_key: dict[tuple, dict[str, list[RunRecord]]] = {}
    for rec in records:
        # a pretraining seed is part of its run's configuration (each seed has its own digest)
        key = (rec.profile, rec.model_tag, rec.variant, rec.dataset, rec.seed if rec.kind == "pretrain" else None)
        by_key.setdefault(key, {}).setdefault(rec.config_digest or "legacy", []).append(rec)
    kept: list[RunRecord] = []
    left_out: dict[tuple, int] = {}
    for key, configs in by_key.items():
        newest = max(configs.values(), key=lambda recs: (recs[0].limited is None, max(r.created for r in recs)))
        kept.extend(newest)
        if len(configs) > 1:
            left_out[key[:4]] = left_out.get(key[:4], 0) + len(configs) - 1
    return kept, left_out


def results_table(source: Iterable[RunRecord] | str | Path, profile: str | None = None,
                  model: str | None = None, variant: str | None = None, dataset: str | None = None,
                  split: str = "test", aggregates: bool = True) -> pd.DataFrame:
    """Aggregate run records (or every record under a results root) into a tidy table.

    ``split`` picks ``score_test`` (default) or ``score_dev``. Filters apply to records passed in as
    well as to those read from disk. A dataset row never mixes configurations: where the records of one
    (profile, model, variant, dataset) carry several configuration digests, only the newest configuration's
    records are aggregated and the row's note says how many others were left out (``medibio results list``
    shows them all). Returns a DataFrame with :data:`COLUMNS`.
    """
    if split not in ("test", "dev"):
        raise ValueError(f"split must be 'test' or 'dev', got {split!r}")
    if isinstance(source, (str, Path)):
        recs = load_records(source, profile=profile, model=model, variant=variant, dataset=dataset)
    else:
        tag = model_tag(model) if model else None
        canon = (_spec(dataset).name if _spec(dataset) else dataset) if dataset else None
        recs = [r for r in source if (profile is None or r.profile == profile)
                and (tag is None or r.model_tag == tag) and (variant is None or r.variant == variant)
                and (canon is None or r.dataset == canon)]
    every = list(recs)
    recs, left_out = newest_configurations(every)
    kept = {id(r) for r in recs}
    limited_left_out = {(r.profile, r.model_tag, r.variant, r.dataset) for r in every
                        if id(r) not in kept and r.limited is not None}
    order = {n: i for i, n in enumerate(registry.names())}
    groups: dict[tuple[str, str, str], list[RunRecord]] = {}
    for rec in recs:
        groups.setdefault((rec.profile, rec.model_tag, rec.variant), []).append(rec)
    rows: list[dict] = []
    for key in sorted(groups):
        ds_rows = sorted(_dataset_rows(key, groups[key], split),
                         key=lambda r: (order.get(r["row"], len(order)), r["row"]))
        for row in ds_rows:
            others = left_out.get((*key, row["row"]), 0)
            if others:
                what = (f"{others} older configuration(s) not shown" if (*key, row["row"]) not in limited_left_out else
                        f"{others} other configuration(s) not shown (older, or made under --limit)")
                row["note"] = "; ".join(filter(None, [row["note"], what]))
        rows.extend(ds_rows)
        if aggregates:
            rows.extend(_aggregate_rows(key, ds_rows))
    frame = pd.DataFrame(rows, columns=list(COLUMNS))
    return frame.astype({"n": "Float64"}).astype({"n": "Int64"}) if len(frame) else frame


def _paper_mapping(paper: Mapping[str, float] | pd.Series | pd.DataFrame, value: str) -> dict[str, float]:
    if isinstance(paper, pd.DataFrame):
        if "dataset" not in paper.columns or value not in paper.columns:
            raise ValueError(f"paper table needs columns 'dataset' and {value!r}, has {list(paper.columns)}")
        if paper["dataset"].duplicated().any():
            raise ValueError("paper table has several values per dataset: select one model/column first")
        paper = dict(zip(paper["dataset"], paper[value], strict=True))
    out: dict[str, float] = {}
    for name, number in dict(paper).items():
        spec = _spec(str(name))
        out[spec.name if spec else str(name)] = float(number)
    return out


def compare_with_paper(df: pd.DataFrame, paper: Mapping[str, float] | pd.Series | pd.DataFrame,
                       name: str = "paper", value: str = "value") -> pd.DataFrame:
    """Add the paper's number per row (``name``) and ``<name>_diff`` = our mean - paper.

    ``paper`` maps dataset names (any registry alias, e.g. "EBM PICO"), group names or the aggregate labels
    (``"BLURB score"``, ``"BLURB Avg."``) to values; a tidy DataFrame with ``dataset`` and ``value``
    columns (one model selected) works too. Rows the paper does not report get NaN.
    """
    mapping = _paper_mapping(paper, value)
    out = df.copy()
    out[name] = [mapping.get(row, math.nan) for row in out["row"]]
    out[f"{name}_diff"] = out["mean"] - out[name]
    return out


def _fmt(x: float, digits: int = 2) -> str:
    return "" if x is None or (isinstance(x, float) and math.isnan(x)) or pd.isna(x) else f"{x:.{digits}f}"


def format_text(df: pd.DataFrame) -> str:
    """Human-readable rendering: ``mean ± std [±ci95]`` per row, blocks per (profile, model, variant)."""
    if df.empty:
        return "no run records found"
    blocks = []
    extra = [c for c in df.columns if c not in COLUMNS]
    for (profile, model, variant), part in df.groupby(["profile", "model", "variant"], sort=False):
        shown = pd.DataFrame({
            "row": part["row"], "level": part["level"],
            "n": [("" if pd.isna(n) else str(n)) for n in part["n"]],
            "score": [_fmt(m) + (f" ± {_fmt(s)}" if _fmt(s) else "") for m, s in zip(part["mean"], part["std"],
                                                                                       strict=True)],
            "95% CI ±": [_fmt(c) for c in part["ci95"]],
            "covers": part["covers"], "note": part["note"],
            **{c: [_fmt(v) if isinstance(v, float) else str(v) for v in part[c]] for c in extra},
        })
        blocks.append(f"profile={profile}  model={model}  variant={variant}\n"
                      + shown.to_string(index=False))
    return "\n\n".join(blocks)


def to_json_records(df: pd.DataFrame) -> list[dict]:
    """Rows as JSON-ready dicts (NaN -> None)."""
    rows = []
    for rec in df.to_dict(orient="records"):
        rows.append({k: (None if not isinstance(v, list) and pd.isna(v) else
                         (int(v) if k == "n" else v)) for k, v in rec.items()})
    return rows


def beside_frozen(rows: pd.Series, means: pd.Series, frozen_table: pd.DataFrame) -> pd.DataFrame:
    """The frozen-encoder baseline of each dataset row, its 95 % interval and what fine-tuning adds.

    ``rows`` names each table row's dataset (aggregate rows get nothing), ``means`` is the fine-tuned mean
    aligned with it, ``frozen_table`` is :func:`medibio.baselines.frozen.baselines`. ``below frozen`` marks a
    fine-tuned mean under the frozen baseline: a defect of the fine-tuning protocol, never a finding.
    """
    by_dataset = frozen_table.set_index("dataset")
    frozen = rows.map(by_dataset["frozen"]).astype(float)
    low = rows.map(by_dataset["ci95_low"]).astype(float)
    high = rows.map(by_dataset["ci95_high"]).astype(float)
    gain = means.astype(float) - frozen
    out = pd.DataFrame({
        "frozen encoder": frozen,
        "frozen 95% CI": [f"[{lo:.2f}, {hi:.2f}]" if pd.notna(lo) and pd.notna(hi) else ""
                          for lo, hi in zip(low, high, strict=True)],
        "fine-tuning adds": gain,
        "below frozen": [bool(g < 0) if pd.notna(g) else None for g in gain],
    }, index=rows.index)
    return out
