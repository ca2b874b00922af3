"""Per-unit sufficient statistics: hand-counted cases, and the real-data guarantee that summed unit counts
reproduce ``metrics.evaluate`` on all units and on a resample (units repeated by their weights)."""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from medibio.tasks import metrics, registry, units
from medibio.tasks.metrics import MetricInputError
from medibio.tasks.spec import Problem, TaskSpec

# --------------------------------------------------------------------------- hand cases


def test_ner_counts_follow_conlleval_spans():
    gold = [["B", "I", "O", "B"],  # spans (0,1) and (3,3)
            ["B", "I", "I"],  # span (0,2)
            ["O", "O", "O"]]
    pred = [["B", "I", "O", "O"],  # (0,1) hit; (3,3) missed -> tp 1, fp 0, fn 1
            ["B", "I", "O"],  # (0,1) != (0,2): one false positive and one false negative
            ["O", "I", "I"]]  # conlleval: an I after O opens an entity (1,2) -> fp 1
    st = units.unit_stats("NCBI-disease", gold, pred, ["0", "1", "2"])
    assert st.unit == "sentence" and st.keys == ("0", "1", "2")
    assert st.counts.tolist() == [[1, 0, 1], [0, 1, 1], [0, 1, 0]]
    # P = 1/3, R = 1/3 -> F1 = 1/3
    assert st.score() == pytest.approx(100 / 3, abs=1e-12)
    assert st.score() == pytest.approx(metrics.evaluate("NCBI-disease", gold, pred)["score"], abs=1e-12)


def test_pico_counts_per_class():
    gold = [["I-PAR", "I-PAR", "O", "I-INT"], ["I-OUT", "O"]]
    pred = [["I-PAR", "O", "I-INT", "I-INT"], ["I-OUT", "I-OUT"]]
    st = units.unit_stats("EBM-PICO", gold, pred, ["7-0", "7-1"])
    # one document (id 7): PAR tp 1 fn 1; INT tp 1 fp 1; OUT tp 1 fp 1
    assert st.unit == "document" and st.keys == ("7",)
    assert st.counts.tolist() == [[1, 0, 1, 1, 1, 0, 1, 1, 0]]
    # F1: PAR 2/3, INT 2/3, OUT 2/3 -> macro 2/3
    assert st.score() == pytest.approx(200 / 3, abs=1e-12)


def test_re_negative_never_hits_and_gad_positive_class():
    gold = ["CPR:3", "false", "CPR:4", "CPR:9"]
    pred = ["CPR:3", "CPR:5", "false", "CPR:4"]
    st = units.unit_stats("ChemProt", gold, pred, list("abcd"))
    # hit; negative predicted as relation (fp); missed relation (fn); wrong type (fp and fn)
    assert st.counts.tolist() == [[1, 0, 0], [0, 1, 0], [0, 0, 1], [0, 1, 1]]
    gad = units.unit_stats("GAD", ["1", "0", "1", "0"], ["1", "1", "0", "0"], list("abcd"))
    assert gad.counts.tolist() == [[1, 0, 0], [0, 1, 0], [0, 0, 1], [0, 0, 0]]
    assert gad.score() == pytest.approx(50.0)


def test_hoc_groups_sentence_ids_by_abstract():
    gold = [["Cellular energetics"], [], ["Inducing angiogenesis", "Resisting cell death"]]
    pred = [["Cellular energetics", "Resisting cell death"], [], ["Inducing angiogenesis"]]
    st = units.unit_stats("HoC", gold, pred, ["11_s0", "11_s1", "12"])
    assert st.unit == "abstract" and st.keys == ("11", "12")
    assert st.counts.tolist() == [[1, 1, 0], [1, 0, 1]]


def test_pearson_from_sums_matches_scipy_and_constant_is_zero():
    x, y = [0.0, 1.5, 2.0, 4.0, 3.0], [1.0, 1.0, 2.5, 3.5, 3.6]
    st = units.unit_stats("BIOSSES", x, y, list("abcde"))
    assert st.score() == pytest.approx(100 * stats.pearsonr(x, y).statistic, abs=1e-10)
    # a resample of one pair repeated (and any constant prediction) has no correlation: 0, as the metric
    assert st.score(np.array([0, 3, 0, 0, 0])) == 0.0
    assert units.unit_stats("BIOSSES", x, [2.0] * 5, list("abcde")).score() == 0.0


