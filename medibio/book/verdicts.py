"""A verdict for each scientific claim of the paper: what the paper's own numbers can bear, and what our runs say.

The claims are data (:data:`CLAIMS`): a paraphrase, where the paper makes it, the printed cells it rests on
(references that :func:`medibio.paper.claims.resolve` reads), the Appendix A / cross-source checks of those
cells, how our runs test it, and the book section that holds the evidence. Every verdict is computed here
from those facts by one of two rules written once:

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
the claim; :func:`verdict_words` puts the label into the verdict as printed, the measured verdict kept.

The difference is always "A − B" as the claim names them. Our differences come from run records: one
multi-bootstrap per claim (:func:`medibio.results.significance.multi_bootstrap`: test units, fine-tuning and
pretraining seeds resampled) whose interval and p-value are read from the same draws; a bootstrap over papers
for the field claim.

This module sits in the book layer because the claims span :mod:`medibio.paper` and :mod:`medibio.fields`,
two layers that may not import each other.
"""

from __future__ import annotations

import dataclasses
import math
import zlib
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from medibio.core import precision, profiles
from medibio.core.errors import DataMissingError
from medibio.core.settings import Settings
from medibio.models.zoo import model_tag
from medibio.paper import audit, sources
from medibio.paper import claims as printed_claims
from medibio.pretrain import study
from medibio.pretrain.trainer import continued_from
from medibio.results import evidence_cache
from medibio.results.aggregate import newest_configurations
from medibio.results.recorded import REFERENCE_ROOT
from medibio.results.significance import (
    VERDICT_RESAMPLES,
    MultiComparison,
    Runs,
    cv_runs,
    multi_bootstrap,
    runs_of,
)
from medibio.runs.records import RunRecord, load_records
from medibio.tasks import registry
from medibio.tasks.bootstrap import CONFIDENCE, alpha_of, bootstrap_interval, bootstrap_p, order_interval
from medibio.tasks.units import unit_stats
from medibio.training.config import CV_FOLDS, FinetuneConfig

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

GENERAL_DOMAIN = ("STS-B", "SICK-R", "SICK-E")  # intermediate tasks without biomedical text
MEDICINE_NEIGHBOURS = ("Biology", "Chemistry", "Psychology")
FIELD_METADATA = Path("s2orc") / "v2020-07-05_metadata_sample.jsonl"  # the field chapter's default sample
IFT_PREFIX = "ift-"
STUDY_ANCHOR = "the-table-5-study-on-this-cpu-recorded"  # the Tables 5-6 chapter's section on the CPU study
TABLE5_VARIANT = "pretrain-table5-{}"  # medibio.book.table5.finetune_experiments names its runs so
_T4_RUNS = audit.RUNS_TABLE4
_IFT, _BASE, _LINK = printed_claims.IFT, printed_claims.BASE, printed_claims.LINK


@dataclass(frozen=True)
class Test:
    """How our runs test a claim: the arms, statistic and margin declared before any test score was seen.

    ``kind`` is ``ift-gain`` (intermediate task ``a`` vs no intermediate on ``dataset``), ``ift-domain``
    (general-domain intermediate ``a`` vs biomedical intermediate ``b`` on ``dataset``), ``table5``
    (configurations ``a`` vs ``b``), ``fields`` (C(Medicine, j) of the claimed neighbours vs every other field)
    or ``none``; ``needs`` says what would test it. ``profile`` names the profile whose runs test it when that
    is not the judged one (the IFT claims' ``cpu-ift`` runs, recorded in ``reference/``). ``primary`` is the
    statistic the verdict reads; ``delta`` the equivalence margin in points (an interval inside ±delta reads
    "no difference larger than delta"); ``proxy`` says why the intermediate task stands in for the paper's.
    ``scale_mismatch`` and ``ceiling`` declare why the two arms cannot test the claim at our scale (the arms
    differ in more than the claim's factor) or why the baseline arm already scores what the other should gain;
    each turns the verdict's words (:func:`verdict_words`), never its interval; they were declared after the
    runs were seen (docs/verdicts.md), which is why they may not move a number. ``models`` names the pretrained
    models (their tags in the results tree) whose runs of ``profile`` test the claim, each a pretraining seed that
    the draws resample like the fine-tuning seeds (empty: the profile's one model); ``also`` pairs a model whose
    runs of the same arms stand beside the declared statistic with why they are not its evidence."""

    kind: str
    dataset: str = ""
    a: str = ""
    b: str = ""
    needs: str = ""
    profile: str = ""
    primary: str = ""
    delta: float = math.nan
    proxy: str = ""
    scale_mismatch: str = ""
    ceiling: str = ""
    models: tuple[str, ...] = ()
    also: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Claim:
    """One scientific claim: 'A beats B' (``side`` +1) or 'A does not beat B' (``side`` −1)."""

    id: str
    statement: str
    where: str
    a: str
    b: str
    printed: tuple[str, str] | None  # A and B as printed, in our statistic (medibio.paper.claims references)
    test: Test
    chapter: str  # book slug of the section holding our evidence
    anchor: str  # its heading's anchor
    side: int = 1
    spread: bool = False  # the paper prints mean ± sd over runs (Table 4): Welch's test is possible
    checks: tuple[str, ...] = ()  # audit check ids, or "sources:<id>" for the cross-source audit
    note: str = ""
    paper_scale: str = ""  # the scale the paper's evidence was made at
    quoted: tuple[str, str] | None = None  # what the text quotes, where that is another statistic than ours
    tasks: tuple[str, ...] = ()  # BLURB sets whose mean `printed` is, where no Test names them (seed spreads)

    @property
    def link(self) -> str:
        """The evidence section, relative to a sibling page of the book."""
        return f"{self.chapter}.html#{self.anchor}"


def _t4(task: str) -> tuple[str, str]:
    return f"T4|SciDeBERTa v2|{task}", f"T4|SciDeBERTa|{task}"


def _t7(row: str) -> tuple[str, str]:
    return f"T7|{_IFT}|{row}", f"T7|{_LINK}|{row}"


def _t5(a: str, b: str) -> tuple[str, str]:
    return f"T5|{a}|blurb_avg", f"T5|{b}|blurb_avg"


def _t6_large(a: str, b: str) -> tuple[str, str]:
    """Table 6's mean over the seven large sets: the paper's number in the Table 5 claims' statistic."""
    return f"LARGE|T6|{a}", f"LARGE|T6|{b}"


def _group(group: str) -> tuple[str, ...]:
    """The BLURB sets whose mean a Table 7 group average is."""
    return tuple(name for name in registry.names() if registry.get(name).group.value == group)


def _t6(config: str) -> tuple[str, ...]:
    return f"t6-avg-{config}", f"t5-vs-t6-{config}"


_SCIDEBERTA = Test("none", needs="no profile: SciDeBERTa v2 is not among the models medibio can load (the "
                                 "`paper` profile fine-tunes SciDeBERTa v1 on SciERC)")
