"""Ranking metrics for the SciRepEval proximity/search tasks from a cross-encoder's pair scores.

The loaders flatten each query into (query, candidate) pairs with ids ``<query id>::<candidate id>``.
Here the pairs are regrouped per query, candidates ranked by the model's relevance score, and MAP or nDCG
computed with :mod:`medibio.tasks.metrics` (binary relevance: label ``"1"``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from medibio.tasks import metrics
from medibio.tasks.ift_formats import PAIR_SEP


def split_pair_id(pair_id: str) -> tuple[str, str]:
    """``"q1::c7"`` -> ``("q1", "c7")``; a ValueError names an id without the separator."""
    query, sep, candidate = pair_id.partition(PAIR_SEP)
    if not sep or not query or not candidate:
        raise ValueError(f"pair id {pair_id!r} is not '<query id>{PAIR_SEP}<candidate id>'")
    return query, candidate


def group_by_query(ids: Sequence[str], labels: Sequence[str], scores: Sequence[float]
                   ) -> tuple[list[str], list[dict[str, float]], list[list[str]]]:
    """Per query (first-seen order): its id, ``{candidate: relevance}`` and candidates ranked by score.

    Ties keep the input order (a stable sort), so results do not depend on hash order.
    """
    if not len(ids) == len(labels) == len(scores):
        raise ValueError(f"ids, labels and scores differ in length ({len(ids)}, {len(labels)}, {len(scores)})")
    queries: dict[str, list[tuple[str, float, float]]] = {}
    for pair_id, label, score in zip(ids, labels, scores, strict=True):
        query, candidate = split_pair_id(pair_id)
        queries.setdefault(query, []).append((candidate, 1.0 if str(label) == "1" else 0.0, float(score)))
    qids, relevance, rankings = [], [], []
    for query, cands in queries.items():
        qids.append(query)
        relevance.append({c: rel for c, rel, _ in cands})
        rankings.append([c for c, _, _ in sorted(cands, key=lambda x: -x[2])])
    return qids, relevance, rankings


def ranking_score(metric: str, ids: Sequence[str], labels: Sequence[str], scores: Sequence[float],
                  k: int | None = None) -> dict[str, Any]:
    """``map`` or ``ndcg`` (0-100, key ``score``) over queries, from pair ids, gold labels and model scores."""
    qids, relevance, rankings = group_by_query(ids, labels, scores)
    if metric == "map":
        refs: list[Any] = [{c for c, rel in r.items() if rel > 0} for r in relevance]
    elif metric == "ndcg":
        refs = relevance
    else:
        raise ValueError(f"ranking metric must be 'map' or 'ndcg', got {metric!r}")
    return metrics.compute(metric, refs, rankings, ids=qids, k=k)
