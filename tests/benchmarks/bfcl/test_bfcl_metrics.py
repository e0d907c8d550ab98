"""Leaderboard aggregates as the official generate_leaderboard_csv computes them."""

from __future__ import annotations

import pytest

from assay.benchmarks.bfcl.categories import OFFICIAL_SIZES
from assay.benchmarks.bfcl.metrics import bfcl_metrics
from assay.core.types import SampleResult


def results_for(counts: dict[str, tuple[int, int]], errors: int = 0) -> list[SampleResult]:
    """``{category: (correct, n)}`` as stored sample results."""
    out = []
    for cat, (ok, n) in counts.items():
        for i in range(n):
            good = i < ok
            out.append(SampleResult(
                run_id="r", sample_id=f"{cat}_{i}", epoch=0, input="q", target=None, output="",
                prediction=None,
                scores={"bfcl": {"value": 1.0 if good else 0.0, "metadata": {
                    "category": cat,
                    "error_type": None if good else "value_error:string"}}},
                error=None, latency_s=0.1, input_tokens=10, output_tokens=5,
                metadata={"category": cat}))
    for i in range(errors):
        out.append(SampleResult(run_id="r", sample_id=f"err_{i}", epoch=0, input="q",
                                target=None, output="", prediction=None, scores={},
                                error="HTTP 500", latency_s=0.0, input_tokens=0,
                                output_tokens=0, metadata={"category": "multiple"}))
    return out


def full(cat: str, ok: int) -> tuple[int, int]:
    return ok, OFFICIAL_SIZES[cat]


def test_non_live_is_an_unweighted_mean_with_simple_averaged_first() -> None:
    m = bfcl_metrics(results_for({
        "simple_python": full("simple_python", 400), "simple_java": full("simple_java", 50),
        "simple_javascript": full("simple_javascript", 25), "multiple": full("multiple", 100),
        "parallel": full("parallel", 200), "parallel_multiple": full("parallel_multiple", 0),
        "irrelevance": full("irrelevance", 240),
    }))
    agg = m["aggregates"]
    assert agg["simple"]["value"] == pytest.approx((1 + 0.5 + 0.5) / 3)
    assert agg["non_live_overall"]["value"] == pytest.approx(((2 / 3) + 0.5 + 1 + 0) / 4)
    assert agg["non_live_overall"]["partial"] == []
    assert agg["irrelevance"] is None  # live_irrelevance was not run
    assert agg["overall"] is None and "agentic" in m["overall_note"]
    assert agg["multi_turn"] is None  # no multi-turn category was run


def test_live_is_entry_weighted() -> None:
    m = bfcl_metrics(results_for({
        "live_simple": full("live_simple", 258), "live_multiple": full("live_multiple", 0),
        "live_parallel": full("live_parallel", 16),
        "live_parallel_multiple": full("live_parallel_multiple", 24),
    }))
    assert m["aggregates"]["live_overall"]["value"] == pytest.approx(298 / 1351)
    assert m["aggregates"]["live_overall"]["weighting"] == "entries"


def test_subsets_are_marked_partial_and_errors_kept_apart() -> None:
    m = bfcl_metrics(results_for({"irrelevance": (10, 20), "live_irrelevance": (5, 10)},
                                 errors=3))
    agg = m["aggregates"]["irrelevance"]
    assert agg["value"] == pytest.approx((0.5 + 0.5) / 2)
    assert agg["partial"] == ["irrelevance", "live_irrelevance"]
    assert m["n_errors"] == 3 and m["accuracy"]["n"] == 30
    assert m["categories"]["multiple"]["errors"] == 3
    assert m["error_types"] == {"value_error:string": 15}


def test_weighted_accuracy_uses_user_weights() -> None:
    m = bfcl_metrics(results_for({"simple_python": (8, 10), "multiple": (2, 10)}),
                     weights={"simple_python": 3, "multiple": 1, "parallel": 5})
    assert m["weighted_accuracy"]["value"] == pytest.approx((3 * 0.8 + 0.2) / 4)
    assert m["weighted_accuracy"]["weights"] == {"simple_python": 3.0, "multiple": 1.0}
    lo, hi = m["categories"]["simple_python"]["ci_low"], m["categories"]["simple_python"]["ci_high"]
    assert lo < 0.8 < hi
