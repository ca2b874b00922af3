"""Bootstrap intervals and paired tests: hand-enumerated distributions, scipy's bootstrap and the exact sign
test as known results, and the ``medibio results compare`` command on records written in tmp_path."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest
from scipy import stats
from typer.testing import CliRunner

from medibio.cli.main import app, main
from medibio.results import significance as S
from medibio.runs import records as R
from medibio.tasks import bootstrap as B
from medibio.tasks.units import UnitStats

if TYPE_CHECKING:
    from conftest import HandRuns


def _accuracy(correct) -> UnitStats:
    c = np.asarray(correct, dtype=float)
    return UnitStats("BioASQ", "accuracy", "question", tuple(str(i) for i in range(len(c))), ("correct", "n"),
                     np.stack([c, np.ones_like(c)], axis=1))


def _f1(counts) -> UnitStats:
    c = np.asarray(counts, dtype=float)
    return UnitStats("BC2GM", "ner_entity_f1", "sentence", tuple(str(i) for i in range(len(c))),
                     ("tp", "fp", "fn"), c)


def _mc_close(estimate: float, exact: float, resamples: int) -> bool:
    """Within 4 Monte-Carlo standard errors of a proportion (plus the +1 of the p-value)."""
    return abs(estimate - exact) <= 4 * math.sqrt(exact * (1 - exact) / resamples) + 2 / resamples


# --------------------------------------------------------------------------- resampling weights


def test_bootstrap_weights_are_multinomial_counts():
    w = B.bootstrap_weights(7, 5000, np.random.default_rng(0))
    assert w.shape == (5000, 7) and (w.sum(axis=1) == 7).all()
    # each unit is drawn Binomial(7, 1/7) times: mean 1, variance 6/7
    assert w.mean() == pytest.approx(1.0, abs=0.02) and w.var() == pytest.approx(6 / 7, abs=0.03)
    assert (B.bootstrap_weights(7, 3, np.random.default_rng(1)) ==
            B.bootstrap_weights(7, 3, np.random.default_rng(1))).all()


def _ungrouped(stats: list[UnitStats], resamples: int, seed: int) -> np.ndarray:
    """bootstrap_distribution as it was: every unit's multiplicities times every unit's counts."""
    counts = B.stack(stats)
    flat = counts.reshape(counts.shape[0], -1)
    rng = np.random.default_rng(seed)
    sums = np.concatenate([B.bootstrap_weights(len(flat), size, rng) @ flat
                           for size in B.chunks(resamples, len(flat))])
    return B.score_from_sums(stats[0].metric, sums.reshape(resamples, len(stats), -1))


@pytest.mark.parametrize("units", [7, 300, 4000])
def test_units_alike_summed_as_one_kind_give_the_same_draws_to_the_last_bit(units: int) -> None:
    rng = np.random.default_rng(units)
    runs = [_f1(rng.integers(0, 3, size=(units, 3)) * (rng.random((units, 1)) < 0.3)) for _ in range(4)]
    assert np.array_equal(B.bootstrap_distribution(runs, 1999, seed=5), _ungrouped(runs, 1999, 5))
    spread = [_f1(s.counts + 0.5) for s in runs]  # not whole numbers: every unit on its own, as before
    assert np.array_equal(B.bootstrap_distribution(spread, 999, seed=5), _ungrouped(spread, 999, 5))


# --------------------------------------------------------------------------- hand cases


def test_bootstrap_distribution_of_four_questions_by_hand():
    # 3 of 4 answers right: a resample draws 4 questions, so the number right is Binomial(4, 3/4):
    # P(0..4 right) = 1, 12, 54, 108, 81 (/256) -> accuracy 0, 25, 50, 75, 100
    resamples = 40000
    dist = B.bootstrap_distribution([_accuracy([1, 1, 0, 1])], resamples, seed=2)[:, 0]
    for k, count in enumerate((1, 12, 54, 108, 81)):
        assert _mc_close(float(np.mean(dist == 25.0 * k)), count / 256, resamples), k


def test_randomization_p_by_enumeration_on_accuracy():
    # A right on questions 1-4, B on 3 and 5: discordant units 1, 2, 4 (A only) and 5 (B only).
    # Observed difference (4 - 2) / 5 = 40 points. Swapping a discordant unit flips its sign; of the 16
    # sign patterns, |sum| >= 2 for sums +-4 (2 patterns) and +-2 (8 patterns): p = 10/16 = 0.625.
    a, b = _accuracy([1, 1, 1, 1, 0]), _accuracy([0, 0, 1, 0, 1])
    cmp = S.paired_test(a, b, resamples=20000, seed=3, method="randomization")
    assert cmp.diff == pytest.approx(40.0) and (cmp.mean_a, cmp.mean_b) == (80.0, 40.0)
    assert _mc_close(cmp.p_value, 0.625, 20000)
    assert cmp.p_value == pytest.approx(stats.binomtest(3, 4).pvalue, abs=0.03)


def _plain_f1(tp: float, fp: float, fn: float) -> float:
    return 100 * 2 * tp / (2 * tp + fp + fn) if tp else 0.0


def test_randomization_p_by_enumeration_on_entity_f1():
    # (tp, fp, fn) per sentence for two systems; the exact p enumerates all 2**5 swaps of the sentences.
    ca = [[2, 0, 0], [1, 1, 0], [3, 0, 1], [0, 0, 1], [2, 1, 0]]
    cb = [[1, 1, 1], [1, 0, 0], [2, 1, 2], [0, 1, 1], [2, 0, 0]]

    def diff(swap) -> float:
        sa = np.sum([cb[u] if s else ca[u] for u, s in enumerate(swap)], axis=0)
        sb = np.sum([ca[u] if s else cb[u] for u, s in enumerate(swap)], axis=0)
        return _plain_f1(*sa) - _plain_f1(*sb)

    observed = diff((0,) * 5)
    exact = np.mean([abs(diff(s)) >= abs(observed) - 1e-9 for s in itertools.product((0, 1), repeat=5)])
    cmp = S.paired_test(_f1(ca), _f1(cb), resamples=20000, seed=4, method="randomization")
    assert cmp.diff == pytest.approx(observed, abs=1e-12)
    assert 0 < exact < 1 and _mc_close(cmp.p_value, float(exact), 20000)


def test_paired_bootstrap_p_by_enumeration():
    # Three units, all 3**3 = 27 ordered resamples equally likely; shift-method p = P(|d* - d| >= |d|).
    ca, cb = [[2, 0, 1], [1, 1, 0], [0, 0, 2]], [[1, 1, 1], [1, 0, 0], [0, 1, 2]]
    a, b = np.array(ca, float), np.array(cb, float)
    observed = _plain_f1(*a.sum(0)) - _plain_f1(*b.sum(0))
    shifted = []
    for draw in itertools.product(range(3), repeat=3):
        shifted.append(_plain_f1(*a[list(draw)].sum(0)) - _plain_f1(*b[list(draw)].sum(0)) - observed)
    exact = float(np.mean(np.abs(shifted) >= abs(observed) - 1e-9))
    cmp = S.paired_test(_f1(ca), _f1(cb), resamples=20000, seed=5)
    assert _mc_close(cmp.p_value, exact, 20000)


# --------------------------------------------------------------------------- known results


def test_randomization_approaches_the_exact_sign_test():
    rng = np.random.default_rng(7)
    a = (rng.random(300) < 0.7).astype(int)
    b = np.where(rng.random(300) < 0.85, a, 1 - a)
    only_a, only_b = int(((a == 1) & (b == 0)).sum()), int(((a == 0) & (b == 1)).sum())
    exact = stats.binomtest(only_a, only_a + only_b).pvalue  # McNemar's exact test
    assert 0.01 < exact < 0.9
    cmp = S.paired_test(_accuracy(a), _accuracy(b), resamples=20000, seed=8, method="randomization")
    assert _mc_close(cmp.p_value, exact, 20000)


def test_bootstrap_interval_matches_scipy_percentile_bootstrap():
    rng = np.random.default_rng(11)
    a = (rng.random(200) < 0.7).astype(float)
    b = (rng.random(200) < 0.6).astype(float)
    iv = S.bootstrap_interval(_accuracy(a), resamples=20000, seed=12)
    score, low, high, n_units = iv
    assert (score, low, high, n_units) == (iv.score, iv.low, iv.high, iv.n_units)
    ref = stats.bootstrap((100 * a,), np.mean, method="percentile", n_resamples=20000, random_state=13)
    assert iv.score == pytest.approx(100 * a.mean()) and iv.n_units == 200
    # Monte-Carlo error of a 2.5% quantile here is ~0.1 point; accuracy moves in steps of 0.5 point
    assert iv.low == pytest.approx(ref.confidence_interval.low, abs=0.75)
    assert iv.high == pytest.approx(ref.confidence_interval.high, abs=0.75)
    # two seeds of one system: the mean of two accuracies is the accuracy of the per-question average
    two = S.bootstrap_interval([_accuracy(a), _accuracy(b)], resamples=20000, seed=12)
    ref2 = stats.bootstrap((50 * (a + b),), np.mean, method="percentile", n_resamples=20000, random_state=14)
    assert two.n_runs == 2 and two.score == pytest.approx(50 * (a.mean() + b.mean()))
    assert two.low == pytest.approx(ref2.confidence_interval.low, abs=0.75)
    assert two.high == pytest.approx(ref2.confidence_interval.high, abs=0.75)
    # the paired difference: scipy's paired bootstrap of mean(a) - mean(b)
    cmp = S.paired_test(_accuracy(a), _accuracy(b), resamples=20000, seed=15)
    ref3 = stats.bootstrap((100 * a, 100 * b), lambda x, y, axis=-1: x.mean(axis) - y.mean(axis), paired=True,
                           method="percentile", n_resamples=20000, random_state=16)
    assert cmp.low == pytest.approx(ref3.confidence_interval.low, abs=0.75)
    assert cmp.high == pytest.approx(ref3.confidence_interval.high, abs=0.75)


@pytest.mark.parametrize("method", list(S.METHODS))
def test_identical_systems_differ_by_nothing(method: str):
    a = _f1([[2, 0, 1], [1, 1, 0], [0, 2, 2], [3, 0, 0]])
    cmp = S.paired_test([a, a], a, resamples=500, seed=0, method=method)
    assert (cmp.diff, cmp.low, cmp.high, cmp.p_value) == (0.0, 0.0, 0.0, 1.0)
    assert not cmp.significant


@pytest.mark.parametrize("method", list(S.METHODS))
def test_clearly_better_system_is_significant_with_unequal_seeds(method: str):
    rng = np.random.default_rng(3)
    good = [_accuracy(rng.random(150) < 0.85) for _ in range(3)]
    poor = [_accuracy(rng.random(150) < 0.55) for _ in range(2)]
    cmp = S.paired_test(good, poor, resamples=2000, seed=1, method=method)
    assert cmp.diff > 20 and cmp.low > 0 and cmp.p_value < 0.05 and cmp.significant
    assert cmp.seeds_a == (1, 2, 3) and cmp.seeds_b == (1, 2)
    reverse = S.paired_test(poor, good, resamples=2000, seed=1, method=method)
    assert reverse.diff == pytest.approx(-cmp.diff) and reverse.high < 0


def test_runs_on_different_units_are_refused():
    with pytest.raises(ValueError, match="different units"):
        S.paired_test(_accuracy([1, 0, 1]), _accuracy([1, 0]))
    with pytest.raises(ValueError, match="unknown method"):
        S.paired_test(_accuracy([1, 0]), _accuracy([1, 0]), method="t-test")


def test_system_selection_syntax():
    assert S.System.parse("cpu/minilm/ift-STS-B") == S.System("cpu", "minilm", "ift-STS-B")
    with pytest.raises(S.SelectionError, match="PROFILE/MODEL/VARIANT"):
        S.System.parse("cpu/minilm")


# --------------------------------------------------------------------------- records and the CLI


@pytest.fixture()
def two_systems(hand_runs: HandRuns) -> tuple[Path, Path]:
    hand_runs.write("ift-STS-B", 1, {0, 7})  # 95% right
    hand_runs.write("ift-STS-B", 2, {3, 11, 20})  # 92.5%
    hand_runs.write("base", 1, range(0, 40, 3))  # 14 wrong: 65%
    return hand_runs.results, hand_runs.data


def test_compare_systems_on_records(two_systems: tuple[Path, Path]):
    root, data = two_systems
    found, left_out = S.compare_systems(root, "cpu/minilm/ift-STS-B", "cpu/minilm/base", resamples=500,
                                        data_root=data)
    assert left_out == [] and len(found) == 1
    cmp = found[0]
    assert (cmp.dataset, cmp.unit, cmp.n_units, cmp.seeds_a, cmp.seeds_b) == ("BioASQ", "question", 40, (1, 2),
                                                                             (1,))
    assert cmp.mean_a == pytest.approx(93.75) and cmp.mean_b == pytest.approx(65.0)
    assert cmp.significant and cmp.a == "cpu/minilm/ift-STS-B"
    frame = S.comparison_table(root, [("cpu/minilm/ift-STS-B", "cpu/minilm/base")], resamples=200,
                               data_root=data)
    assert list(frame.columns) == list(S.COMPARISON_COLUMNS) and frame.loc[0, "diff"] == pytest.approx(28.75)


def test_results_table_gets_a_bootstrap_column(two_systems: tuple[Path, Path]):
    from medibio.results.aggregate import results_table

    root, data = two_systems
    df = S.add_bootstrap_interval(results_table(root), root, resamples=300, data_root=data)
    row = df[(df["row"] == "BioASQ") & (df["variant"] == "base")].iloc[0]
    assert row["mean"] == 65.0 and row["units"] == 40
    assert row["boot_low"] < 65.0 < row["boot_high"]  # one seed, yet an interval
    assert df[df["level"] != "dataset"]["boot_low"].isna().all()


def test_cli_compare_text_and_json(two_systems: tuple[Path, Path]):
    root, data = two_systems
    args = ["results", "compare", "cpu/minilm/ift-STS-B", "cpu/minilm/base", "--results-root", str(root),
            "--data-root", str(data), "--resamples", "300", "--task", "BioASQ"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "BioASQ" in result.output and "+28.75" in result.output and "Koehn 2004" in result.output
    result = CliRunner().invoke(app, [*args, "--json", "--method", "randomization"])
    assert result.exit_code == 0, result.output
    data_out = json.loads(result.output)
    row = data_out["comparisons"][0]
    assert row["dataset"] == "BioASQ" and row["significant"] is True and row["seeds_a"] == [1, 2]
    assert "Noreen 1989" in row["citation"] and row["n_units"] == 40
    table = CliRunner().invoke(app, ["results", "table", "--results-root", str(root), "--data-root", str(data),
                                     "--bootstrap", "--resamples", "200", "--json"])
    assert table.exit_code == 0, table.output
    rows = {(r["variant"], r["row"]): r for r in json.loads(table.output)}
    assert rows[("base", "BioASQ")]["units"] == 40 and rows[("base", "BioASQ")]["boot_low"] is not None


def test_cli_selection_matching_nothing_exits_2_with_one_line(two_systems: tuple[Path, Path],
                                                             capsys: pytest.CaptureFixture[str]):
    root, data = two_systems
    with pytest.raises(SystemExit) as exc:
        main(["results", "compare", "cpu/minilm/ift-MedNLI", "cpu/minilm/base", "--results-root", str(root),
              "--data-root", str(data)])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "no run records match cpu/minilm/ift-MedNLI" in err
    assert "cpu/minilm/base" in err  # names the systems that exist


def test_cli_different_test_ids_exit_2_naming_the_files(two_systems: tuple[Path, Path], hand_runs: HandRuns,
                                                        capsys: pytest.CaptureFixture[str]):
    root, data = two_systems
    hand_runs.write("capped", 1, answers=["yes"] * 30, ids=[f"q{i}" for i in range(30)])
    with pytest.raises(SystemExit) as exc:
        main(["results", "compare", "cpu/minilm/capped", "cpu/minilm/base", "--results-root", str(root),
              "--data-root", str(data)])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "capped" in err and "seed1.test.jsonl" in err and "same test ids" in err


def test_a_prediction_file_is_scored_against_the_gold_as_it_is_now(hand_runs) -> None:
    """The gold test split is read once per process while its files stay as they are: one edited meanwhile is
    read again (its size or time changed: here both), so a score never reads a stale gold."""
    record = hand_runs.write("base", 1)  # every answer right
    path = record.predictions_location(hand_runs.results)
    stats, _ = S._score_file(str(path), "BioASQ", str(hand_runs.data))
    assert stats.score() == 100.0
    gold = hand_runs.data / "blurb" / "BioASQ" / "test.tsv"
    flipped = ["no" if g == "yes" else "yes" for g in hand_runs.gold[:10]] + hand_runs.gold[10:]
    gold.write_text("".join(f"q{i}\tIs it?\tSome other context.  \t{g}\n" for i, g in enumerate(flipped)))
    stats, _ = S._score_file(str(path), "BioASQ", str(hand_runs.data))
    assert stats.score() == 75.0  # 10 of the 40 answers now wrong


# --------------------------------------------------------------------------- record sets (what run functions return)


def test_compare_records_is_a_minus_b_and_none_without_predictions(two_systems: tuple[Path, Path]):
    root, data = two_systems
    ift, base = R.load_records(root, variant="ift-STS-B"), R.load_records(root, variant="base")
    cmp = S.compare_records(ift, base, root, "BioASQ", "ift", "base", resamples=400, data_root=data)
    assert (cmp.a, cmp.b, cmp.seeds_a, cmp.seeds_b) == ("ift", "base", (1, 2), (1,))
    assert cmp.diff == pytest.approx(93.75 - 65.0) and 0 < cmp.low < cmp.diff < cmp.high and cmp.significant
    back = S.compare_records(base, ift, root, "bioasq", "base", "ift", resamples=400, data_root=data)
    assert back.diff == pytest.approx(-cmp.diff) and back.high < 0 and back.p_value == pytest.approx(cmp.p_value)
    assert S.compare_records(ift, [], root, "BioASQ", data_root=data) is None
    no_predictions = [R.RunRecord.from_dict({**base[0].to_dict(), "predictions": None})]
    assert S.compare_records(ift, no_predictions, root, "BioASQ", data_root=data) is None


def test_compare_groups_tests_every_pair_on_shared_datasets(two_systems: tuple[Path, Path], hand_runs: HandRuns):
    root, data = two_systems
    worse = hand_runs.write("worse", 1, range(0, 40, 2))  # every "yes" question wrong: 50%
    groups = {"ift": R.load_records(root, variant="ift-STS-B"), "base": R.load_records(root, variant="base"),
              "worse": [worse], "nothing": []}
    frame = S.compare_groups(groups, root, data_root=data, resamples=300)
    assert list(frame.columns) == list(S.COMPARISON_COLUMNS)
    assert [(a, b) for a, b in zip(frame["a"], frame["b"], strict=True)] == [("ift", "base"), ("ift", "worse"),
                                                                            ("base", "worse")]
    diffs = dict(zip(zip(frame["a"], frame["b"], strict=True), frame["diff"], strict=True))
    assert diffs[("ift", "base")] == pytest.approx(28.75) and diffs[("base", "worse")] == pytest.approx(15.0)
    assert (frame["dataset"] == "BioASQ").all() and (frame["n_units"] == 40).all()
    assert S.compare_groups({"only": groups["base"]}, root, data_root=data).empty


def test_records_interval_covers_the_score(two_systems: tuple[Path, Path]):
    root, data = two_systems
    base = R.load_records(root, variant="base")
    iv = S.records_interval(base, root, "BioASQ", resamples=400, data_root=data)
    assert iv.score == 65.0 and iv.low < 65.0 < iv.high and iv.n_units == 40 and iv.n_runs == 1
    assert S.records_interval([], root, "BioASQ", data_root=data) is None


def test_paired_drift_tests_each_configuration_of_two_folders(hand_runs) -> None:
    """A single-seed run has no seed spread: the drift check tests it on the same test units instead."""
    from medibio.results import drift

    recorded = hand_runs.results.parent / "recorded"
    hand_runs.write("base", 1, range(0, 40, 3), root=recorded)  # 65% right
    hand_runs.write("base", 1, range(0, 40, 4), digest="0ther0ther00")  # 75%: another configuration, here
    hand_runs.write("ift-STS-B", 1, {0, 7}, root=recorded)  # only in the recording: no row
    found = drift.paired(hand_runs.results, recorded, profile="cpu", data_root=hand_runs.data, resamples=400)
    assert list(found.columns) == list(drift.PAIRED_COLUMNS) and len(found) == 1
    row = found.iloc[0]
    assert (row["variant"], row["dataset"], row["seeds"], row["recorded seeds"]) == ("base", "BioASQ", 1, 1)
    assert row["difference"] == pytest.approx(10.0) and row["low"] <= 10.0 <= row["high"]
    assert bool(row["interval holds 0"]) == (row["low"] <= 0 <= row["high"])
    args = ["results", "drift", str(recorded), "--paired", "--results-root", str(hand_runs.results),
            "--data-root", str(hand_runs.data)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "BioASQ" in result.output and "10.00" in result.output and "1 configurations" in result.output