_TABLE5 = ("the CPU study's runs of both arms (docs/pretraining.md: #1-#4 analogs pretrained on 10M tokens with 2 "
           "seeds, each fine-tuned on the seven large BLURB sets with 3 seeds; `medibio study queue a|b`); or "
           "PROFILE=gpu or paper: pretrains the five configurations and fine-tunes each on BLURB")
# The mean over the seven BLURB sets with large test sets is the Table 5 claims' primary statistic, since the
# plain mean moves mostly with the four small sets (BIOSSES 20 pairs, PubMedQA 500, BioASQ 140, GAD ~530).
# All seven: a mean over some of them (a study's queue under way) is not the declared statistic.
T5_SETS: tuple[str, ...] = tuple(registry.LARGE_SETS)
_T5_PRIMARY = ("mean over the seven large BLURB sets (" + ", ".join(T5_SETS) + "); the plain mean "
               "over every tested BLURB set beside it")
_T5_DELTA = 1.0  # Table 6's differences on the large sets are 0.02-0.85 points
_PER_SET = "set:"  # the label prefix of a Table 5 claim's per-set statistics
_STUDY_PROFILE = "cpu-study"  # the Table 5 study on this CPU (medibio.pretrain.study), recorded in reference/
_IFT_PROFILE = "cpu-ift"  # MiniLM, 5 seeds, a full-data intermediate stage per seed (medibio.core.profiles)
# The encoders of the IFT mechanism's test: the CPU study's #3 (scratch, MLM on abstracts), both pretraining seeds,
# made again in fp32 for it (docs/verdicts.md); #2 inherits MiniLM's similarity training, so it is not one
_STUDY_ENCODERS = tuple(f"{study.ARMS['3'].name}-s{seed}" for seed in study.SEEDS)
_IFT_DELTA = 2.0  # points of the target's metric: smaller than every IFT gain the paper prints but PubMedQA's
_PAPER_IFT_SCALE = ("MediBioDeBERTa (base-size DeBERTa; SciDeBERTa v2's 500K steps × 8,192 sequences, then 10K × "
                    "49,152 on 52 GB of medical S2ORC text); full BLURB training sets")
_PAPER_T5_SCALE = "base-size DeBERTa per configuration, 50K-125K pretraining steps (Table 5); full BLURB training sets"
_BIOLINK = Test("none", needs="no profile: MediBioDeBERTa-IFT's weights are not among the models medibio can "
                              "load (BioLinkBERT is: `medibio finetune --model biolinkbert-base`)")
_SCIREPEVAL = ("PROFILE=gpu (its STILT matrix includes {0}), or Table 2's SciRepEval data in the data root and "
               "`medibio finetune --task {0} --intermediate <task>`")

