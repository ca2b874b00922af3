"""A verdict for each scientific claim of the paper: the claims (:mod:`medibio.book.claims`) judged by the two
rules (:mod:`medibio.book.rules`) on their evidence (:mod:`medibio.book.evidence`), as the rows, tables and
figure of the "What holds up" chapter and ``medibio claims``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from medibio.book.claims import CLAIMS, Claim, claim_tasks
from medibio.book.evidence import Evidence, PaperEvidence, our_evidence, paper_evidence, start_scoring
from medibio.book.rules import (
    COMPARABLE,
    DESIGNS,
    PAPER_VERDICTS,
    UNTESTABLE,
    VERDICTS,
    WELCH_RUNS,
    design_of,
    paper_effect_test,
    verdict,
    verdict_label,
    verdict_text,
    verdict_words,
)
from medibio.core import profiles
from medibio.core.settings import Settings
from medibio.models.zoo import model_tag
from medibio.paper import audit, sources
from medibio.results import evidence_cache
from medibio.results.aggregate import newest_configurations
from medibio.results.recorded import REFERENCE_ROOT
from medibio.results.significance import VERDICT_RESAMPLES
from medibio.runs.records import RunRecord, contents, load_records
from medibio.tasks import loaders
from medibio.tasks import scierc as scierc_data
from medibio.tasks.bootstrap import CONFIDENCE


@dataclass(frozen=True)
class Spread:
    """The seed standard deviation one of our systems showed on a claim's tasks."""

    system: str  # profile/model/variant (the model tag names the pretrained model where an arm has several)
    seeds: int
    sd: float  # sample sd over fine-tuning seeds of each seed's mean test score over the tasks


def seed_spreads(tasks: Sequence[str], roots: Sequence[Path | Sequence[RunRecord]]) -> tuple[Spread, ...]:
    """Every system of ours with two or more fine-tuning seeds on all of ``tasks`` (newest configuration, full
    runs, no cross-validation folds), the first root that has it winning: what a printed difference without
    spread has to be set against. Records only: no prediction is read. A root may be given as its newest
    records already read (:func:`rows` reads each root once for every claim)."""
    found: dict[str, Spread] = {}
    for root in roots:
        by_system: dict[str, dict[int, dict[str, float]]] = {}
        for rec in _newest_records(root) if isinstance(root, Path) else root:
            if (rec.ok and rec.score_test is not None and rec.dataset in tasks and rec.limited is None
                    and not (rec.details or {}).get("cv_fold")):
                system = f"{rec.profile}/{rec.model_tag}/{rec.variant}"
                by_system.setdefault(system, {}).setdefault(rec.seed, {})[rec.dataset] = float(rec.score_test)
        for system, seeds in by_system.items():
            means = [float(np.mean(list(got.values()))) for got in seeds.values() if len(got) == len(tasks)]
            if len(means) > 1 and system not in found:
                found[system] = Spread(system, len(means), float(np.std(means, ddof=1)))
    return tuple(found[k] for k in sorted(found))


def _newest_records(root: Path) -> list[RunRecord]:
    return newest_configurations(load_records(root))[0]


