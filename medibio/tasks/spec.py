"""The one task type: every dataset medibio trains or scores on — the 13 BLURB datasets, the intermediate
fine-tuning tasks and SciERC — is a :class:`TaskSpec`, looked up in :mod:`medibio.tasks.registry`.

Loaders, metrics, the scorer, the training loop and the book read a task's fields instead of branching on
its name; ``family`` says which collection a task belongs to (``blurb``, ``ift``, ``scierc``) for the few
decisions that depend on it (the BLURB score covers BLURB datasets only).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum


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
    SPAN = "span"  # SciERC: entity spans, relations between them, coreference clusters


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

FAMILIES = ("blurb", "ift", "scierc")


@dataclass(frozen=True)
class TaskSpec:
    """Everything task-specific about one dataset, whatever collection it belongs to."""

    name: str  # canonical name used everywhere (CLI, records, prediction files)
    family: str  # "blurb", "ift" or "scierc" (FAMILIES)
    problem: Problem
    labels: tuple[str, ...]  # label set; empty for regression
    metric: str  # name in medibio.tasks.metrics (what dev selection and scoring use)
    max_length: int  # max sub-token length used for fine-tuning
    folder: str  # location under <data_root>/blurb (BLURB), <data_root>/ift (IFT) or <data_root>
    reader: str  # which parser reads it (medibio.tasks.loaders, medibio.tasks.ift)
    text_pair: bool = False  # True when examples are (text, text_pair)
    negative_label: str | None = None  # RE: the class that never counts as a hit
    source: str = ""  # where users get the data
    aliases: tuple[str, ...] = ()
    value_range: tuple[float, float] | None = None  # regression: the gold scale (BIOSSES 0-4, STS-B 0-5)
    # BLURB: its group, the paper's counts (train, dev, test) and what they count, and what no two splits
    # may share (test leakage), read off the ids; None where ids are only positions (BC5CDR, NCBI-disease
    # and BC2GM number sentences per file, GAD numbers rows per file).
    group: Group | None = None
    paper_counts: tuple[int, int, int] | None = None
    count_unit: str = ""
    split_unit: SplitUnit | None = None
    # Intermediate tasks (the paper's Table 2): (used, total) train and dev sizes, the metric the paper
    # reports, the format (CLF, RGN, PRX, SRCH), the BLURB task it served, the field holding the label.
    paper_sizes: tuple[tuple[int, int], tuple[int, int]] | None = None
    paper_metric: str = ""
    format: str = ""
    paper_target: str = ""
    label_field: str = ""

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise ValueError(f"task family must be one of {', '.join(FAMILIES)}, not {self.family!r}")

    @property
    def is_blurb(self) -> bool:
        return self.family == "blurb"

    @property
    def is_token_task(self) -> bool:
        return self.problem is Problem.TOKEN

    @property
    def reported_metric(self) -> str:
        """The metric the paper reports (a ranking task selects on a pair metric, reports MAP/nDCG)."""
        return self.paper_metric or self.metric