CLAIMS: tuple[Claim, ...] = (
    Claim("scierc-ner", "SciDeBERTa v2 beats SciDeBERTa on SciERC NER", "§V-B, Table 4", "SciDeBERTa v2",
          "SciDeBERTa", _t4("NER"), _SCIDEBERTA, "table_4_scierc", "our-runs", spread=True,
          checks=("sources:t4-ner",)),
    Claim("scierc-jre", "SciDeBERTa v2 beats SciDeBERTa on SciERC joint relation extraction", "§V-B, Table 4",
          "SciDeBERTa v2", "SciDeBERTa", _t4("JRE"), _SCIDEBERTA, "table_4_scierc", "our-runs", spread=True,
          checks=("sources:t4-jre",)),
    Claim("scierc-coref", "SciDeBERTa v2 is better than its predecessor (the conclusion does not limit it to "
          "NER and JRE; Coref is the remaining SciERC task)", "§VI, Table 4", "SciDeBERTa v2", "SciDeBERTa",
          _t4("Coref"), _SCIDEBERTA, "table_4_scierc", "our-runs", spread=True, checks=("sources:t4-coref",)),
    Claim("science-base", "continual learning from a science model (#1) beats continual learning from a "
          "general model (#2)", "§V-C, Tables 5–6", "#1", "#2", _t6_large("#1", "#2"),
          Test("table5", a="#1", b="#2", needs=_TABLE5, primary=_T5_PRIMARY, delta=_T5_DELTA),
          "tables_5_6_pretraining_configurations", "the-five-configurations-scaled-down",
          checks=(*_t6("#1"), *_t6("#2"), "t5-steps-vs-t3"), paper_scale=_PAPER_T5_SCALE, quoted=_t5("#1", "#2")),
    Claim("scratch-vs-general", "pretraining from scratch on biomedical text (#3) beats continual learning "
          "from a general model (#2)", "§V-C, Tables 5–6", "#3", "#2", _t6_large("#3", "#2"),
          Test("table5", a="#3", b="#2", needs=_TABLE5, primary=_T5_PRIMARY, delta=_T5_DELTA,
               scale_mismatch="the CPU study's #3 is an 11M-parameter model (4 × 256) pretrained from scratch "
                              "on 10M tokens, #2 is MiniLM (6 × 384) with all its pretraining elsewhere, then "
                              "the same 10M tokens: the arms differ by that prior pretraining, which the paper's "
                              "#3 made up for with 125K steps of its own"),
          "tables_5_6_pretraining_configurations", "the-five-configurations-scaled-down",
          checks=(*_t6("#3"), *_t6("#2")), paper_scale=_PAPER_T5_SCALE, quoted=_t5("#3", "#2")),
    Claim("fulltext", "full text (#4) does not beat abstracts (#3) for pretraining from scratch",
          "§V-C, Tables 5–6", "#4", "#3", _t6_large("#4", "#3"),
          Test("table5", a="#4", b="#3", needs=_TABLE5, primary=_T5_PRIMARY, delta=_T5_DELTA),
          "tables_5_6_pretraining_configurations", "the-five-configurations-scaled-down", side=-1,
          checks=(*_t6("#4"), *_t6("#3")), paper_scale=_PAPER_T5_SCALE, quoted=_t5("#4", "#3")),
    Claim("ift-biosses", "intermediate fine-tuning raises BIOSSES (paper: by about 35 points)",
          "§V-D, Tables 6–7", "with IFT", "without", (f"T7|{_IFT}|BIOSSES", "T6|#1|BIOSSES"),
          Test("ift-gain", "BIOSSES", a="ift-STS-B", b="base", profile=_IFT_PROFILE, delta=_IFT_DELTA,
               models=_STUDY_ENCODERS,
               primary="Pearson r × 100 on the official 20 test pairs, mean over the CPU study's two #3 models "
                       "(pretrained from scratch with MLM only on SumPubMed abstracts, never on a similarity "
                       "task) of the mean over 5 fine-tuning seeds each (each seed with its own STS-B stage); "
                       "pretraining seeds, fine-tuning seeds and test pairs resampled; beside it, 5-fold "
                       "cross-validation over all 100 pairs (each seed's five folds pooled)",
               also=(("minilm", "the ceiling case, not the verdict's: all-MiniLM-L6-v2 was trained "
                                "contrastively on about a billion sentence pairs for similarity, so without IFT it "
                                "already scores what IFT on STS-B is meant to teach"),),
               needs="the cpu-ift runs on the study's #3 models (docs/verdicts.md): BIOSSES after STS-B and "
                     "without, fine-tuning seeds 1-5 on each of the two pretraining seeds"),
          "tables_1_2_intermediate_finetuning", "ift-for-sentence-similarity",
          checks=("vd-ift-biosses", f"t7-vs-t6-{_BASE}-BIOSSES"), paper_scale=_PAPER_IFT_SCALE),
    Claim("ift-hoc", "intermediate fine-tuning raises HoC (paper: by about 10 points)", "§V-D, §V-E, Tables 6–7",
          "with IFT", "without", (f"T7|{_IFT}|HoC", "T6|#1|HoC"),
          Test("ift-gain", "HoC", a="ift-GAD", b="base", profile=_IFT_PROFILE, delta=_IFT_DELTA,
               primary="micro-F1 × 100 on HoC's official test abstracts, mean over 5 seeds",
               proxy="a proxy: GAD (a BLURB sentence classification set, chosen over ChemProt before any run for "
                     "its cost: 4.3K training sentences against 18K) stands in for the paper's SciRepEval tasks, "
                     "which are not in the data root",
               needs="the cpu-ift runs (docs/verdicts.md): HoC after GAD and without, seeds 1-5; or "
                     + _SCIREPEVAL.format("HoC")),
          "tables_1_2_intermediate_finetuning", "a-transfer-matrix-stilt",
          checks=("vd-ift-hoc", "ve-hoc-gain", f"t7-vs-t6-{_BASE}-HOC"), paper_scale=_PAPER_IFT_SCALE),
    Claim("ift-pubmedqa", "intermediate fine-tuning raises PubMedQA (paper: by about 1.5 points)",
          "§V-D, §V-E, Tables 6–7", "with IFT", "without", (f"T7|{_IFT}|PubMedQA", "T6|#1|PubMedQA"),
          Test("ift-gain", "PubMedQA", a="ift-BioASQ", b="base", profile=_IFT_PROFILE, delta=_IFT_DELTA,
               primary="accuracy × 100 on PubMedQA's 500 test questions, mean over 5 seeds",
               proxy="a proxy: BioASQ (as in the STILT study, ../shared/papers/stilt-biomedical.md: PubMedBERT "
                     "55.0 → 65.4) stands in for the paper's SciRepEval tasks, which are not in the data root",
               needs="the cpu-ift runs (docs/verdicts.md): PubMedQA after BioASQ and without, seeds 1-5; or "
                     + _SCIREPEVAL.format("PubMedQA")),
          "tables_1_2_intermediate_finetuning", "a-transfer-matrix-stilt",
          checks=("vd-ift-pubmedqa", "ve-pubmedqa-gain", f"t7-vs-t6-{_BASE}-PubmedQA"),
          paper_scale=_PAPER_IFT_SCALE),
    Claim("ift-domain", "general-domain intermediate data helps BIOSSES more than biomedical intermediate data",
          "§V-E, Table 2", "general domain", "biomedical", None,
          Test("ift-domain", "BIOSSES", a="ift-STS-B", b="ift-BioASQ", profile=_IFT_PROFILE, delta=_IFT_DELTA,
               primary="Pearson r × 100 on the official 20 BIOSSES test pairs, mean over 5 seeds",
               needs="the cpu-ift runs (docs/verdicts.md): BIOSSES after STS-B and after BioASQ, seeds 1-5"),
          "tables_1_2_intermediate_finetuning", "a-transfer-matrix-stilt",
          note="ours compares STS-B (general domain) with BioASQ (biomedical; the paper used ClinicalSTS, which "
               "the data root lacks): task format differs as well as domain", paper_scale=_PAPER_IFT_SCALE),
    Claim("vs-biolinkbert-ner", "MediBioDeBERTa-IFT beats BioLinkBERT on NER (group average)", "§I, §V-D, Table 7",
          _IFT, _LINK, _t7("NER Avg."), _BIOLINK, "table_7_blurb_comparison", "our-counterpart",
          tasks=_group("NER"),
          checks=("intro-ner-gain", f"t7-avg-{_IFT}-NER Avg.", f"t7-avg-{_LINK}-NER Avg.", "sources:sota-ner")),
    Claim("vs-biolinkbert-ss", "MediBioDeBERTa-IFT beats BioLinkBERT on sentence similarity (BIOSSES)",
          "§I, §V-D, Table 7", _IFT, _LINK, _t7("BIOSSES"), _BIOLINK, "table_7_blurb_comparison",
          "our-counterpart", checks=("intro-ss-gain", "sources:sota-ss"), tasks=("BIOSSES",)),
    Claim("vs-biolinkbert-qna", "MediBioDeBERTa-IFT beats BioLinkBERT on question answering (group average)",
          "§I, §V-D, Table 7", _IFT, _LINK, _t7("QnA Avg."), _BIOLINK, "table_7_blurb_comparison",
          "our-counterpart", tasks=_group("QA"), checks=("intro-qna-gain", "vd-qna-avg", f"t7-avg-{_IFT}-QnA Avg.",
                                     f"t7-avg-{_LINK}-QnA Avg.", "sources:sota-qna")),
    Claim("vs-biolinkbert-chemprot", "MediBioDeBERTa-IFT beats BioLinkBERT on ChemProt", "§I, §V-D, Table 7",
          _IFT, _LINK, _t7("ChemProt"), _BIOLINK, "table_7_blurb_comparison", "our-counterpart",
          checks=("intro-chemprot-gain", "vd-chemprot-gain", f"t7-vs-t6-{_IFT}-ChemProt", "sources:sota-chemprot"),
          note=printed_claims.CHEMPROT_NOTE, tasks=("ChemProt",)),
    Claim("medicine-fields", "the fields most often shared with medicine are biology, chemistry and psychology",
          "§III-B, Figures 2–3", "the weakest of the three", "the strongest other field", None,
          Test("fields", "Medicine", needs="the S2ORC metadata sample in the data root (the field chapter reads "
                                           f"{FIELD_METADATA})", delta=1.0,
               primary="100 × C(Medicine, j): the weakest of the three minus the strongest other field"),
          "figures_2_4_field_correlation", "the-related-field-groups",
          paper_scale="the S2ORC metadata (81.1M papers)"),
)


def get(claim_id: str) -> Claim:
    """A claim by id."""
    for claim in CLAIMS:
        if claim.id == claim_id:
            return claim
    raise KeyError(f"no claim {claim_id!r}; known: {', '.join(c.id for c in CLAIMS)}")


# --------------------------------------------------------------------------- the two rules


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