@dataclass
class Row:
    """One claim with both kinds of evidence and both verdicts, its declared statistic, δ and scales.

    ``verdict`` is the rule's outcome on our interval (the measured verdict); ``design`` what keeps the
    comparison from testing the claim (:data:`DESIGNS`) and ``design_detail`` the numbers or declaration behind
    it; ``verdict_label`` the verdict the claim counts under and ``verdict_words`` the two together as printed. ``paper_effect`` is the paper's A − B in our statistic (None: nothing printed);
    ``paper_effect_p`` / ``paper_effect_excluded`` / ``paper_effect_end`` the one-sided test of it on our draws
    (None when untested); ``seed_sds`` our systems' seed spreads on the claim's tasks, where the paper prints
    means without spread (``paper.welch_sd`` is the spread Welch's test would need)."""

    id: str
    claim: str
    where: str
    a: str
    b: str
    side: int
    paper: PaperEvidence
    ours: Evidence
    verdict: str
    link: str
    note: str = ""
    primary: str = ""
    delta: float = math.nan
    proxy: str = ""
    paper_scale: str = ""
    design: str = ""
    design_detail: str = ""
    paper_effect: float | None = None
    paper_effect_p: float | None = None
    paper_effect_excluded: bool | None = None
    paper_effect_end: float | None = None
    seed_sds: tuple[Spread, ...] = ()

    @property
    def verdict_text(self) -> str:
        return verdict_text(self.verdict, self.delta)

    @property
    def verdict_words(self) -> str:
        return verdict_words(self.verdict, self.delta, self.design)

    @property
    def verdict_label(self) -> str:
        """The verdict this claim counts under (:func:`medibio.book.rules.verdict_label`)."""
        return verdict_label(self.verdict, self.delta, self.design)

    @property
    def design_label(self) -> str:
        """The design label as shown: ``comparable`` for a tested claim that no label applies to, "" untested."""
        return self.design or (COMPARABLE if self.ours.tested else "")

    @property
    def paper_effect_words(self) -> str:
        """Whether our runs exclude the paper's own effect, in words ("" when either is missing)."""
        if self.paper_effect is None or self.paper_effect_excluded is None:
            return ""
        end = "upper" if self.paper_effect >= 0 else "lower"
        said = "is excluded at this scale" if self.paper_effect_excluded else "is not excluded"
        # on arms the design cannot compare, the test reads the same draws and says so: its number stands,
        # its bearing on the claim is the design label's
        caveat = ", on arms the design cannot compare" if self.design in UNTESTABLE else ""
        return f"the paper's {self.paper_effect:+.2f} {said} ({end} end {self.paper_effect_end:+.2f}{caveat})"

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        del out["ours"]["draws"]
        for key in ("paper", "ours"):
            out[key] = {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in out[key].items()}
        out["paper"]["problems"] = list(out["paper"]["problems"])
        out["paper"]["details"] = list(out["paper"]["details"])
        out["ours"]["beside"] = [dict(b) for b in out["ours"]["beside"]]
        out["seed_sds"] = [dict(x) for x in out["seed_sds"]]
        out["delta"] = None if math.isnan(self.delta) else self.delta
        out["verdict_text"] = self.verdict_text
        out["verdict_words"] = self.verdict_words
        out["verdict_label"] = self.verdict_label
        out["design"] = self.design_label or None
        out["paper_effect_words"] = self.paper_effect_words
        out["interval"] = "percentile (order statistics) of the multi-bootstrap draws; p from the same draws"
        return out


def judge(claim: Claim, ours: Evidence, paper: PaperEvidence, seed_sds: tuple[Spread, ...] = ()) -> Row:
    """A claim's row from its two kinds of evidence: the verdict, the design label and the test of the paper's
    own effect on the verdict's draws."""
    design, detail = design_of(claim.test, ours, paper.b)
    test = (paper_effect_test(ours.draws, paper.diff) if ours.draws is not None and paper.diff is not None
            else (None, None, None))
    return Row(claim.id, claim.statement, claim.where, claim.a, claim.b, claim.side, paper, ours,
               verdict(ours.low, ours.high, claim.side, claim.test.delta),
               f"{claim.chapter}.html#{ours.anchor}" if ours.anchor else claim.link, claim.note,
               claim.test.primary, claim.test.delta, claim.test.proxy, claim.paper_scale, design, detail,
               paper.diff, *test, seed_sds)


def rows(settings: Settings, profile: str, claims: Sequence[Claim] = CLAIMS,
         resamples: int = VERDICT_RESAMPLES, model: str | None = None,
         recorded: Path | None = REFERENCE_ROOT) -> list[Row]:
    """Every claim judged on the runs of ``model`` (None: the profile's) on ``profile`` under
    ``settings.results_root`` (see :func:`our_evidence` for ``recorded``); claims whose paper prints means
    without spread get the seed spreads of our systems on their tasks, from both roots.

    A claim's row is kept in the evidence cache under a digest of everything it is computed from (the records
    and their evidence files under both roots, the gold sets' files, the package's code and data, the
    arguments), so the chapters that show the same claims on one build judge each once."""
    roots = [settings.results_root, *([recorded] if recorded not in (None, settings.results_root) else [])]
    out: dict[str, Row] = {}
    newest: list[list[RunRecord]] = []  # each root's records, read once when a claim first needs them
    with evidence_cache.stored_in(settings.cache_root):  # unit scores and draws computed once per input
        names = {}
        if evidence_cache.folder() is not None:
            inputs = _inputs_digest(settings, roots, profile, resamples, model)
            names = {c.id: evidence_cache.key("verdict-row", {"claim": repr(c), "inputs": inputs}) for c in claims}
            out = {c.id: row for c in claims if (row := evidence_cache.load_object("verdict-row", names[c.id]))
                   is not None and isinstance(row, Row)}
        todo = [c for c in claims if c.id not in out]
        if todo:
            start_scoring(todo, settings, profile, recorded)  # scored by worker processes during the audit
            checks = audit.run_audit().set_index("id")
            rechecked = sources.recheck_claims().set_index("id")
        for claim in todo:
            paper = paper_evidence(claim, checks, rechecked)
            tasks = claim_tasks(claim) if paper.welch_sd is not None else ()
            if tasks and not newest:
                newest = [_newest_records(root) for root in roots]
            spreads = seed_spreads(tasks, newest) if tasks else ()
            out[claim.id] = judge(claim, our_evidence(claim, settings, profile, resamples, model, recorded), paper,
                                  spreads)
            if claim.id in names:
                evidence_cache.save_object("verdict-row", names[claim.id], out[claim.id])
    return [out[c.id] for c in claims]


