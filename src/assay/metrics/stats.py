"""Statistics every metric uses: proportions with Wilson intervals, means with t intervals.
The Student-t quantile is computed here with the standard library (importing
``scipy.stats`` cost 1.3 s on every run); the tests check it against SciPy to 1e-9."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from statistics import NormalDist
from typing import Any


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float] | None:
    """Wilson score interval (``None`` when ``n == 0``)."""
    if n <= 0:
        return None
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    p = successes / n
    z2n = z * z / n
    centre = (p + z2n / 2) / (1 + z2n)
    half = z * math.sqrt(p * (1 - p) / n + z2n / (4 * n)) / (1 + z2n)
    return (max(0.0, centre - half), min(1.0, centre + half))


def _beta_fraction(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 1000):
        for numerator in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                          -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-16:
            break
    return h


def _beta_regularized(a: float, b: float, x: float) -> float:
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
                     + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1) / (a + b + 2):
        return front * _beta_fraction(a, b, x) / a
    return 1.0 - front * _beta_fraction(b, a, 1.0 - x) / b


def t_upper_tail(t: float, df: float) -> float:
    """P(T > t) for Student's t, ``t >= 0``."""
    return 0.5 * _beta_regularized(df / 2, 0.5, df / (df + t * t))


def t_quantile(p: float, df: float) -> float:
    """The ``p`` quantile of Student's t (``0.5 <= p < 1``) by bracketed Newton steps."""
    if not 0.5 <= p < 1 or df <= 0:
        raise ValueError(f"t_quantile needs 0.5 <= p < 1 and df > 0, got {p}, {df}")
    if p == 0.5:
        return 0.0
    tail = 1.0 - p
    log_norm = (math.lgamma((df + 1) / 2) - math.lgamma(df / 2)
                - 0.5 * math.log(df * math.pi))
    lo, hi = 0.0, max(1.0, NormalDist().inv_cdf(p))
    while t_upper_tail(hi, df) > tail:
        lo, hi = hi, hi * 2
    t = (lo + hi) / 2
    for _ in range(200):
        f = t_upper_tail(t, df) - tail  # decreasing in t
        if f == 0:
            return t
        if f > 0:
            lo = t
        else:
            hi = t
        density = math.exp(log_norm - (df + 1) / 2 * math.log1p(t * t / df))
        step = t + f / density if density > 0 else (lo + hi) / 2
        if not lo <= step <= hi:
            step = (lo + hi) / 2
        if abs(step - t) <= 1e-14 * max(1.0, t):
            return step
        t = step
    return t


def mean_interval(values: Sequence[float], confidence: float = 0.95) -> tuple[float, float] | None:
    """Student-t interval for a mean (``None`` for fewer than two values)."""
    n = len(values)
    if n < 2:
        return None
    mean = sum(values) / n
    var = sum((v - mean) ** 2 for v in values) / (n - 1)
    if var == 0:
        return (mean, mean)
    half = t_quantile(0.5 + confidence / 2, n - 1) * math.sqrt(var / n)
    return (mean - half, mean + half)


def proportion(successes: int, n: int, confidence: float = 0.95) -> dict[str, Any]:
    ci = wilson_interval(successes, n, confidence)
    return {"value": successes / n if n else None, "successes": successes, "n": n,
            "ci_low": ci[0] if ci else None, "ci_high": ci[1] if ci else None,
            "method": "wilson"}


def mean_with_ci(values: Sequence[float], confidence: float = 0.95) -> dict[str, Any]:
    n = len(values)
    ci = mean_interval(values, confidence)
    return {"value": sum(values) / n if n else None, "n": n,
            "ci_low": ci[0] if ci else None, "ci_high": ci[1] if ci else None, "method": "t"}


def bootstrap_interval(strata: dict[str, Sequence[float]],
                       statistic: Callable[[dict[str, float]], float | None], *,
                       resamples: int = 2000, seed: int = 0,
                       confidence: float = 0.95) -> tuple[float, float] | None:
    """Seeded stratified percentile bootstrap interval of ``statistic`` (given each stratum's mean,
    ``None`` left out); ``None`` if a stratum is empty or most resamples are undefined."""
    import numpy as np  # heavy

    if not strata or any(len(v) == 0 for v in strata.values()):
        return None
    rng = np.random.default_rng(seed)
    means: dict[str, Any] = {}
    for name, values in strata.items():
        arr = np.asarray(values, dtype=float)
        idx = rng.integers(0, len(arr), size=(resamples, len(arr)))
        means[name] = arr[idx].mean(axis=1)
    draws = [statistic({k: float(m[i]) for k, m in means.items()}) for i in range(resamples)]
    kept = [d for d in draws if d is not None]
    if len(kept) < resamples / 2:
        return None
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(kept, [tail, 100 - tail])
    return float(low), float(high)
