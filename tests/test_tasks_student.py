"""Student's t without scipy.stats (medibio.tasks.student): the same numbers as scipy.stats to the last bit."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
from scipy import stats

from medibio.tasks import student


def test_welch_and_the_t_quantile_are_scipy_stats_to_the_last_bit() -> None:
    rng = np.random.default_rng(1)
    for i in range(1500):
        m1, m2 = rng.normal(50, 20, 2)
        s1, s2 = rng.gamma(1, 2, 2)
        n1, n2 = (int(n) for n in rng.integers(2, 12, 2))
        if i % 50 == 0:
            s2 = 0.0
        if i % 97 == 0:  # no spread at all: scipy's df of 1, an infinite t
            s1 = s2 = 0.0
        theirs = stats.ttest_ind_from_stats(m1, s1, n1, m2, s2, n2, equal_var=False)
        ours = student.welch_from_stats(m1, s1, n1, m2, s2, n2)
        assert np.array([ours.statistic, ours.pvalue]).tobytes() == np.array([theirs.statistic,
                                                                                theirs.pvalue]).tobytes()
        a, b = rng.normal(m1, s1 + 0.1, n1), rng.normal(m2, s2 + 0.1, n2)
        theirs = stats.ttest_ind(a, b, equal_var=False)
        ours = student.welch(list(a), b)
        interval = theirs.confidence_interval(0.95)
        assert (ours.statistic, ours.pvalue, ours.df, *ours.interval(0.95)) == (
            float(theirs.statistic), float(theirs.pvalue), float(theirs.df), float(interval.low),
            float(interval.high))
        q, df = rng.uniform(0.001, 0.999), int(rng.integers(1, 40))
        assert student.t_quantile(q, df) == float(stats.t.ppf(q, df))


def test_the_t_of_a_chapter_imports_no_scipy_stats() -> None:
    script = ("import sys; from medibio.tasks import student; student.t_quantile(0.975, 4); "
              "student.welch([1.0, 2.0], [2.0, 4.0]).interval(0.95); assert 'scipy.stats' not in sys.modules")
    subprocess.run([sys.executable, "-c", script], check=True)
