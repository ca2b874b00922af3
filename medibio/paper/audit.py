"""Recompute every derived number of the paper and say where it does not add up.

Four families of checks, one row each in :func:`run_audit`:

* **table average** - every average printed in Tables 6 and 7 (NER/RE/QnA Avg., BLURB Avg.) recomputed
  from the printed cells. "BLURB Avg." is recomputed as the paper evidently did (plain mean of the 13
  datasets, :func:`medibio.tasks.scoring.paper_average`); the official BLURB score (macro over the six
  groups, :func:`medibio.tasks.scoring.blurb_score`) is given beside it as ``alternative``.
* **table vs table** - numbers printed twice (Table 5 vs 6, Table 7's MediBioDeBERTa columns vs Table 6
  #1, Table 5 #1 vs Table 3).
* **metric label** - the metric names printed in Tables 1 and 7 against BLURB's metrics (registry).
* **claim** - every checkable statement of :mod:`medibio.paper.claims`; improvements are computed both
  as point differences and as relative percentages, and the row says which reading matches.

Tolerance: one unit of the last printed decimal (0.01 for two-decimal numbers such as 82.61, 0.1 for
92.7, 1 for integers). It covers averaging and subtracting numbers that were themselves rounded to
two decimals; a larger gap is a real disagreement.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import pandas as pd

from medibio.paper import claims, tables
from medibio.tasks import registry, scoring, student

COLUMNS = ("id", "category", "where", "quantity", "recipe", "reported", "recomputed", "reading",
           "alternative", "alternative_reading", "difference", "tolerance", "consistent", "explanation")
PAPER_READING = "plain mean over datasets (the paper's BLURB Avg.)"
MACRO_READING = "official BLURB score: macro mean over the 6 groups"
IFT_TARGETS = ("BIOSSES", "HoC", "PubMedQA")  # datasets the IFT column was intermediate-tuned for
RUNS_TABLE4 = 5  # Table 4's footnote: averages of five runs
_EPS = 1e-9

# printed metric label -> registry metrics it may stand for
_LABELS_FOR_METRIC: dict[str, set[str]] = {
    "ner_entity_f1": {"f1"},
    "pico_token_macro_f1": {"macro f1"},
    "re_micro_f1": {"micro f1", "f1"},
    "re_binary_f1": {"micro f1", "f1"},
    "hoc_micro_f1": {"micro f1", "f1"},
    "pearson": {"pearson"},
    "accuracy": {"accuracy"},
}


@dataclass
class Check:
    """One recomputed number (or statement) and whether the paper's value survives it."""

    id: str
    category: str
    where: str
    quantity: str
    reported: float | str | None
    recomputed: float | str | None
    consistent: bool
    explanation: str
    recipe: str = ""
    tolerance: float | None = None
    reading: str = ""
    alternative: float | None = None
    alternative_reading: str = ""

    @property
    def difference(self) -> float | None:
        if isinstance(self.reported, (int, float)) and isinstance(self.recomputed, (int, float)):
            return float(self.reported) - float(self.recomputed)
        return None

    def record(self) -> dict[str, object]:
        out = asdict(self)
        out["difference"] = self.difference
        return {key: out[key] for key in COLUMNS}


def _close(reported: float, recomputed: float, tolerance: float) -> bool:
    return not math.isnan(recomputed) and abs(reported - recomputed) <= tolerance + _EPS


def _fmt(value: float) -> str:
    """Print a number the way the paper would: integers with separators, otherwise <= 3 decimals."""
    if value == int(value) and abs(value) >= 1000:
        return f"{int(value):,}"
    return f"{value:.2f}".rstrip("0").rstrip(".") if value == round(value, 2) else f"{value:.3f}"


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def _column_values(n: int, model: str) -> dict[str, float]:
    """All 13 scores of a Table 6/7 column; Table 7's empty cells come from Table 6 #1."""
    return {name: (tables.cell(n, model, name) if not math.isnan(tables.cell(n, model, name))
                   else tables.cell(6, "#1", name)) for name in registry.names()}


def _average_members(label: str, group: str | None) -> list[str]:
    if label == "BLURB Avg.":
        return registry.names()
    return [spec.name for spec in registry.by_group(group)]