def verdict_words(verdict_name: str, delta: float, design: str) -> str:
    """The verdict as printed with what keeps the comparison from testing the claim (:func:`design_of`); the
    measured verdict is kept in it, so a row never hides what the runs showed."""
    measured = verdict_text(verdict_name, delta)
    if verdict_name == NOT_TESTABLE or not design:
        return measured
    if design == FLOOR:
        return f"not testable: floor (measured: {measured})"
    if design == PRECISIONS:
        return f"not testable: the arms differ in precision (measured: {measured})"
    if design == SCALE_MISMATCH:
        return f"not testable at this scale (measured: {measured})"
    if design == CEILING:
        return f"{measured}, at a ceiling"
    return f"{PROXY} {measured}"


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
    from scipy import stats

    t = float(stats.t.ppf(1 - alpha_of(confidence) / 2, 2 * (runs - 1)))
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


# --------------------------------------------------------------------------- the paper's evidence


@dataclass(frozen=True)
class PaperEvidence:
    """What the paper prints for a claim: A, B, their difference, Welch's test, failed checks."""

    a: float | None
    b: float | None
    diff: float | None
    p: float | None
    test: str
    problems: tuple[str, ...]  # the failed checks, named
    verdict: str
    details: tuple[str, ...] = ()  # what each failed check found
    welch_sd: float | None = None  # means only: the seed sd below which Welch (5 + 5) calls diff significant
    quoted_diff: float | None = None  # the difference the text quotes, where that is another statistic than ours


def _failed_checks(claim: Claim, checks: pd.DataFrame, rechecked: pd.DataFrame) -> list[tuple[str, str]]:
    out = []
    for ref in claim.checks:
        if ref.startswith("sources:"):
            row = rechecked.loc[ref.split(":", 1)[1]]
            if row["changed"]:  # the published figures turn the comparison around
                out.append((f"cross-source audit: {row['context']}", str(row["detail"])))
            continue
        row = checks.loc[ref]
        if not row["consistent"]:
            out.append((f"Appendix A: {row['where']}", str(row["explanation"])))
    return out


def paper_evidence(claim: Claim, checks: pd.DataFrame | None = None,
                   rechecked: pd.DataFrame | None = None) -> PaperEvidence:
    """The paper's evidence for ``claim`` from its printed numbers (see :func:`paper_verdict`)."""
    checks = audit.run_audit().set_index("id") if checks is None else checks
    rechecked = sources.recheck_claims().set_index("id") if rechecked is None else rechecked
    failed = _failed_checks(claim, checks, rechecked)
    problems, details = tuple(name for name, _ in failed), tuple(what for _, what in failed)
    if claim.printed is None:
        return PaperEvidence(None, None, None, None, "", problems, paper_verdict(None, claim.side, problems, None),
                             details)
    a, b = (printed_claims.resolve(ref) for ref in claim.printed)
    quoted = [printed_claims.resolve(ref) for ref in claim.quoted] if claim.quoted else []
    also = (f" in our statistic ({printed_claims.ref_label(claim.printed[0])}, and B's); the text quotes "
            f"{quoted[0]:g} vs {quoted[1]:g} ({' vs '.join(map(printed_claims.ref_label, claim.quoted))}), another "
            "statistic" if claim.quoted else "")
    diff, p, sd = a - b, None, welch_sd(a - b)
    test = (f"{a:.2f} vs {b:.2f}{also}: means without spread, no test possible; Welch's test on {WELCH_RUNS} + "
            f"{WELCH_RUNS} runs would call {diff:+.2f} significant with a seed sd below {sd:.2f}")
    if claim.spread:
        from scipy import stats

        sd_a, sd_b = (printed_claims.resolve(f"{ref} std") for ref in claim.printed)
        welch = stats.ttest_ind_from_stats(a, sd_a, _T4_RUNS, b, sd_b, _T4_RUNS, equal_var=False)
        p = float(welch.pvalue)
        test = (f"{a:.1f} ± {sd_a:.1f} vs {b:.1f} ± {sd_b:.1f}: Welch t = {welch.statistic:.2f}, p = {p:.3f} "
                f"({_T4_RUNS} runs each)")
        sd = None
    return PaperEvidence(a, b, diff, p, test, problems, paper_verdict(diff, claim.side, problems, p), details, sd,
                         quoted[0] - quoted[1] if quoted else None)


# --------------------------------------------------------------------------- our evidence


@dataclass(frozen=True)
class Beside:
    """A statistic shown beside the verdict's, read from other draws or other runs (never the verdict)."""

    label: str
    diff: float
    low: float
    high: float
    p: float
    runs: str


@dataclass(frozen=True)
class Evidence:
    """Our difference A − B in the declared statistic, its interval and p-value from one multi-bootstrap
    (:func:`medibio.results.significance.multi_bootstrap`), what was resampled and at which scale; or why
    there is none."""

    diff: float = math.nan
    low: float = math.nan
    high: float = math.nan
    p: float = math.nan
    runs: str = ""  # what was compared
    needs: str = ""  # what would test it, when nothing did
    resampled: str = ""  # what the draws resample
    resamples: int = 0
    scale: str = ""  # model and parameters, pretraining tokens, fine-tuning budget of our runs
    beside: tuple[Beside, ...] = ()
    anchor: str = ""  # the heading of the section that shows these runs, where it is not the claim's
    a_score: float = math.nan  # each arm's own score in the declared statistic
    b_score: float = math.nan
    constant: float = math.nan  # the constant answer's score on the same test units, and its interval
    constant_low: float = math.nan
    constant_high: float = math.nan
    draws: np.ndarray | None = dataclasses.field(default=None, repr=False, compare=False)  # the verdict's
    precisions: tuple[tuple[str, ...], ...] = ()  # each arm's fine-tuning precisions (empty: not known)

    @property
    def tested(self) -> bool:
        return not math.isnan(self.low)


def claim_seed(claim_id: str) -> int:
    """The random seed of a claim's draws: fixed by its id, never by its data, so that a rebuild whose
    predictions moved draws the same resamples (common random numbers)."""
    return zlib.crc32(claim_id.encode())


def _from(found: MultiComparison, runs: str, scale: str, beside: tuple[Beside, ...],
          sides: Sequence[Sequence[Runs]], constant: tuple[float, float, float] | None = None) -> Evidence:
    const = constant or (math.nan, math.nan, math.nan)
    return Evidence(found.diff, found.low, found.high, found.p_value, runs, "", found.resampled, found.resamples,
                    scale, beside, a_score=arm_score(sides[0]), b_score=arm_score(sides[1]), constant=const[0],
                    constant_low=const[1], constant_high=const[2], draws=found.draws)


def arm_score(side: Sequence[Runs]) -> float:
    """An arm's own score: the mean over datasets of the mean over its pretrained models of the mean over their
    fine-tuning seeds (the weighting of :func:`medibio.results.significance.multi_bootstrap`'s observed value)."""
    per_dataset = []
    for runs in side:
        scores = np.array(runs.scores)
        labels = np.array(runs.pretraining or [""] * len(scores))
        per_dataset.append(np.mean([scores[labels == g].mean() for g in sorted(set(labels))]))
    return float(np.mean(per_dataset))


