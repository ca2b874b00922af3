"""BLURB evaluation metrics, one function per metric name, all reporting ``"score"`` on the 0-100 scale.

The registry (:mod:`medibio.tasks.registry`) names each dataset's metric; :func:`evaluate` looks it up and
passes the dataset's label set and negative label, :func:`compute` runs any metric by name. Every metric
returns a flat ``dict[str, float]``: ``"score"`` (0-100) plus extras (precision/recall on 0-100, counts as
floats) so run records and tables can store them as they are.

How each BLURB metric is read here (Gu et al., BLURB paper, Table 3 and Section 4):

* **NER, entity-level F1** (``ner_entity_f1``): exact span match, scored by ``seqeval`` in its default
  (conlleval-compatible) mode. BLURB's tags are untyped ``B``/``I``/``O``; they are mapped to ``B-ENT``/
  ``I-ENT`` so seqeval sees one entity type. Conlleval mode (not ``mode="strict"``) is used because the
  BLURB/LinkBERT reference code calls seqeval with its defaults: an ``I`` that follows ``O`` opens a new
  entity instead of being dropped. A predicted span that only partly overlaps a gold span counts as one
  false positive and one false negative. Input is one tag per *word*: the model side predicts on the
  first sub-token of each word and maps back to words before scoring.
* **PICO, word-level macro F1** (``pico_token_macro_f1``): the paper tallies word-level F1 for each PIO
  element and averages over the elements. Read here as: for each of ``I-PAR``, ``I-INT``, ``I-OUT``, count
  word-level TP/FP/FN pooled over the whole split, take that element's F1, then the unweighted mean of
  the three; ``O`` is not a class of its own. (LinkBERT's re-implementation instead averages seqeval span
  F1 per type; the paper's text says word level, which is what this follows.)
* **RE, micro F1** (``re_micro_f1``, ChemProt/DDI): micro F1 over the positive relation classes. The
  negative label never yields a hit: TP = pred == gold != neg; FP = pred != neg and pred != gold;
  FN = gold != neg and pred != gold. A negative pair predicted as a relation is therefore an FP, and a
  relation predicted with the wrong type is both an FP and an FN.
* **GAD** (``re_binary_f1``): F1 of the positive class ``"1"``; with a single positive class this equals
  the micro F1 above with negative label ``"0"``, which is what the paper's "Micro F1" amounts to.
* **BIOSSES** (``pearson``): Pearson's r (``scipy.stats.pearsonr``) times 100. A constant prediction
  makes r undefined; it is reported as 0 with ``constant_input = 1`` instead of NaN, so aggregates stay
  finite and the case stays visible.
* **HoC** (``hoc_micro_f1``): the paper asks for "average micro F1 across the ten hallmarks". Read here
  as the reference implementation computes it (BLURB/LinkBERT ``utils_hoc``): every (abstract, hallmark)
  pair is one binary decision, TP/FP/FN are summed over all pairs of all abstracts, and one F1 is taken
  from the sums (micro average across the ten hallmark classes). Reported alongside: ``example_f1``
  (per abstract, F1 of predicted vs gold label sets, then the mean; an abstract with no gold and no
  predicted hallmark counts as F1 = 100, a correct "no hallmark" call), ``macro_f1`` (unweighted mean of
  the ten per-hallmark F1s, the literal "average across hallmarks" alternative) and ``f1_<hallmark>``.
* **QA** (``accuracy``): fraction of exactly matching labels.

Generic metrics for intermediate tasks: ``macro_f1``, ``micro_f1`` (optionally without a negative
label), ``spearman``, ``kendall_tau``, ``map`` (mean average precision of ranked lists against sets of
relevant ids) and ``ndcg`` (graded relevance, linear gain, log2 discount).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from medibio.core.errors import MedibioError
from medibio.tasks import registry
from medibio.tasks.spec import TaskSpec

MetricFn = Callable[..., dict[str, float]]

METRICS: dict[str, MetricFn] = {}

NER_ENTITY_TYPE = "ENT"
PICO_CLASSES = ("I-PAR", "I-INT", "I-OUT")


class MetricInputError(MedibioError, ValueError):
    """References and predictions cannot be scored together; the message names the offending example."""


def register(name: str) -> Callable[[MetricFn], MetricFn]:
    """Add a metric function to :data:`METRICS` under ``name``."""

    def deco(fn: MetricFn) -> MetricFn:
        METRICS[name] = fn
        return fn

    return deco


def compute(
    metric_name: str,
    references: Sequence[Any],
    predictions: Sequence[Any],
    **kw: Any,
) -> dict[str, float]:
    """Run metric ``metric_name``; ``kw`` goes to the metric (``ids``, ``labels``, ``negative_label``, ``k``)."""
    try:
        fn = METRICS[metric_name]
    except KeyError:
        raise KeyError(f"unknown metric {metric_name!r}; known: {', '.join(sorted(METRICS))}") from None
    if kw.get("ids") is not None:
        kw["ids"] = list(kw["ids"])  # a datasets column indexes slowly; error messages index it per example
    return fn(references, predictions, **kw)


def score(spec: TaskSpec, references: Sequence[Any], predictions: Sequence[Any],
          ids: Sequence[str] | None = None) -> dict[str, float]:
    """Score any task (BLURB dataset or intermediate task) with its metric, label set and negative label:
    ``score`` on 0-100 plus the metric's extras."""
    kw: dict[str, Any] = {"ids": ids}
    if spec.labels:
        kw["labels"] = spec.labels
    if spec.negative_label is not None:
        kw["negative_label"] = spec.negative_label
    return compute(spec.metric, list(references), list(predictions), **kw)


