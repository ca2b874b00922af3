"""Per-unit sufficient statistics of the BLURB metrics: every test score as a function of summed counts.

A bootstrap or permutation test re-scores a system on many re-weighted copies of the test set. Running
seqeval (or sklearn) thousands of times would be slow; instead each *resampling unit* (a sentence, a
document, an abstract, a pair, a question) is reduced once to a small vector of counts whose sum over
the units determines the metric exactly. A resample is then a weighted sum (``weights @ counts``) and
the score a closed-form function of that sum. The statistics, per metric of :mod:`medibio.tasks.metrics`:

* ``ner_entity_f1``: per unit (tp, fp, fn) of entity spans, with spans found by the rules of seqeval's
  ``get_entities`` (conlleval mode, untyped tags mapped to ``B-ENT``/``I-ENT``, as the metric does), applied
  to every sentence at once; a span is a hit when gold and prediction have the same (type, start, end).
  Micro P/R/F1 from the sums.
* ``pico_token_macro_f1``: per unit and per PIO class (I-PAR, I-INT, I-OUT) the word-level (tp, fp, fn);
  the score is the unweighted mean of the three classes' F1 from the summed counts.
* ``re_micro_f1`` (ChemProt, DDI), ``re_binary_f1`` (GAD), ``hoc_micro_f1`` (HoC): per unit (tp, fp, fn)
  with the metric's own rules (negative label never a hit; GAD's positive class ``"1"``; HoC's
  (abstract, hallmark) pairs), F1 from the sums.
* ``pearson`` (BIOSSES): per unit (n, Σx, Σy, Σx², Σy², Σxy) of gold x and prediction y, both shifted by
  their means over all units first (Pearson's r does not change under a shift, and centred sums avoid
  cancellation); r from the sums, 0 when either side is constant (the metric's convention).
* ``accuracy`` (PubMedQA, BioASQ): per unit (correct, n).

The resampling unit of each dataset is in :data:`UNITS`: the largest independent unit that the loader's
ids identify. NER files without document markers (BC5-chem, BC5-disease, NCBI-disease, BC2GM) resample
sentences; JNLPBA and EBM-PICO, whose ids are ``<PMID>-<k>``, resample documents; HoC resamples abstracts
(the loader's ids are PMIDs; BLURB's sentence ids ``<PMID>_s<k>`` map to the same abstract);
ChemProt, DDI and GAD resample pairs, BIOSSES sentence pairs, PubMedQA and BioASQ questions.
"""

from __future__ import annotations

import functools
import itertools
import operator
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from medibio.tasks import metrics, registry
from medibio.tasks.metrics import (
    NER_ENTITY_TYPE,
    PICO_CLASSES,
    MetricInputError,
    _check_pairs,
    _check_sequences,
    _checked_labels,
    _floats,
    _label_set,
    _to_seqeval,
    _where,
)

# --------------------------------------------------------------------------- resampling units


def _same(example_id: str) -> str:
    return example_id


def _document(example_id: str) -> str:
    """``<doc>-<k>``: CoNLL files with ``-DOCSTART-`` markers (:func:`medibio.tasks.formats.read_conll`)."""
    return re.sub(r"-\d+$", "", example_id)


def _abstract(example_id: str) -> str:
    """``<PMID>_s<k>`` (BLURB's HoC sentence ids) or ``<PMID>`` (the loader's abstract ids) -> ``<PMID>``."""
    return re.sub(r"_s\d+$", "", example_id)


@dataclass(frozen=True)
class Unit:
    """What one dataset resamples, and how an example id names its unit."""

    name: str
    key: Callable[[str], str]


SENTENCE = Unit("sentence", _same)
UNITS: dict[str, Unit] = {
    "BC5-chem": SENTENCE,
    "BC5-disease": SENTENCE,
    "NCBI-disease": SENTENCE,
    "BC2GM": SENTENCE,
    "JNLPBA": Unit("document", _document),
    "EBM-PICO": Unit("document", _document),
    "ChemProt": Unit("pair", _same),
    "DDI": Unit("pair", _same),
    "GAD": Unit("pair", _same),
    "BIOSSES": Unit("sentence pair", _same),
    "HoC": Unit("abstract", _abstract),
    "PubMedQA": Unit("question", _same),
    "BioASQ": Unit("question", _same),
}
assert set(UNITS) == set(registry.names())


def unit_of(dataset: str) -> Unit:
    """The resampling unit of a BLURB dataset (any registry name or alias)."""
    return UNITS[registry.get(dataset, "blurb").name]


