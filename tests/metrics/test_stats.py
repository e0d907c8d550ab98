"""Intervals computed without SciPy agree with SciPy (the oracle, a test dependency)."""

from __future__ import annotations

import pytest
from scipy import stats
from scipy.stats import binomtest

from assay.metrics.stats import mean_interval, t_quantile, wilson_interval

CONFIDENCES = (0.8, 0.9, 0.95, 0.99, 0.999)


@pytest.mark.parametrize("n", [*range(1, 41), 99, 100, 1000, 12345, 100_000])
def test_wilson_matches_scipy(n: int) -> None:
    for successes in sorted({0, 1, n // 7, n // 3, n // 2, n - 1, n}):
        for confidence in CONFIDENCES:
            ours = wilson_interval(successes, n, confidence)
            ci = binomtest(successes, n).proportion_ci(confidence_level=confidence,
                                                       method="wilson")
            assert ours == pytest.approx((ci.low, ci.high), abs=1e-12), (successes, n)


@pytest.mark.parametrize("df", [*range(1, 120), 150, 299, 500, 999, 5000, 100_000, 0.5, 2.5])
def test_t_quantile_matches_scipy(df: float) -> None:
    for p in (0.5, 0.6, 0.75, 0.9, 0.95, 0.975, 0.995, 0.9995, 0.999999):
        expected = stats.t.ppf(p, df)
        assert t_quantile(p, df) == pytest.approx(expected, rel=1e-9, abs=1e-12), p


def test_t_quantile_for_huge_df_is_the_normal_quantile() -> None:
    for p in (0.9, 0.975, 0.9995):
        assert t_quantile(p, 10**7) == pytest.approx(stats.t.ppf(p, 10**7), rel=1e-8)


def test_mean_interval_matches_scipy() -> None:
    values = [0.12, 0.5, 0.33, 0.9, 0.41, 0.27, 0.66]
    lo, hi = mean_interval(values)
    ref = stats.t.interval(0.95, len(values) - 1, loc=stats.tmean(values),
                           scale=stats.sem(values))
    assert (lo, hi) == pytest.approx(ref, rel=1e-12)
    assert mean_interval([3.0]) is None and mean_interval([2.0, 2.0]) == (2.0, 2.0)


def test_t_quantile_refuses_lower_half() -> None:
    with pytest.raises(ValueError):
        t_quantile(0.3, 5)
