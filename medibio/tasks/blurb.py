"""The 13 BLURB datasets (Gu et al.) as :class:`~medibio.tasks.spec.TaskSpec` entries of the registry.

Metrics are those of the BLURB paper. Counts are the BLURB paper's Table 3 except DDI train/dev (its table
prints 22233/5559; BLURB's data generation gives 25296/2496) and GAD dev/test (printed 534/535, the released
files hold 535/534): we keep what the official data generation produces.
"""

from __future__ import annotations

from typing import Any

from medibio.tasks.spec import Group, Problem, SplitUnit, TaskSpec

_WHOLE_ID = r"(.+)"
_DOC_SENTENCE = r"(.+)-\d+"  # CoNLL ids with document markers: <document>-<sentence k>

BIO_TAGS = ("B", "I", "O")
PICO_TAGS = ("I-PAR", "I-INT", "I-OUT", "O")
# The 10 Hallmarks of Cancer in the index order of BLURB's HoC files (flag ``k_1`` = hallmark k). The order is
# alphabetical; it was verified sentence by sentence: the top-level labels of the original HoC release
# (Baker et al. 2016, github.com/sb895/Hallmarks-of-Cancer) reproduce the flags of all 17,464 BLURB sentences.
HOC_HALLMARKS = (
    "Activating invasion and metastasis",
    "Avoiding immune destruction",
    "Cellular energetics",
    "Enabling replicative immortality",
    "Evading growth suppressors",
    "Genomic instability and mutation",
    "Inducing angiogenesis",
    "Resisting cell death",
    "Sustaining proliferative signaling",
    "Tumor promoting inflammation",
)


_BLURB_SRC = (
    "BLURB data generation (https://microsoft.github.io/BLURB/, "
    "https://github.com/michiyasunaga/LinkBERT#data) or `medibio data fetch`"
)



def _blurb(name: str, folder: str, group: Group, problem: Problem, reader: str, labels: tuple[str, ...],
           metric: str, counts: tuple[int, int, int], unit: str, max_length: int, **fields: Any) -> TaskSpec:
    return TaskSpec(name, "blurb", problem, labels, metric, max_length, folder, reader, group=group,
               paper_counts=counts, count_unit=unit, **fields)


DATASETS: tuple[TaskSpec, ...] = (
    _blurb("BC5-chem", "BC5CDR-chem", Group.NER, Problem.TOKEN, "conll", BIO_TAGS, "ner_entity_f1",
           (5203, 5347, 5385), "entity mentions", 512, source=_BLURB_SRC, aliases=("BC5CDR-chem",)),
    _blurb("BC5-disease", "BC5CDR-disease", Group.NER, Problem.TOKEN, "conll", BIO_TAGS, "ner_entity_f1",
           (4182, 4244, 4424), "entity mentions", 512, source=_BLURB_SRC, aliases=("BC5CDR-disease",)),
    _blurb("NCBI-disease", "NCBI-disease", Group.NER, Problem.TOKEN, "conll", BIO_TAGS, "ner_entity_f1",
           (5134, 787, 960), "entity mentions", 512, source=_BLURB_SRC),
    _blurb("BC2GM", "BC2GM", Group.NER, Problem.TOKEN, "conll", BIO_TAGS, "ner_entity_f1",
           (15197, 3061, 6325), "entity mentions", 512, source=_BLURB_SRC),
    _blurb("JNLPBA", "JNLPBA", Group.NER, Problem.TOKEN, "conll", BIO_TAGS, "ner_entity_f1",
           (46750, 4551, 8662), "entity mentions", 512, source=_BLURB_SRC,
           split_unit=SplitUnit("document", _DOC_SENTENCE)),
    _blurb("EBM-PICO", "ebmnlp", Group.PICO, Problem.TOKEN, "conll", PICO_TAGS, "pico_token_macro_f1",
           (339167, 85321, 16364), "PICO words", 512,
           source="EBM-NLP (https://github.com/bepnye/EBM-NLP) processed by BLURB data generation",
           aliases=("EBM PICO", "ebmnlp"), split_unit=SplitUnit("document", _DOC_SENTENCE)),
    _blurb("ChemProt", "chemprot", Group.RE, Problem.CLASSIFY, "re_tsv",
           ("CPR:3", "CPR:4", "CPR:5", "CPR:6", "CPR:9", "false"), "re_micro_f1",
           (18035, 11268, 15745), "relation instances", 256, negative_label="false",
           source="BioCreative VI ChemProt via BLURB data generation", aliases=("chemprot", "Chem Prot"),
           split_unit=SplitUnit("abstract (PMID)", r"([^.]+)\..*")),
    _blurb("DDI", "DDI", Group.RE, Problem.CLASSIFY, "re_tsv",
           ("DDI-advise", "DDI-effect", "DDI-int", "DDI-mechanism", "DDI-false"), "re_micro_f1",
           (25296, 2496, 5716), "relation instances", 256, negative_label="DDI-false",
           source="DDI-2013 corpus via BLURB data generation",
           split_unit=SplitUnit("document", r"(.+)\.s\d+\.p\d+")),
    _blurb("GAD", "GAD", Group.RE, Problem.CLASSIFY, "gad_tsv", ("0", "1"), "re_binary_f1",
           (4261, 535, 534), "relation instances", 128, negative_label="0",
           source="GAD (BioBERT's preprocessed release) via BLURB data generation"),
    _blurb("BIOSSES", "BIOSSES", Group.SS, Problem.REGRESSION, "biosses_tsv", (), "pearson",
           (64, 16, 20), "sentence pairs", 512, text_pair=True,
           source="BIOSSES (https://tabilab.cmpe.boun.edu.tr/BIOSSES/) via BLURB data generation",
           value_range=(0.0, 4.0), split_unit=SplitUnit("sentence pair id", _WHOLE_ID)),
    _blurb("HoC", "HoC", Group.DC, Problem.MULTILABEL, "hoc_tsv", HOC_HALLMARKS, "hoc_micro_f1",
           (1295, 186, 371), "abstracts", 512,
           source="Hallmarks of Cancer (https://github.com/sb895/Hallmarks-of-Cancer) via BLURB data generation",
           aliases=("HOC",), split_unit=SplitUnit("abstract (PMID)", _WHOLE_ID)),
    _blurb("PubMedQA", "pubmedqa", Group.QA, Problem.CLASSIFY, "pubmedqa_json", ("yes", "no", "maybe"),
           "accuracy", (450, 50, 500), "questions", 512, text_pair=True,
           source="PubMedQA (https://github.com/pubmedqa/pubmedqa) ori_pqal.json + BLURB split ids",
           aliases=("pubmedqa", "PubmedQA"), split_unit=SplitUnit("PMID", _WHOLE_ID)),
    _blurb("BioASQ", "BioASQ", Group.QA, Problem.CLASSIFY, "bioasq_tsv", ("yes", "no"), "accuracy",
           (670, 75, 140), "questions", 512, text_pair=True,
           source="BioASQ 7b yes/no (registration at http://bioasq.org) via BLURB data generation",
           split_unit=SplitUnit("question id", _WHOLE_ID)),
)

GROUP_ORDER: tuple[Group, ...] = (Group.NER, Group.PICO, Group.RE, Group.SS, Group.DC, Group.QA)