# --------------------------------------------------------------------------- scores from summed counts


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    return np.divide(num, den, out=np.zeros(np.broadcast(num, den).shape), where=den > 0)


def _f1(tp: np.ndarray, fp: np.ndarray, fn: np.ndarray) -> np.ndarray:
    """F1 (0-1) as seqeval/sklearn compute it with ``zero_division=0``: 2PR/(P+R), 0 where undefined."""
    p = _ratio(tp, tp + fp)
    r = _ratio(tp, tp + fn)
    return _ratio(2 * p * r, p + r)


def _score_f1(sums: np.ndarray) -> np.ndarray:
    return 100.0 * _f1(sums[..., 0], sums[..., 1], sums[..., 2])


def _score_pico(sums: np.ndarray) -> np.ndarray:
    per_class = sums.reshape(*sums.shape[:-1], len(PICO_CLASSES), 3)
    return 100.0 * _f1(per_class[..., 0], per_class[..., 1], per_class[..., 2]).mean(axis=-1)


def _score_pearson(sums: np.ndarray) -> np.ndarray:
    n, sx, sy, sxx, syy, sxy = np.moveaxis(sums, -1, 0)
    vx = n * sxx - sx * sx
    vy = n * syy - sy * sy
    cov = n * sxy - sx * sy
    # Rounding leaves a tiny positive variance where one side is constant; the metric scores that 0.
    tol = 1e-12
    ok = (vx > tol * n * sxx) & (vy > tol * n * syy)
    r = _ratio(cov, np.sqrt(np.where(ok, vx * vy, 0.0)))
    return 100.0 * np.clip(np.where(ok, r, 0.0), -1.0, 1.0)


def _score_accuracy(sums: np.ndarray) -> np.ndarray:
    return 100.0 * _ratio(sums[..., 0], sums[..., 1])


# --------------------------------------------------------------------------- per-example counts


_O, _B, _I = 0, 1, 2  # the kinds of NER tags; every tag the metric accepts is one of them with an entity type


def _tag_codes(tags: Sequence[Any], types: dict[str, int]) -> tuple[np.ndarray, np.ndarray] | None:
    """(kind, type) of each tag as :func:`medibio.tasks.metrics._to_seqeval` and seqeval read it: ``B``/``I``
    untyped (type ``ENT``), ``B-X``/``I-X`` of type ``X``, ``O``; None when a tag is none of them (the caller
    lets the metric's own check say which). ``types`` numbers the entity types, shared by gold and predictions."""
    codes: dict[Any, int] = {}
    table = [(_O, -1)]
    try:
        for tag in dict.fromkeys(tags):
            if tag == "O":
                codes[tag] = 0
                continue
            if tag in ("B", "I"):
                kind, name = (_B if tag == "B" else _I), NER_ENTITY_TYPE
            elif isinstance(tag, str) and tag[:2] in ("B-", "I-") and len(tag) > 2:
                kind, name = (_B if tag[0] == "B" else _I), tag[2:]
            else:
                return None
            codes[tag] = len(table)
            table.append((kind, types.setdefault(name, len(types))))
    except TypeError:  # an unhashable tag
        return None
    index = np.fromiter(map(codes.__getitem__, tags), dtype=np.int64, count=len(tags))
    kinds, type_ids = np.array(table, dtype=np.int64).T
    return kinds[index], type_ids[index]


