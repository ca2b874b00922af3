"""The two rules that turn a claim's evidence into verdicts, written once, and their vocabulary.

* :func:`paper_verdict` (from what the paper prints): ``no numbers printed``; ``numbers inconsistent`` when a
  check of :mod:`medibio.paper.audit` the claim rests on fails, or when the publications of the numbers it
  quotes turn the comparison around (:func:`medibio.paper.sources.recheck_claims`);
  ``printed numbers disagree`` when the printed difference is not on the claimed side; then, where the paper
  prints mean ± sd over runs (Table 4), Welch's t-test: ``significant`` (p < 0.05) or ``not significant``;
  where it prints means only, ``no spread printed`` (no test is possible).
* :func:`verdict` (from our runs): for a claim that A beats B, ``supported`` when the 95% interval of our
  difference lies above zero (``supported, smaller than δ`` when it also lies below the claim's margin δ),
  ``contradicted`` when it lies below zero, ``no difference larger than δ`` when it contains zero inside ±δ,
  ``inconclusive`` otherwise; for a claim that A does *not* beat B (a non-superiority claim), ``supported``
  when the interval's upper end lies below +δ, ``contradicted`` when its lower end lies above +δ;
  ``not testable here`` when this build has no runs that test it (the row says what would).

Beside every verdict, from the same draws, :func:`paper_effect_test` asks whether our runs exclude an effect
as large as the paper's own in the same statistic (one-sided, H0: Δ at least the paper's Δ), and
:func:`design_of` names what keeps a comparison from testing the claim: a ``floor`` (both arms within the
constant answer's interval, found in the data), or a ``scale mismatch``, ``ceiling`` or ``proxy`` declared with
the claim (``comparable`` where none applies to a tested claim); :func:`verdict_label` is the verdict a claim
counts under (the label, where it replaces the measured verdict) and :func:`verdict_words` the verdict as
printed, the measured verdict kept.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from medibio.book.claims import Test
from medibio.results.significance import VERDICT_RESAMPLES
from medibio.tasks import student
from medibio.tasks.bootstrap import CONFIDENCE, alpha_of, order_interval

if TYPE_CHECKING:  # the evidence is gathered by medibio.book.evidence, which applies these rules
    from medibio.book.evidence import Evidence


SUPPORTED, SUPPORTED_SMALL, CONTRADICTED, EQUIVALENT, INCONCLUSIVE, NOT_TESTABLE = (
    "supported", "supported, smaller than δ", "contradicted", "no difference larger than δ", "inconclusive",
    "not testable here")
VERDICTS = (SUPPORTED, SUPPORTED_SMALL, CONTRADICTED, EQUIVALENT, INCONCLUSIVE, NOT_TESTABLE)
SIGNIFICANT, NOT_SIGNIFICANT, NO_SPREAD, NO_NUMBERS, INCONSISTENT, DISAGREE = (
    "significant", "not significant", "no spread printed", "no numbers printed", "numbers inconsistent",
    "printed numbers disagree")
PAPER_VERDICTS = (SIGNIFICANT, NOT_SIGNIFICANT, NO_SPREAD, NO_NUMBERS, INCONSISTENT, DISAGREE)
# What keeps a comparison from testing its claim (the empty label: nothing known does)
FLOOR, SCALE_MISMATCH, CEILING, PROXY = "floor", "scale mismatch", "ceiling", "proxy"
PRECISIONS = "precisions differ"  # the arms' runs computed in different precisions: a claim reads one
DESIGNS = ("", FLOOR, PRECISIONS, SCALE_MISMATCH, CEILING, PROXY)
# the labels under which a measured verdict does not count: the design could not test the claim
COMPARABLE = "comparable"  # a tested claim's design where no label applies (the JSON and the details say it)
UNTESTABLE = {FLOOR: "not testable: floor", PRECISIONS: "not testable: the arms differ in precision",
              SCALE_MISMATCH: "not testable at this scale"}
ALPHA = alpha_of(CONFIDENCE)
WELCH_RUNS = 5  # runs per arm of the Welch test asked of printed means without spread (Table 4 prints 5)
RULE = (f"Our verdict: the difference A − B between the claim's two systems in the statistic declared for it "
        f"before any run, with its {CONFIDENCE:.0%} interval from a multi-bootstrap (Sellam et al. 2022): "
        f"{VERDICT_RESAMPLES} draws, each resampling the test units (the same units for A and B) and each "
        "system's fine-tuning seeds (and pretraining seeds where a system has several pretrained models). The "
        "interval is the percentile interval of those draws by order statistics, and p is read from the same "
        "draws (the smallest level at which that interval would exclude zero), so the interval excludes zero "
        f"exactly when p < {ALPHA:g}. For a claim that A beats B: *supported* when the interval lies above zero "
        "(*supported, smaller than δ* when it also lies below +δ), *contradicted* when it lies below zero, *no "
        "difference larger than δ* when it contains zero and lies inside ±δ (δ declared per claim), "
        "*inconclusive* otherwise. For a claim that A does not beat B (non-superiority): *supported* when the "
        "interval's upper end lies below +δ, *contradicted* when its lower end lies above +δ, *inconclusive* "
        "otherwise. *not testable here* when this build has no runs for both systems. Beside every verdict, "
        "from the same draws, the paper's own effect in the same statistic is tested one-sided (H0: the "
        "difference is at least the paper's, in its direction): it is *excluded* when the interval's end on "
        "the paper's side lies short of it, exactly when that test's p (1 + 2 × the draws at or beyond the "
        f"paper's effect, over the draws + 1) is below {ALPHA:g}. A comparison that cannot test the claim "
        "says so in the verdict, the measured verdict kept: *not testable: floor* when both arms score within "
        "the constant answer's interval (computed from the data), *not testable at this scale* for a declared "
        "scale mismatch between the arms, *at a ceiling* where the baseline arm already scores what the claim "
        "expects the other to gain (declared), *proxy* where another task stands in for the paper's. The "
        "paper's verdict: *no numbers printed* when the claim rests "
        "on no printed number; *numbers inconsistent* when a check of Appendix A on the numbers it rests on "
        "fails, or when the publications of the numbers it quotes turn the comparison around (the cross-source "
        "audit); *printed numbers disagree* when the printed difference is not on the "
        f"claimed side; else Welch's t-test where mean ± sd over runs is printed (*significant* at p < {ALPHA:g}, "
        "*not significant* otherwise), and *no spread printed* where only means are, since no test is possible "
        f"then (the row gives the seed standard deviation below which Welch's test with {WELCH_RUNS} + "
        f"{WELCH_RUNS} runs would call the printed difference significant, beside the seed spreads measured "
        "here).")


def verdict(low: float, high: float, side: int = 1, delta: float = math.nan) -> str:
    """Our verdict from the interval [low, high] of A − B, the claimed side (+1: A beats B; −1: A does not beat
    B, a non-superiority claim) and the claim's margin ``delta`` (NaN: none declared, read as 0 for a
    non-superiority claim)."""
    if math.isnan(low) or math.isnan(high):
        return NOT_TESTABLE
    if side < 0:  # H0: A beats B by delta or more; supported when the whole interval lies below +delta
        margin = 0.0 if math.isnan(delta) else delta
        return SUPPORTED if high < margin else CONTRADICTED if low > margin else INCONCLUSIVE
    if low > 0:
        return SUPPORTED_SMALL if high < delta else SUPPORTED
    if high < 0:
        return CONTRADICTED
    if -delta < low and high < delta:
        return EQUIVALENT
    return INCONCLUSIVE


def verdict_text(verdict_name: str, delta: float) -> str:
    """A verdict as printed: the outcomes that name δ with its value."""
    named = verdict_name in (EQUIVALENT, SUPPORTED_SMALL)
    return verdict_name.replace("δ", f"{delta:g}") if named else verdict_name


def verdict_label(verdict_name: str, delta: float, design: str) -> str:
    """The verdict a claim counts under (the page's tally, the table, the JSON's ``verdict_label``): the measured
    verdict where nothing keeps the comparison from testing the claim, else what does, so that a count never
    reads "contradicted" where the row says the design could not test the claim."""
    measured = verdict_text(verdict_name, delta)
    if verdict_name == NOT_TESTABLE or design in ("", COMPARABLE):
        return measured
    if design in UNTESTABLE:
        return UNTESTABLE[design]
    if design == CEILING:
        return f"{measured}, at a ceiling"
    if design == PROXY:
        return f"{PROXY} {measured}"
    raise ValueError(f"unknown design label {design!r}; expected one of {', '.join(map(repr, DESIGNS))}")


def verdict_words(verdict_name: str, delta: float, design: str) -> str:
    """The verdict as printed: :func:`verdict_label`, with the measured verdict beside a label that replaces
    it, so a row never hides what the runs showed."""
    label = verdict_label(verdict_name, delta, design)
    if verdict_name == NOT_TESTABLE or design not in UNTESTABLE:
        return label
    return f"{label} (measured: {verdict_text(verdict_name, delta)})"


def design_of(test: Test, ours: Evidence, paper_b: float | None = None) -> tuple[str, str]:
    """What keeps our comparison from testing the claim, and the numbers that show it: ``floor`` when both arms
    score at or below the upper end of the constant answer's interval (computed from the test data), else the
    ``scale mismatch``, ``ceiling`` or ``proxy`` declared with the claim's test; ("", "") when none applies.
    ``paper_b`` is the paper's score of arm B (a ceiling names it beside ours)."""
    if ours.tested and not math.isnan(ours.constant_high) and max(ours.a_score, ours.b_score) <= ours.constant_high:
        return FLOOR, (f"both arms ({ours.a_score:.1f} and {ours.b_score:.1f}) score within the constant answer's "
                       f"{CONFIDENCE:.0%} interval or below it ({ours.constant:.1f} "
                       f"[{ours.constant_low:.1f}, {ours.constant_high:.1f}])")
    if ours.tested and len({*ours.precisions}) > 1:
        arms = " and ".join(f"{arm} in {'/'.join(used)}" for arm, used in zip((test.a, test.b), ours.precisions,
                                                                            strict=True))
        return PRECISIONS, (f"the arms' runs computed in different precisions ({arms}); a claim reads only arms "
                            "that share one (docs/pretraining.md measures what precision alone does)")
    if test.scale_mismatch:
        return SCALE_MISMATCH, test.scale_mismatch
    if test.ceiling:
        base = f"{test.b} scores {ours.b_score:.1f} here" if ours.tested else ""
        paper = f" against {paper_b:.1f} in the paper" if base and paper_b is not None else ""
        return CEILING, f"{base}{paper}: {test.ceiling}" if base else test.ceiling
    if test.proxy:
        return PROXY, test.proxy
    return "", ""