def constant_interval(dataset: str, ids: frozenset[str], data_root: Path, resamples: int,
                      seed: int) -> tuple[float, float, float] | None:
    """The constant answer's score (:mod:`medibio.baselines.constant`: taken from the training split) on the test
    units ``ids``, and its interval over resampled units: what a model that learnt nothing scores. None where the
    data root lacks the split the answer is taken from."""
    from medibio.baselines.constant import constant_answer
    from medibio.tasks.predictions import load_gold

    try:
        answer = constant_answer(dataset, data_root)
    except DataMissingError:
        return None
    gold = load_gold(dataset, "test", data_root)
    kept = [(i, ref) for i, ref in zip(gold.ids, gold.references, strict=True) if i in ids]
    refs = [ref for _, ref in kept]
    answers = [[answer] * len(ref) for ref in refs] if registry.get(dataset).is_token_task else [answer] * len(refs)
    found = bootstrap_interval(unit_stats(dataset, refs, answers, [i for i, _ in kept]), resamples, seed)
    return found.score, found.low, found.high


def _beside(label: str, found: MultiComparison, runs: str) -> Beside:
    return Beside(label, found.diff, found.low, found.high, found.p_value, runs)


def _newest(records: Sequence[RunRecord]) -> dict[str, list[RunRecord]]:
    by_variant: dict[str, list[RunRecord]] = {}
    for rec in newest_configurations(records)[0]:
        if rec.ok and rec.predictions:
            by_variant.setdefault(rec.variant, []).append(rec)
    return by_variant


def _dev_mean(records: Sequence[RunRecord]) -> float:
    dev = [float(r.score_dev) for r in records if r.score_dev is not None]
    return float(np.mean(dev)) if dev else -math.inf


def _best(by_variant: dict[str, list[RunRecord]], intermediates: Sequence[str]) -> str | None:
    """The variant among ``ift-<task>`` for ``intermediates`` with the best mean dev score (never test)."""
    found = [f"{IFT_PREFIX}{t}" for t in intermediates if f"{IFT_PREFIX}{t}" in by_variant]
    return max(found, key=lambda v: _dev_mean(by_variant[v])) if found else None


def _describe(variant: str, records: Sequence[RunRecord]) -> str:
    """``base (3 seeds)``; runs made under ``--limit`` (judged only where the profile has no full runs of
    the variant) say so, since they are another experiment than the profile's."""
    limits = sorted({r.limited for r in records if r.limited is not None})
    limited = f", LIMITED to {'/'.join(map(str, limits))} examples per split" if limits else ""
    models = len({r.model_tag for r in records})
    if models > 1:  # runs of several pretrained models
        return f"{variant} ({len(records)} runs: {models} pretrained models × their seeds{limited})"
    return f"{variant} ({len(records)} seed{'s' if len(records) != 1 else ''}{limited})"


def _millions(n: float) -> str:
    return f"{n / 1e6:.1f}M"


def scale_of(records: Sequence[RunRecord], root: Path) -> str:
    """The scale of a set of runs from their records: the model with its parameters, its pretraining tokens
    (when a pretraining record of ours made it) and the fine-tuning budget, with the intermediate stage's."""
    if not records:
        return ""
    first = records[0]
    hp = first.hyperparameters or {}
    model = first.model or {}
    tokens = (first.details or {}).get("pretraining_tokens")
    models = len({(r.model or {}).get("hash") for r in records})
    if tokens is None:
        pretrained = "pretrained elsewhere (off the shelf)"
    elif tokens == 0:
        pretrained = "not pretrained (random init)"
    else:
        chain = continued_from((first.details or {}).get("pretraining_run", ""), root)
        origin, stages = chain or ("", ())
        seen = " + ".join(_millions(n) for n in (*stages, tokens))
        pretrained = (f"{origin} (pretrained elsewhere) continued on {seen} tokens here" if origin else
                      f"pretrained on {seen} tokens here" + ("" if chain else " (from what: its pretraining "
                                                              "record is not in this results folder)")) + (
            f", {models} pretraining seeds" if models > 1 else "")
    budget = (f"fine-tuned on {first.train_examples or '?'} training examples × {hp.get('effective_epochs', '?')} "
              f"epochs ({hp.get('optimizer_steps', '?')} steps), {len({r.seed for r in records})} seeds"
              + (" per pretrained model" if models > 1 else ""))
    chain = (first.details or {}).get("intermediate") or []
    if chain:
        stages = load_records(root, kind="ift-stage", profile=first.profile, variant="+".join(chain),
                              dataset=chain[-1])
        sizes = sorted({s.train_examples for s in stages if s.train_examples})
        size = "/".join(f"{n:,}" for n in sizes) or "?"
        budget += (f"; intermediate {'+'.join(chain)}: {size} examples × {hp.get('intermediate_epochs') or '?'} "
                   f"epoch, {'one stage per seed' if hp.get('intermediate_seed') is None else 'one stage for all'}")
    return (f"{model.get('tag', '?')} ({_millions(model.get('parameters') or 0)} parameters), {pretrained}; {budget}; "
            f"{_computed(records)}")


def _computed(records: Sequence[RunRecord]) -> str:
    """Where the runs computed: fine-tuning precision and CPU (or device), since two arms made on two machines
    differ by those as well as by their method."""
    def machine(env: dict[str, Any]) -> str:
        device = str(env.get("device", ""))
        return env.get("cpu") or (device if device and not device.startswith("cpu") else "a CPU its record does not name")

    where = sorted({(precision.label((r.hyperparameters or {}).get("mixed_precision_used")),
                     machine(r.environment or {})) for r in records})
    return "computed in " + " and ".join(f"{used} on {cpu}" for used, cpu in where)


def _compare(claim: Claim, by_variant: dict[str, list[RunRecord]], a: str, b: str, root: Path,
             settings: Settings, resamples: int,
             pretraining: Callable[[RunRecord], str] | None = None) -> tuple[MultiComparison, str, tuple[Runs, Runs]] | None:
    dataset = claim.test.dataset
    ra, rb = (runs_of(by_variant[v], root, v, dataset, settings.data_root, pretraining) for v in (a, b))
    if ra is None or rb is None:
        return None
    found = multi_bootstrap([(ra, rb)], {"primary": [ra.dataset]}, resamples, claim_seed(claim.id))["primary"]
    runs = f"{_describe(a, by_variant[a])} vs {_describe(b, by_variant[b])} on {dataset}, {found.units[0]} test units"
    return found, runs, (ra, rb)


def _cv_variant(arm: str, fold: int) -> str:
    """The variant name of ``arm``'s run on one cross-validation fold (``cv2``, ``ift-STS-B+cv2``), from the
    one place that names variants (imported here: the runner brings torch, which the claims need nowhere else)."""
    from medibio.finetune.runner import variant_name

    chain = arm[len(IFT_PREFIX):].split("+") if arm.startswith(IFT_PREFIX) else []
    return variant_name(FinetuneConfig(cv_fold=fold), chain)


