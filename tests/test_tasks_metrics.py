"""BLURB metrics against hand-computed cases (the arithmetic is in the comments)."""

from __future__ import annotations

import math

import pytest

from medibio.tasks import metrics
from medibio.tasks.metrics import MetricInputError, compute, evaluate


def approx(x: float) -> object:
    return pytest.approx(x, abs=1e-6)


# --------------------------------------------------------------------------- NER


def test_ner_entity_f1_partial_overlap_is_a_miss_and_leading_i_opens_a_span() -> None:
    refs = [
        ["B", "I", "O", "B", "O", "O"],  # gold spans [0,1], [3,3]
        ["O", "I", "I", "O"],  # conlleval: I after O opens a span -> gold span [1,2]
        ["O", "O", "O"],  # no gold span
    ]
    preds = [
        ["B", "I", "O", "B", "I", "O"],  # [0,1] exact hit; [3,4] overlaps [3,3] only partly -> FP + FN
        ["O", "B", "I", "O"],  # [1,2] == gold [1,2] -> hit
        ["B", "O", "O"],  # [0,0] -> FP
    ]
    out = compute("ner_entity_f1", refs, preds)
    # gold spans 3, predicted spans 4, TP 2: P = 2/4, R = 2/3, F1 = 2*(1/2)*(2/3)/(1/2+2/3) = 4/7
    assert out["precision"] == approx(50.0)
    assert out["recall"] == approx(200 / 3)
    assert out["score"] == approx(400 / 7)
    assert out["gold_entities"] == 3 and out["pred_entities"] == 4 and out["n"] == 3


def test_ner_entity_f1_b_b_is_two_entities() -> None:
    # gold [B, B] = spans [0,0] and [1,1]; predicted [B, I] = one span [0,1]: no exact match -> F1 0
    out = compute("ner_entity_f1", [["B", "B"]], [["B", "I"]])
    assert out["score"] == 0.0 and out["gold_entities"] == 2 and out["pred_entities"] == 1


def test_ner_entity_f1_perfect_and_all_outside() -> None:
    assert compute("ner_entity_f1", [["B", "I", "O"]], [["B", "I", "O"]])["score"] == 100.0
    # no gold and no predicted entity: P and R are 0/0 -> reported as 0, never as a crash
    assert compute("ner_entity_f1", [["O", "O"]], [["O", "O"]])["score"] == 0.0


def test_ner_sequence_length_mismatch_names_the_example() -> None:
    with pytest.raises(MetricInputError, match=r"'doc1-3'.*3 gold tags but 2 predicted"):
        compute("ner_entity_f1", [["B", "I", "O"]], [["B", "I"]], ids=["doc1-3"])


def test_ner_unknown_tag_names_the_example() -> None:
    with pytest.raises(MetricInputError, match=r"'s7'.*'X'"):
        evaluate("NCBI-disease", [["B", "O"]], [["X", "O"]], ids=["s7"])
    # typed tags are outside BLURB's untyped label set
    with pytest.raises(MetricInputError, match="unknown label 'B-Disease'"):
        evaluate("NCBI-disease", [["B", "O"]], [["B-Disease", "O"]])


# --------------------------------------------------------------------------- PICO


def test_pico_token_macro_f1_over_pio_words_without_o() -> None:
    refs = [["I-PAR", "I-PAR", "O"], ["I-INT", "I-OUT", "O"]]
    preds = [["I-PAR", "O", "O"], ["I-INT", "I-INT", "I-OUT"]]
    # words pooled over both examples:
    # PAR: TP 1 (w0), FN 1 (w1)            -> P 1,   R 1/2, F1 2/3
    # INT: TP 1 (w3), FP 1 (w4)            -> P 1/2, R 1,   F1 2/3
    # OUT: FP 1 (w5), FN 1 (w4)            -> F1 0
    # macro F1 = (2/3 + 2/3 + 0) / 3 = 4/9
    out = compute("pico_token_macro_f1", refs, preds)
    assert out["score"] == approx(400 / 9)
    assert out["f1_I-PAR"] == approx(200 / 3) and out["f1_I-INT"] == approx(200 / 3)
    assert out["f1_I-OUT"] == 0.0
    assert out["support_I-PAR"] == 2 and out["words"] == 6
    # had O been a class (gold O at w2, w5; predicted O at w1, w2 -> F1 1/2), the mean would be
    # (2/3 + 2/3 + 0 + 1/2) / 4 = 11/24: O must not enter
    assert out["score"] != approx(100 * 11 / 24)
    assert evaluate("EBM-PICO", refs, preds)["score"] == approx(400 / 9)


def test_pico_rejects_bio_tags() -> None:
    with pytest.raises(MetricInputError, match="unknown label 'B'"):
        evaluate("EBM-PICO", [["I-PAR"]], [["B"]], ids=["p1"])


# --------------------------------------------------------------------------- relation extraction