def _inputs_digest(settings: Settings, roots: Sequence[Path], profile: str, resamples: int,
                   model: str | None) -> str:
    """SHA-256 of what a claim's row is computed from: every run record and its evidence files (``seed*``
    under each kind's folder, by content) of each root in order, the gold sets' files under the data root
    (path, size, mtime), the package's code and data, and the arguments (the model by its tag: None judges the
    profile's)."""
    data = settings.data_root  # the gold sets the claims are scored against: BLURB's and SciERC's folders
    listing = sorted((str(p.relative_to(data)), st.st_size, st.st_mtime_ns)
                     for folder in ((loaders.blurb_root(data), scierc_data.split_path("test", data).parent)
                                    if data.is_dir() else ())
                     if folder.is_dir() for p in folder.rglob("*") if p.is_file() and (st := p.stat()))
    return evidence_cache.key("verdict-inputs", {
        "roots": [[str(Path(root).resolve()), contents(root)] for root in roots],
        "data": [str(data.resolve()), listing], "package": evidence_cache.package_digest(),
        "profile": profile, "resamples": resamples, "model": model_tag(model or profiles.get(profile).model)})


def _num(x: float | None, fmt: str = "{:+.2f}") -> str:
    return "" if x is None or (isinstance(x, float) and math.isnan(x)) else fmt.format(x)


def _interval(low: float, high: float) -> str:
    return "" if math.isnan(low) else f"[{low:+.2f}, {high:+.2f}]"


def _spreads(r: Row) -> str:
    if r.paper.welch_sd is None:
        return ""
    measured = "; ".join(f"{x.system} {x.sd:.2f} ({x.seeds} seeds)" for x in r.seed_sds) or "none measured here"
    return f"Welch ({WELCH_RUNS} + {WELCH_RUNS} runs) needs a seed sd below {r.paper.welch_sd:.2f}; ours: {measured}"


def frame(found: Sequence[Row], links: bool = False) -> pd.DataFrame:
    """The table the chapter and ``medibio claims`` print, one row per claim; ``links`` makes the evidence
    column an HTML link (the book) instead of the bare address (the terminal)."""
    records = []
    for r in found:
        ours = r.ours
        records.append({
            "claim": r.claim, "A − B": f"{r.a} − {r.b}", "claimed": "> 0" if r.side > 0 else "≤ 0",
            "paper A − B": _num(r.paper.diff), "paper test": r.paper.test,
            "paper checks": "; ".join(r.paper.problems) or ("all pass" if r.paper.diff is not None else ""),
            "paper verdict": r.paper.verdict, "seed spread needed and measured": _spreads(r),
            "declared statistic": r.primary, "δ": _num(r.delta, "{:g}"), "proxy": r.proxy,
            "our runs": ours.runs or f"would be tested by: {ours.needs}",
            "our scale": ours.scale, "paper's scale": r.paper_scale,
            "resampled": ours.resampled,
            "ours A − B": _num(ours.diff),
            f"{CONFIDENCE:.0%} interval": _interval(ours.low, ours.high),
            "p": _num(ours.p, "{:.4f}"), "verdict": r.verdict_text,
            "design": r.design_label, "design detail": r.design_detail, "verdict in words": r.verdict_words,
            "paper's effect": r.paper_effect_words, "p (paper's effect)": _num(r.paper_effect_p, "{:.4f}"),
            "beside (not the verdict's)": "; ".join(
                f"{b.label}: {b.diff:+.2f} {_interval(b.low, b.high)}, p {b.p:.4f} ({b.runs})" for b in ours.beside),
            "evidence": f'<a href="{r.link}">{r.where}</a>' if links else r.link,
        })
    return pd.DataFrame(records, index=pd.Index([r.id for r in found], name="id"))


def overview(found: Sequence[Row], links: bool = False) -> pd.DataFrame:
    """The compact table, one row per claim, every cell a string: the claim, the paper's number in our
    statistic, ours with its interval, and the verdict in words with what it says of the paper's own effect at
    our scale; ``links`` makes the claim a link to its evidence. :func:`frame` has every column behind them."""
    out = []
    for r in found:
        claim = f'<a href="{r.link}">{r.claim}</a>' if links else r.claim
        ours = f"{r.ours.diff:+.2f} {_interval(r.ours.low, r.ours.high)}" if r.ours.tested else ""
        said = "; ".join(x for x in (r.verdict_words, r.paper_effect_words) if x)
        out.append({"claim": claim, "paper's number": _num(r.paper_effect) or "none printed",
                    f"ours [{CONFIDENCE:.0%}]": ours, "verdict": said})
    return pd.DataFrame(out, index=pd.Index([r.id for r in found], name="id"))


