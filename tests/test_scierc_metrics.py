"""SciERC metrics on hand-computed cases, and coreference against the CoNLL-2012 reference scorer's cases."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from medibio.tasks import scierc_metrics as metrics

REFERENCE = json.loads((Path(__file__).parent / "fixtures" / "scierc_coref_reference.json").read_text())


def test_ner_exact_boundaries_and_type() -> None:
    gold = [[(0, 1, "Task"), (3, 3, "Method")], [(2, 2, "Metric")]]
    pred = [[(0, 1, "Task"), (3, 4, "Method")], [(2, 2, "Material"), (5, 5, "Generic")]]
    s = metrics.ner_scores(gold, pred)
    # 1 correct of 4 predicted, 3 gold: P 25, R 33.3, F1 = 2*.25*.333/(.583)
    assert s["correct"] == 1 and s["predicted"] == 4 and s["gold"] == 3
    assert s["p"] == pytest.approx(25.0) and s["r"] == pytest.approx(100 / 3)
    assert s["f1"] == pytest.approx(100 * 2 * 0.25 * (1 / 3) / (0.25 + 1 / 3))
    by_type = metrics.ner_by_type(gold, pred)
    assert by_type["Task"]["f1"] == 100.0 and by_type["Method"]["f1"] == 0.0 and by_type["Generic"]["p"] == 0.0


def test_relation_boundaries_versus_strict() -> None:
    gold_ent = [[(0, 1, "Method"), (3, 3, "Task"), (5, 6, "Material")]]
    gold_rel = [[(0, 1, 3, 3, "USED-FOR"), (5, 6, 3, 3, "USED-FOR")]]
    # both relations found with right boundaries; the second's head entity has the wrong predicted type
    pred_ent = [[(0, 1, "Method"), (3, 3, "Task"), (5, 6, "Method")]]
    pred_rel = [[(0, 1, 3, 3, "USED-FOR"), (5, 6, 3, 3, "USED-FOR"), (0, 1, 5, 6, "CONJUNCTION")]]
    loose = metrics.relation_scores(gold_rel, gold_ent, pred_rel, pred_ent, strict=False)
    strict = metrics.relation_scores(gold_rel, gold_ent, pred_rel, pred_ent, strict=True)
    assert (loose["correct"], loose["predicted"], loose["gold"]) == (2, 3, 2)
    assert (strict["correct"], strict["predicted"], strict["gold"]) == (1, 3, 2)
    assert loose["f1"] == pytest.approx(80.0) and strict["f1"] == pytest.approx(40.0)
    # direction matters and the relation type must match
    flipped = metrics.relation_scores(gold_rel, gold_ent, [[(3, 3, 0, 1, "USED-FOR")]], pred_ent)
    assert flipped["correct"] == 0
    per = metrics.relation_scores(gold_rel, gold_ent, pred_rel, pred_ent, by_type=True)
    assert per["USED-FOR"]["f1"] == 100.0 and per["CONJUNCTION"]["p"] == 0.0


def test_coref_hand_case() -> None:
    key = [[(0, 0), (2, 2), (4, 4)], [(6, 6), (8, 8)]]
    response = [[(0, 0), (2, 2)], [(4, 4), (6, 6), (9, 9)]]
    # MUC recall: (3-2)+(2-2) / (2+1) = 1/3; precision: (2-1)+(3-3) / (1+2) = 1/3
    assert metrics.muc_counts(key, response) == (1, 3, 1, 3)
    # B3 recall sums |K∩R|²/|K|: K1 gives 2²/3 + 1²/3, K2 gives 1²/2; precision sums |K∩R|²/|R|: R1 gives
    # 2²/2, R2 gives 1²/3 + 1²/3 (the extra mention 9 lowers it); both over 5 mentions
    rn, rd, pn, pd = metrics.b_cubed_counts(key, response)
    assert rn == pytest.approx(5 / 3 + 1 / 2) and rd == 5
    assert pn == pytest.approx(2 + 2 / 3) and pd == 5
    # CEAF-e: best alignment K1-R1 (4/5) and K2-R2 (2/5) = 6/5 over 2 key and 2 response entities
    total, nk, total_p, nr = metrics.ceaf_e_counts(key, response)
    assert total == pytest.approx(1.2) and nk == 2 and nr == 2 and total_p == total
    s = metrics.coref_scores([key], [response])
    assert s["f1"] == pytest.approx((s["muc"]["f1"] + s["b3"]["f1"] + s["ceafe"]["f1"]) / 3)
    assert s["ceafe"]["f1"] == pytest.approx(60.0)


def test_coref_sums_over_documents() -> None:
    doc_a = ([[(0, 0), (1, 1)]], [[(0, 0), (1, 1)]])
    doc_b = ([[(0, 0), (1, 1), (2, 2)]], [])
    s = metrics.coref_scores([doc_a[0], doc_b[0]], [doc_a[1], doc_b[1]])
    assert s["muc"]["r"] == pytest.approx(100 / 3) and s["muc"]["p"] == pytest.approx(100.0)


@pytest.mark.parametrize("case", REFERENCE["cases"], ids=lambda c: c["id"])
def test_agrees_with_reference_scorer(case) -> None:
    key = metrics.unique_mentions(case["key"])
    response = metrics.unique_mentions(case["response"])
    fns = {"muc": metrics.muc_counts, "bcub": metrics.b_cubed_counts, "ceafe": metrics.ceaf_e_counts}
    for name, (recall, precision, f1) in case["expected"].items():
        got = metrics._pr_f(*fns[name](key, response))
        assert round(got["r"] / 100, 4) == pytest.approx(round(recall, 4), abs=1e-4), name
        assert round(got["p"] / 100, 4) == pytest.approx(round(precision, 4), abs=1e-4), name
        assert round(got["f1"] / 100, 4) == pytest.approx(round(f1, 4), abs=1e-4), name


def test_reference_fixture_is_representative() -> None:
    ids = {c["id"] for c in REFERENCE["cases"]}
    assert REFERENCE["source"]["repository"] == "conll/reference-coreference-scorers"
    assert len(REFERENCE["source"]["commit"]) == 40
    # singletons in key and response (A), missing (A2) and extra mentions (A3), repeated mentions (A8, A9),
    # everything in one entity (M) and every mention alone (N)
    assert {"A2", "A3", "A8", "A9", "M1", "N1"} <= ids and len(ids) >= 8
    assert sum("ceafe" in c["expected"] for c in REFERENCE["cases"]) >= 8


def test_score_documents_flat_keys() -> None:
    from medibio.tasks import scierc as data

    docs = data.read_documents(Path(__file__).parent / "fixtures" / "scierc" / "tiny.json")
    perfect = [{"entities": d.all_entities(), "relations": d.all_relations(), "clusters": d.clusters} for d in docs]
    flat = metrics.flat(metrics.score_documents(docs, perfect))
    assert flat["ner_f1"] == flat["rel_f1"] == flat["relplus_f1"] == flat["coref_f1"] == 100.0
    empty = [{"entities": [], "relations": [], "clusters": []} for _ in docs]
    assert metrics.flat(metrics.score_documents(docs, empty))["ner_f1"] == 0.0
