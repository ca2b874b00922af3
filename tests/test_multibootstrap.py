"""The verdicts' statistics (issue 35): one multi-bootstrap per claim whose percentile interval and p-value
cannot disagree, the hierarchical resampling of fine-tuning and pretraining seeds, and verdicts that survive
a rebuild whose predictions moved within the recorded seed spread (they flip only where an interval end
really crossed a boundary)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from medibio.book import claims, evidence, rules
from medibio.results.significance import Runs, multi_bootstrap
from medibio.tasks.bootstrap import (
    alpha_of,
    bootstrap_distribution,
    bootstrap_p,
    order_interval,
    seed_weights,
    tail_rank,
)
from medibio.tasks.units import unit_stats

ALPHA = alpha_of(0.95)  # as the code computes it: the iff must hold in floating point too
GOLD = np.linspace(0.0, 4.0, 40)  # 40 BIOSSES-like pairs


def _excludes_zero(low: float, high: float) -> bool:
    return low > 0 or high < 0


# --------------------------------------------------------------------------- interval and p agree


@pytest.mark.parametrize("resamples", [20, 21, 39, 40, 41, 999, 1000, 1999, 4999])
def test_tail_rank_is_the_smallest_tail_count_whose_p_is_not_below_alpha(resamples: int) -> None:
    k = tail_rank(resamples)
    assert (1 + 2 * k) / (resamples + 1) >= ALPHA > (1 + 2 * (k - 1)) / (resamples + 1)
    if resamples == 1999:
        assert k == 50  # Davison & Hinkley's (B + 1) alpha / 2


def test_too_few_resamples_are_refused() -> None:
    with pytest.raises(ValueError, match="B ≥ 20"):
        tail_rank(19)  # p can be no smaller than 1 / 20 = 0.05, which is not below alpha = 0.05
    assert tail_rank(20) == 1 and alpha_of(0.95) == 0.05


def test_interval_excludes_zero_exactly_when_p_is_below_alpha_on_random_draws() -> None:
    """Property-style: thousands of random draw sets of every shape (continuous, discrete with ties at 0,
    shifted to sit on the boundary, tiny and large B): the interval excludes 0 iff p < alpha."""
    rng = np.random.default_rng(35)
    boundary_cases = 0
    for case in range(3000):
        b = int(rng.choice([20, 21, 25, 39, 40, 59, 100, 199, 999, 1999]))
        kind = case % 4
        if kind == 0:  # continuous, centred anywhere
            draws = rng.normal(rng.normal(0, 2), rng.uniform(0.1, 3), b)
        elif kind == 1:  # integers: many draws exactly 0
            draws = rng.integers(-3, 4, b).astype(float) + rng.integers(-2, 3)
        elif kind == 2:  # shifted so that 0 is exactly the k-th order statistic (the knife edge)
            draws = np.sort(rng.normal(0, 1, b))
            k = tail_rank(b)
            draws = draws - draws[k - 1 + int(rng.integers(-1, 2))]
            boundary_cases += 1
        else:  # a point mass at 0 plus a tail
            draws = np.where(rng.random(b) < rng.uniform(0, 0.2), 0.0, rng.exponential(1.0, b))
        low, high = order_interval(draws)
        assert _excludes_zero(low, high) == (bootstrap_p(draws) < ALPHA), (case, b, low, high)
    assert boundary_cases >= 700


def test_p_counts_draws_at_zero_on_both_sides() -> None:
    draws = np.array([0.0] * 5 + [1.0] * 95)
    assert bootstrap_p(draws) == pytest.approx(min(1.0, 11 / 101))
    assert bootstrap_p(np.ones(100)) == pytest.approx(1 / 101)
    assert bootstrap_p(np.zeros(100)) == 1.0


# --------------------------------------------------------------------------- hierarchical seed weights


def test_seed_weights_resample_pretraining_then_fine_tuning_seeds() -> None:
    rng = np.random.default_rng(0)
    groups = [0, 0, 0, 1, 1, 2]  # three pretrained models with 3, 2 and 1 fine-tuning runs
    w = seed_weights(groups, 20000, rng)
    assert w.shape == (20000, 6) and np.allclose(w.sum(axis=1), 1.0)
    # each pretrained model weighs 1/3 on average, split evenly among its fine-tuning runs
    assert w.mean(axis=0) == pytest.approx([1 / 9] * 3 + [1 / 6] * 2 + [1 / 3], abs=0.01)
    # a draw that leaves model 2 out gives its only run no weight; one that draws it twice gives 2/3
    assert {round(float(x), 6) for x in w[:, 5]} <= {0.0, round(1 / 3, 6), round(2 / 3, 6), 1.0}
    one = seed_weights([0], 5, rng)
    assert np.array_equal(one, np.ones((5, 1)))


def _values(name: str, seeds: list[float], noise: float) -> list[np.ndarray]:
    """Run j predicts gold + a seed-specific pattern of size ``seeds[j]`` + noise (fixed per name and seed)."""
    out = []
    for j, shift in enumerate(seeds):
        rng = np.random.default_rng([sum(map(ord, name)), j])
        out.append(GOLD + shift * np.sin(np.arange(len(GOLD)) * (j + 1)) + noise * rng.standard_normal(len(GOLD)))
    return out


def _as_runs(name: str, values: list[np.ndarray], pretraining: tuple[str, ...] = ()) -> Runs:
    ids = [f"p{i}" for i in range(len(GOLD))]
    stats = tuple(unit_stats("BIOSSES", list(GOLD), list(v), ids) for v in values)
    return Runs(name, "BIOSSES", tuple(range(1, len(values) + 1)), (), frozenset(ids), stats, pretraining)


def _runs(name: str, seeds: list[float], noise: float, pretraining: tuple[str, ...] = ()) -> Runs:
    return _as_runs(name, _values(name, seeds, noise), pretraining)


def test_one_seed_each_is_the_paired_bootstrap_of_the_test_units() -> None:
    a, b = _runs("a", [0.0], 0.3), _runs("b", [0.0], 1.5)
    found = multi_bootstrap([(a, b)], resamples=999, seed=3)["mean"]
    units = bootstrap_distribution([*a.stats, *b.stats], 999, 3 * 1000)
    assert np.allclose(found.draws, units[:, 0] - units[:, 1])
    assert found.diff == pytest.approx(a.mean - b.mean) and found.resampled == "test units"


def test_seed_spread_widens_the_interval() -> None:
    """The same mean difference, with and without seed-to-seed spread: only the multi-bootstrap that
    resamples seeds sees the spread (the old procedure averaged seeds first)."""
    calm = multi_bootstrap([(_runs("a", [0.0] * 5, 0.3), _runs("b", [0.0] * 5, 0.3))], resamples=1999)["mean"]
    wild = multi_bootstrap([(_runs("a", [0.0, 0.5, 1.0, 1.5, 2.0], 0.3), _runs("b", [0.0] * 5, 0.3))],
                           resamples=1999)["mean"]
    assert wild.resampled == "test units, fine-tuning seeds"
    assert (wild.high - wild.low) > 1.5 * (calm.high - calm.low)


def test_pretraining_seeds_are_shared_across_datasets_and_must_all_be_present() -> None:
    a = _runs("a", [0.0, 0.1, 0.0, 0.1], 0.3, ("m1", "m1", "m2", "m2"))
    b = _runs("b", [0.0, 0.0], 0.3, ("n1", "n2"))
    other = (dataclasses.replace(a, dataset="BIOSSES-2"), dataclasses.replace(b, dataset="BIOSSES-2"))
    found = multi_bootstrap([(a, b), other], {"both": ["BIOSSES", "BIOSSES-2"]}, resamples=199)["both"]
    assert found.pretraining_a == 2 and found.datasets == ("BIOSSES", "BIOSSES-2")
    assert found.resampled == "test units, fine-tuning seeds, pretraining seeds"
    partial = dataclasses.replace(_runs("a", [0.0, 0.1], 0.3, ("m1", "m1")), dataset="BIOSSES-2")
    with pytest.raises(ValueError, match="runs of 1 of its 2 pretrained models"):
        multi_bootstrap([(a, b), (partial, other[1])], resamples=199)
    with pytest.raises(ValueError, match="each dataset once"):
        multi_bootstrap([(a, b), (a, b)], resamples=199)


def test_every_statistic_reads_the_same_draws() -> None:
    a, b = _runs("a", [0.0, 0.5], 0.3), _runs("b", [0.0, 0.5], 1.0)
    found = multi_bootstrap([(a, b)], {"x": ["BIOSSES"], "y": ["BIOSSES"], "none": ["HoC"]}, resamples=199)
    assert set(found) == {"x", "y"} and np.array_equal(found["x"].draws, found["y"].draws)


# --------------------------------------------------------------------------- verdicts that survive a rebuild


def test_a_rebuild_within_the_seed_spread_flips_a_verdict_only_across_a_boundary() -> None:
    """Perturb every prediction of every run (what another CPU's kernels do) by less than the recorded seed
    spread and rebuild the claim: the draws are the same resamples (common random numbers), so each interval
    end moves by at most the largest change of a draw, and a verdict changes only when a boundary (0 or ±δ)
    lies between an old end and its new one."""
    rng = np.random.default_rng(40)
    flips = 0
    for case in range(40):
        shift = float(rng.uniform(-0.6, 0.6))
        va = _values(f"a{case}", list(rng.uniform(0, 0.6, 5) + max(shift, 0)), 0.6)
        vb = _values(f"b{case}", list(rng.uniform(0, 0.6, 5) + max(-shift, 0)), 0.6)
        a, b = _as_runs("a", va), _as_runs("b", vb)
        delta = float(rng.choice([1.0, 2.0, 5.0]))
        # another CPU: every prediction moves a little
        noise = np.random.default_rng(case)
        a2, b2 = (_as_runs(n, [v + 0.01 * noise.standard_normal(len(v)) for v in vs]) for n, vs in (("a", va), ("b", vb)))
        spread = min(float(np.std(a.scores)), float(np.std(b.scores)))
        assert max(abs(x - y) for x, y in zip(a.scores + b.scores, a2.scores + b2.scores, strict=True)) < spread
        before = multi_bootstrap([(a, b)], resamples=999, seed=case)["mean"]
        after = multi_bootstrap([(a2, b2)], resamples=999, seed=case)["mean"]
        moved = float(np.max(np.abs(after.draws - before.draws)))
        assert abs(after.low - before.low) <= moved + 1e-9 and abs(after.high - before.high) <= moved + 1e-9
        assert moved < spread  # the intervals moved less than the recorded seed spread
        old, new = (rules.verdict(x.low, x.high, 1, delta) for x in (before, after))
        if old != new:
            flips += 1
            crossed = [c for c in (0.0, -delta, delta)
                       if min(before.low, after.low) <= c <= max(before.low, after.low)
                       or min(before.high, after.high) <= c <= max(before.high, after.high)]
            assert crossed, (case, before.low, before.high, after.low, after.high)
        for x in (before, after):  # p and interval agree before and after
            assert _excludes_zero(x.low, x.high) == (x.p_value < ALPHA)
    assert flips < 10  # most verdicts hold; none flips without crossing


def test_the_draws_do_not_depend_on_the_scores() -> None:
    """What makes the previous test hold: two builds draw the same resamples whatever their predictions."""
    a, a2 = _runs("a", [0.0, 0.3], 0.3), _runs("a2", [0.1, 0.2], 0.6)
    b, b2 = _runs("b", [0.0, 0.3], 0.9), _runs("b2", [0.2, 0.1], 0.4)

    def draws(x: Runs, y: Runs) -> np.ndarray:
        return multi_bootstrap([(x, y)], resamples=299, seed=7)["mean"].draws

    assert np.array_equal(draws(a, b), draws(a, b))
    # other predictions, same resamples: in each draw, B's statistic cancels from (A - B) - (A2 - B) whatever B
    # is, which holds only if the units and seeds drawn do not depend on what the runs predicted
    assert not np.allclose(draws(a, b), draws(a2, b))
    assert np.allclose(draws(a, b) - draws(a2, b), draws(a, b2) - draws(a2, b2))
    assert evidence.claim_seed("ift-biosses") == evidence.claim_seed("ift-biosses") != evidence.claim_seed("ift-hoc")


@pytest.mark.parametrize(("low", "high", "side", "delta", "expected"), [
    (-0.5, 0.8, 1, 1.0, rules.EQUIVALENT), (-0.5, 1.2, 1, 1.0, rules.INCONCLUSIVE), (0.2, 0.8, 1, 1.0, rules.SUPPORTED_SMALL),
    (-0.5, 0.8, -1, 1.0, rules.SUPPORTED), (-0.5, 0.8, 1, math.nan, rules.INCONCLUSIVE), (-1.0, 0.5, 1, 1.0, rules.INCONCLUSIVE),
])
def test_equivalence_outcome(low: float, high: float, side: int, delta: float, expected: str) -> None:
    assert rules.verdict(low, high, side, delta) == expected
    if expected == rules.EQUIVALENT:
        assert rules.verdict_text(expected, delta) == f"no difference larger than {delta:g}"


def test_the_recorded_biosses_claim_survives_perturbations_within_its_seed_spread(data_root) -> None:
    """On reference/'s own cpu runs (BIOSSES after STS-B against without, 3 seeds each): every test
    prediction is perturbed by noise small enough that no run's score moves by more than its system's
    recorded seed spread, ten times; the claim's interval ends move by at most the largest change of a draw,
    and its verdict changes only where an end crossed 0 or ±δ."""
    import json
    from pathlib import Path

    from medibio.core.text import file_bytes
    from medibio.results.recorded import REFERENCE_ROOT
    from medibio.tasks.predictions import load_gold

    gold = load_gold("BIOSSES", "test", data_root)
    folder = Path(REFERENCE_ROOT) / "finetune" / "cpu" / "minilm"
    systems = {}
    for variant in ("ift-STS-B", "base"):
        files = sorted((folder / variant / "BIOSSES").glob("*/seed*.test.jsonl.gz"))  # recorded: gzipped
        if not files:
            pytest.skip(f"reference/ has no cpu {variant} BIOSSES predictions")
        values = []
        for f in files:
            by_id = {r["id"]: float(r["prediction"]) for r in map(json.loads, file_bytes(f).decode().splitlines())}
            values.append(np.array([by_id[i] for i in gold.ids]))
        systems[variant] = values

    def runs(name: str, values: list[np.ndarray]) -> Runs:
        stats = tuple(unit_stats("BIOSSES", list(gold.references), list(v), list(gold.ids)) for v in values)
        return Runs(name, "BIOSSES", tuple(range(1, len(values) + 1)), (), frozenset(gold.ids), stats)

    claim = claims.get("ift-biosses")
    seed = evidence.claim_seed(claim.id)
    before = multi_bootstrap([(runs("a", systems["ift-STS-B"]), runs("b", systems["base"]))], resamples=1999,
                             seed=seed)["mean"]
    spreads = {k: float(np.std(runs(k, v).scores)) for k, v in systems.items()}
    rng = np.random.default_rng(35)
    for _ in range(10):
        moved_values = {}
        for k, values in systems.items():
            size = 0.05
            while True:  # the largest noise (halving from 0.05) that keeps every run inside the seed spread
                trial = [v + size * rng.standard_normal(len(v)) for v in values]
                change = np.abs(np.array(runs(k, trial).scores) - np.array(runs(k, values).scores))
                if change.max() < spreads[k]:
                    break
                size /= 2
            moved_values[k] = trial
        after = multi_bootstrap([(runs("a", moved_values["ift-STS-B"]), runs("b", moved_values["base"]))],
                                resamples=1999, seed=seed)["mean"]
        largest = float(np.max(np.abs(after.draws - before.draws)))
        assert abs(after.low - before.low) <= largest + 1e-9 and abs(after.high - before.high) <= largest + 1e-9
        old, new = (rules.verdict(x.low, x.high, claim.side, claim.test.delta) for x in (before, after))
        if old != new:
            bounds = (0.0, -claim.test.delta, claim.test.delta)
            assert any(min(before.low, after.low) <= c <= max(before.low, after.low)
                       or min(before.high, after.high) <= c <= max(before.high, after.high) for c in bounds)
        assert _excludes_zero(after.low, after.high) == (after.p_value < ALPHA)