def evaluate(dataset_name: str, references: Sequence[Any], predictions: Sequence[Any],
             ids: Sequence[str] | None = None) -> dict[str, float]:
    """:func:`score` of the BLURB dataset ``dataset_name``."""
    return score(registry.get(dataset_name, "blurb"), references, predictions, ids)


# --------------------------------------------------------------------------- validation helpers


def _where(i: int, ids: Sequence[str] | None) -> str:
    return f"example {ids[i]!r} (#{i})" if ids is not None else f"example #{i}"


def _check_pairs(references: Sequence[Any], predictions: Sequence[Any], ids: Sequence[str] | None) -> int:
    n = len(references)
    if len(predictions) != n:
        raise MetricInputError(f"{n} references but {len(predictions)} predictions: they must pair one to one")
    if ids is not None and len(ids) != n:
        raise MetricInputError(f"{n} references but {len(ids)} ids")
    if n == 0:
        raise MetricInputError("nothing to score: no examples")
    return n


def _check_labels(
    values: Sequence[Any], allowed: Sequence[str] | None, ids: Sequence[str] | None, what: str
) -> None:
    if allowed is None:
        return
    known = set(allowed)
    try:
        if known.issuperset(values):  # all known, checked at once; else the loop below names the first one
            return
    except TypeError:  # an unhashable value: not a label either
        pass
    for i, value in enumerate(values):
        if value not in known:
            raise MetricInputError(
                f"{what} of {_where(i, ids)}: unknown label {value!r}; expected one of {', '.join(allowed)}"
            )


def _checked_labels(references: Sequence[Any], predictions: Sequence[Any], ids: Sequence[str] | None,
                    labels: Sequence[str] | None) -> int:
    """The number of examples, once gold and predicted labels pair up and every label is a known one."""
    n = _check_pairs(references, predictions, ids)
    _check_labels(references, labels, ids, "gold label")
    _check_labels(predictions, labels, ids, "predicted label")
    return n


def _f1(p: float, r: float) -> float:
    return 2 * p * r / (p + r) if p + r > 0 else 0.0


def _prf(tp: int, fp: int, fn: int) -> tuple[float, float, float]:
    """Precision, recall, F1 (0-1) from counts; 0 where a denominator is 0."""
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    return p, r, _f1(p, r)


# --------------------------------------------------------------------------- NER


def _to_seqeval(tag: Any, i: int, ids: Sequence[str] | None, what: str) -> str:
    if tag in ("B", "I"):
        return f"{tag}-{NER_ENTITY_TYPE}"
    if tag == "O" or (isinstance(tag, str) and tag[:2] in ("B-", "I-") and len(tag) > 2):
        return tag
    raise MetricInputError(f"{what} of {_where(i, ids)}: unknown NER tag {tag!r}; expected B, I or O")


