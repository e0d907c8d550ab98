"""The level of the paired pass/fail interval (issue 32): ``paired_binary`` and
``compare_runs`` hand Newcombe's interval the level ``1 - alpha`` the user asked for.

The oracle is Newcombe's square-and-add interval for paired proportions (Newcombe 1998,
method 10) written out here from its published definition, as Fagerland, Lydersen and
Laake give it (*Statistical Analysis of Contingency Tables*, 2017, ch. 8; their R package
``contingencytables``, ``Newcombe_square_and_add_CI_paired_2x2``), with Wilson's score
interval from its formula and only SciPy's normal quantile. The oracle is first checked
against the book's published 95% result for Cavo et al. (2012) (complete response before
and after consolidation therapy, table ``[[59, 6], [16, 80]]``: estimate -0.0621, 95% CI
-0.1186 to -0.0046), then used at 90% and 99%, where no number is published.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from scipy.stats import norm
from test_compare_store import write_run

from assay.compare.paired import paired_binary
from assay.compare.runs import compare_runs
from assay.store.sqlite import Store

#: Cavo et al. (2012): rows after consolidation (response, none), columns before
CAVO = [[59, 6], [16, 80]]


def wilson(x: int, n: int, confidence: float) -> tuple[float, float]:
    """Wilson's (1927) score interval for ``x`` successes in ``n``."""
    z = norm.ppf(1 - (1 - confidence) / 2)
    p = x / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def newcombe_square_and_add(table: list[list[int]], confidence: float
                            ) -> tuple[float, float, float]:
    """(estimate, lower, upper) for ``p1+ - p+1`` of a paired 2x2 table, as defined by
    Newcombe (1998, method 10) and stated by Fagerland et al. (2017, ch. 8)."""
    (n11, n12), (n21, n22) = table
    total = n11 + n12 + n21 + n22
    row1, row2, col1, col2 = n11 + n12, n21 + n22, n11 + n21, n12 + n22
    p1, p2 = row1 / total, col1 / total
    l1, u1 = wilson(row1, total, confidence)
    l2, u2 = wilson(col1, total, confidence)
    if 0 in (row1, row2, col1, col2):
        psi = 0.0
    else:
        a = n11 * n22 - n12 * n21
        nprod = row1 * row2 * col1 * col2
        psi = ((a - total / 2) / math.sqrt(nprod) if a > total / 2
               else 0.0 if a >= 0 else a / math.sqrt(nprod))
    d1, d2 = p1 - l1, u2 - p2
    lower = (p1 - p2) - math.sqrt(d1 * d1 + d2 * d2 - 2 * psi * d1 * d2)
    d3, d4 = p2 - l2, u1 - p1
    upper = (p1 - p2) + math.sqrt(d3 * d3 + d4 * d4 - 2 * psi * d3 * d4)
    return p1 - p2, lower, upper


def paired_values(table: list[list[int]]) -> tuple[list[float], list[float]]:
    """Per-sample 0/1 values of runs A and B for a table with B's outcome as the rows
    and A's as the columns (so ``p1+ - p+1`` is ``rate(B) - rate(A)``)."""
    (both, b_only), (a_only, neither) = table
    a = [1.0] * both + [0.0] * b_only + [1.0] * a_only + [0.0] * neither
    b = [1.0] * both + [1.0] * b_only + [0.0] * a_only + [0.0] * neither
    return a, b


def test_the_oracle_gives_the_books_published_result() -> None:
    estimate, lower, upper = newcombe_square_and_add(CAVO, 0.95)
    assert (round(estimate, 4), round(lower, 4), round(upper, 4)) == (-0.0621, -0.1186,
                                                                      -0.0046)


def test_paired_binary_at_the_default_level_is_the_published_interval() -> None:
    a, b = paired_values(CAVO)
    res = paired_binary(a, b)
    assert res["alpha"] == 0.05
    assert (round(res["delta"], 4), round(res["ci_low"], 4), round(res["ci_high"], 4)) == (
        -0.0621, -0.1186, -0.0046)


@pytest.mark.parametrize("alpha", [0.10, 0.01, 0.20])
@pytest.mark.parametrize("table", [CAVO, [[40, 15], [6, 39]], [[5, 9], [2, 4]]],
                         ids=["cavo", "b-better", "small"])
def test_paired_binary_interval_has_the_level_alpha_asks_for(table: list[list[int]],
                                                             alpha: float) -> None:
    a, b = paired_values(table)
    res = paired_binary(a, b, alpha=alpha)
    estimate, lower, upper = newcombe_square_and_add(table, 1 - alpha)
    assert res["delta"] == pytest.approx(estimate)
    assert (res["ci_low"], res["ci_high"]) == pytest.approx((lower, upper), abs=1e-9)
    # and it is not the 95% interval (a level off by a few percent moves the limits)
    _, low95, high95 = newcombe_square_and_add(table, 0.95)
    assert abs(res["ci_low"] - low95) > 1e-3 and abs(res["ci_high"] - high95) > 1e-3


def test_compare_runs_hands_alpha_to_the_paired_interval(workspace: Path) -> None:
    """The user's path: ``assay compare A B --alpha 0.1`` on two stored runs."""
    a, b = paired_values(CAVO)
    store = Store(workspace / "assay.db")
    try:
        ra = write_run(store, {f"s{i:03d}": [v] for i, v in enumerate(a)})
        rb = write_run(store, {f"s{i:03d}": [v] for i, v in enumerate(b)})
        for alpha in (0.10, 0.05, 0.01):
            primary = compare_runs(store, ra, rb, alpha=alpha, outputs=False)["primary"]
            _, lower, upper = newcombe_square_and_add(CAVO, 1 - alpha)
            assert primary["alpha"] == alpha
            assert (primary["ci_low"], primary["ci_high"]) == pytest.approx(
                (lower, upper), abs=1e-9), alpha
    finally:
        store.close()
