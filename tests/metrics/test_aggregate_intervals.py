"""Aggregates get bootstrap intervals: BFCL's overall scores and weighted accuracy."""

from __future__ import annotations

from assay.core.types import SampleResult
from assay.metrics.stats import bootstrap_interval
from assay.tasks.bfcl.metrics import bfcl_metrics

CATS = {"simple_python": (8, 10), "simple_java": (5, 10), "simple_javascript": (2, 10),
        "multiple": (9, 10), "parallel": (6, 10), "parallel_multiple": (4, 10)}


def results(epochs: int = 1) -> list[SampleResult]:
    out = []
    for cat, (ok, n) in CATS.items():
        for i in range(n):
            for e in range(epochs):
                value = 1.0 if i < ok else 0.0
                out.append(SampleResult(
                    run_id="r", sample_id=f"{cat}_{i}", epoch=e, input=None, target=None,
                    output="", prediction=None,
                    scores={"bfcl": {"value": value, "metadata": {"category": cat}}},
                    error=None, latency_s=0.0, input_tokens=0, output_tokens=0,
                    metadata={"category": cat}))
    return out


def test_bfcl_aggregates_and_weighted_accuracy_have_intervals():
    m = bfcl_metrics(results(), weights={"simple_python": 3, "multiple": 1})
    simple = m["aggregates"]["simple"]
    assert simple["value"] == (0.8 + 0.5 + 0.2) / 3
    overall = m["aggregates"]["non_live_overall"]
    assert overall["value"] == (simple["value"] + 0.9 + 0.6 + 0.4) / 4
    for agg in (simple, overall):
        assert agg["method"] == "bootstrap"
        assert agg["ci_low"] < agg["value"] < agg["ci_high"]
        assert agg["ci_high"] - agg["ci_low"] < 0.5
    w = m["weighted_accuracy"]
    assert w["value"] == (3 * 0.8 + 0.9) / 4 and w["ci_low"] < w["value"] < w["ci_high"]
    # seeded: the same data gives the same interval
    again = bfcl_metrics(results(), weights={"simple_python": 3, "multiple": 1})
    assert again["aggregates"]["non_live_overall"] == overall
    # identical epochs: the same point and the same interval (resampled by entry)
    tripled = bfcl_metrics(results(epochs=3))["aggregates"]["non_live_overall"]
    assert tripled == {k: v for k, v in overall.items()}


def test_bootstrap_interval_of_a_single_rate_is_near_the_wilson_one():
    values = [1.0] * 30 + [0.0] * 70
    low, high = bootstrap_interval({"a": values}, lambda m: m["a"])
    assert 0.20 < low < 0.23 and 0.38 < high < 0.41
    assert bootstrap_interval({"a": []}, lambda m: m["a"]) is None
    assert bootstrap_interval({"a": values}, lambda m: None) is None