def _cross_validated(claim: Claim, by_variant: dict[str, list[RunRecord]], root: Path, settings: Settings,
                     resamples: int, pretraining: Callable[[RunRecord], str] | None = None) -> tuple[Beside, ...]:
    """The declared arms scored by cross-validation over every example of the dataset (each seed's folds
    pooled), a labelled row beside the declared statistic; none when either arm lacks complete seeds."""
    test = claim.test
    sides = [cv_runs([r for fold in range(1, CV_FOLDS + 1) for r in by_variant.get(_cv_variant(arm, fold), [])],
                     root, arm, test.dataset, settings.data_root, pretraining) for arm in (test.a, test.b)]
    if sides[0] is None or sides[1] is None:
        return ()
    found = multi_bootstrap([(sides[0], sides[1])], {"cv": [test.dataset]}, resamples, claim_seed(claim.id))["cv"]
    label = f"{CV_FOLDS}-fold cross-validation over all {len(sides[0].ids)} examples (secondary, not the verdict's)"
    return (_beside(label, found, f"{sides[0].system} vs {sides[1].system} on {test.dataset}"),)


def _dev_selected(claim: Claim, settings: Settings, profile: str, model: str, resamples: int) -> tuple[Beside, ...]:
    """The judged profile's intermediate picked by dev score (a labelled row beside the declared one)."""
    dataset = claim.test.dataset
    by_variant = _newest(load_records(settings.results_root, profile=profile, model=model, dataset=dataset))
    intermediates = [v[len(IFT_PREFIX):] for v in by_variant if v.startswith(IFT_PREFIX) and "+cv" not in v]
    general = [t for t in intermediates if t in GENERAL_DOMAIN]
    if claim.test.kind == "ift-gain":
        a, b = _best(by_variant, intermediates), "base" if "base" in by_variant else None
    else:
        a, b = _best(by_variant, general), _best(by_variant, [t for t in intermediates if t not in general])
    found = _compare(claim, by_variant, a, b, settings.results_root, settings, resamples) if a and b else None
    if found is None:
        return ()
    label = f"dev-selected intermediate ({profile} profile: the best mean dev score, not declared)"
    return (_beside(label, found[0], f"{profile}/{model}: {found[1]}"),)


def _pretrained_model(record: RunRecord) -> str:
    """A run's pretrained model, the level above its fine-tuning seed where an arm has several."""
    return str((record.model or {}).get("hash", ""))


def _ift_runs(root: Path, profile: str, tags: Sequence[str], dataset: str) -> dict[str, list[RunRecord]]:
    """The newest runs of ``profile`` on ``dataset`` by variant, pooled over the models ``tags``."""
    by_variant: dict[str, list[RunRecord]] = {}
    for tag in tags:
        for variant, records in _newest(load_records(root, profile=profile, model=tag, dataset=dataset)).items():
            by_variant.setdefault(variant, []).extend(records)
    return by_variant


def _ift_also(claim: Claim, settings: Settings, roots: Sequence[Path], resamples: int) -> tuple[Beside, ...]:
    """The declared arms on each ``also`` model's runs (the first root holding them), beside the verdict."""
    test, rows = claim.test, []
    for tag, why in test.also:
        for root in roots:
            by_variant = _ift_runs(root, test.profile, (tag,), test.dataset)
            found = _compare(claim, by_variant, test.a, test.b, root, settings, resamples) \
                if test.a in by_variant and test.b in by_variant else None
            if found is not None:
                rows.append(_beside(f"{tag}: {why}", found[0], f"{test.profile}/{tag}: {found[1]}"))
                rows.extend(dataclasses.replace(cv, label=f"{tag}, {cv.label}")
                            for cv in _cross_validated(claim, by_variant, root, settings, resamples))
                break
    return tuple(rows)


def _ift_evidence(claim: Claim, settings: Settings, profile: str, resamples: int, model: str | None,
                  recorded: Path | None) -> Evidence:
    """The declared arms on the declared profile's runs of the declared models (the build's, else the recorded
    ones); where neither has them, the declared arms on the judged profile's own runs, at that profile's
    (smaller) scale, unless the claim names its models: those are its evidence, and another model is not.
    Where the claim names several pretrained models, their runs are one arm's, the models resampled above the
    fine-tuning seeds, and the arm waits until every model has runs of both arms."""
    test = claim.test
    judged_model = model_tag(model or profiles.get(profile).model)
    beside = _dev_selected(claim, settings, profile, judged_model, resamples)
    roots = [settings.results_root, *([recorded] if recorded not in (None, settings.results_root) else [])]
    places: list[tuple[str, tuple[str, ...], Path]] = [(profile, (judged_model,), settings.results_root)]
    if test.models:
        places = [(test.profile or profile, test.models, root) for root in roots]
    elif test.profile and test.profile != profile:  # the build's runs of the declared profile, else the recorded
        declared = (model_tag(profiles.get(test.profile).model),)
        places[:0] = [(test.profile, declared, root) for root in roots]
    beside += _ift_also(claim, settings, roots, resamples)
    for runs_profile, tags, root in places:
        by_variant = _ift_runs(root, runs_profile, tags, test.dataset)
        if test.a not in by_variant or test.b not in by_variant:
            continue
        several = len(tags) > 1
        pretraining = _pretrained_model if several else None
        have = [{r.model_tag for r in by_variant[arm]} for arm in (test.a, test.b)]
        if several and min(map(len, have)) < len(tags):  # a model's runs still to come: not the declared arms
            so_far = "; ".join(f"{arm}: {', '.join(sorted(h))}" for arm, h in zip((test.a, test.b), have, strict=True))
            found = _compare(claim, by_variant, test.a, test.b, root, settings, resamples, pretraining)
            partial = (_beside(f"so far ({so_far}; not the declared models)", found[0], found[1]),) if found else ()
            return Evidence(needs=f"runs of every declared model ({', '.join(tags)}) in both arms (so far: "
                                  f"{so_far}); {test.needs}", beside=beside + partial)
        found = _compare(claim, by_variant, test.a, test.b, root, settings, resamples, pretraining)
        if found is not None:
            where = "" if root == settings.results_root else " (recorded in reference/)"
            cv = _cross_validated(claim, by_variant, root, settings, resamples, pretraining)
            ra, rb = found[2]
            constant = constant_interval(ra.dataset, ra.ids, settings.data_root, resamples,
                                         claim_seed(claim.id))
            return _from(found[0], f"{runs_profile}/{'+'.join(tags)}{where}: {found[1]}",
                         scale_of(by_variant[test.a], root), beside + cv, ([ra], [rb]), constant)
    return Evidence(needs=test.needs, beside=beside)