def _check_sequences(references: Sequence[Sequence[Any]], predictions: Sequence[Sequence[Any]],
                     ids: Sequence[str] | None, labels: Sequence[str] | None) -> int:
    """The number of examples, once each pairs a gold and a predicted tag list of one length (one tag per
    word) and, given ``labels``, every tag is one of them."""
    n = _check_pairs(references, predictions, ids)
    for i, (ref, pred) in enumerate(zip(references, predictions, strict=True)):
        if isinstance(ref, str) or isinstance(pred, str):
            raise MetricInputError(f"{_where(i, ids)}: expected a list of tags per example, got a string")
        if len(ref) != len(pred):
            raise MetricInputError(
                f"{_where(i, ids)}: {len(ref)} gold tags but {len(pred)} predicted tags (one tag per word)"
            )
        _check_labels(ref, labels, None, f"gold tags of {_where(i, ids)}")
        _check_labels(pred, labels, None, f"predicted tags of {_where(i, ids)}")
    return n


@register("ner_entity_f1")
def ner_entity_f1(
    references: Sequence[Sequence[str]],
    predictions: Sequence[Sequence[str]],
    ids: Sequence[str] | None = None,
    labels: Sequence[str] | None = None,
    **_: Any,
) -> dict[str, float]:
    """Entity-level F1 (exact spans, seqeval conlleval mode) over word-level BIO tags."""
    from seqeval.metrics.sequence_labeling import get_entities, precision_recall_fscore_support

    n = _check_sequences(references, predictions, ids, labels)
    y_true, y_pred = [], []
    for i, (ref, pred) in enumerate(zip(references, predictions, strict=True)):
        y_true.append([_to_seqeval(t, i, ids, "gold tags") for t in ref])
        y_pred.append([_to_seqeval(t, i, ids, "predicted tags") for t in pred])
    p, r, f, gold_entities = precision_recall_fscore_support(y_true, y_pred, average="micro", zero_division=0)
    return {
        "score": 100.0 * float(f),
        "precision": 100.0 * float(p),
        "recall": 100.0 * float(r),
        "gold_entities": float(gold_entities),
        "pred_entities": float(len(get_entities(y_pred))),
        "n": float(n),
    }


# --------------------------------------------------------------------------- PICO


@register("pico_token_macro_f1")
def pico_token_macro_f1(
    references: Sequence[Sequence[str]],
    predictions: Sequence[Sequence[str]],
    ids: Sequence[str] | None = None,
    labels: Sequence[str] | None = None,
    **_: Any,
) -> dict[str, float]:
    """Word-level F1 per PIO element (I-PAR, I-INT, I-OUT; O excluded), macro-averaged."""
    from sklearn.metrics import precision_recall_fscore_support

    allowed = tuple(labels) if labels is not None else (*PICO_CLASSES, "O")
    n = _check_sequences(references, predictions, ids, allowed)
    y_true: list[str] = []
    y_pred: list[str] = []
    for ref, pred in zip(references, predictions, strict=True):
        y_true.extend(ref)
        y_pred.extend(pred)
    classes = [c for c in allowed if c != "O"]
    p, r, f, support = precision_recall_fscore_support(
        y_true, y_pred, labels=classes, average=None, zero_division=0
    )
    out = {"score": 100.0 * float(f.mean())}
    out["precision"] = 100.0 * float(p.mean())
    out["recall"] = 100.0 * float(r.mean())
    for cls, fi, si in zip(classes, f, support, strict=True):
        out[f"f1_{cls}"] = 100.0 * float(fi)
        out[f"support_{cls}"] = float(si)
    out["words"] = float(len(y_true))
    out["n"] = float(n)
    return out


# --------------------------------------------------------------------------- relation extraction / QA


