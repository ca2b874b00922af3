"""Every numeric statement in the paper's prose, as data, with the recipe to recompute it.

A claim quotes only the *numbers* as printed (``numbers``); the context is paraphrased. The recipe is a
``kind`` plus ``operands``, each operand a reference that :func:`resolve` turns into a number:

* ``"T7|MediBioDeBERTa-IFT|NER Avg."`` - a cell of Table n (column header | row label); see
  :func:`medibio.paper.tables.cell` for how rows/columns are named per table;
* ``"MACRO|T6|#1"`` / ``"PLAIN|T6|#1"`` - the official BLURB score / the plain 13-dataset mean of one
  column of Table 6 or 7 (via :mod:`medibio.tasks.scoring`);
* ``"LARGE|T6|#1"`` - the mean of one column over the seven BLURB sets with large test sets
  (:data:`medibio.tasks.registry.LARGE_SETS`), the statistic our Table 5 claims are tested by;
* ``"REG|groups"`` / ``"REG|datasets"`` - how many groups/datasets BLURB has (registry);
* ``"COUNT|T2|PubMedQA"`` - how many IFT datasets Table 2 lists for a target task;
* a bare number (``"4096"``) - a literal taken from the text itself.

Kinds: ``gain`` (new, old: computed both as points and as relative percent, since the paper writes "%"
for both), ``value`` (the operand itself), ``product``, ``share`` (part/whole in percent), ``greater``
(an ordinal statement "a beats b"), ``comparable`` (|a-b| within :data:`COMPARABLE_POINTS`) and
``blurb_score`` (macro over groups of the listed 13 cells). ``alternative`` optionally names a second
set of operands recomputed the same way (e.g. Table 6 instead of Table 7) and ``alternative_reading``
says what it means. Claims that cannot be recomputed from anything printed are kept with
``checkable=False`` and the reason in ``note``, so the list stays complete.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from medibio.paper import tables
from medibio.tasks import registry, scoring

COMPARABLE_POINTS = 1.0  # "comparable performance": we read it as within one point

KINDS = ("gain", "value", "product", "share", "greater", "comparable", "blurb_score")


@dataclass(frozen=True)
class Statement:
    """One numeric statement of the paper's text (a scientific claim judged on our runs is
    :class:`medibio.book.claims.Claim`)."""

    id: str
    location: str  # section / paragraph
    numbers: str  # the numbers exactly as printed (no surrounding sentence)
    context: str  # what is claimed, paraphrased
    kind: str
    operands: tuple[str, ...] = ()
    reported: float | None = None  # None for ordinal statements
    decimals: int = 2  # printed decimals of `reported`: sets the tolerance
    alternative: tuple[str, ...] = ()
    alternative_reading: str = ""
    checkable: bool = True
    note: str = ""  # extra explanation for the audit (or why it cannot be checked)

    @property
    def tolerance(self) -> float:
        """One unit of the last printed decimal (0.01 for 82.61, 0.1 for 92.7)."""
        if self.kind == "comparable":
            return COMPARABLE_POINTS
        return 10.0 ** -self.decimals

    @property
    def formula(self) -> str:
        """Human-readable recipe, e.g. ``T7[MediBioDeBERTa-IFT, NER Avg.] - T7[BioLinkBERT (base), ...]``."""
        refs = [ref_label(r) for r in self.operands]
        if self.kind == "gain":
            return f"{refs[0]} - {refs[1]} (points) or ({refs[0]} - {refs[1]}) / {refs[1]} x 100 (relative %)"
        if self.kind == "product":
            return " x ".join(refs)
        if self.kind == "share":
            return f"{refs[0]} / {refs[1]} x 100"
        if self.kind == "greater":
            return f"{refs[0]} > {refs[1]}"
        if self.kind == "comparable":
            return f"|{refs[0]} - {refs[1]}| <= {COMPARABLE_POINTS:g}"
        if self.kind == "blurb_score":
            return "macro average over the 6 BLURB groups of " + ", ".join(refs)
        return refs[0] if refs else ""


def ref_label(ref: str) -> str:
    """``"T7|BioLinkBERT (base)|HOC"`` -> ``"T7[BioLinkBERT (base), HOC]"`` (literals unchanged)."""
    parts = ref.split("|")
    if len(parts) == 1:
        return ref
    if parts[0] in ("MACRO", "PLAIN"):
        what = "BLURB score" if parts[0] == "MACRO" else "plain mean"
        return f"{what} of {parts[1]}[{parts[2]}]"
    if parts[0] == "LARGE":
        return f"mean of {parts[1]}[{parts[2]}] over the seven large BLURB sets"
    if parts[0] == "REG":
        return f"number of BLURB {parts[1]} (registry)"
    if parts[0] == "COUNT":
        return f"number of {parts[1]} rows for {parts[2]}"
    return f"{parts[0]}[{', '.join(parts[1:])}]"


def resolve(ref: str) -> float:
    """The number an operand reference stands for (see the module docstring)."""
    parts = ref.split("|")
    if len(parts) == 1:
        return float(ref)
    head = parts[0]
    if head == "REG":
        return float(len(registry.GROUP_ORDER) if parts[1] == "groups" else len(registry.names()))
    if head == "COUNT":
        frame = tables.load_table(int(parts[1][1:]))
        return float((frame["task"] == registry.get(parts[2], "blurb").name).sum())
    if head in ("MACRO", "PLAIN"):
        scores = tables.column_scores(int(parts[1][1:]), parts[2])
        agg = scoring.blurb_score(scores) if head == "MACRO" else scoring.paper_average(scores)
        return math.nan if agg.value is None or not agg.complete else agg.value
    if head == "LARGE":
        return sum(tables.cell(int(parts[1][1:]), parts[2], name) for name in registry.LARGE_SETS) / len(
            registry.LARGE_SETS)
    if head.startswith("T") and len(parts) == 3:
        return tables.cell(int(head[1:]), parts[1], parts[2])
    raise KeyError(f"cannot resolve operand {ref!r}")


def _ift_column(chemprot: str = "T6|#1|ChemProt") -> tuple[str, ...]:
    """The 13 cells of Table 7's MediBioDeBERTa-IFT column, ChemProt taken from ``chemprot``."""
    refs = []
    for name in registry.names():
        refs.append(chemprot if name == "ChemProt" else f"T7|MediBioDeBERTa-IFT|{name}")
    return tuple(refs)