def _table5_places(claim: Claim, settings: Settings, profile: str,
                   recorded: Path | None) -> list[tuple[str, str, str, Path]]:
    """Where a Table 5 claim's runs may be, in order: the judged profile's scaled-down experiments
    (``pretrain-table5-N``, the gpu and paper profiles), then the CPU study's arms (``study-N`` on
    ``cpu-study``, :mod:`medibio.pretrain.study`) in the build's results root, then recorded in ``reference/``."""
    a, b = (c.lstrip("#") for c in (claim.test.a, claim.test.b))
    places = [(profile, TABLE5_VARIANT.format(a), TABLE5_VARIANT.format(b), settings.results_root)]
    roots = [settings.results_root, *([recorded] if recorded not in (None, settings.results_root) else [])]
    return places + [(_STUDY_PROFILE, f"study-{a}", f"study-{b}", root) for root in roots]


def _table5_evidence(claim: Claim, settings: Settings, profile: str, resamples: int,
                     recorded: Path | None) -> Evidence:
    """Configurations ``a`` vs ``b`` on the first place that has runs of both (:func:`_table5_places`):
    pretraining seeds, fine-tuning seeds and test units all resampled (a run's pretraining is its model)."""
    for runs_profile, va, vb, root in _table5_places(claim, settings, profile, recorded):
        sides = [newest_configurations(load_records(root, profile=runs_profile, variant=v))[0] for v in (va, vb)]
        pairs = []
        for dataset in registry.names():
            ra, rb = (runs_of(recs, root, v, dataset, settings.data_root,
                              pretraining=lambda r: str((r.model or {}).get("hash", "")))
                      for recs, v in zip(sides, (va, vb), strict=True))
            if ra is not None and rb is not None:
                pairs.append((ra, rb))
        if pairs:
            break
    else:
        return Evidence(needs=claim.test.needs)
    found = _table5_found(claim, pairs, sides, (runs_profile, va, vb), root, settings, resamples)
    return dataclasses.replace(found, anchor=STUDY_ANCHOR) if runs_profile == _STUDY_PROFILE else found


def _table5_found(claim: Claim, pairs: list[tuple[Any, Any]], sides: list[list[RunRecord]], place: tuple[str, str, str],
                  root: Path, settings: Settings, resamples: int) -> Evidence:
    """The evidence of a Table 5 claim from the runs of both configurations found at one place."""
    runs_profile, va, vb = place
    names = [x.dataset for x, _ in pairs]
    large = [d for d in names if d in T5_SETS]
    per_set = {f"{_PER_SET}{d}": [d] for d in large}  # every statistic reads the same draws: the verdict's stay
    found = multi_bootstrap(pairs, {"primary": large, "plain": names, **per_set}, resamples, claim_seed(claim.id))
    beside = (_beside(f"plain mean over {len(names)} BLURB datasets", found["plain"], ", ".join(names)),)
    needs = (f"runs of both configurations on every one of the large BLURB sets ({', '.join(T5_SETS)}): the "
             f"declared statistic; {claim.test.needs}")
    if "primary" not in found:
        return Evidence(needs=needs, beside=beside)
    primary = found["primary"]
    if len(large) < len(T5_SETS):  # a mean over some of them is not the declared statistic (a queue under way)
        return Evidence(needs=f"{needs} (so far: {', '.join(large)})",
                        beside=(_beside(f"so far, mean over {len(large)} of the {len(T5_SETS)} large sets",
                                        primary, ", ".join(large)), *beside))
    where = "" if root == settings.results_root else " (recorded in reference/)"
    runs = (f"{runs_profile}{where}: {va} vs {vb}, mean over {len(primary.datasets)} large BLURB sets "
            f"({', '.join(primary.datasets)})")
    seeds = {v: sorted({label for runs_ in side for label in runs_.pretraining})
             for v, side in ((va, [x for x, _ in pairs]), (vb, [y for _, y in pairs]))}
    if runs_profile == _STUDY_PROFILE and min(map(len, seeds.values())) < len(study.SEEDS):
        so_far = "; ".join(f"{v}: {len(s)} pretraining seed(s)" for v, s in seeds.items())
        return Evidence(needs=f"the study's {len(study.SEEDS)} pretraining seeds of each arm (recorded so far: "
                              f"{so_far}); {claim.test.needs}",
                        beside=(_beside(f"so far ({so_far}; their variance not resampled), mean over the large "
                                        "sets", primary, ", ".join(primary.datasets)), *beside))
    scale = "; against ".join(f"{arm}: {scale_of(side, root)}" for arm, side in zip((claim.test.a, claim.test.b),
                                                                                   sides, strict=True))
    chosen = [pair for pair in pairs if pair[0].dataset in primary.datasets]
    sets = tuple(_beside(f"{d} alone (the same draws; not the verdict's)", found[f"{_PER_SET}{d}"], d)
                 for d in primary.datasets)
    welch = _welch_over_models(chosen, (va, vb))
    found_ = _from(primary, runs, scale, (*beside, *sets, *welch), ([x for x, _ in chosen], [y for _, y in chosen]))
    return dataclasses.replace(found_, precisions=tuple(_precisions(side) for side in sides))


def _precisions(records: Sequence[RunRecord]) -> tuple[str, ...]:
    """The precisions an arm's fine-tuning runs computed in (``bf16``, ``fp32``), as their records say."""
    return tuple(sorted({precision.label((r.hyperparameters or {}).get("mixed_precision_used")) for r in records}))


def _welch_over_models(pairs: Sequence[tuple[Runs, Runs]], names: tuple[str, str]) -> tuple[Beside, ...]:
    """Welch's t-interval of A − B over the pretrained models of each arm, each model scored by its mean over
    the datasets of its fine-tuning seeds' mean: with two pretrained models per arm the multi-bootstrap cannot
    see how far a third would land, and this interval (one degree of freedom or two) shows what that costs.
    Empty when either arm has fewer than two pretrained models."""
    from scipy import stats

    models = []
    for i in (0, 1):
        by_model: dict[str, list[float]] = {}
        for pair in pairs:
            scores = np.array(pair[i].scores)
            labels = np.array(pair[i].pretraining or [""] * len(scores))
            for label in sorted(set(labels)):
                by_model.setdefault(str(label), []).append(float(scores[labels == label].mean()))
        models.append([float(np.mean(v)) for v in by_model.values()])
    if min(len(m) for m in models) < 2:
        return ()
    welch = stats.ttest_ind(models[0], models[1], equal_var=False)
    interval = welch.confidence_interval(CONFIDENCE)
    label = (f"Welch's t over the pretrained models ({len(models[0])} + {len(models[1])}, each its mean over the "
             f"{len(pairs)} sets; not the verdict's)")
    runs = "; ".join(f"{name}: {', '.join(f'{x:.2f}' for x in m)}" for name, m in zip(names, models, strict=True))
    return (Beside(label, float(np.mean(models[0]) - np.mean(models[1])), float(interval.low), float(interval.high),
                   float(welch.pvalue), runs),)