@register("re_micro_f1")
def re_micro_f1(
    references: Sequence[str],
    predictions: Sequence[str],
    negative_label: str | None = None,
    ids: Sequence[str] | None = None,
    labels: Sequence[str] | None = None,
    **_: Any,
) -> dict[str, float]:
    """Micro F1 over the positive classes; the negative label never counts as a hit."""
    if negative_label is None:
        raise ValueError("re_micro_f1 needs negative_label (use evaluate(dataset, ...) to get it from the registry)")
    n = _checked_labels(references, predictions, ids, labels)
    tp = fp = fn = 0
    for gold, pred in zip(references, predictions, strict=True):
        if pred == gold:
            tp += gold != negative_label
            continue
        fp += pred != negative_label
        fn += gold != negative_label
    p, r, f = _prf(tp, fp, fn)
    return {"score": 100.0 * f, "precision": 100.0 * p, "recall": 100.0 * r,
            "tp": float(tp), "fp": float(fp), "fn": float(fn), "n": float(n)}


@register("re_binary_f1")
def re_binary_f1(
    references: Sequence[str],
    predictions: Sequence[str],
    positive_label: str = "1",
    ids: Sequence[str] | None = None,
    labels: Sequence[str] | None = None,
    **_: Any,
) -> dict[str, float]:
    """F1 of the positive class (GAD: ``"1"``)."""
    from sklearn.metrics import precision_recall_fscore_support

    n = _checked_labels(references, predictions, ids, labels)
    p, r, f, _support = precision_recall_fscore_support(
        list(references), list(predictions), labels=[positive_label], average=None, zero_division=0
    )
    return {"score": 100.0 * float(f[0]), "precision": 100.0 * float(p[0]), "recall": 100.0 * float(r[0]),
            "n": float(n)}


@register("accuracy")
def accuracy(
    references: Sequence[Any],
    predictions: Sequence[Any],
    ids: Sequence[str] | None = None,
    labels: Sequence[str] | None = None,
    **_: Any,
) -> dict[str, float]:
    """Share of predictions equal to the gold label."""
    n = _checked_labels(references, predictions, ids, labels)
    correct = sum(g == p for g, p in zip(references, predictions, strict=True))
    return {"score": 100.0 * correct / n, "correct": float(correct), "n": float(n)}


def _averaged_f1(
    references: Sequence[str],
    predictions: Sequence[str],
    average: str,
    ids: Sequence[str] | None,
    labels: Sequence[str] | None,
    negative_label: str | None,
) -> dict[str, float]:
    from sklearn.metrics import precision_recall_fscore_support

    n = _checked_labels(references, predictions, ids, labels)
    classes = list(labels) if labels is not None else sorted(set(references) | set(predictions))
    classes = [c for c in classes if c != negative_label]
    p, r, f, _support = precision_recall_fscore_support(
        list(references), list(predictions), labels=classes, average=average, zero_division=0
    )
    return {"score": 100.0 * float(f), "precision": 100.0 * float(p), "recall": 100.0 * float(r),
            "n": float(n)}


@register("macro_f1")
def macro_f1(
    references: Sequence[str],
    predictions: Sequence[str],
    ids: Sequence[str] | None = None,
    labels: Sequence[str] | None = None,
    negative_label: str | None = None,
    **_: Any,
) -> dict[str, float]:
    """Unweighted mean of per-class F1 (over ``labels``, or every class seen; minus ``negative_label``)."""
    return _averaged_f1(references, predictions, "macro", ids, labels, negative_label)


@register("micro_f1")
def micro_f1(
    references: Sequence[str],
    predictions: Sequence[str],
    ids: Sequence[str] | None = None,
    labels: Sequence[str] | None = None,
    negative_label: str | None = None,
    **_: Any,
) -> dict[str, float]:
    """Micro F1 over all classes (= accuracy for single-label data) or over all but ``negative_label``."""
    return _averaged_f1(references, predictions, "micro", ids, labels, negative_label)


# --------------------------------------------------------------------------- regression / correlation


def _floats(values: Sequence[Any], ids: Sequence[str] | None, what: str) -> list[float]:
    out = []
    for i, v in enumerate(values):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise MetricInputError(f"{what} of {_where(i, ids)}: expected a finite number, got {v!r}")
        out.append(float(v))
    return out


