"""Weighted kappa and percent agreement: hand-checked values and scikit-learn cross-checks."""

from __future__ import annotations

import random
import sys

import pytest

from assay.metrics.agreement import (
    _kappa_numpy,
    pairwise_agreement,
    percent_agreement,
    weighted_kappa,
)

# Hand-checked 3-category example (scale 1-3):
#   confusion rows (rater a) x cols (rater b): [[1,1,0],[0,0,1],[0,0,1]], n = 4
#   expected = outer(row sums [2,1,1], col sums [1,1,2]) / 4
#   quadratic: sum(w*O) = 2, sum(w*E) = 6.5 -> 1 - 2/6.5
#   linear:    sum(w*O) = 2, sum(w*E) = 4.0 -> 0.5
#   unweighted: 1 - 2/2.75
A3 = [1, 2, 3, 1]
B3 = [1, 3, 3, 2]


@pytest.mark.parametrize("impl", ["public", "numpy"])
@pytest.mark.parametrize("weights, expected", [
    ("quadratic", 1 - 2 / 6.5), ("linear", 0.5), (None, 1 - 2 / 2.75),
])
def test_hand_checked_small_example(impl: str, weights: str | None, expected: float) -> None:
    f = weighted_kappa if impl == "public" else _kappa_numpy
    assert f(A3, B3, weights=weights) == pytest.approx(expected)


@pytest.mark.parametrize("impl", [weighted_kappa, _kappa_numpy])
def test_textbook_values(impl) -> None:
    # Cohen's kappa, the classic 2x2 example: 20 yes/yes, 5 yes/no, 10 no/yes, 15 no/no
    # p_o = 0.7, p_e = 0.5 -> kappa = 0.4 (with two categories every weighting is the same)
    a = ["y"] * 25 + ["n"] * 25
    b = ["y"] * 20 + ["n"] * 5 + ["y"] * 10 + ["n"] * 15
    assert impl(a, b, weights=None) == pytest.approx(0.4)
    assert impl(a, b, weights="quadratic") == pytest.approx(0.4)
    # perfect agreement, and complete reversal on two categories
    assert impl([1, 2, 3, 4, 5], [1, 2, 3, 4, 5]) == pytest.approx(1.0)
    assert impl([1, 2], [2, 1]) == pytest.approx(-1.0)


def test_quadratic_weights_credit_near_misses() -> None:
    # always one point apart on a 1-5 scale: unweighted kappa sees no agreement at all
    a = [1, 2, 3, 4, 5, 2, 3, 4]
    b = [2, 3, 4, 5, 4, 1, 2, 3]
    scale = range(1, 6)
    assert weighted_kappa(a, b, weights=None, labels=scale) < 0
    assert weighted_kappa(a, b, weights="quadratic", labels=scale) > 0.6


def test_labels_give_the_full_scale() -> None:
    # only 1, 2 and 5 observed: without labels 2 and 5 are adjacent categories (as far
    # apart as 1 and 2); on the full scale 2-vs-5 weighs 9 times a one-step disagreement
    a, b = [1, 1, 5, 5, 2, 2], [1, 5, 5, 5, 2, 1]
    with_scale = weighted_kappa(a, b, labels=range(1, 6))
    assert with_scale == pytest.approx(_kappa_numpy(a, b, labels=range(1, 6)))
    assert with_scale != pytest.approx(weighted_kappa(a, b))


def test_undefined_is_none() -> None:
    assert weighted_kappa([], []) is None
    assert weighted_kappa([3, 3, 3], [3, 3, 3]) is None  # no expected disagreement
    assert _kappa_numpy([3, 3, 3], [3, 3, 3]) is None
    assert weighted_kappa([7, 8], [7, 8], labels=range(1, 6)) is None  # nothing on the scale
    with pytest.raises(ValueError, match="length"):
        weighted_kappa([1, 2], [1])
    with pytest.raises(ValueError, match="weights"):
        weighted_kappa([1, 2], [1, 2], weights="cubic")


@pytest.mark.parametrize("weights", ["quadratic", "linear", None])
def test_numpy_matches_sklearn_on_random_ratings(weights: str | None) -> None:
    sk = pytest.importorskip("sklearn.metrics")
    rng = random.Random(1234)
    for trial in range(60):
        n = rng.randint(5, 200)
        a = [rng.randint(1, 5) for _ in range(n)]
        # correlated second rater: mostly near the first
        b = [min(5, max(1, x + rng.choice([-2, -1, 0, 0, 0, 1, 1]))) for x in a]
        labels = list(range(1, 6)) if trial % 2 else None
        ref = sk.cohen_kappa_score(a, b, weights=weights, labels=labels)
        assert _kappa_numpy(a, b, weights, labels) == pytest.approx(ref, abs=1e-12)
        assert weighted_kappa(a, b, weights, labels) == pytest.approx(ref, abs=1e-12)


def test_fallback_without_sklearn(monkeypatch) -> None:
    a = [1, 2, 3, 4, 5, 3, 2, 4]
    b = [1, 3, 3, 5, 4, 3, 1, 4]
    with_lib = weighted_kappa(a, b, labels=range(1, 6))
    monkeypatch.setitem(sys.modules, "sklearn", None)
    monkeypatch.setitem(sys.modules, "sklearn.metrics", None)
    without = weighted_kappa(a, b, labels=range(1, 6))
    assert without == pytest.approx(with_lib)
    assert without == pytest.approx(_kappa_numpy(a, b, labels=range(1, 6)))


def test_percent_agreement() -> None:
    assert percent_agreement([1, 2, 3, 4], [1, 2, 4, 2]) == 0.5
    assert percent_agreement([1, 2, 3, 4], [1, 2, 4, 2], tolerance=1) == 0.75
    assert percent_agreement(["a", "b"], ["a", "b"]) == 1.0
    assert percent_agreement([], []) is None
    with pytest.raises(ValueError):
        percent_agreement([1], [1, 2])


def test_pairwise_agreement_uses_common_items() -> None:
    ratings = {
        "judge-a": {"p1": 5, "p2": 4, "p3": 3, "p4": 2},
        "judge-b": {"p1": 5, "p2": 4, "p3": 3},          # missed p4
        "judge-c": {"p1": 4, "p2": 4, "p4": 1},
    }
    out = pairwise_agreement(ratings, labels=range(1, 6))
    pairs = {tuple(p["raters"]): p for p in out["pairs"]}
    assert set(pairs) == {("judge-a", "judge-b"), ("judge-a", "judge-c"),
                          ("judge-b", "judge-c")}
    ab = pairs[("judge-a", "judge-b")]
    assert ab["n"] == 3 and ab["kappa"] == pytest.approx(1.0) and ab["percent_agreement"] == 1.0
    ac = pairs[("judge-a", "judge-c")]
    assert ac["n"] == 3
    assert ac["kappa"] == pytest.approx(weighted_kappa([5, 4, 2], [4, 4, 1], labels=range(1, 6)))
    assert ac["percent_agreement"] == pytest.approx(1 / 3)
    kappas = [p["kappa"] for p in out["pairs"] if p["kappa"] is not None]
    assert out["mean_kappa"] == pytest.approx(sum(kappas) / len(kappas))
    assert out["weights"] == "quadratic"
    lonely = pairwise_agreement({"x": {"p1": 1}, "y": {"p2": 2}})
    assert lonely["pairs"][0]["n"] == 0 and lonely["mean_kappa"] is None