def field_margin(masks: dict[int, int], fields: Sequence[str], field: str, claimed: Sequence[str],
                 resamples: int = VERDICT_RESAMPLES, seed: int = 0,
                 confidence: float = CONFIDENCE) -> tuple[float, float, float, float, str]:
    """How far the claimed neighbours of ``field`` lead the rest: min C(field, claimed) − max C(field, other),
    in points of C × 100, with a bootstrap over papers (interval and p from the same draws, as for every
    claim). ``masks`` maps a bit mask of fields (bit i: ``fields[i]``) to its number of papers, as
    :class:`medibio.fields.cooccurrence.FieldCounts` holds it. Returns (margin, low, high, p, the strongest
    other field)."""
    keys = np.array(sorted(masks), dtype=np.int64)
    weights = np.array([masks[k] for k in keys], dtype=float)
    bits = (keys[:, None] >> np.arange(len(fields))) & 1
    i = fields.index(field)
    inside = [fields.index(f) for f in claimed]
    outside = [j for j in range(len(fields)) if j != i and j not in inside]

    def margins(w: np.ndarray) -> np.ndarray:  # w: (resamples, masks) paper counts
        carry = w * bits[:, i]  # papers carrying `field`
        n_ij = carry @ bits  # (resamples, fields)
        c = 100 * n_ij / np.maximum(carry.sum(axis=1, keepdims=True), 1)
        return c[:, inside].min(axis=1) - c[:, outside].max(axis=1)

    rng = np.random.default_rng(seed)
    total = int(weights.sum())
    observed = float(margins(weights[None, :])[0])
    draws = rng.multinomial(total, weights / total, size=resamples).astype(float)
    dist = margins(draws)
    low, high = order_interval(dist, confidence)
    c_obs = (weights * bits[:, i]) @ bits
    rival = fields[max(outside, key=lambda j: c_obs[j])]
    return observed, low, high, bootstrap_p(dist), rival


def _fields_evidence(claim: Claim, settings: Settings, resamples: int) -> Evidence:
    path = settings.data_root / FIELD_METADATA
    if not path.is_file():
        return Evidence(needs=claim.test.needs)
    from medibio.fields.cooccurrence import count_fields
    from medibio.fields.fos import FIELDS

    counts = count_fields(path)
    margin, low, high, p, rival = field_margin(counts.masks, list(FIELDS), claim.test.dataset,
                                               MEDICINE_NEIGHBOURS, resamples, claim_seed(claim.id))
    runs = (f"{FIELD_METADATA.name}: {counts.papers:,} papers; 100 × C(Medicine, j), weakest of "
            f"{', '.join(MEDICINE_NEIGHBOURS)} minus the strongest other field ({rival}); bootstrap over papers")
    return Evidence(margin, low, high, p, runs, "", "papers", resamples, f"a sample of {counts.papers:,} papers")


def our_evidence(claim: Claim, settings: Settings, profile: str, resamples: int = VERDICT_RESAMPLES,
                 model: str | None = None, recorded: Path | None = REFERENCE_ROOT) -> Evidence:
    """Our evidence for ``claim`` on the runs of ``model`` (None: the profile's) on ``profile`` under
    ``settings.results_root``; a claim declared on a profile of its own reads that profile's runs there, or
    under ``recorded`` when the results root has none."""
    kind = claim.test.kind
    if kind == "none":
        return Evidence(needs=claim.test.needs)
    if kind == "fields":
        return _fields_evidence(claim, settings, resamples)
    if not settings.data_root.is_dir():
        return Evidence(needs=f"a data root (the gold test labels), then: {claim.test.needs}")
    try:
        if kind == "table5":
            return _table5_evidence(claim, settings, profile, resamples, recorded)
        return _ift_evidence(claim, settings, profile, resamples, model, recorded)
    except DataMissingError as exc:  # runs without their gold labels here: this claim waits, the others stand
        return Evidence(needs=f"{exc}; then: {claim.test.needs}")


# --------------------------------------------------------------------------- the table


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


def claim_tasks(claim: Claim) -> tuple[str, ...]:
    """The BLURB sets whose mean the claim's printed numbers are."""
    if claim.tasks:
        return claim.tasks
    if claim.test.kind == "table5":
        return T5_SETS
    return (claim.test.dataset,) if claim.test.kind.startswith(IFT_PREFIX) else ()


def _none(x: float) -> float | None:
    return None if math.isnan(x) else x


@dataclass
class Row:
    """One claim with both kinds of evidence and both verdicts, its declared statistic, δ and scales.

    ``verdict`` is the rule's outcome on our interval; ``design`` what keeps the comparison from testing the
    claim (:data:`DESIGNS`) and ``design_detail`` the numbers or declaration behind it; ``verdict_words`` the two
    together as printed. ``paper_effect`` is the paper's A − B in our statistic (None: nothing printed);
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
    def paper_effect_words(self) -> str:
        """Whether our runs exclude the paper's own effect, in words ("" when either is missing)."""
        if self.paper_effect is None or self.paper_effect_excluded is None:
            return ""
        end = "upper" if self.paper_effect >= 0 else "lower"
        said = "is excluded at this scale" if self.paper_effect_excluded else "is not excluded"
        return f"the paper's {self.paper_effect:+.2f} {said} ({end} end {self.paper_effect_end:+.2f})"

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
    without spread get the seed spreads of our systems on their tasks, from both roots."""
    checks = audit.run_audit().set_index("id")
    rechecked = sources.recheck_claims().set_index("id")
    roots = [settings.results_root, *([recorded] if recorded not in (None, settings.results_root) else [])]
    out: list[Row] = []
    newest: list[list[RunRecord]] = []  # each root's records, read once when a claim first needs them
    with evidence_cache.stored_in(settings.cache_root):  # unit scores and draws computed once per input
        for claim in claims:
            paper = paper_evidence(claim, checks, rechecked)
            tasks = claim_tasks(claim) if paper.welch_sd is not None else ()
            if tasks and not newest:
                newest = [_newest_records(root) for root in roots]
            spreads = seed_spreads(tasks, newest) if tasks else ()
            out.append(judge(claim, our_evidence(claim, settings, profile, resamples, model, recorded), paper,
                             spreads))
    return out


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
            "design": r.design, "design detail": r.design_detail, "verdict in words": r.verdict_words,
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
    """How many claims got each verdict (ours and the paper's) and each design label, every value of the
    three vocabularies present."""
    ours = {v: sum(r.verdict == v for r in found) for v in VERDICTS}
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
    theirs = rows(dataclasses.replace(settings, results_root=Path(recorded)), profile, resamples=resamples,
                  recorded=recorded)
    out = []
    for a, b in zip(ours, theirs, strict=True):
        out.append({"this build": a.verdict_text, "this build A − B [95%]": _estimate(a.ours),
                    "reference/": b.verdict_text, "reference/ A − B [95%]": _estimate(b.ours),
                    "same verdict": a.verdict == b.verdict,
                    "crossed": "" if a.verdict == b.verdict else _crossed(b.ours, a.ours, a.delta)})
    return pd.DataFrame(out, index=pd.Index([r.id for r in ours], name="id"))


def _estimate(ours: Evidence) -> str:
    return f"{ours.diff:+.2f} {_interval(ours.low, ours.high)}" if ours.tested else ""
