"""pass@k by the unbiased estimator of Chen et al. (2021): with ``n`` attempts of which ``c``
pass, ``1 - C(n - c, k) / C(n, k)``, as a running product (no huge binomials)."""

from __future__ import annotations

from collections.abc import Iterable


def pass_at_k(n: int, c: int, k: int) -> float:
    if not (isinstance(n, int) and isinstance(c, int) and isinstance(k, int)):
        raise TypeError("pass_at_k takes integers n, c, k")
    if n < 1 or not 0 <= c <= n:
        raise ValueError(f"pass@k needs n >= 1 and 0 <= c <= n (got n={n}, c={c})")
    if not 1 <= k <= n:
        raise ValueError(f"pass@{k} needs 1 <= k <= n attempts (got n={n})")
    if n - c < k:
        return 1.0
    miss = 1.0
    for i in range(n - c + 1, n + 1):
        miss *= 1.0 - k / i
    return 1.0 - miss


def mean_pass_at_k(groups: Iterable[tuple[int, int]], k: int) -> float | None:
    """pass@k averaged over ``(n, c)`` problems; ``None`` for none."""
    values = [pass_at_k(n, c, k) for n, c in groups]
    return sum(values) / len(values) if values else None
