"""Trivial baselines: the test score of a predictor that ignores its input.

Why: a fine-tuned score means little until it is set against what a constant answer earns. On PubMedQA
and BioASQ "always yes" already scores 55.2 and 67.1 accuracy, so a small model on a CPU budget can look
reasonable while having learnt nothing. The constant answer is taken from the *training* split (never the
test labels): its most frequent label (RE/QA), its most frequent label set (HoC), its mean (BIOSSES, whose
Pearson correlation is then 0 by definition) and the outside tag for NER/PICO (entity F1 0).
"""

from __future__ import annotations

from collections import Counter
from functools import lru_cache
from pathlib import Path
from typing import Any

from medibio.tasks import registry, units
from medibio.tasks.loaders import available_splits
from medibio.tasks.predictions import load_gold
from medibio.tasks.spec import Problem


def constant_answer(dataset: str, data_root: str | Path | None = None) -> Any:
    """The single answer the baseline gives to every example (taken from train, or dev without train)."""
    spec = registry.get(dataset, "blurb")
    problem = Problem(spec.problem)
    if problem is Problem.TOKEN:
        return "O" if "O" in spec.labels else spec.negative_label
    source = "train" if "train" in available_splits(spec.name, data_root) else "dev"
    labels = load_gold(spec.name, source, data_root).references
    if problem is Problem.REGRESSION:
        return sum(float(v) for v in labels) / len(labels)
    if problem is Problem.MULTILABEL:
        return list(Counter(tuple(sorted(v)) for v in labels).most_common(1)[0][0])
    return Counter(str(v) for v in labels).most_common(1)[0][0]


@lru_cache(maxsize=64)
def _majority_score(dataset: str, data_root: str | None) -> float:
    spec = registry.get(dataset, "blurb")
    test = load_gold(spec.name, "test", data_root)
    answer = constant_answer(spec.name, data_root)
    gold = test.references
    if Problem(spec.problem) is Problem.TOKEN:
        predictions: list[Any] = [[answer] * len(t) for t in gold]
    else:
        predictions = [answer] * len(gold)
    # scored by the unit statistics the claims resample (the metric's score, tested): seqeval took 0.7 s a set
    return float(units.unit_stats(spec.name, gold, predictions, test.ids).score())


def majority_score(dataset: str, data_root: str | Path | None = None) -> float:
    """Official-test score of the constant answer of :func:`constant_answer`."""
    return _majority_score(registry.get(dataset, "blurb").name, None if data_root is None else str(data_root))


def majority_scores(datasets: list[str] | None = None, data_root: str | Path | None = None) -> dict[str, float]:
    """``{dataset: baseline score}`` for the given (default: all) BLURB datasets that have a test split."""
    names = datasets or registry.names()
    return {name: majority_score(name, data_root) for name in names
            if "test" in available_splits(registry.get(name, "blurb").name, data_root)}


__all__ = ["constant_answer", "majority_score", "majority_scores"]
