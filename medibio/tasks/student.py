"""Student's t where the book needs it: a quantile, and Welch's test from means and standard deviations.

These are the computations of ``scipy.stats.t.ppf`` and ``scipy.stats.ttest_ind_from_stats(...,
equal_var=False)``, step for step on the same special functions (``scipy.special.stdtr`` and ``stdtrit``), so
they give the same numbers to the last bit (tested) while a chapter imports ``scipy.special`` (a quarter of a
second) instead of ``scipy.stats`` (about one and a half, in every chapter that wanted one quantile).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class Welch(NamedTuple):
    """Welch's two-sided t-test of mean A − mean B, with its degrees of freedom and standard error."""

    statistic: float
    pvalue: float
    df: float
    standard_error: float
    difference: float

    def interval(self, confidence: float) -> tuple[float, float]:
        """The two-sided ``confidence`` t-interval of the difference (scipy's ``confidence_interval``)."""
        from scipy import special

        tail = (1 - np.asarray(confidence, dtype=float)) / 2
        low, high = special.stdtrit(self.df, np.stack((tail, 1 - tail)))
        return (float(low * self.standard_error + self.difference),
                float(high * self.standard_error + self.difference))


def t_quantile(q: float, df: float) -> float:
    """The ``q`` quantile of Student's t with ``df`` degrees of freedom (``scipy.stats.t.ppf``)."""
    from scipy import special

    return float(special.stdtrit(df, q))


def _welch(mean1: np.ndarray, var1: np.ndarray, n1: float, mean2: np.ndarray, var2: np.ndarray,
           n2: float) -> Welch:
    """scipy's ``_unequal_var_ttest_denom`` and ``_ttest_ind_from_stats`` for a two-sided test."""
    from scipy import special

    vn1, vn2 = var1 / n1, var2 / n2
    with np.errstate(divide="ignore", invalid="ignore"):
        df = (vn1 + vn2) ** 2 / (vn1 ** 2 / (n1 - 1) + vn2 ** 2 / (n2 - 1))
    df = np.where(np.isnan(df), 1.0, df)  # both variances 0: any df will do
    denom = np.sqrt(vn1 + vn2)
    difference = mean1 - mean2
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.divide(difference, denom)
    p = 2 * special.stdtr(df, -np.abs(t))
    return Welch(float(t), float(p), float(df), float(denom), float(difference))


def welch_from_stats(mean1: float, std1: float, n1: int, mean2: float, std2: float, n2: int) -> Welch:
    """Welch's test from two means, sample standard deviations and sizes (as printed in a paper's table)."""
    std1, std2 = np.asarray(std1, dtype=float), np.asarray(std2, dtype=float)
    return _welch(np.asarray(mean1, dtype=float), std1 ** 2, n1, np.asarray(mean2, dtype=float), std2 ** 2, n2)


def welch(a: list[float] | np.ndarray, b: list[float] | np.ndarray) -> Welch:
    """Welch's test of two samples (``scipy.stats.ttest_ind(a, b, equal_var=False)``): each sample's mean and
    its variance with one degree of freedom taken, as scipy computes them."""
    samples = [np.asarray(x, dtype=float) for x in (a, b)]
    n1, n2 = (float(len(x)) for x in samples)
    var1, var2 = (np.mean((x - np.mean(x, keepdims=True)) ** 2) * (n / (n - 1))
                  for x, n in zip(samples, (n1, n2), strict=True))
    return _welch(np.mean(samples[0]), var1, n1, np.mean(samples[1]), var2, n2)