def counts(found: Sequence[Row]) -> dict[str, int]:
    """How many claims got each measured verdict (the rule's outcome on the interval, named ``measured: …``:
    what a claim counts under is its label, :func:`medibio.book.forest.headline`), each paper verdict and each
    design label, every value of the three vocabularies present."""
    ours = {f"measured: {v}": sum(r.verdict == v for r in found) for v in VERDICTS}
    paper = {v: sum(r.paper.verdict == v for r in found) for v in PAPER_VERDICTS}
    design = {d: sum(r.design == d for r in found) for d in DESIGNS if d}
    return {**ours, **{f"paper: {k}": v for k, v in paper.items()},
            **{f"design: {k}": v for k, v in design.items()}}


def figure(found: Sequence[Row]) -> Any:
    """Each tested claim's difference A − B: ours with its interval, the paper's printed one beside it."""
    import matplotlib.pyplot as plt

    shown = [r for r in found if r.ours.tested or r.paper.diff is not None]
    fig, ax = plt.subplots(figsize=(8, 0.45 * len(shown) + 1.2))
    ours = [(y, r.ours) for y, r in enumerate(shown) if r.ours.tested]
    if ours:
        ax.errorbar([e.diff for _, e in ours], [y for y, _ in ours], fmt="o", color="tab:blue", capsize=3,
                    xerr=[[e.diff - e.low for _, e in ours], [e.high - e.diff for _, e in ours]],
                    label=f"ours ({CONFIDENCE:.0%} interval)")
    printed = [(y, r.paper.diff) for y, r in enumerate(shown) if r.paper.diff is not None]
    if printed:
        ax.plot([d for _, d in printed], [y for y, _ in printed], "D", color="tab:orange", label="paper (printed)")
    ax.axvline(0, color="grey", lw=1)
    ax.set_yticks(range(len(shown)), [r.id for r in shown])
    ax.invert_yaxis()
    ax.set_xlabel("A − B (points)")
    ax.set_title("Each claim's difference: the paper's printed one and ours")
    ax.legend(loc="lower right", fontsize="small")
    fig.tight_layout()
    return fig


def _crossed(before: Evidence, after: Evidence, delta: float) -> str:
    """The boundaries (0, ±δ) that lie between an interval end of ``before`` and the same end of ``after``."""
    found = []
    for c, name in ((0.0, "0"), (-delta, "−δ"), (delta, "+δ")):
        if math.isnan(c):
            continue
        if any(min(x, y) <= c <= max(x, y) for x, y in ((before.low, after.low), (before.high, after.high))):
            found.append(name)
    return ", ".join(found)


def beside_recorded(settings: Settings, profile: str, recorded: Path = REFERENCE_ROOT,
                    resamples: int = VERDICT_RESAMPLES) -> pd.DataFrame:
    """Each claim's verdict on this build's runs beside its verdict on the recorded runs (``reference/``),
    judged by the same rule with the same draws; where they differ, which boundary an interval end crossed
    (a verdict changes only then: the draws depend on the claim and the evidence's shape — runs, units,
    datasets — never on the predictions; where the shapes differ the draws are not common)."""
    ours = rows(settings, profile, resamples=resamples, recorded=recorded)
    # a build from the recorded runs holds them byte for byte: the same rule on the same bytes and draws gives
    # the same rows, so they are judged once (a fifth of Appendix B's time)
    same = contents(settings.results_root) == contents(recorded)
    theirs = ours if same else rows(dataclasses.replace(settings, results_root=Path(recorded)), profile,
                                    resamples=resamples, recorded=recorded)
    out = []
    for a, b in zip(ours, theirs, strict=True):
        # in the words of What holds up: a design label (a floor, a scale mismatch) with the measured verdict
        out.append({"this build": a.verdict_words, "this build A − B [95%]": _estimate(a.ours),
                    "reference/": b.verdict_words, "reference/ A − B [95%]": _estimate(b.ours),
                    "same verdict": a.verdict == b.verdict,
                    "crossed": "" if a.verdict == b.verdict else _crossed(b.ours, a.ours, a.delta)})
    return pd.DataFrame(out, index=pd.Index([r.id for r in ours], name="id"))


def _estimate(ours: Evidence) -> str:
    return f"{ours.diff:+.2f} {_interval(ours.low, ours.high)}" if ours.tested else ""

