"""Leaderboard aggregates as the official generate_leaderboard_csv computes them."""

from __future__ import annotations

import pytest

from assay.core.types import SampleResult
from assay.tasks.bfcl.categories import OFFICIAL_SIZES
from assay.tasks.bfcl.metrics import bfcl_metrics


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
    assert agg["overall"] is None and "live_irrelevance" in m["overall_note"]
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


# correct entries per category for a whole-leaderboard run (sizes are the official ones)
EVERYTHING = {
    "simple_python": 300, "simple_java": 60, "simple_javascript": 25, "multiple": 150,
    "parallel": 120, "parallel_multiple": 100, "irrelevance": 200, "live_simple": 200,
    "live_multiple": 700, "live_parallel": 8, "live_parallel_multiple": 12,
    "live_irrelevance": 600, "live_relevance": 10, "multi_turn_base": 90,
    "multi_turn_miss_func": 60, "multi_turn_miss_param": 70, "multi_turn_long_context": 50,
    "memory_kv": 60, "memory_vector": 40, "memory_rec_sum": 50, "web_search_base": 55,
    "web_search_no_snippet": 45,
}


def test_overall_uses_the_official_weights_when_every_part_ran() -> None:
    m = bfcl_metrics(results_for({c: full(c, ok) for c, ok in EVERYTHING.items()}))
    rate = {c: ok / OFFICIAL_SIZES[c] for c, ok in EVERYTHING.items()}
    # generate_leaderboard_csv, by hand
    simple = (rate["simple_python"] + rate["simple_java"] + rate["simple_javascript"]) / 3
    non_live = (simple + rate["multiple"] + rate["parallel"] + rate["parallel_multiple"]) / 4
    live_cats = ("live_simple", "live_multiple", "live_parallel", "live_parallel_multiple")
    live = sum(EVERYTHING[c] for c in live_cats) / sum(OFFICIAL_SIZES[c] for c in live_cats)
    irrelevance = (rate["irrelevance"] + rate["live_irrelevance"]) / 2
    multi_turn = sum(rate[c] for c in ("multi_turn_base", "multi_turn_miss_func",
                                       "multi_turn_miss_param", "multi_turn_long_context")) / 4
    web = (rate["web_search_base"] + rate["web_search_no_snippet"]) / 2
    memory = (rate["memory_kv"] + rate["memory_vector"] + rate["memory_rec_sum"]) / 3
    agentic = (web + memory) / 2
    want = (10 * non_live + 10 * live + 10 * irrelevance + 30 * multi_turn + 40 * agentic) / 100
    overall = m["aggregates"]["overall"]
    assert overall["value"] == pytest.approx(want)
    assert overall["partial"] == [] and overall["ci_low"] < want < overall["ci_high"]
    assert m["aggregates"]["agentic"]["value"] == pytest.approx(agentic)
    assert "0.4 agentic" in m["overall_note"]


def test_overall_names_exactly_what_is_missing() -> None:
    counts = {c: full(c, ok) for c, ok in EVERYTHING.items()
              if c not in ("memory_vector", "web_search_base", "web_search_no_snippet")}
    m = bfcl_metrics(results_for(counts))
    assert m["aggregates"]["overall"] is None and m["aggregates"]["agentic"] is None
    assert m["aggregates"]["multi_turn"] is not None
    note = m["overall_note"]
    assert "memory_vector (needs pip install 'assay[bfcl-vector]')" in note
    assert "web_search_base (needs SERPAPI_API_KEY)" in note and "multi_turn" not in note
    # a part run on a subset makes the overall partial, never silently complete
    counts = {c: full(c, ok) for c, ok in EVERYTHING.items()}
    counts["memory_kv"] = (10, 20)
    m = bfcl_metrics(results_for(counts))
    assert m["aggregates"]["overall"]["partial"] == ["memory_kv"]