def single_cell_fixes(n: int, model: str, tolerance: float = 0.01) -> dict[str, tuple[float, float]]:
    """Cells whose change alone would make every printed average of a column agree.

    For each dataset the answer is the interval of changes (in points) that reconciles all averages that
    contain it, while the averages that do not contain it must already agree. An empty answer means no
    single mis-typed cell explains the column's averages.
    """
    frame = tables.load_table(n)
    rows = frame[(frame["model"] == model) & (frame["kind"] == "average") & frame["value"].notna()]
    values = _column_values(n, model)
    intervals = []
    for row in rows.itertuples():
        members = _average_members(row.label, row.group)
        total = sum(values[m] for m in members)
        k = len(members)
        low, high = (row.value - tolerance) * k - total, (row.value + tolerance) * k - total
        intervals.append((set(members), low, high))
    fixes: dict[str, tuple[float, float]] = {}
    for name in registry.names():
        lo, hi = -math.inf, math.inf
        for members, a, b in intervals:
            if name in members:
                lo, hi = max(lo, a), min(hi, b)
            elif not a <= 0 <= b:
                lo, hi = 1.0, 0.0
        if lo <= hi and not lo <= 0 <= hi:
            fixes[name] = (lo, hi)
    return fixes


def _fix_note(n: int, model: str) -> str:
    fixes = single_cell_fixes(n, model)
    if not fixes:
        return "no single cell change reconciles the column's averages"
    lo = max(a for a, _ in fixes.values())
    hi = min(b for _, b in fixes.values())
    shift = f"{(lo + hi) / 2:+.2f}" if lo <= hi else "a similar amount"
    if len(fixes) == len(registry.names()):
        return f"any one of the 13 cells off by about {shift} would explain it, so the culprit is unknown"
    return (f"one cell among {', '.join(fixes)} off by about {shift} would reconcile all averages of the "
            "column; the paper does not say which")


# --------------------------------------------------------------------------- table averages

def _table6_averages() -> list[Check]:
    out = []
    for config in tables.columns(6):
        scores = tables.column_scores(6, config)
        plain = scoring.paper_average(scores).value
        macro = scoring.blurb_score(scores).value
        reported = tables.cell(6, config, "BLURB Avg.")
        ok = _close(reported, plain, 0.01)
        if ok:
            why = (f"plain mean of the 13 printed scores is {plain:.3f}; the official BLURB score of "
                   f"the same column would be {macro:.2f}")
        else:
            gap = reported * len(scores) - sum(scores.values())
            why = (f"the 13 printed scores average {plain:.2f}; {_fmt(reported)} needs their sum {gap:+.2f} "
                   f"higher: {_fix_note(6, config)} (official BLURB score {macro:.2f})")
        out.append(Check(f"t6-avg-{config}", "table average", f"Table 6, col {config}, BLURB Avg.",
                         "average over the 13 datasets", reported, plain, ok, why,
                         recipe=f"mean of Table 6 column {config}", tolerance=0.01, reading=PAPER_READING,
                         alternative=macro, alternative_reading=MACRO_READING))
    return out


def _table7_cells(model: str, datasets: Sequence[str]) -> tuple[list[float], list[str]]:
    """Printed cells of one Table 7 column; empty cells are taken from Table 6 #1 (noted)."""
    values, filled = [], []
    for name in datasets:
        value = tables.cell(7, model, name)
        if math.isnan(value):
            value = tables.cell(6, "#1", name)
            filled.append(name)
        values.append(value)
    return values, filled


def _table7_averages() -> list[Check]:
    frame = tables.load_table(7)
    out = []
    for row in frame[(frame["kind"] == "average") & frame["value"].notna()].itertuples():
        model, label, reported = row.model, row.label, float(row.value)
        if label == "BLURB Avg.":
            datasets = registry.names()
            quantity = "average over the 13 datasets"
        else:
            datasets = [spec.name for spec in registry.by_group(row.group)]
            quantity = f"average over the {len(datasets)} {row.group} datasets"
        values, filled = _table7_cells(model, datasets)
        recomputed = _mean(values)
        ok = _close(reported, recomputed, 0.01)
        alternative = alt_reading = None
        notes = []
        if filled:
            notes.append(f"the column leaves {', '.join(filled)} empty; taken from Table 6 #1 (same model)")
        if label == "BLURB Avg.":
            alternative = scoring.blurb_score(dict(zip(datasets, values, strict=True))).value
            alt_reading = MACRO_READING
        if ok:
            notes.insert(0, f"mean of the printed cells is {recomputed:.3f}")
        elif model == claims.IFT and "ChemProt" in datasets:
            chemprot6 = tables.cell(6, "#1", "ChemProt")
            fixed = [chemprot6 if d == "ChemProt" else v for d, v in zip(datasets, values, strict=True)]
            notes.insert(0, f"the printed cells give {recomputed:.2f}; with ChemProt 77.80 from Table 6 #1 "
                            f"instead of the printed 93.04 they give {_mean(fixed):.2f}, so the average was "
                            "computed before the ChemProt cell was mis-copied")
        else:
            gap = reported * len(values) - sum(values)
            notes.insert(0, f"the printed cells give {recomputed:.2f}; {_fmt(reported)} needs their sum "
                            f"{gap:+.2f} higher: {_fix_note(7, model)}")
        if label == "BLURB Avg.":
            notes.append(f"official BLURB score {alternative:.2f}")
        out.append(Check(f"t7-avg-{model}-{label}", "table average", f"Table 7, {model}, {label}", quantity,
                         reported, recomputed, ok, "; ".join(notes), recipe=f"mean of Table 7 column {model}",
                         tolerance=0.01, reading=PAPER_READING if label == "BLURB Avg." else "plain mean",
                         alternative=alternative, alternative_reading=alt_reading or ""))
    return out