def _spans(kind: np.ndarray, type_id: np.ndarray, first: np.ndarray, last: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(start, end) of every entity of the concatenated sentences, with seqeval's ``get_entities`` rules for
    BIO tags (``first``/``last``: where a sentence begins and ends). A span starts at a B, at an I after an O,
    and at an I whose type differs from the previous tag's; it ends before a B or an O, before an I of another
    type, and at the end of its sentence. Spans never overlap, so the k-th start and the k-th end are one span."""
    tagged = kind != _O
    starts = tagged.copy()
    starts[1:] &= first[1:] | (kind[1:] == _B) | (kind[:-1] == _O) | (type_id[:-1] != type_id[1:])
    ends = tagged.copy()
    ends[:-1] &= last[:-1] | (kind[1:] != _I) | (type_id[1:] != type_id[:-1])
    return np.flatnonzero(starts), np.flatnonzero(ends)


def _sentences(tag_lists: Sequence[Sequence[Any]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For the concatenated tags of ``tag_lists``: each tag's sentence, and whether it begins or ends one."""
    lengths = np.fromiter(map(len, tag_lists), dtype=np.int64, count=len(tag_lists))
    sentence = np.repeat(np.arange(len(tag_lists)), lengths)
    bounds = np.cumsum(lengths)
    first, last = np.zeros(len(sentence), bool), np.zeros(len(sentence), bool)
    first[(bounds - lengths)[lengths > 0]] = True
    last[bounds[lengths > 0] - 1] = True
    return sentence, first, last


def entity_spans(tag_lists: Sequence[Sequence[Any]]) -> list[list[tuple[int, int, str]]] | None:
    """(start, end, type) of each sentence's entities (inclusive word offsets within the sentence), all sentences
    at once by the rules the NER metric's statistics use (:func:`_spans`: seqeval's ``get_entities``, untyped
    ``B``/``I`` of type ``ENT``); None when a tag is none the metric accepts."""
    sentence, first, last = _sentences(tag_lists)
    types: dict[str, int] = {}
    codes = _tag_codes(list(itertools.chain.from_iterable(tag_lists)), types)
    if codes is None:
        return None
    starts, ends = _spans(*codes, first, last)
    names = list(types)
    offset = (np.flatnonzero(first) if len(sentence) else np.zeros(0, np.int64))
    begin = np.zeros(len(tag_lists), np.int64)
    begin[np.unique(sentence)] = offset
    out: list[list[tuple[int, int, str]]] = [[] for _ in tag_lists]
    at = begin[sentence[starts]]
    for k, s, e, t in zip(sentence[starts].tolist(), (starts - at).tolist(), (ends - at).tolist(),
                          codes[1][starts].tolist(), strict=True):
        out[k].append((s, e, names[t]))
    return out


def _tag_lists(references: Sequence[Any], predictions: Sequence[Any], labels: Sequence[str] | None) -> bool:
    """Whether every example pairs two tag lists of one length whose tags are all in ``labels`` (None: any tag):
    what :func:`medibio.tasks.metrics._check_sequences` checks sentence by sentence, checked on all at once."""
    if any(isinstance(x, str) for x in itertools.chain(references, predictions)):
        return False
    if list(map(len, references)) != list(map(len, predictions)):
        return False
    if labels is None:
        return True
    try:
        return set(itertools.chain.from_iterable([*references, *predictions])) <= set(labels)
    except TypeError:  # an unhashable tag
        return False


# The gold side of the last few test sets scored (:func:`_gold_tags`), by the identity of their tag lists, each
# kept with the lists themselves so that no other object can take their id while they are here.
_GOLD_TAGS: dict[int, tuple[Sequence[Any], tuple[Any, ...]]] = {}
_GOLD_TAGS_MAX = 8


def _gold_tags(references: Sequence[Any]) -> tuple[Any, ...]:
    """Each gold tag's sentence, sentence bounds, (kind, type) codes and the types numbered: the same for every
    run scored against one test set (the scorer passes the same gold lists each time), so worked out once per
    set and process (a sixth of an NER file's scoring)."""
    kept = _GOLD_TAGS.get(id(references))
    if kept is not None and kept[0] is references:
        return kept[1]
    types: dict[str, int] = {}
    codes = _tag_codes(list(itertools.chain.from_iterable(references)), types)
    found = (*_sentences(references), codes, types)
    for array in (*found[:3], *(codes or ())):
        array.flags.writeable = False  # shared by every run scored against this set
    if len(_GOLD_TAGS) >= _GOLD_TAGS_MAX:
        del _GOLD_TAGS[next(iter(_GOLD_TAGS))]
    _GOLD_TAGS[id(references)] = (references, found)
    return found


def _ner_rows(references: Sequence[Any], predictions: Sequence[Any], ids: Sequence[str] | None,
              labels: Sequence[str] | None) -> np.ndarray:
    """Per sentence (tp, fp, fn) of entity spans, all sentences at once: seqeval's ``get_entities`` called per
    sentence took most of the claims' cold computation."""
    if not _tag_lists(references, predictions, labels):
        _check_sequences(references, predictions, ids, labels)  # says which example is wrong
    sentence, first, last, gold, gold_types = _gold_tags(references)
    types = dict(gold_types)  # the predictions' new types numbered after the gold's, as when read together
    found = _tag_codes(list(itertools.chain.from_iterable(predictions)), types)
    if gold is None or found is None:
        for i, (ref, pred) in enumerate(zip(references, predictions, strict=True)):  # raises for the first one
            for tags, what in ((ref, "gold tags"), (pred, "predicted tags")):
                for tag in tags:
                    _to_seqeval(tag, i, ids, what)
    (g_start, g_end), (f_start, f_end) = (_spans(*codes, first, last) for codes in (gold, found))
    found_end = np.full(len(sentence), -1)
    found_end[f_start] = f_end
    hit = g_start[(found_end[g_start] == g_end) & (found[1][g_start] == gold[1][g_start])]
    counts = [np.bincount(sentence[x], minlength=len(references)) for x in (hit, f_start, g_start)]
    return np.stack([counts[0], counts[1] - counts[0], counts[2] - counts[0]], axis=1).astype(float)


def _pico_rows(references: Sequence[Any], predictions: Sequence[Any], ids: Sequence[str] | None,
               labels: Sequence[str] | None) -> np.ndarray:
    allowed = tuple(labels) if labels is not None else (*PICO_CLASSES, "O")
    classes = [c for c in allowed if c != "O"]
    if tuple(classes) != PICO_CLASSES:
        raise MetricInputError(f"PICO statistics expect the classes {PICO_CLASSES}, got {tuple(classes)}")
    _check_sequences(references, predictions, ids, allowed)
    index = {c: k for k, c in enumerate(allowed)}
    out = np.zeros((len(references), 3 * len(classes)))
    for i, (ref, pred) in enumerate(zip(references, predictions, strict=True)):
        g = np.fromiter((index[t] for t in ref), dtype=np.int64, count=len(ref))
        p = np.fromiter((index[t] for t in pred), dtype=np.int64, count=len(pred))
        for k, cls in enumerate(classes):
            c = index[cls]
            out[i, 3 * k: 3 * k + 3] = (np.sum((g == c) & (p == c)), np.sum((p == c) & (g != c)),
                                        np.sum((g == c) & (p != c)))
    return out


def _re_rows(references: Sequence[Any], predictions: Sequence[Any], ids: Sequence[str] | None,
             labels: Sequence[str] | None, negative: str) -> np.ndarray:
    n = _checked_labels(references, predictions, ids, labels)
    same = np.fromiter(map(operator.eq, predictions, references), dtype=bool, count=n)
    gold, found = (np.fromiter(map(operator.ne, values, itertools.repeat(negative)), dtype=bool, count=n)
                   for values in (references, predictions))
    # (tp, fp, fn) of the positive relations: right and positive; wrong, predicted positive; wrong, truly positive
    return np.stack([same & gold, ~same & found, ~same & gold], axis=1).astype(float)


def _binary_rows(references: Sequence[Any], predictions: Sequence[Any], ids: Sequence[str] | None,
                 labels: Sequence[str] | None, positive: str = "1") -> np.ndarray:
    _checked_labels(references, predictions, ids, labels)
    g = np.array([r == positive for r in references])
    p = np.array([x == positive for x in predictions])
    return np.stack([g & p, p & ~g, g & ~p], axis=1).astype(float)


def _hoc_rows(references: Sequence[Any], predictions: Sequence[Any], ids: Sequence[str] | None,
              labels: Sequence[str] | None) -> np.ndarray:
    out = np.zeros((len(references), 3))
    for i, (ref, pred) in enumerate(zip(references, predictions, strict=True)):
        g = _label_set(ref, labels, _where(i, ids), "gold labels")
        p = _label_set(pred, labels, _where(i, ids), "predicted labels")
        out[i] = (len(g & p), len(p - g), len(g - p))
    return out


def _pearson_rows(references: Sequence[Any], predictions: Sequence[Any], ids: Sequence[str] | None,
                  labels: Sequence[str] | None) -> np.ndarray:
    x = np.array(_floats(references, ids, "gold value"))
    y = np.array(_floats(predictions, ids, "predicted value"))
    x = x - x.mean()
    y = y - y.mean()
    return np.stack([np.ones_like(x), x, y, x * x, y * y, x * y], axis=1)


def _accuracy_rows(references: Sequence[Any], predictions: Sequence[Any], ids: Sequence[str] | None,
                   labels: Sequence[str] | None) -> np.ndarray:
    _checked_labels(references, predictions, ids, labels)
    correct = np.array([g == p for g, p in zip(references, predictions, strict=True)], dtype=float)
    return np.stack([correct, np.ones_like(correct)], axis=1)


@dataclass(frozen=True)
class Statistic:
    """How one metric reduces examples to counts (``rows``) and counts back to a 0-100 score (``score``)."""

    columns: tuple[str, ...]
    rows: Callable[..., np.ndarray]  # (references, predictions, ids, labels) -> (n_examples, len(columns))
    score: Callable[[np.ndarray], np.ndarray]  # sums (..., len(columns)) -> scores (...)


_TP_FP_FN = ("tp", "fp", "fn")
STATISTICS: dict[str, Statistic] = {
    "ner_entity_f1": Statistic(_TP_FP_FN, _ner_rows, _score_f1),
    "pico_token_macro_f1": Statistic(tuple(f"{s}_{c}" for c in PICO_CLASSES for s in _TP_FP_FN), _pico_rows,
                                     _score_pico),
    "re_micro_f1": Statistic(_TP_FP_FN, _re_rows, _score_f1),
    "re_binary_f1": Statistic(_TP_FP_FN, _binary_rows, _score_f1),
    "hoc_micro_f1": Statistic(_TP_FP_FN, _hoc_rows, _score_f1),
    "pearson": Statistic(("n", "x", "y", "xx", "yy", "xy"), _pearson_rows, _score_pearson),
    "accuracy": Statistic(("correct", "n"), _accuracy_rows, _score_accuracy),
}
assert {s.metric for s in registry.DATASETS} <= set(STATISTICS)
assert set(STATISTICS) <= set(metrics.METRICS)


# --------------------------------------------------------------------------- per-unit statistics


@dataclass(frozen=True)
class UnitStats:
    """Summed counts per resampling unit of one system's predictions on one dataset.

    ``keys`` are the unit keys in order of first appearance in the examples; ``counts[u]`` is the sum of
    the per-example counts of unit ``u``. :meth:`score` with no weights is the metric on all examples;
    with a weight vector (or a matrix, one resample per row) it is the metric on the multiset of units
    that takes unit ``u`` ``weights[..., u]`` times.
    """

    dataset: str
    metric: str
    unit: str
    keys: tuple[str, ...]
    columns: tuple[str, ...]
    counts: np.ndarray  # (n_units, len(columns)), float64

    @property
    def n_units(self) -> int:
        return len(self.keys)

    def score(self, weights: np.ndarray | None = None) -> float | np.ndarray:
        """Metric (0-100) on all units, or on each weighted resample (``weights`` shape (..., n_units))."""
        if weights is None:
            return float(score_from_sums(self.metric, self.counts.sum(axis=0)))
        return score_from_sums(self.metric, np.asarray(weights, dtype=float) @ self.counts)


def score_from_sums(metric: str, sums: np.ndarray) -> np.ndarray:
    """The metric (0-100) from summed unit counts, vectorised over all leading axes of ``sums``."""
    return STATISTICS[metric].score(np.asarray(sums, dtype=float))


def unit_stats(dataset: str, references: Sequence[Any], predictions: Sequence[Any],
               ids: Sequence[str]) -> UnitStats:
    """Validate like :func:`medibio.tasks.metrics.evaluate` and reduce each resampling unit to its counts."""
    spec = registry.get(dataset, "blurb")
    stat = STATISTICS[spec.metric]
    ids = tuple(map(str, ids))
    _check_pairs(references, predictions, ids)
    labels = spec.labels or None
    if spec.metric == "re_micro_f1":
        rows = stat.rows(references, predictions, ids, labels, spec.negative_label)
    else:
        rows = stat.rows(references, predictions, ids, labels)
    order, index = _units_of(spec.name, ids)
    counts = np.zeros((len(order), rows.shape[1]))
    np.add.at(counts, index, rows)
    return UnitStats(spec.name, spec.metric, UNITS[spec.name].name, order, stat.columns, counts)


@functools.lru_cache(maxsize=32)
def _units_of(dataset: str, ids: tuple[str, ...]) -> tuple[tuple[str, ...], np.ndarray]:
    """The units of ``dataset`` the examples ``ids`` fall in, in order of first appearance, and each example's
    unit number: the same for every run scored on one test set, so worked out once (a sixth of a ChemProt file's
    scoring)."""
    key = UNITS[dataset].key
    keys = [key(i) for i in ids]
    order = tuple(dict.fromkeys(keys))
    position = {k: u for u, k in enumerate(order)}
    index = np.fromiter(map(position.__getitem__, keys), dtype=np.int64, count=len(keys))
    index.flags.writeable = False  # shared by every call that finds it here
    return order, index