IFT = "MediBioDeBERTa-IFT"
BASE = "MediBioDeBERTa"
LINK = "BioLinkBERT (base)"
CHEMPROT_NOTE = (
    "Table 7 prints 93.04 for ChemProt, the BC5-chem value of the same column; Table 6 #1 (the same model, "
    "not IFT-tuned on ChemProt) gives 77.80"
)

STATEMENTS: tuple[Statement, ...] = (
    # Section I, list of contributions
    Statement("intro-ner-gain", "§I, contributions (3rd item)", "0.28%",
          "the IFT model beats the best same-size model on the NER group average", "gain",
          (f"T7|{IFT}|NER Avg.", f"T7|{LINK}|NER Avg."), 0.28),
    Statement("intro-ss-gain", "§I, contributions (3rd item)", "0.2%",
          "the IFT model beats the best same-size model on sentence similarity", "gain",
          (f"T7|{IFT}|BIOSSES", f"T7|{LINK}|BIOSSES"), 0.2, decimals=1),
    Statement("intro-qna-gain", "§I, contributions (3rd item)", "1.29%",
          "the IFT model beats the best same-size model on the QA group average", "gain",
          (f"T7|{IFT}|QnA Avg.", f"T7|{LINK}|QnA Avg."), 1.29),
    Statement("intro-chemprot-gain", "§I, contributions (3rd item)", "14.96%",
          "the IFT model beats the best same-size model on ChemProt", "gain",
          (f"T7|{IFT}|ChemProt", f"T7|{LINK}|ChemProt"), 14.96,
          alternative=("T6|#1|ChemProt", f"T7|{LINK}|ChemProt"),
          alternative_reading="with ChemProt of Table 6 #1 (77.80)", note=CHEMPROT_NOTE),
    Statement("intro-blurb-groups", "§I, contributions (2nd item)", "6 categories",
          "BLURB is organised in six task groups", "value", ("REG|groups",), 6, decimals=0),
    Statement("intro-blurb-datasets", "§I, contributions (2nd item)", "13 tasks",
          "BLURB has thirteen datasets", "value", ("REG|datasets",), 13, decimals=0),
    # Section III-B
    Statement("iiib-corpus-size", "§III-B, last paragraph; repeated in §V", "52 GB; 52GB",
          "the deduplicated medicine-related S2ORC subset used for continual learning; both mentions agree",
          "value", ("52",), 52, decimals=0,
          note="a text-to-text check: no table holds corpus sizes"),
    Statement("iiib-s2orc", "§III-B, 2nd paragraph", "81.1M; 19",
          "size of S2ORC and its number of fields of study", "value", checkable=False,
          note="properties of S2ORC itself; nothing printed in the paper recomputes them"),
    Statement("iiia-table5-scideberta", "§III-A, last paragraphs", "Table 5",
          "Table 5 is said to show that the first SciDeBERTa is a poor base model", "value", checkable=False,
          note="Table 5 has no configuration built on SciDeBERTa (v1): no number backs the statement"),
    # Section IV-B, Table 1
    Statement("ivb-bert-vs-deberta", "§IV-B, Table 1 discussion", "83.21; 76.14",
          "BERT scores higher on BIOSSES than DeBERTa", "greater", ("T1|BERT|BIOSSES", "T1|DeBERTa|BIOSSES")),
    Statement("ivb-linkbert-vs-deberta", "§IV-B, Table 1 discussion", "87.19; 76.14",
          "LinkBERT scores higher on BIOSSES than DeBERTa", "greater",
          ("T1|LinkBERT|BIOSSES", "T1|DeBERTa|BIOSSES")),
    Statement("ivb-mnli-comparable", "§IV-B, Table 1 discussion", "83.15; 83.21",
          "after MNLI intermediate tuning DeBERTa matches BERT on BIOSSES", "comparable",
          ("T1|DeBERTa-MNLI|BIOSSES", "T1|BERT|BIOSSES")),
    # Section V intro and V-A, Table 3
    Statement("v-steps", "§V, 1st paragraph", "10K steps",
          "continual pretraining of MediBioDeBERTa ran 10K steps", "value",
          ("T3|MediBioDeBERTa|max training steps",), 10000, decimals=0),
    Statement("v-compute", "§V, 1st paragraph", "128K; 40 days; 256GB; 2-node; 67 hours; 3 node; 8 NVLinks",
          "vocabulary size, training time, corpus size and hardware", "value", checkable=False,
          note="no printed quantity to recompute them from (the 3 nodes reappear in the batch product)"),
    Statement("va-batch-product", "§V-A", "4,096 × 3 × 4 = 49,152",
          "per-device batch times nodes times accumulation steps gives the total batch", "product",
          ("4096", "3", "4"), 49152, decimals=0,
          note="the product only holds if each of the 3 nodes counts as one device; §V says each node has 8 "
               "GPUs, which would give 393,216"),
    Statement("va-batch-table", "§V-A", "49,152", "the total batch agrees with Table 3", "value",
          ("T3|MediBioDeBERTa|batch size",), 49152, decimals=0),
    Statement("va-warmup-steps", "§V-A", "1,000", "warm-up length agrees with Table 3", "value",
          ("T3|MediBioDeBERTa|warmup steps",), 1000, decimals=0),
    Statement("va-warmup-share", "§V-A", "1,000; 10%", "warm-up is a tenth of all steps", "share",
          ("T3|MediBioDeBERTa|warmup steps", "T3|MediBioDeBERTa|max training steps"), 10, decimals=0),
    Statement("t3-warmup-share-scideberta", "Table 3 (SciDeBERTa v2 column)", "50K; 500K",
          "the same one-tenth warm-up share (stated for MediBioDeBERTa) holds for SciDeBERTa v2", "share",
          ("T3|SciDeBERTa v2|warmup steps", "T3|SciDeBERTa v2|max training steps"), 10, decimals=0),
    # Section V-B, Table 4
    Statement("vb-scierc-ner", "§V-B", "72.4; 71.1", "SciDeBERTa v2 beats SciDeBERTa on SciERC NER", "greater",
          ("T4|SciDeBERTa v2|NER", "T4|SciDeBERTa|NER")),
    Statement("vb-scierc-jre", "§V-B", "47.4; 46.0", "SciDeBERTa v2 beats SciDeBERTa on SciERC JRE", "greater",
          ("T4|SciDeBERTa v2|JRE", "T4|SciDeBERTa|JRE")),
    Statement("vi-scierc-superior", "§VI, 1st paragraph", "56.9; 57.4",
          "the conclusion calls SciDeBERTa v2 better than its predecessor without restriction; Coref is "
          "the one SciERC task where that is tested here", "greater",
          ("T4|SciDeBERTa v2|Coref", "T4|SciDeBERTa|Coref"),
          note="§V-B itself limits the claim to NER and JRE"),
    # Section V-C, Tables 5 and 6
    Statement("vc-best-config", "§V-C, 2nd paragraph", "78.03; 77.38",
          "configuration #1 gives the best BLURB average (runner-up #3)", "greater",
          ("T5|#1|blurb_avg", "T5|#3|blurb_avg"),
          alternative=("MACRO|T6|#1", "MACRO|T6|#3"),
          alternative_reading="official BLURB score (macro over groups) of Table 6 columns",
          note="under the official BLURB score #3 comes first: #1 is weakest on BIOSSES and HoC, and each "
               "of those forms a group that weighs one sixth"),
    Statement("vc-scratch-beats-general", "§V-C, 2nd paragraph", "77.38; 76.65",
          "from-scratch domain pretraining (#3) beats continual learning from a general model (#2)",
          "greater", ("T5|#3|blurb_avg", "T5|#2|blurb_avg"),
          alternative=("MACRO|T6|#3", "MACRO|T6|#2"),
          alternative_reading="official BLURB score (macro over groups) of Table 6 columns"),
    Statement("vc-fulltext-no-gain", "§V-C, 3rd-4th paragraphs", "77.38; 76.46",
          "full text (#4) brings no gain over abstracts (#3)", "greater",
          ("T5|#3|blurb_avg", "T5|#4|blurb_avg"),
          alternative=("MACRO|T6|#3", "MACRO|T6|#4"),
          alternative_reading="official BLURB score (macro over groups) of Table 6 columns"),
    Statement("vc-more-cl-hurts", "§V-C, 4th paragraph", "76.46; 76.38",
          "continuing #4 on abstracts (#5) lowers the score", "greater",
          ("T5|#4|blurb_avg", "T5|#5|blurb_avg"),
          alternative=("MACRO|T6|#4", "MACRO|T6|#5"),
          alternative_reading="official BLURB score (macro over groups) of Table 6 columns"),
    # Section V-D, Table 7
    Statement("vd-ner-avg", "§V-D, 1st paragraph", "86.28%", "NER group average of the IFT model", "value",
          (f"T7|{IFT}|NER Avg.",), 86.28),
    Statement("vd-ss-avg", "§V-D, 1st paragraph", "92.7%", "sentence-similarity score of the IFT model", "value",
          (f"T7|{IFT}|BIOSSES",), 92.7, decimals=1),
    Statement("vd-qna-avg", "§V-D, 1st paragraph", "76.32%", "QA group average of the IFT model", "value",
          (f"T7|{IFT}|QnA Avg.",), 76.32,
          note="Table 7 prints 76.24 and its two QA cells average 76.235: the text swaps two digits"),
    Statement("vd-pico-biolinkbert", "§V-D, 1st paragraph", "74.2; 73.73",
          "BioLinkBERT is better on PICO", "greater", (f"T7|{LINK}|EBM-PICO", f"T7|{IFT}|EBM-PICO")),
    Statement("vd-re-biolinkbert", "§V-D, 1st paragraph", "80.81; 80.17",
          "BioLinkBERT is better on relation extraction (group average)", "greater",
          (f"T7|{LINK}|RE Avg.", f"T7|{IFT}|RE Avg.")),
    Statement("vd-dc-biolinkbert", "§V-D, 1st paragraph", "84.73; 71.49",
          "BioLinkBERT is better on document classification", "greater",
          (f"T7|{LINK}|HoC", f"T7|{IFT}|HoC")),
    Statement("vd-chemprot-gain", "§V-D, 2nd paragraph", "14.94%",
          "large ChemProt gain over BioLinkBERT", "gain",
          (f"T7|{IFT}|ChemProt", f"T7|{LINK}|ChemProt"), 14.94,
          alternative=("T6|#1|ChemProt", f"T7|{LINK}|ChemProt"),
          alternative_reading="with ChemProt of Table 6 #1 (77.80)", note=CHEMPROT_NOTE),
    Statement("vd-chemprot-f1", "§V-D, 2nd paragraph", "93.04%",
          "ChemProt F1 of the model; IFT did not target ChemProt, so Table 6 #1 holds its score",
          "value", ("T6|#1|ChemProt",), 93.04, note=CHEMPROT_NOTE),
    Statement("vd-ift-biosses", "§V-D, 2nd paragraph", "35.02%", "IFT gain on BIOSSES", "gain",
          (f"T7|{IFT}|BIOSSES", f"T7|{BASE}|BIOSSES"), 35.02),
    Statement("vd-ift-hoc", "§V-D, 2nd paragraph", "10.4%", "IFT gain on HoC", "gain",
          (f"T7|{IFT}|HoC", f"T7|{BASE}|HoC"), 10.4, decimals=1),
    Statement("vd-ift-pubmedqa", "§V-D, 2nd paragraph", "1.49%", "IFT gain on PubMedQA", "gain",
          (f"T7|{IFT}|PubMedQA", f"T7|{BASE}|PubMedQA"), 1.49,
          note="the printed figure is exactly one point short of the difference: likely a typo"),
    # Section V-E
    Statement("ve-general-vs-bio", "§V-E, 1st paragraph", "Table 2",
          "general-domain STS intermediate data helped BIOSSES more than clinical STS", "value",
          checkable=False, note="no BIOSSES score per intermediate dataset is printed (Table 2 lists only "
                                "data sizes), so the comparison cannot be recomputed"),
    Statement("ve-hoc-formats", "§V-E, 2nd paragraph", "Table 2",
          "HoC was helped by two regression and two classification intermediate sets", "value",
          ("COUNT|T2|HoC",), 4, decimals=0),
    Statement("ve-hoc-gain", "§V-E, 3rd paragraph", "10.4%",
          "HoC before (Table 6 #1) vs after IFT (Table 7)", "gain",
          (f"T7|{IFT}|HoC", "T6|#1|HoC"), 10.4, decimals=1),
    Statement("ve-pubmedqa-tasks", "§V-E, 3rd paragraph", "four tasks; two formats",
          "PubMedQA was helped by four intermediate sets", "value", ("COUNT|T2|PubMedQA",), 4, decimals=0),
    Statement("ve-pubmedqa-gain", "§V-E, 3rd paragraph", "1.49%",
          "PubMedQA before (Table 6 #1) vs after IFT (Table 7)", "gain",
          (f"T7|{IFT}|PubMedQA", "T6|#1|PubMedQA"), 1.49,
          note="the printed figure is exactly one point short of the difference: likely a typo"),
    # Section VI
    Statement("vi-average", "§VI, 1st paragraph", "81.72",
          "the average quoted for the final model equals Table 7", "value", (f"T7|{IFT}|BLURB Avg.",), 81.72),
    Statement("vi-leaderboard", "§VI, 1st paragraph", "11th; 81.72",
          "leaderboard rank obtained with that average", "blurb_score", _ift_column(), 81.72,
          note="the BLURB leaderboard ranks by the macro average over the six groups (Gu et al., text "
               "after their Table 3); the 11th place cannot be checked offline; ChemProt from Table 6 #1"),
)


def get(claim_id: str) -> Statement:
    """Look a claim up by id."""
    for claim in STATEMENTS:
        if claim.id == claim_id:
            return claim
    raise KeyError(f"no claim {claim_id!r}; known: {', '.join(c.id for c in STATEMENTS)}")


def checkable() -> list[Statement]:
    """The claims that have a recipe."""
    return [c for c in STATEMENTS if c.checkable]
