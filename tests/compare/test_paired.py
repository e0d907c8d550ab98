"""The paired statistics against SciPy and against their definitions.

Oracles: SciPy's exact binomial test and its closed form (twice the smaller binomial tail);
the worked McNemar value in reference/judging.md (b = 15, c = 5: p = 0.041); SciPy's paired
t-test, which a paired bootstrap must approach on a large sample; and the coverage of the
Newcombe interval in simulation (a wrong sign or a wrong correlation term shows up as
coverage far from 95%).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binom, binomtest, ttest_rel

from assay.compare.paired import (
    holm,
    mcnemar_exact,
    newcombe_paired_interval,
    paired_binary,
    paired_bootstrap,
)


@pytest.mark.parametrize("broken,fixed", [(0, 0), (0, 1), (5, 30), (30, 5), (15, 5), (7, 7),
                                          (0, 12), (40, 61), (1, 200)])
def test_mcnemar_is_the_exact_binomial_test_of_the_discordant_pairs(broken, fixed):
    p = mcnemar_exact(broken, fixed)
    n = broken + fixed
    if n == 0:
        assert p == 1.0
        return
    assert p == pytest.approx(binomtest(fixed, n, 0.5).pvalue, rel=1e-12)
    # the closed form McNemar's exact test is usually written in
    assert p == pytest.approx(min(1.0, 2 * binom.cdf(min(broken, fixed), n, 0.5)), rel=1e-9)
    assert p == mcnemar_exact(fixed, broken)  # symmetric in the two kinds of flips


def test_mcnemar_reference_value():
    assert round(mcnemar_exact(15, 5), 3) == 0.041


def test_paired_binary_counts_and_verdict():
    a = [1] * 95 + [1] * 5 + [0] * 30 + [0] * 70
    b = [1] * 95 + [0] * 5 + [1] * 30 + [0] * 70
    res = paired_binary(a, b)
    assert res["contingency"] == {"both_pass": 95, "a_only_pass": 5, "b_only_pass": 30,
                                  "both_fail": 70}
    assert res["delta"] == pytest.approx(0.125) and res["verdict"] == "B better"
    assert paired_binary(b, a)["verdict"] == "B worse"
    # the same 35 flips but balanced: no difference
    assert paired_binary(a, a)["verdict"] == "no significant difference"


def _coverage(p_both: float, p_a: float, p_b: float, n: int, sims: int = 1500) -> float:
    rng = np.random.default_rng(7)
    probs = [p_both, p_a, p_b, 1 - p_both - p_a - p_b]
    truth = p_b - p_a
    hits = 0
    for counts in rng.multinomial(n, probs, size=sims):
        lo, hi = newcombe_paired_interval(*map(int, counts))
        hits += lo <= truth <= hi
    return hits / sims


@pytest.mark.parametrize("cell", [(0.45, 0.05, 0.15, 60), (0.3, 0.1, 0.1, 40),
                                  (0.7, 0.02, 0.1, 100), (0.2, 0.2, 0.05, 30)])
def test_newcombe_interval_covers_the_true_difference(cell):
    # Newcombe reports coverage close to nominal for method 10; a sign or correlation
    # mistake gives coverage well away from it
    cov = _coverage(*cell)
    assert 0.92 <= cov <= 0.99, cov


def test_newcombe_interval_orientation_and_edges():
    lo, hi = newcombe_paired_interval(95, 5, 30, 70)  # B fixed 30, broke 5
    assert 0 < lo < 0.125 < hi
    lo2, hi2 = newcombe_paired_interval(95, 30, 5, 70)
    assert (lo2, hi2) == pytest.approx((-hi, -lo))
    # no discordant pair: the interval still has width and holds 0
    lo, hi = newcombe_paired_interval(10, 0, 0, 10)
    assert lo < 0 < hi
    assert newcombe_paired_interval(0, 0, 0, 0) is None


def test_paired_bootstrap_approaches_the_paired_t_test():
    rng = np.random.default_rng(3)
    a = rng.normal(5.0, 1.0, 400)
    b = a + rng.normal(0.12, 1.0, 400)
    delta, (lo, hi), p = paired_bootstrap(a, b, resamples=20000, seed=1)
    t = ttest_rel(b, a)
    ci = t.confidence_interval(0.95)
    assert delta == pytest.approx(float(np.mean(b - a)))
    assert lo == pytest.approx(ci.low, abs=0.02) and hi == pytest.approx(ci.high, abs=0.02)
    assert p == pytest.approx(t.pvalue, abs=0.01)


def test_paired_bootstrap_is_seeded_and_handles_constant_differences():
    a, b = [1.0, 2.0, 3.0, 4.0], [1.5, 2.0, 3.5, 4.0]
    assert paired_bootstrap(a, b, seed=5) == paired_bootstrap(a, b, seed=5)
    assert paired_bootstrap(a, a) == (0.0, (0.0, 0.0), 1.0)
    delta, ci, p = paired_bootstrap(a, [x + 1 for x in a])
    assert (delta, ci, p) == (1.0, (1.0, 1.0), 0.0)


def test_holm_step_down():
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, None, 0.9]) == [1.0, None, 1.0]  # 2 x 0.5, then the running max
    assert holm([]) == []


def test_paired_bootstrap_p_value_on_nulls_known_exactly():
    # two differences 1 and 3: the centred values are -1 and +1, so a resampled mean is
    # -1, 0 or +1 and never as far from 0 as the observed 2; the p-value is the observed
    # draw alone, 1 / (resamples + 1)
    delta, (lo, hi), p = paired_bootstrap([0.0, 0.0], [1.0, 3.0])
    assert delta == 2.0 and p == 1 / 10001  # the default is 10000 resamples
    assert 1.0 <= lo <= hi <= 3.0
    assert paired_bootstrap([0.0, 0.0], [1.0, 3.0], resamples=2500)[2] == 1 / 2501
    # differences 0 and 2: |resampled centred mean| is 1 (as far as the observed 1) with
    # probability 1/2, so p is close to 1/2
    _, _, p = paired_bootstrap([0.0, 0.0], [0.0, 2.0], resamples=20000, seed=4)
    assert p == pytest.approx(0.5, abs=0.02)
    # the default seed is 0
    assert paired_bootstrap([0, 0, 1], [1, 0, 3]) == paired_bootstrap([0, 0, 1], [1, 0, 3],
                                                                        seed=0)


def test_paired_bootstrap_edges():
    with pytest.raises(ValueError, match="needs at least one pair"):
        paired_bootstrap([], [])
    assert paired_bootstrap([1.0], [3.0]) == (2.0, (2.0, 2.0), 1.0)  # one pair: no evidence
    assert paired_bootstrap([1, 2], [2, 3]) == (1.0, (1.0, 1.0), 0.0)


@pytest.mark.parametrize("confidence", [0.95, 0.8, 0.5])
def test_paired_bootstrap_interval_has_the_asked_level(confidence):
    # differences with sd 1 over 400 pairs: the percentile interval approaches the paired
    # t interval of the same level (a level off by a few percent moves it by > 0.005)
    rng = np.random.default_rng(5)
    a = rng.normal(0.0, 1.0, 400)
    b = a + rng.normal(0.1, 1.0, 400)
    _, (lo, hi), _ = paired_bootstrap(a, b, resamples=40000, seed=3, confidence=confidence)
    ci = ttest_rel(b, a).confidence_interval(confidence)
    assert lo == pytest.approx(ci.low, abs=0.004) and hi == pytest.approx(ci.high, abs=0.004)


@pytest.mark.parametrize("confidence", [0.8, 0.9, 0.99])
def test_newcombe_interval_mirrors_when_a_and_b_swap_at_any_level(confidence):
    # swapping the runs negates the difference: the interval must mirror exactly, which
    # holds only if both runs' Wilson intervals are taken at the level asked for
    lo, hi = newcombe_paired_interval(40, 6, 15, 39, confidence)
    assert newcombe_paired_interval(40, 15, 6, 39, confidence) == pytest.approx((-hi, -lo))
    wide = newcombe_paired_interval(40, 6, 15, 39, 0.995)
    assert wide[0] < lo < 0.09 < hi < wide[1]