def test_re_micro_f1_negatives_never_hit_and_negative_to_positive_is_fp() -> None:
    refs = ["CPR:3", "CPR:3", "false", "false", "CPR:4", "CPR:9", "false"]
    preds = ["CPR:3", "CPR:4", "CPR:3", "false", "false", "CPR:9", "false"]
    # 0: hit TP; 1: wrong type -> FP + FN; 2: negative predicted CPR:3 -> FP;
    # 3, 6: false == false -> nothing (negatives never count as TP); 4: missed CPR:4 -> FN; 5: TP
    # TP 2, FP 2, FN 2 -> P = R = F1 = 1/2, although accuracy is 4/7
    out = evaluate("ChemProt", refs, preds)
    assert (out["tp"], out["fp"], out["fn"]) == (2, 2, 2)
    assert out["score"] == approx(50.0)
    assert compute("accuracy", refs, preds)["score"] == approx(400 / 7)


def test_re_micro_f1_all_negative_scores_zero() -> None:
    # every pair correctly "DDI-false": no positive hit at all -> TP 0 -> F1 0 (accuracy would be 100)
    out = evaluate("DDI", ["DDI-false"] * 3, ["DDI-false"] * 3)
    assert out["score"] == 0.0 and out["tp"] == 0


def test_re_micro_f1_needs_negative_label_and_known_labels() -> None:
    with pytest.raises(ValueError, match="negative_label"):
        compute("re_micro_f1", ["a"], ["a"])
    with pytest.raises(MetricInputError, match=r"'r2'.*'CPR:7'"):
        evaluate("ChemProt", ["false", "CPR:3"], ["false", "CPR:7"], ids=["r1", "r2"])


def test_gad_binary_f1() -> None:
    refs = ["1", "1", "0", "0", "1"]
    preds = ["1", "0", "1", "0", "1"]
    # positive class "1": TP 2 (0, 4), FP 1 (2), FN 1 (1) -> P = R = F1 = 2/3; accuracy 3/5 differs
    out = evaluate("GAD", refs, preds)
    assert out["score"] == approx(200 / 3)
    assert out["precision"] == approx(200 / 3) and out["recall"] == approx(200 / 3)
    # with one positive class, BLURB's micro F1 over positives is the same number
    assert compute("re_micro_f1", refs, preds, negative_label="0")["score"] == approx(200 / 3)


# --------------------------------------------------------------------------- correlation


def test_pearson_biosses() -> None:
    gold = [1.0, 2.0, 3.0, 4.0]
    pred = [2.0, 4.0, 5.0, 9.0]
    # dx = -1.5 -.5 .5 1.5, dy = -3 -1 0 4: sum dx*dy = 11, sum dx^2 = 5, sum dy^2 = 26
    # r = 11 / sqrt(5 * 26) = 0.9647638...
    out = evaluate("BIOSSES", gold, pred)
    assert out["score"] == approx(100 * 11 / math.sqrt(130))
    assert evaluate("BIOSSES", gold, gold)["score"] == approx(100.0)


def test_pearson_constant_prediction_is_zero_not_nan() -> None:
    out = compute("pearson", [1.0, 2.0, 3.0], [2.0, 2.0, 2.0])
    assert out["score"] == 0.0 and out["constant_input"] == 1.0


def test_spearman_and_kendall() -> None:
    x = [1.0, 2.0, 3.0, 4.0]
    y = [1.0, 3.0, 2.0, 4.0]
    # spearman: rank differences 0, 1, -1, 0 -> rho = 1 - 6*2 / (4*(16-1)) = 0.8
    assert compute("spearman", x, y)["score"] == approx(80.0)
    # kendall: of 6 pairs only (2,3) is discordant -> tau = (5 - 1) / 6 = 2/3
    assert compute("kendall_tau", x, y)["score"] == approx(200 / 3)


def test_correlation_rejects_non_numbers() -> None:
    with pytest.raises(MetricInputError, match=r"'b'.*finite number"):
        compute("pearson", [1.0, 2.0], [1.0, "x"], ids=["a", "b"])


# --------------------------------------------------------------------------- HoC


HALLMARKS = ("h0", "h1", "h2", "h3")


def test_hoc_micro_vs_example_based_vs_macro() -> None:
    refs = [["h0", "h1"], [], ["h2"], []]
    preds = [["h0"], [], ["h2", "h3"], ["h1"]]
    # pairs: A: TP h0, FN h1; B: nothing; C: TP h2, FP h3; D: FP h1 -> TP 2, FP 2, FN 1
    # micro: P = 2/4, R = 2/3, F1 = 2*(1/2)*(2/3)/(7/6) = 4/7
    out = compute("hoc_micro_f1", refs, preds, labels=HALLMARKS)
    assert out["score"] == approx(400 / 7)
    assert out["precision"] == approx(50.0) and out["recall"] == approx(200 / 3)
    # example-based: A 2*1/(2+1) = 2/3, B empty/empty = 1, C 2/3, D 0 -> (7/3)/4 = 7/12
    assert out["example_f1"] == approx(700 / 12)
    # per hallmark: h0 1, h1 0 (FN in A, FP in D), h2 1, h3 0 -> macro 1/2
    assert out["f1_h0"] == 100.0 and out["f1_h1"] == 0.0 and out["f1_h3"] == 0.0
    assert out["macro_f1"] == approx(50.0)