def test_accuracy_counts():
    st = units.unit_stats("BioASQ", ["yes", "no", "yes"], ["yes", "yes", "yes"], ["q1", "q2", "q3"])
    assert st.counts.tolist() == [[1, 1], [0, 1], [1, 1]]
    assert st.score() == pytest.approx(200 / 3)
    assert st.score(np.array([[1, 0, 0], [0, 2, 0]])).tolist() == [100.0, 0.0]


def test_bad_input_raises_like_the_metric():
    with pytest.raises(MetricInputError, match="2 gold tags but 1 predicted"):
        units.unit_stats("BC2GM", [["B", "I"]], [["B"]], ["0"])
    with pytest.raises(MetricInputError, match="unknown label"):
        units.unit_stats("GAD", ["1"], ["yes"], ["0"])


def test_every_weighting_of_four_sentences_equals_seqeval_on_the_repeated_sentences():
    """The guarantee in miniature: all 4**4 bootstrap resamples, each scored by seqeval itself."""
    gold = [["B", "I", "O"], ["O", "B", "O"], ["B", "O", "B"], ["O", "O", "O"]]
    pred = [["B", "I", "O"], ["O", "B", "I"], ["B", "O", "O"], ["B", "O", "O"]]
    st = units.unit_stats("BC5-chem", gold, pred, ["0", "1", "2", "3"])
    for draw in itertools.product(range(4), repeat=4):
        w = np.bincount(draw, minlength=4)
        expected = metrics.evaluate("BC5-chem", [gold[i] for i in draw], [pred[i] for i in draw])["score"]
        assert st.score(w) == pytest.approx(expected, abs=1e-9), draw


def test_unit_table_covers_the_registry():
    assert set(units.UNITS) == set(registry.names())
    assert {s.metric for s in registry.DATASETS} <= set(units.STATISTICS)
    assert units.unit_of("JNLPBA").key("93343972-12") == "93343972"
    assert units.unit_of("HOC").key("12553062_s1") == "12553062"


# --------------------------------------------------------------------------- real data


def _perturb(spec: TaskSpec, ref, rng: random.Random):
    if spec.problem is Problem.TOKEN:
        return [rng.choice(spec.labels) if rng.random() < 0.1 else t for t in ref]
    if spec.problem is Problem.REGRESSION:
        return ref + rng.gauss(0.0, 1.0)
    if spec.problem is Problem.MULTILABEL:
        flipped = {label for label in spec.labels if rng.random() < 0.1}
        return sorted(set(ref) ^ flipped)
    return rng.choice(spec.labels) if rng.random() < 0.2 else ref


EXPECTED_UNITS = {"BC2GM": ("sentence", 5038), "JNLPBA": ("document", 402), "EBM-PICO": ("document", 191),
                  "HoC": ("abstract", 371), "ChemProt": ("pair", 15745), "PubMedQA": ("question", 500)}


@pytest.mark.realdata
@pytest.mark.parametrize("name", registry.names())
def test_summed_unit_statistics_reproduce_the_metric(name: str, data_root: Path):
    from medibio.tasks.predictions import load_gold

    spec = registry.get(name)
    gold = load_gold(name, "test", data_root)
    rng = random.Random(name)
    pred = [_perturb(spec, r, rng) for r in gold.references]
    st = units.unit_stats(name, gold.references, pred, gold.ids)
    assert st.score() == pytest.approx(metrics.evaluate(name, gold.references, pred, ids=gold.ids)["score"],
                                       abs=1e-9)
    if name in EXPECTED_UNITS:
        assert (st.unit, st.n_units) == EXPECTED_UNITS[name]
    # one bootstrap resample: the metric on the examples of the drawn units, each as often as drawn
    weights = np.random.default_rng(0).multinomial(st.n_units, np.full(st.n_units, 1 / st.n_units))
    key = units.unit_of(name).key
    position = {k: u for u, k in enumerate(st.keys)}
    times = [int(weights[position[key(i)]]) for i in gold.ids]
    refs = [r for r, t in zip(gold.references, times, strict=True) for _ in range(t)]
    preds = [p for p, t in zip(pred, times, strict=True) for _ in range(t)]
    assert st.score(weights) == pytest.approx(metrics.evaluate(name, refs, preds)["score"], abs=1e-9)
