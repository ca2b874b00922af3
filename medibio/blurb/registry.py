"""The task registry: one entry per BLURB dataset, the single source of truth for everything task-specific.

Loaders, metrics, the scorer, the fine-tuning engine and the book all look datasets up here instead of
branching on names. Metrics are those of the BLURB paper (Gu et al.). Counts are the BLURB paper's Table 3 except DDI train/dev
(its table prints 22233/5559; BLURB's data generation gives 25296/2496) and GAD dev/test (printed 534/535,
the released files hold 535/534): we keep what the official data generation produces.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

from medibio.errors import UnknownNameError


class Group(str, Enum):
    """The six BLURB task groups; the BLURB score is the macro average over these."""

    NER = "NER"
    PICO = "PICO"
    RE = "RE"
    SS = "SS"
    DC = "DC"
    QA = "QA"


class Problem(str, Enum):
    """How a dataset is modelled: decides the model head and the prediction format."""

    TOKEN = "token_classification"  # NER / PICO: one tag per word, label on the first sub-token
    CLASSIFY = "sequence_classification"  # RE / QA: one label per example
    MULTILABEL = "multilabel_classification"  # HoC: a set of labels per abstract
    REGRESSION = "regression"  # BIOSSES: one float per pair


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


@dataclass(frozen=True)
class SplitUnit:
    """What must not occur in two splits of a dataset, read off an example id.

    ``pattern``'s first group is the unit (a document, an abstract, a question) of an id; ids it does not
    match are positions rather than names (CoNLL files without document markers) and take no part.
    """

    what: str  # e.g. "document", "PMID"
    pattern: str = r"(.+)"

    def key(self, example_id: str) -> str | None:
        match = re.fullmatch(self.pattern, example_id)
        return match.group(1) if match else None


_WHOLE_ID = r"(.+)"
_DOC_SENTENCE = r"(.+)-\d+"  # CoNLL ids with document markers: <document>-<sentence k>


@dataclass(frozen=True)
class DatasetSpec:
    """Everything task-specific about one BLURB dataset."""

    name: str  # canonical name used everywhere (CLI, records, prediction files)
    folder: str  # folder under <data_root>/blurb
    group: Group
    problem: Problem
    input_format: str  # which loader reads it (see medibio.blurb.loaders)
    labels: tuple[str, ...]  # label set; empty for regression
    metric: str  # name in medibio.blurb.metrics
    paper_counts: tuple[int, int, int]  # BLURB paper: train, dev, test
    count_unit: str  # what paper_counts count
    max_length: int  # max sub-token length used for fine-tuning (BLURB paper settings)
    negative_label: str | None = None  # RE: the class that never counts as a hit
    text_pair: bool = False  # True when examples are (text, text_pair)
    source: str = ""  # where users get the data
    aliases: tuple[str, ...] = ()
    value_range: tuple[float, float] | None = None  # regression: the gold scale (BIOSSES 0-4)
    # What no two splits may share (test leakage), read off the ids; None where ids are only positions
    # (BC5CDR, NCBI-disease and BC2GM number sentences per file, GAD numbers rows per file).
    split_unit: SplitUnit | None = None

    @property
    def is_token_task(self) -> bool:
        return self.problem is Problem.TOKEN


_BLURB_SRC = (
    "BLURB data generation (https://microsoft.github.io/BLURB/, "
    "https://github.com/michiyasunaga/LinkBERT#data) or `medibio data fetch`"
)

DATASETS: tuple[DatasetSpec, ...] = (
    DatasetSpec("BC5-chem", "BC5CDR-chem", Group.NER, Problem.TOKEN, "conll", BIO_TAGS, "ner_entity_f1",
                (5203, 5347, 5385), "entity mentions", 512, source=_BLURB_SRC, aliases=("BC5CDR-chem",)),
    DatasetSpec("BC5-disease", "BC5CDR-disease", Group.NER, Problem.TOKEN, "conll", BIO_TAGS, "ner_entity_f1",
                (4182, 4244, 4424), "entity mentions", 512, source=_BLURB_SRC, aliases=("BC5CDR-disease",)),
    DatasetSpec("NCBI-disease", "NCBI-disease", Group.NER, Problem.TOKEN, "conll", BIO_TAGS, "ner_entity_f1",
                (5134, 787, 960), "entity mentions", 512, source=_BLURB_SRC),
    DatasetSpec("BC2GM", "BC2GM", Group.NER, Problem.TOKEN, "conll", BIO_TAGS, "ner_entity_f1",
                (15197, 3061, 6325), "entity mentions", 512, source=_BLURB_SRC),
    DatasetSpec("JNLPBA", "JNLPBA", Group.NER, Problem.TOKEN, "conll", BIO_TAGS, "ner_entity_f1",
                (46750, 4551, 8662), "entity mentions", 512, source=_BLURB_SRC,
                split_unit=SplitUnit("document", _DOC_SENTENCE)),
    DatasetSpec("EBM-PICO", "ebmnlp", Group.PICO, Problem.TOKEN, "conll", PICO_TAGS, "pico_token_macro_f1",
                (339167, 85321, 16364), "PICO words", 512,
                source="EBM-NLP (https://github.com/bepnye/EBM-NLP) processed by BLURB data generation",
                aliases=("EBM PICO", "ebmnlp"), split_unit=SplitUnit("document", _DOC_SENTENCE)),
    DatasetSpec("ChemProt", "chemprot", Group.RE, Problem.CLASSIFY, "re_tsv",
                ("CPR:3", "CPR:4", "CPR:5", "CPR:6", "CPR:9", "false"), "re_micro_f1",
                (18035, 11268, 15745), "relation instances", 256, negative_label="false",
                source="BioCreative VI ChemProt via BLURB data generation", aliases=("chemprot", "Chem Prot"),
                split_unit=SplitUnit("abstract (PMID)", r"([^.]+)\..*")),
    DatasetSpec("DDI", "DDI", Group.RE, Problem.CLASSIFY, "re_tsv",
                ("DDI-advise", "DDI-effect", "DDI-int", "DDI-mechanism", "DDI-false"), "re_micro_f1",
                (25296, 2496, 5716), "relation instances", 256, negative_label="DDI-false",
                source="DDI-2013 corpus via BLURB data generation",
                split_unit=SplitUnit("document", r"(.+)\.s\d+\.p\d+")),
    DatasetSpec("GAD", "GAD", Group.RE, Problem.CLASSIFY, "gad_tsv", ("0", "1"), "re_binary_f1",
                (4261, 535, 534), "relation instances", 128, negative_label="0",
                source="GAD (BioBERT's preprocessed release) via BLURB data generation"),
    DatasetSpec("BIOSSES", "BIOSSES", Group.SS, Problem.REGRESSION, "biosses_tsv", (), "pearson",
                (64, 16, 20), "sentence pairs", 512, text_pair=True,
                source="BIOSSES (https://tabilab.cmpe.boun.edu.tr/BIOSSES/) via BLURB data generation",
                value_range=(0.0, 4.0), split_unit=SplitUnit("sentence pair id", _WHOLE_ID)),
    DatasetSpec("HoC", "HoC", Group.DC, Problem.MULTILABEL, "hoc_tsv", HOC_HALLMARKS, "hoc_micro_f1",
                (1295, 186, 371), "abstracts", 512,
                source="Hallmarks of Cancer (https://github.com/sb895/Hallmarks-of-Cancer) via BLURB data generation",
                aliases=("HOC",), split_unit=SplitUnit("abstract (PMID)", _WHOLE_ID)),
    DatasetSpec("PubMedQA", "pubmedqa", Group.QA, Problem.CLASSIFY, "pubmedqa_json", ("yes", "no", "maybe"),
                "accuracy", (450, 50, 500), "questions", 512, text_pair=True,
                source="PubMedQA (https://github.com/pubmedqa/pubmedqa) ori_pqal.json + BLURB split ids",
                aliases=("pubmedqa", "PubmedQA"), split_unit=SplitUnit("PMID", _WHOLE_ID)),
    DatasetSpec("BioASQ", "BioASQ", Group.QA, Problem.CLASSIFY, "bioasq_tsv", ("yes", "no"), "accuracy",
                (670, 75, 140), "questions", 512, text_pair=True,
                source="BioASQ 7b yes/no (registration at http://bioasq.org) via BLURB data generation",
                split_unit=SplitUnit("question id", _WHOLE_ID)),
)

GROUP_ORDER: tuple[Group, ...] = (Group.NER, Group.PICO, Group.RE, Group.SS, Group.DC, Group.QA)

_BY_KEY: dict[str, DatasetSpec] = {}
for _spec in DATASETS:
    for _key in (_spec.name, _spec.folder, *_spec.aliases):
        _BY_KEY[_key.lower()] = _spec


def get(name: str) -> DatasetSpec:
    """Look a dataset up by canonical name, folder name or alias (case-insensitive)."""
    try:
        return _BY_KEY[name.lower()]
    except KeyError:
        raise UnknownNameError("BLURB dataset", name, names()) from None


def names() -> list[str]:
    """Canonical dataset names in BLURB order."""
    return [s.name for s in DATASETS]


def by_group(group: Group | str) -> list[DatasetSpec]:
    """The datasets of one BLURB group, in BLURB order."""
    group = Group(group)
    return [s for s in DATASETS if s.group is group]


def resolve(selection: str | list[str] | None) -> list[DatasetSpec]:
    """Turn ``"all"``, a group name, a comma list or a list of names into specs (CLI helper).

    An unknown name raises :class:`UnknownNameError` listing datasets, groups and ``all``; a selection that
    names nothing (``""``, ``","``) is an error too, not an empty run.
    """
    if selection is None or selection == "all" or selection == ["all"]:
        return list(DATASETS)
    items = selection.split(",") if isinstance(selection, str) else list(selection)
    out: list[DatasetSpec] = []
    for item in (i.strip() for i in items if i.strip()):
        if item.upper() in Group.__members__:
            out.extend(by_group(item.upper()))
        elif item.lower() == "all":
            out.extend(DATASETS)
        elif item.lower() in _BY_KEY:
            out.append(_BY_KEY[item.lower()])
        else:
            raise UnknownNameError("dataset", item, names(), f"; or a group {', '.join(Group.__members__)}; or all")
    if not out:
        raise UnknownNameError("dataset selection", selection if isinstance(selection, str) else ",".join(items),
                               names(), f"; or a group {', '.join(Group.__members__)}; or all")
    return list(dict.fromkeys(out))