# --------------------------------------------------------------------------- cross-table

def _table5_vs_table6() -> list[Check]:
    out = []
    table6 = {c: tables.cell(6, c, "BLURB Avg.") for c in tables.columns(6)}
    for config, printed6 in table6.items():
        printed5 = tables.cell(5, config, "blurb_avg")
        plain = scoring.paper_average(tables.column_scores(6, config)).value
        ok = _close(printed5, printed6, 0.01)
        why = "Table 5 repeats Table 6's average"
        if not _close(printed5, plain, 0.01):
            why += f", and both disagree with the recomputed mean {plain:.2f}"
        out.append(Check(f"t5-vs-t6-{config}", "table vs table", f"Table 5, {config}, BLURB Avg.",
                         "same number in Table 6", printed5, printed6, ok, why,
                         recipe=f"Table 6[{config}, BLURB Avg.]", tolerance=0.01))
    steps5 = tables.cell(5, "#1", "training_steps")
    steps3 = tables.cell(3, "MediBioDeBERTa", "max training steps")
    out.append(Check(
        "t5-steps-vs-t3", "table vs table", "Table 5, #1, Training Steps", "steps of the model chosen as "
        "MediBioDeBERTa", steps5, steps3, _close(steps5, steps3, 1.0),
        f"§V-C picks #1 as MediBioDeBERTa, but Table 3 and §V give it {steps3:,.0f} steps, "
        f"not {steps5:,.0f} (a factor {steps5 / steps3:g})",
        recipe="Table 3[MediBioDeBERTa, max training steps]", tolerance=1.0))
    return out


def _table7_vs_table6() -> list[Check]:
    out = []
    frame7 = tables.load_table(7)
    labels6 = set(tables.load_table(6)["label"])
    base = frame7[(frame7["model"] == claims.BASE) & frame7["value"].notna()]
    for row in base.itertuples():
        if row.kind == "average" and row.label not in labels6:
            continue  # group averages are not printed in Table 6; recomputed under "table average"
        printed6 = tables.cell(6, "#1", row.label)
        ok = _close(row.value, printed6, 0.01)
        out.append(Check(f"t7-vs-t6-{claims.BASE}-{row.label}", "table vs table",
                         f"Table 7, {claims.BASE}, {row.label}", "same model as Table 6 #1",
                         float(row.value), printed6, ok,
                         "equals Table 6 #1" if ok else "differs from Table 6 #1",
                         recipe=f"Table 6[#1, {row.label}]", tolerance=0.01))
    ift = frame7[(frame7["model"] == claims.IFT) & (frame7["kind"] == "score")]
    for row in ift.itertuples():
        if row.dataset in IFT_TARGETS:
            continue  # these changed through IFT on purpose; see the gain claims
        printed6 = tables.cell(6, "#1", row.dataset)
        ok = _close(row.value, printed6, 0.01)
        if ok:
            why = "not an IFT target, so the score of Table 6 #1 is carried over unchanged"
        else:
            twins = ift[(ift["value"] == row.value) & (ift["label"] != row.label)]["label"].tolist()
            why = (f"not an IFT target, so Table 6 #1's {_fmt(printed6)} should reappear; the printed "
                   f"{_fmt(row.value)}")
            why += (f" equals the {', '.join(twins)} cell of the same column: likely a copy error"
                    if twins else " matches no other cell")
        out.append(Check(f"t7-vs-t6-{claims.IFT}-{row.dataset}", "table vs table",
                         f"Table 7, {claims.IFT}, {row.label}", "carried over from Table 6 #1",
                         float(row.value), printed6, ok, why, recipe=f"Table 6[#1, {row.label}]",
                         tolerance=0.01))
    return out


# --------------------------------------------------------------------------- metric labels