def _correlation(
    name: str, references: Sequence[Any], predictions: Sequence[Any], ids: Sequence[str] | None
) -> dict[str, float]:
    from scipy import stats

    n = _check_pairs(references, predictions, ids)
    if n < 2:
        raise MetricInputError(f"{name} needs at least 2 examples, got {n}")
    x = _floats(references, ids, "gold value")
    y = _floats(predictions, ids, "predicted value")
    if len(set(x)) == 1 or len(set(y)) == 1:
        return {"score": 0.0, "p_value": 1.0, "constant_input": 1.0, "n": float(n)}
    fn = {"pearson": stats.pearsonr, "spearman": stats.spearmanr, "kendall_tau": stats.kendalltau}[name]
    result = fn(x, y)
    return {"score": 100.0 * float(result.statistic), "p_value": float(result.pvalue), "n": float(n)}


@register("pearson")
def pearson(
    references: Sequence[float], predictions: Sequence[float], ids: Sequence[str] | None = None, **_: Any
) -> dict[str, float]:
    """Pearson's r x 100 (BIOSSES); 0 with ``constant_input`` when either side is constant."""
    return _correlation("pearson", references, predictions, ids)


@register("spearman")
def spearman(
    references: Sequence[float], predictions: Sequence[float], ids: Sequence[str] | None = None, **_: Any
) -> dict[str, float]:
    """Spearman's rho x 100."""
    return _correlation("spearman", references, predictions, ids)


@register("kendall_tau")
def kendall_tau(
    references: Sequence[float], predictions: Sequence[float], ids: Sequence[str] | None = None, **_: Any
) -> dict[str, float]:
    """Kendall's tau-b x 100 (scipy's default variant, which corrects for ties)."""
    return _correlation("kendall_tau", references, predictions, ids)


# --------------------------------------------------------------------------- multi-label (HoC)


def _label_set(value: Any, allowed: Sequence[str] | None, where: str, what: str) -> set[str]:
    if isinstance(value, str) or not isinstance(value, (list, tuple, set, frozenset)):
        raise MetricInputError(f"{what} of {where}: expected a list of labels, got {value!r}")
    items = list(value)
    if len(set(items)) != len(items):
        raise MetricInputError(f"{what} of {where}: repeated label in {items!r}")
    if allowed is not None:
        _check_labels(items, allowed, None, f"{what} of {where}")
    return set(items)


@register("hoc_micro_f1")
def hoc_micro_f1(
    references: Sequence[Sequence[str]],
    predictions: Sequence[Sequence[str]],
    ids: Sequence[str] | None = None,
    labels: Sequence[str] | None = None,
    **_: Any,
) -> dict[str, float]:
    """Micro F1 over all (abstract, hallmark) pairs; extras: example-based F1, macro F1, per-hallmark F1."""
    n = _check_pairs(references, predictions, ids)
    gold_sets = [_label_set(v, labels, _where(i, ids), "gold labels") for i, v in enumerate(references)]
    pred_sets = [_label_set(v, labels, _where(i, ids), "predicted labels") for i, v in enumerate(predictions)]
    classes = list(labels) if labels is not None else sorted(set().union(*gold_sets, *pred_sets))
    tp = fp = fn = 0
    per_label = {c: [0, 0, 0] for c in classes}
    example_f1 = []
    for g, p in zip(gold_sets, pred_sets, strict=True):
        hit, extra, miss = len(g & p), len(p - g), len(g - p)
        tp, fp, fn = tp + hit, fp + extra, fn + miss
        example_f1.append(1.0 if not g and not p else 2 * hit / (len(g) + len(p)))
        for c in g | p:
            counts = per_label[c]
            counts[0] += c in g and c in p
            counts[1] += c in p and c not in g
            counts[2] += c in g and c not in p
    prec, rec, f = _prf(tp, fp, fn)
    label_f1 = {c: _prf(*per_label[c])[2] for c in classes}
    out = {
        "score": 100.0 * f,
        "precision": 100.0 * prec,
        "recall": 100.0 * rec,
        "example_f1": 100.0 * sum(example_f1) / n,
        "macro_f1": 100.0 * sum(label_f1.values()) / len(classes) if classes else 0.0,
    }
    out.update({f"f1_{c}": 100.0 * v for c, v in label_f1.items()})
    out["n"] = float(n)
    return out


