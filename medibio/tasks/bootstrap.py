"""Resampling test units: the percentile bootstrap (Efron & Tibshirani 1993) of a score over the units of
a test set (:mod:`medibio.tasks.units`), vectorised over resamples.

Every score of a run is a function of per-unit counts (true positives, pairs, correct answers ...), so a
resample is a vector of unit multiplicities and its score a matrix product: thousands of resamples of a full
test set take a fraction of a second. Paired tests (:mod:`medibio.results.significance`) draw their
resamples here too.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from medibio.tasks.units import UnitStats, score_from_sums

DEFAULT_RESAMPLES = 1000
CONFIDENCE = 0.95
_CHUNK_ELEMENTS = 4_000_000  # resamples are processed in chunks of about this many floats


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


def bootstrap_weights(n_units: int, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """(resamples, n_units) multiplicities: each row counts how often each unit is drawn in n_units draws."""
    draws = rng.integers(0, n_units, size=(resamples, n_units))
    flat = draws + n_units * np.arange(resamples)[:, None]
    return np.bincount(flat.ravel(), minlength=resamples * n_units).reshape(resamples, n_units)


def _weighted_scores(metric: str, counts: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Scores (resamples, n_runs) of every run on every weighted resample."""
    n_units, n_runs, k = counts.shape
    sums = (weights.astype(float) @ counts.reshape(n_units, n_runs * k)).reshape(-1, n_runs, k)
    return score_from_sums(metric, sums)


def bootstrap_distribution(stats: Sequence[UnitStats], resamples: int = DEFAULT_RESAMPLES,
                           seed: int = 0) -> np.ndarray:
    """(resamples, n_runs) scores of each run on the same bootstrap resamples of the units."""
    counts = stack(stats)
    rng = np.random.default_rng(seed)
    out = [_weighted_scores(stats[0].metric, counts, bootstrap_weights(counts.shape[0], size, rng))
           for size in chunks(resamples, counts.shape[0] * (1 + counts.shape[1] * counts.shape[2]))]
    return np.concatenate(out, axis=0)


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