def _metric_labels() -> list[Check]:
    out = []
    for n in (1, 7):
        frame = tables.load_table(n)
        scored = frame[frame["kind"] == "score"]
        for (group, label), part in scored.groupby(["group", "metric"], sort=False):
            metrics = sorted({registry.get(d, "blurb").metric for d in part["dataset"]})
            ok = all(label.lower() in _LABELS_FOR_METRIC[m] for m in metrics)
            datasets = ", ".join(dict.fromkeys(part["dataset"]))
            if ok:
                why = f"BLURB scores {datasets} with {' / '.join(metrics)}, which this label covers"
            else:
                why = (f"BLURB scores {datasets} with {' / '.join(metrics)} (Gu et al., Table 3); "
                       f"'{label}' does not apply to a regression task")
            out.append(Check(f"t{n}-metric-{group}", "metric label", f"Table {n}, {group} metric label",
                             "metric printed for the group", label, " / ".join(metrics), ok, why,
                             recipe="registry metric of each dataset"))
    return out


# --------------------------------------------------------------------------- claims

def _welch(ref_a: str, ref_b: str) -> str:
    """Welch's t-test from Table 4's mean ± std (five runs each), for ordinal SciERC claims."""
    (_, model_a, task_a), (_, model_b, task_b) = ref_a.split("|"), ref_b.split("|")
    result = student.welch_from_stats(
        tables.cell(4, model_a, task_a), tables.cell(4, model_a, f"{task_a} std"), RUNS_TABLE4,
        tables.cell(4, model_b, task_b), tables.cell(4, model_b, f"{task_b} std"), RUNS_TABLE4)
    return (f"Welch t = {result.statistic:.2f}, p = {result.pvalue:.3f} "
            f"({RUNS_TABLE4} runs each, ± read as sample std)")


def _claim_check(claim: claims.Statement, operands: tuple[str, ...], suffix: str = "") -> Check:
    values = [claims.resolve(ref) for ref in operands]
    refs = [claims.ref_label(ref) for ref in operands]
    tol = claim.tolerance
    rep = claim.reported
    where = f"{claim.location}: {claim.numbers}" + (f" ({suffix})" if suffix else "")
    cid = claim.id + ("-alt" if suffix else "")
    category = "claim (other reading)" if suffix else "claim"
    recipe = claims.Statement(claim.id, "", "", "", claim.kind, operands).formula
    kw = dict(recipe=recipe, tolerance=tol)
    extra = f"; {claim.note}" if claim.note else ""

    if claim.kind == "gain":
        new, old = values
        points, relative = new - old, (new - old) / old * 100.0
        if _close(rep, points, tol):
            return Check(cid, category, where, claim.context, rep, points, True,
                         f"'%' here means points: {_fmt(new)} - {_fmt(old)} = {points:.2f} "
                         f"(as a relative change it would be {relative:.2f}%){extra}",
                         reading="difference in points", alternative=relative,
                         alternative_reading="relative change in %", **kw)
        if _close(rep, relative, tol):
            return Check(cid, category, where, claim.context, rep, relative, True,
                         f"a relative change: ({_fmt(new)} - {_fmt(old)}) / {_fmt(old)} = {relative:.2f}% "
                         f"(in points {points:.2f}){extra}", reading="relative change in %",
                         alternative=points, alternative_reading="difference in points", **kw)
        return Check(cid, category, where, claim.context, rep, points, False,
                     f"neither reading gives {_fmt(rep)}: {_fmt(new)} - {_fmt(old)} = {points:.2f} points, "
                     f"{relative:.2f}% relative{extra}", reading="difference in points",
                     alternative=relative, alternative_reading="relative change in %", **kw)
    if claim.kind in ("value", "product", "share"):
        if claim.kind == "value" and "|" not in operands[0]:
            recomputed, how = values[0], f"every mention prints {_fmt(values[0])}"
        elif claim.kind == "value":
            recomputed, how = values[0], f"{refs[0]} is {_fmt(values[0])}"
        elif claim.kind == "product":
            recomputed = math.prod(values)
            how = " x ".join(_fmt(v) for v in values) + f" = {recomputed:,.0f}"
        else:
            recomputed = values[0] / values[1] * 100.0
            how = f"{values[0]:,.0f} / {values[1]:,.0f} = {recomputed:.2f}%"
        ok = _close(rep, recomputed, tol)
        return Check(cid, category, where, claim.context, rep, recomputed, ok, how + extra, **kw)
    if claim.kind in ("greater", "comparable"):
        (a, b), margin = values, values[0] - values[1]
        if claim.kind == "greater":
            ok = margin > 0
            verdict = "holds" if ok else "does not hold"
        else:
            ok = abs(margin) <= claims.COMPARABLE_POINTS
            verdict = f"{'within' if ok else 'beyond'} {claims.COMPARABLE_POINTS:g} point"
        why = f"{refs[0]} {_fmt(a)} vs {refs[1]} {_fmt(b)}: margin {margin:+.2f}, {verdict}"
        if all(ref.startswith("T4|") for ref in operands):
            why += f" ({_welch(*operands)})"
        return Check(cid, category, where, claim.context, None, margin, ok, why + extra,
                     reading="margin a - b", recipe=recipe, tolerance=kw["tolerance"] if claim.kind ==
                     "comparable" else None)
    if claim.kind == "blurb_score":
        scores = dict(zip(registry.names(), values, strict=True))
        macro = scoring.blurb_score(scores).value
        plain = scoring.paper_average(scores).value
        ok = _close(rep, macro, tol)
        why = (f"the leaderboard's BLURB score of these cells is {macro:.2f}; {_fmt(rep)} is their plain "
               f"13-dataset mean ({plain:.2f}), a different quantity{extra}")
        return Check(cid, category, where, claim.context, rep, macro, ok, why, reading=MACRO_READING,
                     alternative=plain, alternative_reading=PAPER_READING, **kw)
    raise ValueError(f"claim {claim.id}: unknown kind {claim.kind!r}; known: {', '.join(claims.KINDS)}")