@register("multilabel_macro_f1")
def multilabel_macro_f1(
    references: Sequence[Sequence[str]],
    predictions: Sequence[Sequence[str]],
    ids: Sequence[str] | None = None,
    labels: Sequence[str] | None = None,
    **_: Any,
) -> dict[str, float]:
    """Macro F1 over labels of a multi-label task (SciRepEval fields of study); micro F1 as an extra."""
    out = hoc_micro_f1(references, predictions, ids=ids, labels=labels)
    out["micro_f1"] = out["score"]
    out["score"] = out["macro_f1"]
    return out


# --------------------------------------------------------------------------- ranking


def _ranked(pred: Any, where: str, k: int | None) -> list[Any]:
    if isinstance(pred, str) or not isinstance(pred, (list, tuple)):
        raise MetricInputError(f"prediction of {where}: expected a ranked list of ids, got {pred!r}")
    if len(set(pred)) != len(pred):
        raise MetricInputError(f"prediction of {where}: an id appears twice in the ranking")
    return list(pred[:k] if k is not None else pred)


@register("map")
def mean_average_precision(
    references: Sequence[Any],
    predictions: Sequence[Sequence[Any]],
    ids: Sequence[str] | None = None,
    k: int | None = None,
    **_: Any,
) -> dict[str, float]:
    """Mean average precision: refs are collections of relevant ids, preds ranked id lists (cut at ``k``).

    AP of one query = sum of precision@rank at each relevant hit / number of relevant ids. Queries with
    no relevant id are left out of the mean (as trec_eval does) and counted in ``queries_without_relevant``.
    """
    n = _check_pairs(references, predictions, ids)
    aps = []
    for i, (rel, pred) in enumerate(zip(references, predictions, strict=True)):
        relevant = set(rel)
        ranking = _ranked(pred, _where(i, ids), k)
        if not relevant:
            continue
        hits, total = 0, 0.0
        for rank, doc in enumerate(ranking, start=1):
            if doc in relevant:
                hits += 1
                total += hits / rank
        aps.append(total / len(relevant))
    score = 100.0 * sum(aps) / len(aps) if aps else 0.0
    return {"score": score, "queries": float(len(aps)), "queries_without_relevant": float(n - len(aps)),
            "n": float(n)}


@register("ndcg")
def ndcg(
    references: Sequence[Mapping[Any, float]],
    predictions: Sequence[Sequence[Any]],
    ids: Sequence[str] | None = None,
    k: int | None = None,
    **_: Any,
) -> dict[str, float]:
    """Mean nDCG@k: refs map id -> graded relevance, preds are ranked id lists.

    Gain is the relevance itself (linear, as trec_eval and sklearn), discount 1/log2(rank + 1); the ideal
    ranking sorts the reference grades. Unlisted ids have relevance 0. Queries whose ideal DCG is 0 are
    left out and counted in ``queries_without_relevant``.
    """
    n = _check_pairs(references, predictions, ids)
    values = []
    for i, (rel, pred) in enumerate(zip(references, predictions, strict=True)):
        if not isinstance(rel, Mapping):
            raise MetricInputError(f"reference of {_where(i, ids)}: expected a mapping id -> relevance")
        ranking = _ranked(pred, _where(i, ids), k)
        grades = _floats(list(rel.values()), None, f"relevance of {_where(i, ids)}")
        ideal = sorted(grades, reverse=True)[:k]
        idcg = sum(g / math.log2(r + 1) for r, g in enumerate(ideal, start=1))
        if idcg <= 0:
            continue
        dcg = sum(float(rel.get(doc, 0.0)) / math.log2(r + 1) for r, doc in enumerate(ranking, start=1))
        values.append(dcg / idcg)
    score = 100.0 * sum(values) / len(values) if values else 0.0
    return {"score": score, "queries": float(len(values)), "queries_without_relevant": float(n - len(values)),
            "n": float(n)}
