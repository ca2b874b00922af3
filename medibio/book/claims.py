"""The paper's scientific claims as data: what each says, where the paper makes it, the printed cells it rests
on (references :func:`medibio.paper.claims.resolve` reads), the Appendix A / cross-source checks of those cells,
how our runs test it (its :class:`Test`, declared before any run) and the book section that holds the evidence.

One claim is one :class:`Claim` (a numeric statement of the paper's text, which the audit recomputes, is a
:class:`medibio.paper.claims.Statement`). The rules that judge a claim are :mod:`medibio.book.rules`, the
evidence they read is gathered by :mod:`medibio.book.evidence`, and the verdicts' tables and figure are
:mod:`medibio.book.verdicts`. A Table 5 claim names the paper's configurations (``#3``); the experiment
(:mod:`medibio.experiments.table5`) says which runs stand for them at each scale.

The claims sit in the book layer because they span :mod:`medibio.paper` and :mod:`medibio.fields`, two
layers that may not import each other, and name the chapters that show their evidence.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from medibio.experiments.ift import RECORDED
from medibio.experiments.table5 import STUDY
from medibio.paper import claims as printed_claims
from medibio.tasks import registry

GENERAL_DOMAIN = ("STS-B", "SICK-R", "SICK-E")  # intermediate tasks without biomedical text
MEDICINE_NEIGHBOURS = ("Biology", "Chemistry", "Psychology")
FIELD_METADATA = Path("s2orc") / "v2020-07-05_metadata_sample.jsonl"  # the field chapter's default sample
STUDY_ANCHOR = "the-table-5-study-on-this-cpu-recorded"  # the Tables 5-6 chapter's section on the CPU study
# the Tables 1-2 chapter's opening section, which shows the IFT claims on the cpu-ift runs (their evidence)
IFT_ANCHOR = "the-intermediate-fine-tuning-claims-on-the-cpu-ift-runs"
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
    each turns the verdict's words (:func:`medibio.book.rules.verdict_words`), never its interval; they were declared after the
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
_IFT_PROFILE = RECORDED.profile or ""  # MiniLM, 5 seeds, a full-data intermediate stage per seed
_ARM = RECORDED.arm  # an IFT arm's variant: _ARM(["STS-B"]) after STS-B, _ARM() directly
# The encoders of the IFT mechanism's test: the CPU study's #3 (scratch, MLM on abstracts), both pretraining seeds,
# made again in fp32 for it (docs/verdicts.md); #2 inherits MiniLM's similarity training, so it is not one
_STUDY_ENCODERS = STUDY.models(STUDY.arm_for("#3"))
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
          Test("ift-gain", "BIOSSES", a=_ARM(["STS-B"]), b=_ARM(), profile=_IFT_PROFILE, delta=_IFT_DELTA,
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
          "tables_1_2_intermediate_finetuning", IFT_ANCHOR,
          checks=("vd-ift-biosses", f"t7-vs-t6-{_BASE}-BIOSSES"), paper_scale=_PAPER_IFT_SCALE),
    Claim("ift-hoc", "intermediate fine-tuning raises HoC (paper: by about 10 points)", "§V-D, §V-E, Tables 6–7",
          "with IFT", "without", (f"T7|{_IFT}|HoC", "T6|#1|HoC"),
          Test("ift-gain", "HoC", a=_ARM(["GAD"]), b=_ARM(), profile=_IFT_PROFILE, delta=_IFT_DELTA,
               primary="micro-F1 × 100 on HoC's official test abstracts, mean over 5 seeds",
               proxy="a proxy: GAD (a BLURB sentence classification set, chosen over ChemProt before any run for "
                     "its cost: 4.3K training sentences against 18K) stands in for the paper's SciRepEval tasks, "
                     "which are not in the data root",
               needs="the cpu-ift runs (docs/verdicts.md): HoC after GAD and without, seeds 1-5; or "
                     + _SCIREPEVAL.format("HoC")),
          "tables_1_2_intermediate_finetuning", IFT_ANCHOR,
          checks=("vd-ift-hoc", "ve-hoc-gain", f"t7-vs-t6-{_BASE}-HOC"), paper_scale=_PAPER_IFT_SCALE),
    Claim("ift-pubmedqa", "intermediate fine-tuning raises PubMedQA (paper: by about 1.5 points)",
          "§V-D, §V-E, Tables 6–7", "with IFT", "without", (f"T7|{_IFT}|PubMedQA", "T6|#1|PubMedQA"),
          Test("ift-gain", "PubMedQA", a=_ARM(["BioASQ"]), b=_ARM(), profile=_IFT_PROFILE, delta=_IFT_DELTA,
               primary="accuracy × 100 on PubMedQA's 500 test questions, mean over 5 seeds",
               proxy="a proxy: BioASQ (as in the STILT study, ../shared/papers/stilt-biomedical.md: PubMedBERT "
                     "55.0 → 65.4) stands in for the paper's SciRepEval tasks, which are not in the data root",
               needs="the cpu-ift runs (docs/verdicts.md): PubMedQA after BioASQ and without, seeds 1-5; or "
                     + _SCIREPEVAL.format("PubMedQA")),
          "tables_1_2_intermediate_finetuning", IFT_ANCHOR,
          checks=("vd-ift-pubmedqa", "ve-pubmedqa-gain", f"t7-vs-t6-{_BASE}-PubmedQA"),
          paper_scale=_PAPER_IFT_SCALE),
    Claim("ift-domain", "general-domain intermediate data helps BIOSSES more than biomedical intermediate data",
          "§V-E, Table 2", "general domain", "biomedical", None,
          Test("ift-domain", "BIOSSES", a=_ARM(["STS-B"]), b=_ARM(["BioASQ"]), profile=_IFT_PROFILE, delta=_IFT_DELTA,
               primary="Pearson r × 100 on the official 20 BIOSSES test pairs, mean over 5 seeds",
               needs="the cpu-ift runs (docs/verdicts.md): BIOSSES after STS-B and after BioASQ, seeds 1-5"),
          "tables_1_2_intermediate_finetuning", IFT_ANCHOR,
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


def claim_tasks(claim: Claim) -> tuple[str, ...]:
    """The BLURB sets whose mean the claim's printed numbers are."""
    if claim.tasks:
        return claim.tasks
    if claim.test.kind == "table5":
        return T5_SETS
    return (claim.test.dataset,) if claim.test.kind in ("ift-gain", "ift-domain") else ()