def _claims() -> list[Check]:
    out = []
    for claim in claims.checkable():
        out.append(_claim_check(claim, claim.operands))
        if claim.alternative:
            out.append(_claim_check(claim, claim.alternative, claim.alternative_reading))
    return out


# --------------------------------------------------------------------------- entry points

def checks() -> list[Check]:
    """All checks, in the order tables -> cross-table -> labels -> claims."""
    return [*_table6_averages(), *_table7_averages(), *_table5_vs_table6(), *_table7_vs_table6(),
            *_metric_labels(), *_claims()]


def run_audit() -> pd.DataFrame:
    """Every check as one row (columns :data:`COLUMNS`); ``consistent`` is a plain bool."""
    frame = pd.DataFrame([c.record() for c in checks()], columns=list(COLUMNS))
    frame["consistent"] = frame["consistent"].astype(bool)
    return frame


def summary(frame: pd.DataFrame) -> str:
    """One line: how many checks ran and how many disagree."""
    bad = int((~frame["consistent"]).sum())
    return f"{len(frame)} checks, {bad} inconsistent"


# --------------------------------------------------------------------------- as a page shows it

FAMILY = "family"  # what the page calls a check's category
PAGE_HEADERS = {"id": "check", "category": FAMILY, "where": "where", "reported": "reported",
                "recomputed": "recomputed", "difference": "reported − recomputed", "consistent": "consistent",
                "explanation": "explanation"}


def _as_printed(value: object, tolerance: object) -> object:
    """A number at the precision the paper printed it: a whole number (tolerance of one unit) as an int, so a
    page shows 90,000 steps rather than 90000.00; text, missing values and fractions unchanged."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        return value
    whole = isinstance(tolerance, (int, float)) and not math.isnan(tolerance) and tolerance >= 1
    return int(round(value)) if whole and value == round(value) else value


def overview(frame: pd.DataFrame) -> pd.DataFrame:
    """Checks per family: how many are consistent and how many are not, as integer columns under one header
    row (no column-axis name above them, no index name on a row of its own)."""
    state = frame["consistent"].map({True: "consistent", False: "inconsistent"})
    counts = pd.crosstab(frame["category"], state).reindex(columns=["consistent", "inconsistent"], fill_value=0)
    counts.columns.name = None
    counts.index.name = FAMILY
    return counts.astype(int)


def for_page(frame: pd.DataFrame, columns: Sequence[str], index: str = "id") -> pd.DataFrame:
    """``columns`` of :func:`run_audit`'s frame indexed by ``index``, under readable headers
    (:data:`PAGE_HEADERS`), every number at its printed precision (:func:`_as_printed`: counts such as Table 5's
    training steps as integers, scores as floats)."""
    out = frame.set_index(index)[list(columns)].copy()
    for name in ("reported", "recomputed", "difference"):
        if name in out:
            out[name] = pd.Series([_as_printed(v, t) for v, t in zip(out[name], frame["tolerance"], strict=True)],
                                  index=out.index, dtype=object)
    return out.rename(columns=PAGE_HEADERS).rename_axis(PAGE_HEADERS.get(index, index))