def test_hoc_rejects_repeats_and_unknown_labels() -> None:
    with pytest.raises(MetricInputError, match=r"'p9'.*repeated"):
        compute("hoc_micro_f1", [["h0"]], [["h0", "h0"]], labels=HALLMARKS, ids=["p9"])
    with pytest.raises(MetricInputError, match="unknown label 'h7'"):
        compute("hoc_micro_f1", [["h0"]], [["h7"]], labels=HALLMARKS)


# --------------------------------------------------------------------------- QA and generic


def test_accuracy_pubmedqa() -> None:
    out = evaluate("PubMedQA", ["yes", "no", "maybe", "yes"], ["yes", "no", "yes", "no"])
    assert out["score"] == approx(50.0) and out["correct"] == 2 and out["n"] == 4


def test_macro_and_micro_f1() -> None:
    refs = ["a", "a", "b", "c"]
    preds = ["a", "b", "b", "b"]
    # a: TP 1 FN 1 -> F1 2/3; b: TP 1 FP 2 -> P 1/3 R 1 F1 1/2; c: FN 1 -> 0; macro = (2/3 + 1/2) / 3 = 7/18
    assert compute("macro_f1", refs, preds)["score"] == approx(700 / 18)
    # micro over all classes = accuracy = 2/4
    assert compute("micro_f1", refs, preds)["score"] == approx(50.0)
    # without class c as a "negative": TP 2, FP 2 (a->b, c->b), FN 1 (a->b) -> P 1/2 R 2/3 F1 4/7
    assert compute("micro_f1", refs, preds, negative_label="c")["score"] == approx(400 / 7)


def test_mean_average_precision() -> None:
    refs = [{"a", "c"}, {"x"}, {"m", "n"}]
    preds = [["a", "b", "c", "d"], ["y", "z", "x"], ["m"]]
    # q1: hits at ranks 1, 3 -> (1/1 + 2/3) / 2 = 5/6; q2: hit at rank 3 -> (1/3) / 1 = 1/3;
    # q3: hit at rank 1, n never retrieved -> (1/1) / 2 = 1/2;  MAP = (5/6 + 1/3 + 1/2) / 3 = 5/9
    assert compute("map", refs, preds)["score"] == approx(500 / 9)
    # cut at k = 2: q1 (1/1)/2 = 1/2; q2 0; q3 1/2 -> 1/3
    assert compute("map", refs, preds, k=2)["score"] == approx(100 / 3)


def test_map_skips_queries_without_relevant_ids_and_counts_them() -> None:
    out = compute("map", [{"a"}, set()], [["a"], ["b"]])
    assert out["score"] == 100.0 and out["queries_without_relevant"] == 1


def test_ndcg() -> None:
    refs = [{"a": 3, "b": 2, "d": 1}]
    preds = [["b", "a", "d"]]
    # DCG = 2/log2(2) + 3/log2(3) + 1/log2(4) = 2 + 1.8927893 + 0.5
    # IDCG = 3/log2(2) + 2/log2(3) + 1/log2(4) = 3 + 1.2618595 + 0.5
    dcg = 2 + 3 / math.log2(3) + 0.5
    idcg = 3 + 2 / math.log2(3) + 0.5
    assert compute("ndcg", refs, preds)["score"] == approx(100 * dcg / idcg)  # 92.2495...
    # k = 1: DCG 2, IDCG 3
    assert compute("ndcg", refs, preds, k=1)["score"] == approx(200 / 3)


def test_ranking_rejects_repeated_ids() -> None:
    with pytest.raises(MetricInputError, match="twice"):
        compute("map", [{"a"}], [["a", "a"]])


# --------------------------------------------------------------------------- registry plumbing


def test_every_registry_metric_exists() -> None:
    from medibio.tasks import registry

    for spec in registry.DATASETS:
        assert spec.metric in metrics.METRICS, spec.name
    for name in ("spearman", "kendall_tau", "macro_f1", "micro_f1", "map", "ndcg"):
        assert name in metrics.METRICS


def test_length_mismatch_and_unknown_metric() -> None:
    with pytest.raises(MetricInputError, match="3 references but 2 predictions"):
        compute("accuracy", ["a", "b", "c"], ["a", "b"])
    with pytest.raises(KeyError, match="unknown metric"):
        compute("bleu", ["a"], ["a"])
    with pytest.raises(MetricInputError, match="no examples"):
        compute("accuracy", [], [])


def test_multilabel_macro_f1_averages_per_label_f1() -> None:
    from medibio.tasks.metrics import compute

    # label a: tp=1 (ex1) fp=0 fn=1 (ex2) -> P=1, R=1/2, F1=2/3
    # label b: tp=1 (ex2) fp=1 (ex1) fn=0 -> P=1/2, R=1, F1=2/3; macro = 2/3; micro: tp=2 fp=1 fn=1 -> 2/3
    out = compute("multilabel_macro_f1", [["a"], ["a", "b"]], [["a", "b"], ["b"]], labels=["a", "b"])
    assert out["score"] == pytest.approx(200 / 3)
    assert out["micro_f1"] == pytest.approx(200 / 3)
