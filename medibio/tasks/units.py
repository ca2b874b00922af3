"""Per-unit sufficient statistics of the BLURB metrics: every test score as a function of summed counts.

A bootstrap or permutation test re-scores a system on many re-weighted copies of the test set. Running
seqeval (or sklearn) thousands of times would be slow; instead each *resampling unit* (a sentence, a
document, an abstract, a pair, a question) is reduced once to a small vector of counts whose sum over
the units determines the metric exactly. A resample is then a weighted sum (``weights @ counts``) and
the score a closed-form function of that sum. The statistics, per metric of :mod:`medibio.tasks.metrics`:

* ``ner_entity_f1``: per unit (tp, fp, fn) of entity spans, with spans found by seqeval's own
  ``get_entities`` (conlleval mode, untyped tags mapped to ``B-ENT``/``I-ENT``, as the metric does); a span
  is a hit when gold and prediction have the same (type, start, end). Micro P/R/F1 from the sums.
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

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from medibio.tasks import metrics, registry
from medibio.tasks.metrics import (
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


def _ner_rows(references: Sequence[Any], predictions: Sequence[Any], ids: Sequence[str] | None,
              labels: Sequence[str] | None) -> np.ndarray:
    from seqeval.metrics.sequence_labeling import get_entities

    _check_sequences(references, predictions, ids, labels)
    out = np.zeros((len(references), 3))
    for i, (ref, pred) in enumerate(zip(references, predictions, strict=True)):
        gold = set(get_entities([_to_seqeval(t, i, ids, "gold tags") for t in ref]))
        found = set(get_entities([_to_seqeval(t, i, ids, "predicted tags") for t in pred]))
        hit = len(gold & found)
        out[i] = (hit, len(found) - hit, len(gold) - hit)
    return out


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
    _checked_labels(references, predictions, ids, labels)
    out = np.zeros((len(references), 3))
    for i, (gold, pred) in enumerate(zip(references, predictions, strict=True)):
        if pred == gold:
            out[i, 0] = gold != negative
        else:
            out[i, 1:] = (pred != negative, gold != negative)
    return out


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
    ids = [str(i) for i in ids]
    _check_pairs(references, predictions, ids)
    labels = spec.labels or None
    if spec.metric == "re_micro_f1":
        rows = stat.rows(references, predictions, ids, labels, spec.negative_label)
    else:
        rows = stat.rows(references, predictions, ids, labels)
    unit = UNITS[spec.name]
    keys = [unit.key(i) for i in ids]
    order = list(dict.fromkeys(keys))
    position = {k: u for u, k in enumerate(order)}
    index = np.fromiter((position[k] for k in keys), dtype=np.int64, count=len(keys))
    counts = np.zeros((len(order), rows.shape[1]))
    np.add.at(counts, index, rows)
    return UnitStats(spec.name, spec.metric, unit.name, tuple(order), stat.columns, counts)
