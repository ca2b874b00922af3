"""Resampling test units: the percentile bootstrap (Efron & Tibshirani 1993) of a score over the units of
a test set (:mod:`medibio.tasks.units`), vectorised over resamples.

Every score of a run is a function of per-unit counts (true positives, pairs, correct answers ...), so a
resample is a vector of unit multiplicities and its score a matrix product: thousands of resamples of a full
test set take a fraction of a second. Paired tests (:mod:`medibio.results.significance`) draw their
resamples here too.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from medibio.tasks.units import UnitStats, score_from_sums

DEFAULT_RESAMPLES = 1000
CONFIDENCE = 0.95
# Resamples are drawn and scored in chunks of about this many draws (resamples × units): a chunk's draws and
# multiplicities stay near the core (chunks of 500k drew 1.4x faster than chunks of 2M on a 2-core Xeon: the
# counting scatters over less memory), and its matrix product is large enough for BLAS. The chunks change
# nothing but speed: the generator yields the same stream whether asked once or chunk by chunk.
_CHUNK_ELEMENTS = 500_000


def stack(stats: Sequence[UnitStats]) -> np.ndarray:
    """(n_units, n_runs, k) counts of runs that share dataset, metric and units."""
    if not stats:
        raise ValueError("no runs to resample")
    first = stats[0]
    for s in stats[1:]:
        if (s.dataset, s.metric, s.keys) != (first.dataset, first.metric, first.keys):
            raise ValueError(f"runs on different units cannot be resampled together: {first.dataset} "
                             f"({first.n_units} units) vs {s.dataset} ({s.n_units} units)")
    return np.stack([s.counts for s in stats], axis=1)


def chunks(total: int, per_resample: int) -> Iterable[int]:
    size = max(1, min(total, _CHUNK_ELEMENTS // max(per_resample, 1)))
    done = 0
    while done < total:
        step = min(size, total - done)
        yield step
        done += step


def bootstrap_weights(n_units: int, resamples: int, rng: np.random.Generator,
                      groups: np.ndarray | None = None) -> np.ndarray:
    """(resamples, n_units) multiplicities: each row counts how often each unit is drawn in n_units draws.
    With ``groups`` (each unit's group number, 0 to g - 1), (resamples, g): how often a unit of each group is
    drawn, from the same draws."""
    # numpy draws integers below 2**32 from 32-bit words whatever the dtype asked, so 32-bit draws are the same
    # stream as 64-bit ones, and numbering every resample's units in place in them is twice as fast
    kind = np.uint32 if resamples * n_units < 2**32 else np.int64
    draws = rng.integers(0, n_units, size=(resamples, n_units), dtype=kind)
    bins = n_units
    if groups is not None:
        draws, bins = groups.astype(kind, copy=False)[draws], int(groups.max()) + 1
    draws += (bins * np.arange(resamples, dtype=kind))[:, None]
    return np.bincount(draws.ravel(), minlength=resamples * bins).reshape(resamples, bins)


def bootstrap_distribution(stats: Sequence[UnitStats], resamples: int = DEFAULT_RESAMPLES,
                           seed: int = 0) -> np.ndarray:
    """(resamples, n_runs) scores of each run on the same bootstrap resamples of the units.

    Each run's counts are summed over a resample's units once, for every run at a time (one matrix
    product per chunk of resamples), and the scores computed from those sums. Where the counts are whole
    numbers, units with the same counts in every run are summed as one kind of unit (most test units of a
    classifier are alike: right in every run, or wrong in every run): a resample's sums are then how often it
    drew each kind times that kind's counts, the same whole numbers from the same draws, in a third of the
    time on ChemProt."""
    counts = stack(stats)
    n_units, n_runs, k = counts.shape
    flat = counts.reshape(n_units, n_runs * k)
    groups = None
    if np.array_equal(flat, np.round(flat)) and n_units * np.abs(flat).max(initial=0) < 2**53:  # sums exact
        flat, groups = np.unique(flat, axis=0, return_inverse=True)
        groups = groups.reshape(-1)
    rng = np.random.default_rng(seed)
    sums = np.empty((resamples, n_runs * k))
    done = 0
    for size in chunks(resamples, n_units):
        np.matmul(bootstrap_weights(n_units, size, rng, groups), flat, out=sums[done:done + size], dtype=float)
        done += size
    return score_from_sums(stats[0].metric, sums.reshape(resamples, n_runs, k))


def percentile_interval(values: np.ndarray, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Equal-tailed percentile interval (linear interpolation, as ``scipy.stats.bootstrap``'s percentile)."""
    alpha = (1.0 - confidence) / 2
    low, high = np.percentile(values, [100 * alpha, 100 * (1 - alpha)])
    return float(low), float(high)


@dataclass(frozen=True)
class Interval:
    """A test score (mean over runs) with its percentile-bootstrap interval over test units."""

    score: float
    low: float
    high: float
    n_units: int
    n_runs: int = 1
    resamples: int = DEFAULT_RESAMPLES
    confidence: float = CONFIDENCE

    def __iter__(self):
        """Unpacks as (score, low, high, n_units)."""
        return iter((self.score, self.low, self.high, self.n_units))


def bootstrap_interval(stats: UnitStats | Sequence[UnitStats], resamples: int = DEFAULT_RESAMPLES,
                       seed: int = 0, confidence: float = CONFIDENCE) -> Interval:
    """Percentile-bootstrap interval of a run's score, or of the mean of runs scored on the same resamples."""
    runs = [stats] if isinstance(stats, UnitStats) else list(stats)
    if resamples < 1:
        raise ValueError(f"resamples must be positive, got {resamples}")
    dist = bootstrap_distribution(runs, resamples, seed).mean(axis=1)
    low, high = percentile_interval(dist, confidence)
    score = float(np.mean([s.score() for s in runs]))
    return Interval(score, low, high, runs[0].n_units, len(runs), resamples, confidence)


# --------------------------------------------------------------------------- the multi-bootstrap of a claim
#
# A verdict needs one distribution that resamples everything that varies between two builds of a system: the
# test units, the fine-tuning seeds and, where a system has several pretrained models, the pretraining seeds
# (the multi-bootstrap of MultiBERTs, Sellam et al. 2022). Its interval and its p-value are read from the same
# draws by the two functions below, defined so that they cannot disagree (see ``tail_rank``).


def alpha_of(confidence: float = CONFIDENCE) -> float:
    """1 − ``confidence``, rounded so that 95% gives exactly 0.05 (``1.0 - 0.95`` is 0.050000000000000044,
    under which a p of exactly 0.05 would count as below it)."""
    return round(1.0 - confidence, 12)


def tail_rank(resamples: int, confidence: float = CONFIDENCE) -> int:
    """k, the rank of the interval's ends among ``resamples`` sorted draws: the smallest m for which the
    p-value of :func:`bootstrap_p`, (1 + 2m) / (B + 1), is not below alpha = 1 − confidence.

    With B draws d_(1) ≤ ... ≤ d_(B), the interval is [d_(k), d_(B+1−k)]. It excludes 0 exactly when fewer
    than k draws lie on one side of 0 (counting draws at 0 on both sides), i.e. when the smaller tail count m
    has (1 + 2m) / (B + 1) < alpha, which is p < alpha: the interval excludes 0 if and only if p < alpha. The
    comparison is made in the same floating-point arithmetic as the p-value, so no rounding can separate
    them. For B = 1999 at 95%, k = 50 = (B + 1) × 0.025, Davison & Hinkley's (1997) percentile ends.
    """
    alpha = alpha_of(confidence)
    if (1 + 2 * 0) / (resamples + 1) >= alpha:
        raise ValueError(f"{resamples} resamples cannot give a {confidence:.0%} interval that excludes 0 "
                         f"(need (1 + 0) / (B + 1) < {alpha:g}, i.e. B ≥ {math.ceil(1 / alpha)})")
    m = 0
    while (1 + 2 * m) / (resamples + 1) < alpha:
        m += 1
    return m


def order_interval(draws: np.ndarray, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The percentile interval [d_(k), d_(B+1−k)] of the draws, k = :func:`tail_rank` (order statistics, no
    interpolation: interpolating between draws could put an end on the other side of 0 from both draws)."""
    ordered = np.sort(np.asarray(draws, dtype=float))
    k = tail_rank(len(ordered), confidence)
    return float(ordered[k - 1]), float(ordered[len(ordered) - k])


def bootstrap_p(draws: np.ndarray) -> float:
    """Two-sided bootstrap p-value of "the statistic is 0": (1 + 2 min(#{d ≤ 0}, #{d ≥ 0})) / (B + 1),
    capped at 1; the smallest alpha at which :func:`order_interval` would exclude 0."""
    d = np.asarray(draws, dtype=float)
    tail = min(int(np.count_nonzero(d <= 0)), int(np.count_nonzero(d >= 0)))
    return min(1.0, (1 + 2 * tail) / (len(d) + 1))


def seed_weights(groups: Sequence[int], resamples: int, rng: np.random.Generator,
                 pretraining: np.ndarray | None = None) -> np.ndarray:
    """(resamples, n_runs) weights, each row summing to 1, that resample a system's runs hierarchically:
    pretraining seeds with replacement (``pretraining``: (resamples, n_groups) multiplicities, shared by every
    dataset the same pretrained models were fine-tuned on; None draws them here), then within each drawn
    pretraining seed its fine-tuning seeds with replacement. ``groups[j]`` is run j's pretraining seed index
    (0 .. n_groups − 1); one group is the plain bootstrap over fine-tuning seeds. The weighted sum of run scores
    is then the mean over drawn pretraining seeds of the mean over their drawn fine-tuning seeds."""
    groups = np.asarray(groups, dtype=int)
    n_groups = int(groups.max()) + 1
    if pretraining is None:
        pretraining = bootstrap_weights(n_groups, resamples, rng)
    out = np.zeros((resamples, len(groups)))
    for g in range(n_groups):
        members = np.flatnonzero(groups == g)
        if not len(members):
            raise ValueError(f"pretraining seed {g} has no fine-tuning run")
        inner = bootstrap_weights(len(members), resamples, rng) / len(members)
        out[:, members] = inner * pretraining[:, [g]]
    return out / pretraining.sum(axis=1, keepdims=True)
