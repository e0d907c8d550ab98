"""Statistics every metric uses: proportions with Wilson intervals, means with t intervals.

SciPy does the numerics (imported lazily: it costs ~0.3 s and only reports need it).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float] | None:
    """Wilson score interval for a binomial proportion (``None`` when ``n == 0``)."""
    if n <= 0:
        return None
    from scipy.stats import binomtest

    ci = binomtest(int(successes), int(n)).proportion_ci(confidence_level=confidence,
                                                        method="wilson")
    return (float(ci.low), float(ci.high))


def mean_interval(values: Sequence[float], confidence: float = 0.95) -> tuple[float, float] | None:
    """Student-t interval for a mean (``None`` for fewer than two values)."""
    n = len(values)
    if n < 2:
        return None
    from scipy import stats

    mean = sum(values) / n
    var = sum((v - mean) ** 2 for v in values) / (n - 1)
    if var == 0:
        return (mean, mean)
    half = float(stats.t.ppf(0.5 + confidence / 2, n - 1)) * math.sqrt(var / n)
    return (mean - half, mean + half)


def proportion(successes: int, n: int, confidence: float = 0.95) -> dict[str, Any]:
    """A rate with its Wilson interval, as reports show it."""
    ci = wilson_interval(successes, n, confidence)
    return {
        "value": successes / n if n else None,
        "successes": successes,
        "n": n,
        "ci_low": ci[0] if ci else None,
        "ci_high": ci[1] if ci else None,
        "method": "wilson",
    }


def mean_with_ci(values: Sequence[float], confidence: float = 0.95) -> dict[str, Any]:
    """A mean with its t interval, as reports show it."""
    n = len(values)
    ci = mean_interval(values, confidence)
    return {
        "value": sum(values) / n if n else None,
        "n": n,
        "ci_low": ci[0] if ci else None,
        "ci_high": ci[1] if ci else None,
        "method": "t",
    }
