"""SciERC scores as the literature computes them (all micro-averaged over the documents of a split).

* **NER**: a predicted entity is correct when its boundaries and its type equal a gold entity's.
* **Relation** (DyGIE++'s "relation", Luan et al. 2019): a predicted relation is correct when the boundaries
  of both arguments and the relation type are right; entity types are not checked.
* **Rel+** (PURE's strict "Rel+", Zhong & Chen 2021): as above, and both arguments' *predicted* entity types
  must be right too. Both relation scores are end-to-end: relations are predicted between predicted entities.
* **Coreference**: the CoNLL-2012 average of the F1 of MUC (links), B³ (mentions) and CEAF-φ4 (entities),
  computed as the official reference scorer (v8.01) does: numerators and denominators are summed over
  documents, singleton clusters count for B³ and CEAF, and a mention is its exact boundaries. The tests check
  agreement with the scorer's own published test cases.

Every function returns ``{"p", "r", "f1"}`` on 0-100 plus the counts behind them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

Cluster = Sequence[tuple[int, int]]


def prf(correct: float, predicted: float, gold: float) -> dict[str, float]:
    """Precision, recall, F1 on 0-100 (0 where undefined) from counts."""
    p = correct / predicted if predicted else 0.0
    r = correct / gold if gold else 0.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return {"p": 100 * p, "r": 100 * r, "f1": 100 * f, "correct": correct, "predicted": predicted, "gold": gold}


def _pr_f(num_r: float, den_r: float, num_p: float, den_p: float) -> dict[str, float]:
    r = num_r / den_r if den_r else 0.0
    p = num_p / den_p if den_p else 0.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return {"p": 100 * p, "r": 100 * r, "f1": 100 * f}


def ner_scores(gold: Iterable[Iterable[tuple[int, int, str]]],
               predicted: Iterable[Iterable[tuple[int, int, str]]]) -> dict[str, float]:
    """Micro P/R/F1 over documents; each argument is one entity list per document."""
    c = p = g = 0
    for gold_doc, pred_doc in zip(gold, predicted, strict=True):
        gs, ps = {tuple(e) for e in gold_doc}, {tuple(e) for e in pred_doc}
        c += len(gs & ps)
        p += len(ps)
        g += len(gs)
    return prf(c, p, g)


def ner_by_type(gold: Iterable[Iterable[tuple[int, int, str]]],
                predicted: Iterable[Iterable[tuple[int, int, str]]]) -> dict[str, dict[str, float]]:
    """Per entity type P/R/F1 (the error breakdown of the chapter)."""
    c: Counter[str] = Counter()
    p: Counter[str] = Counter()
    g: Counter[str] = Counter()
    for gold_doc, pred_doc in zip(gold, predicted, strict=True):
        gs, ps = {tuple(e) for e in gold_doc}, {tuple(e) for e in pred_doc}
        c.update(e[2] for e in gs & ps)
        p.update(e[2] for e in ps)
        g.update(e[2] for e in gs)
    return {t: prf(c[t], p[t], g[t]) for t in sorted(set(g) | set(p))}


def _relation_keys(relations: Iterable[Sequence[Any]], entity_types: Mapping[tuple[int, int], str],
                   strict: bool) -> set[tuple]:
    out = set()
    for s1, e1, s2, e2, label in relations:
        key: tuple = (s1, e1, s2, e2, label)
        if strict:
            key += (entity_types.get((s1, e1)), entity_types.get((s2, e2)))
        out.add(key)
    return out


def relation_scores(gold_relations: Iterable[Iterable[Sequence[Any]]],
                    gold_entities: Iterable[Iterable[tuple[int, int, str]]],
                    predicted_relations: Iterable[Iterable[Sequence[Any]]],
                    predicted_entities: Iterable[Iterable[tuple[int, int, str]]],
                    strict: bool = False, by_type: bool = False) -> Any:
    """Relation P/R/F1 over documents: boundaries + relation type (``strict=False``, DyGIE++) or also both
    argument types as predicted by the entity model (``strict=True``, PURE's Rel+). ``by_type`` returns one
    score per relation type instead."""
    c: Counter[str] = Counter()
    p: Counter[str] = Counter()
    g: Counter[str] = Counter()
    for g_rel, g_ent, p_rel, p_ent in zip(gold_relations, gold_entities, predicted_relations, predicted_entities,
                                          strict=True):
        gold_types = {(s, e): t for s, e, t in g_ent}
        pred_types = {(s, e): t for s, e, t in p_ent}
        gs = _relation_keys(g_rel, gold_types, strict)
        ps = _relation_keys(p_rel, pred_types, strict)
        for bucket, keys in ((c, gs & ps), (p, ps), (g, gs)):
            bucket.update(k[4] for k in keys)
    if by_type:
        return {t: prf(c[t], p[t], g[t]) for t in sorted(set(g) | set(p))}
    return prf(sum(c.values()), sum(p.values()), sum(g.values()))


def _mention_map(clusters: Iterable[Cluster]) -> dict[tuple[int, int], int]:
    return {tuple(m): i for i, c in enumerate(clusters) for m in c}


def unique_mentions(clusters: Iterable[Cluster]) -> list[list[tuple[int, int]]]:
    """Clusters with each mention kept only where it first occurs (empty clusters dropped): the reference
    scorer ignores a repeated mention the same way."""
    seen: set[tuple[int, int]] = set()
    out = []
    for cluster in clusters:
        kept = []
        for m in cluster:
            m = (int(m[0]), int(m[1]))
            if m not in seen:
                seen.add(m)
                kept.append(m)
        if kept:
            out.append(kept)
    return out


def muc_counts(key: Sequence[Cluster], response: Sequence[Cluster]) -> tuple[int, int, int, int]:
    """``(recall numerator, recall denominator, precision numerator, precision denominator)`` of MUC
    (Vilain et al. 1995): for each key entity K, |K| minus the number of parts the response splits it into
    (mentions the response lacks are parts of their own), over |K| - 1; precision swaps the roles."""

    def side(gold: Sequence[Cluster], other: Sequence[Cluster]) -> tuple[int, int]:
        where = _mention_map(other)
        num = den = 0
        for cluster in gold:
            mentions = {tuple(m) for m in cluster}
            parts = {where.get(m, ("alone", m)) for m in mentions}
            num += len(mentions) - len(parts)
            den += len(mentions) - 1
        return num, den

    rn, rd = side(key, response)
    pn, pd = side(response, key)
    return rn, rd, pn, pd


def b_cubed_counts(key: Sequence[Cluster], response: Sequence[Cluster]) -> tuple[float, int, float, int]:
    """B³ (Bagga & Baldwin 1998) as sums over mentions: recall sums |K∩R|²/|K| over key entities K and
    response entities R, divided by the number of key mentions; precision swaps the roles."""

    def side(gold: Sequence[Cluster], other: Sequence[Cluster]) -> tuple[float, int]:
        where = _mention_map(other)
        num, den = 0.0, 0
        for cluster in gold:
            mentions = {tuple(m) for m in cluster}
            overlap = Counter(where[m] for m in mentions if m in where)
            num += sum(n * n for n in overlap.values()) / len(mentions)
            den += len(mentions)
        return num, den

    rn, rd = side(key, response)
    pn, pd = side(response, key)
    return rn, rd, pn, pd


def ceaf_e_counts(key: Sequence[Cluster], response: Sequence[Cluster]) -> tuple[float, int, float, int]:
    """Entity-based CEAF (Luo 2005) with φ4(K, R) = 2|K∩R| / (|K| + |R|): the best one-to-one alignment of
    key and response entities (Hungarian algorithm), its total similarity over the number of key (recall) or
    response (precision) entities."""
    from scipy.optimize import linear_sum_assignment

    keys = [{tuple(m) for m in c} for c in key]
    resp = [{tuple(m) for m in c} for c in response]
    if not keys or not resp:
        return 0.0, len(keys), 0.0, len(resp)
    sim = np.zeros((len(keys), len(resp)))
    for i, k in enumerate(keys):
        for j, r in enumerate(resp):
            inter = len(k & r)
            if inter:
                sim[i, j] = 2 * inter / (len(k) + len(r))
    rows, cols = linear_sum_assignment(-sim)
    total = float(sim[rows, cols].sum())
    return total, len(keys), total, len(resp)


def coref_scores(key_docs: Iterable[Sequence[Cluster]], response_docs: Iterable[Sequence[Cluster]]) -> dict[str, Any]:
    """MUC, B³ and CEAF-φ4 (recall/precision sums over documents, as the reference scorer) and their CoNLL
    average: ``{"muc": {...}, "b3": {...}, "ceafe": {...}, "p", "r", "f1"}`` (the top level is the average)."""
    sums = {name: [0.0, 0.0, 0.0, 0.0] for name in ("muc", "b3", "ceafe")}
    for key, response in zip(key_docs, response_docs, strict=True):
        key, response = unique_mentions(key), unique_mentions(response)
        for name, fn in (("muc", muc_counts), ("b3", b_cubed_counts), ("ceafe", ceaf_e_counts)):
            for i, v in enumerate(fn(key, response)):
                sums[name][i] += v
    out: dict[str, Any] = {name: _pr_f(*vals) for name, vals in sums.items()}
    for part in ("p", "r", "f1"):
        out[part] = sum(out[n][part] for n in ("muc", "b3", "ceafe")) / 3
    return out


def score_documents(gold: Sequence[Any], predicted: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """All SciERC scores of a split: ``gold`` are :class:`~medibio.tasks.scierc.Document`; ``predicted`` one
    ``{"entities", "relations", "clusters"}`` mapping per document, in the same order."""
    g_ent = [d.all_entities() for d in gold]
    p_ent = [[tuple(e) for e in p["entities"]] for p in predicted]
    g_rel = [d.all_relations() for d in gold]
    p_rel = [[tuple(r) for r in p["relations"]] for p in predicted]
    coref = coref_scores([d.clusters for d in gold], [[[tuple(m) for m in c] for c in p["clusters"]]
                                                      for p in predicted])
    return {"ner": ner_scores(g_ent, p_ent),
            "relation": relation_scores(g_rel, g_ent, p_rel, p_ent, strict=False),
            "relation_strict": relation_scores(g_rel, g_ent, p_rel, p_ent, strict=True),
            "coref": coref}


def flat(scores: Mapping[str, Any]) -> dict[str, float]:
    """``ner_f1``, ``rel_p``, ``relplus_f1``, ``coref_f1``, ``muc_f1``... for tables and the run record."""
    names = {"ner": "ner", "relation": "rel", "relation_strict": "relplus", "coref": "coref"}
    out: dict[str, float] = {}
    for key, short in names.items():
        for part in ("p", "r", "f1"):
            out[f"{short}_{part}"] = round(float(scores[key][part]), 4)
    for sub in ("muc", "b3", "ceafe"):
        out[f"{sub}_f1"] = round(float(scores["coref"][sub]["f1"]), 4)
    return out