def paper_effect_test(draws: np.ndarray, effect: float,
                      confidence: float = CONFIDENCE) -> tuple[float, bool, float]:
    """Whether our draws of A − B exclude the paper's own effect ``effect`` (in the same statistic): the
    one-sided test of H0 "the difference is at least the paper's, in its direction". Returns (p, excluded,
    the interval end on the paper's side). p = (1 + 2m) / (B + 1), m the draws at or beyond ``effect``: the
    smallest alpha at which the (1 − alpha) interval's end lies short of it, so ``excluded`` (p < alpha) holds
    exactly when that end of the interval :func:`order_interval` gives does (a one-sided test at alpha / 2)."""
    d = np.asarray(draws, dtype=float)
    direction = -1.0 if effect < 0 else 1.0
    beyond = int(np.count_nonzero(direction * d >= direction * effect))
    p = min(1.0, (1 + 2 * beyond) / (len(d) + 1))
    low, high = order_interval(d, confidence)
    return p, p < alpha_of(confidence), high if direction > 0 else low


def welch_sd(diff: float, runs: int = WELCH_RUNS, confidence: float = CONFIDENCE) -> float:
    """The seed standard deviation (the same in both arms) below which Welch's two-sided t-test on ``runs`` +
    ``runs`` runs would call a difference of means ``diff`` significant: |diff| / (t × √(2 / runs)), t the
    critical value at 2(runs − 1) degrees of freedom (Welch's with equal spreads and sizes)."""
    t = student.t_quantile(1 - alpha_of(confidence) / 2, 2 * (runs - 1))
    return abs(diff) / (t * math.sqrt(2 / runs))


def paper_verdict(diff: float | None, side: int, problems: Sequence[str], p: float | None) -> str:
    """The paper's own evidence: printed difference A − B (None: nothing printed), failed checks, Welch p."""
    if diff is None:
        return NO_NUMBERS
    if problems:
        return INCONSISTENT
    if side * diff <= 0:
        return DISAGREE
    if p is None:
        return NO_SPREAD
    return SIGNIFICANT if p < ALPHA else NOT_SIGNIFICANT

