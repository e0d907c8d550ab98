"""Paired statistics for two runs scored on the same samples.

- Pass/fail: McNemar's exact test (binomial on the discordant pairs) and Newcombe's hybrid
  score interval of the paired difference (Newcombe 1998, method 10).
- Continuous: a seeded paired bootstrap of the mean difference (percentile interval;
  p from the resamples of the centred differences).
- Many categories: Holm's step-down adjustment."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from assay.metrics.stats import wilson_interval

__all__ = ["holm", "mcnemar_exact", "newcombe_paired_interval", "paired_binary",
           "paired_bootstrap", "paired_continuous"]


def mcnemar_exact(broken: int, fixed: int) -> float:
    """Two-sided exact McNemar p-value from the discordant counts (1.0 when there are none)."""
    n = broken + fixed
    if n == 0:
        return 1.0
    from scipy.stats import binomtest  # heavy

    return float(binomtest(fixed, n, 0.5, alternative="two-sided").pvalue)


def newcombe_paired_interval(both: int, a_only: int, b_only: int, neither: int,
                             confidence: float = 0.95) -> tuple[float, float] | None:
    """Interval of ``rate(B) - rate(A)`` from the counts: both passed, only A, only B, neither."""
    n = both + a_only + b_only + neither
    if n == 0:
        return None
    pa, pb = (both + a_only) / n, (both + b_only) / n
    la, ua = wilson_interval(both + a_only, n, confidence)  # type: ignore[misc]
    lb, ub = wilson_interval(both + b_only, n, confidence)  # type: ignore[misc]
    denom = (both + a_only) * (b_only + neither) * (both + b_only) * (a_only + neither)
    # the pairs' correlation, with Newcombe's correction: a positive ad - bc is reduced
    # by n/2 (and not below 0), which keeps the interval from being too narrow
    cross = both * neither - a_only * b_only
    cross = max(cross - n / 2, 0.0) if cross > 0 else cross
    phi = cross / math.sqrt(denom) if denom else 0.0
    delta = pb - pa
    low = delta - math.sqrt(max(0.0, (pb - lb) ** 2 - 2 * phi * (pb - lb) * (ua - pa)
                                + (ua - pa) ** 2))
    high = delta + math.sqrt(max(0.0, (ub - pb) ** 2 - 2 * phi * (ub - pb) * (pa - la)
                                 + (pa - la) ** 2))
    return max(-1.0, low), min(1.0, high)


def paired_bootstrap(a: Sequence[float], b: Sequence[float], *, resamples: int = 10000,
                     seed: int = 0, confidence: float = 0.95
                     ) -> tuple[float, tuple[float, float] | None, float]:
    """Mean difference ``mean(b - a)``, its percentile interval and a two-sided p-value."""
    import numpy as np  # heavy

    d = np.asarray(b, dtype=float) - np.asarray(a, dtype=float)
    n = len(d)
    if n == 0:
        raise ValueError("a paired bootstrap needs at least one pair")
    delta = float(d.mean())
    if n == 1 or np.all(d == d[0]):
        # every resample is the same: no spread to draw an interval or a p-value from
        return delta, (delta, delta), (1.0 if delta == 0 else 0.0) if n > 1 else 1.0
    rng = np.random.default_rng(seed)
    means = np.empty(resamples)
    centred = d - delta
    null = np.empty(resamples)
    for start in range(0, resamples, 1000):  # in blocks: memory stays flat for big runs
        k = min(1000, resamples - start)
        idx = rng.integers(0, n, size=(k, n))
        means[start:start + k] = d[idx].mean(axis=1)
        null[start:start + k] = centred[idx].mean(axis=1)
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    # the +1s: the observed difference counts as one draw, so p is never exactly 0
    p = (int(np.sum(np.abs(null) >= abs(delta) - 1e-12)) + 1) / (resamples + 1)
    return delta, (float(low), float(high)), min(1.0, p)


def holm(pvalues: Sequence[float | None]) -> list[float | None]:
    """Holm's step-down adjusted p-values (``None`` entries are left out and kept)."""
    present = sorted((p, i) for i, p in enumerate(pvalues) if p is not None)
    m = len(present)
    out: list[float | None] = [None] * len(pvalues)
    running = 0.0
    for rank, (p, i) in enumerate(present):
        running = max(running, min(1.0, (m - rank) * p))
        out[i] = running
    return out


def paired_binary(a: Sequence[float], b: Sequence[float], *, alpha: float = 0.05
                  ) -> dict[str, Any]:
    """McNemar and Newcombe on paired 0/1 values (``a[i]``, ``b[i]``: the same sample)."""
    pairs = [(bool(x), bool(y)) for x, y in zip(a, b, strict=True)]
    both, a_only = pairs.count((True, True)), pairs.count((True, False))
    b_only, neither = pairs.count((False, True)), pairs.count((False, False))
    n = len(a)
    p = mcnemar_exact(a_only, b_only)
    ci = newcombe_paired_interval(both, a_only, b_only, neither, 1 - alpha)
    out = _result(sum(a) / n, sum(b) / n, ci, p, "mcnemar_exact", alpha, n)
    out["contingency"] = {"both_pass": both, "a_only_pass": a_only, "b_only_pass": b_only,
                          "both_fail": neither}
    return out


def paired_continuous(a: Sequence[float], b: Sequence[float], *, alpha: float = 0.05,
                      resamples: int = 10000, seed: int = 0) -> dict[str, Any]:
    """The paired bootstrap of ``mean(b - a)`` as a comparison result."""
    delta, ci, p = paired_bootstrap(a, b, resamples=resamples, seed=seed, confidence=1 - alpha)
    n = len(a)
    return _result(sum(a) / n, sum(b) / n, ci, p, "paired_bootstrap", alpha, n, delta)


def _result(ma: float, mb: float, ci: tuple[float, float] | None, p: float, test: str,
            alpha: float, n: int, delta: float | None = None) -> dict[str, Any]:
    delta = mb - ma if delta is None else delta
    significant = p < alpha and delta != 0
    verdict = ("no significant difference" if not significant
               else "B better" if delta > 0 else "B worse")
    return {"n": n, "a": ma, "b": mb, "delta": delta,
            "ci_low": ci[0] if ci else None, "ci_high": ci[1] if ci else None,
            "p_value": p, "test": test, "alpha": alpha, "significant": significant,
            "verdict": verdict}
