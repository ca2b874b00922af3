"""Span-level errors of NER and SciERC predictions: which gold and predicted spans a run got wrong, and how.

An F1 score says how many spans a run got right; a reader who wants to know *why* it missed the others
needs each span's fate. Spans come from the same code that scores them (seqeval's ``get_entities`` on the
BLURB tags, as :func:`medibio.tasks.metrics.ner_entity_f1`; SciERC's document-level word offsets, as
:mod:`medibio.tasks.scierc_metrics`), so a span called correct here is a true positive there.

Error kinds (:data:`KINDS`), decided for each predicted span first, then for each gold span left over:

* ``correct``: a predicted span with the boundaries and type of a gold span (a true positive);
* ``wrong type``: a predicted span with a gold span's boundaries but another type;
* ``wrong boundary``: a predicted span that overlaps a gold span without matching its boundaries;
* ``spurious``: a predicted span that overlaps no gold span;
* ``missed``: a gold span that no predicted span matches or overlaps.

Every predicted span that is not correct is one false positive, every gold span that is not matched one
false negative; ``wrong type`` and ``wrong boundary`` are the false positives that sit on a gold span, so the
counts add up to the F1's (tested). Relations are classified the same way, with "boundaries" meaning both
arguments' boundaries; coreference by mentions (a gold mention in no predicted cluster is missed, a predicted
mention in no gold cluster spurious) and by links (two mentions in one gold cluster but different predicted
clusters is a missed link, the reverse a spurious link).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any

from medibio.tasks.metrics import NER_ENTITY_TYPE

KINDS = ("correct", "wrong type", "wrong boundary", "spurious", "missed")
RELATION_KINDS = KINDS
COREF_KINDS = ("missed mention", "spurious mention", "missed link", "spurious link")


@dataclass(frozen=True)
class Span:
    """One gold or predicted span (inclusive word offsets) and what became of it."""

    start: int
    end: int
    type: str
    side: str  # "gold" or "predicted"
    kind: str  # one of KINDS

    def as_list(self) -> list[Any]:
        return [self.start, self.end, self.type, self.side, self.kind]


def bio_spans(tags: Sequence[str]) -> list[tuple[int, int, str]]:
    """(start, end, type) of the entities in word-level tags, read by seqeval as the NER metric reads them
    (conlleval mode: an ``I`` after ``O`` opens an entity). BLURB's untyped ``B``/``I`` get the metric's type."""
    from seqeval.metrics.sequence_labeling import get_entities

    mapped = [f"{t}-{NER_ENTITY_TYPE}" if t in ("B", "I") else t for t in tags]
    return [(start, end, label) for label, start, end in get_entities(mapped)]


def sentence_spans(tag_lists: Sequence[Sequence[str]]) -> list[list[tuple[int, int, str]]]:
    """:func:`bio_spans` of every sentence, found all at once by the rules the NER metric's statistics use
    (:func:`medibio.tasks.units.entity_spans`), which spares a process seqeval's import (sklearn and SciPy's
    statistics, 2-3 s); seqeval sentence by sentence where a tag is none the metric accepts."""
    from medibio.tasks.units import entity_spans

    return entity_spans(tag_lists) or [bio_spans(tags) for tags in tag_lists]


def _overlaps(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] <= b[1] and b[0] <= a[1]


def classify(gold: Iterable[tuple[int, int, str]], predicted: Iterable[tuple[int, int, str]]) -> list[Span]:
    """Every predicted and every gold span with its :data:`KINDS` entry. A gold span under a prediction gets
    that prediction's kind too (``correct``, ``wrong type``, ``wrong boundary``), so a view can mark both
    sides; :func:`counts` counts such a pair once."""
    gold_set = sorted({(int(s), int(e), str(t)) for s, e, t in gold})
    pred_set = sorted({(int(s), int(e), str(t)) for s, e, t in predicted})
    return ([Span(*span, "predicted", _kind(span, gold_set, "spurious")) for span in pred_set]
            + [Span(*span, "gold", _kind(span, pred_set, "missed")) for span in gold_set])


def _kind(span: tuple[int, int, str], others: Sequence[tuple[int, int, str]], alone: str) -> str:
    """How ``span`` meets the spans of the other side: the same span, the same boundaries with another type,
    an overlap, or none (``alone``: spurious for a prediction, missed for a gold span)."""
    start, end, _ = span
    if span in others:
        return "correct"
    if any((s, e) == (start, end) for s, e, _ in others):
        return "wrong type"
    if any(_overlaps((start, end), (s, e)) for s, e, _ in others):
        return "wrong boundary"
    return alone


def counts(spans: Iterable[Span]) -> Counter[str]:
    """Error-kind counts of classified spans: the predicted side's kinds, and ``missed`` from the gold side
    (a gold span under a wrong-type or wrong-boundary prediction is counted once, with that prediction)."""
    found: Counter[str] = Counter({k: 0 for k in KINDS})
    for span in spans:
        if span.side == "predicted" or span.kind == "missed":
            found[span.kind] += 1
    return found


# --------------------------------------------------------------------------- SciERC relations and coreference


@dataclass(frozen=True)
class RelationError:
    """One gold or predicted relation (``[s1, e1, s2, e2, type]``) and what became of it."""

    relation: tuple[int, int, int, int, str]
    side: str
    kind: str


def classify_relations(gold: Iterable[Sequence[Any]], predicted: Iterable[Sequence[Any]]) -> list[RelationError]:
    """Relations as :func:`classify` treats spans, with both arguments' boundaries as the boundaries
    (DyGIE++'s relation metric: boundaries and relation type, :func:`medibio.tasks.scierc_metrics.relation_scores`)."""
    def norm(rows: Iterable[Sequence[Any]]) -> list[tuple[int, int, int, int, str]]:
        return sorted({(int(a), int(b), int(c), int(d), str(t)) for a, b, c, d, t in rows})

    gold_set, pred_set = norm(gold), norm(predicted)

    def fate(rel: tuple[int, int, int, int, str], others: list[tuple[int, int, int, int, str]], none: str) -> str:
        if rel in others:
            return "correct"
        if any(rel[:4] == o[:4] for o in others):
            return "wrong type"
        if any(_overlaps(rel[0:2], o[0:2]) and _overlaps(rel[2:4], o[2:4]) and rel[4] == o[4] for o in others):
            return "wrong boundary"
        return none

    return ([RelationError(r, "predicted", fate(r, gold_set, "spurious")) for r in pred_set]
            + [RelationError(r, "gold", fate(r, pred_set, "missed")) for r in gold_set])


def relation_counts(errors: Iterable[RelationError]) -> Counter[str]:
    """As :func:`counts`, for relations."""
    found: Counter[str] = Counter({k: 0 for k in RELATION_KINDS})
    for err in errors:
        if err.side == "predicted" or err.kind == "missed":
            found[err.kind] += 1
    return found


def coreference_errors(gold: Sequence[Sequence[Sequence[int]]],
                       predicted: Sequence[Sequence[Sequence[int]]]) -> dict[str, list[Any]]:
    """Mentions and links a run's clusters got wrong against the gold clusters (:data:`COREF_KINDS` ->
    mentions ``[start, end]`` or links ``[[s, e], [s, e]]``)."""
    def clusters_of(clusters: Sequence[Sequence[Sequence[int]]]) -> dict[tuple[int, int], int]:
        return {(int(m[0]), int(m[1])): i for i, c in enumerate(clusters) for m in c}

    g, p = clusters_of(gold), clusters_of(predicted)

    def links(where: dict[tuple[int, int], int]) -> set[tuple[tuple[int, int], tuple[int, int]]]:
        return {(a, b) for a, b in combinations(sorted(where), 2) if where[a] == where[b]}

    gold_links, pred_links = links(g), links(p)
    return {"missed mention": sorted(m for m in g if m not in p),
            "spurious mention": sorted(m for m in p if m not in g),
            "missed link": sorted(gold_links - pred_links),
            "spurious link": sorted(pred_links - gold_links)}
