"""BFCL metrics: per-category accuracy with intervals and the leaderboard's aggregates, as the
official ``generate_leaderboard_csv`` (reference/bfcl.md §7). An aggregate is reported only when
all its categories ran (officially a missing one counts 0), ``partial`` if some ran on a subset.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable
from typing import Any

from assay.core.types import SampleResult
from assay.metrics.registry import task_metric
from assay.metrics.stats import bootstrap_interval, proportion
from assay.metrics.summary import clustered_rate, error_messages, per_sample_means, usage_summary
from assay.tasks.bfcl.categories import MEMORY, MULTI_TURN, OFFICIAL_SIZES, SUPPORTED, WEB_SEARCH

SIMPLE = ("simple_python", "simple_java", "simple_javascript")
LIVE_AST = ("live_simple", "live_multiple", "live_parallel", "live_parallel_multiple")


task_metric("bfcl_accuracy", "bfcl", aliases=("bfcl", "bfcl_overall_accuracy"),
            category="tool_use",
            description="BFCL accuracy: the share of entries the official BFCL checker accepts "
                        "(AST match of the calls, or execution for multi-turn state), with the "
                        "leaderboard's category aggregates beside it.",
            usage="Computed by the bfcl task only (assay run bfcl --category C); the run's "
                  "'accuracy' holds it. Never a score of free text.",
            reference="ShishirPatil/gorilla berkeley-function-call-leaderboard (bfcl-eval)")


def _aggregate(parts: tuple[str, ...], per: dict[str, dict[str, Any]],
               weighted: bool) -> dict[str, Any] | None:
    """Mean (or entry-weighted mean) of ``parts`` (categories or aggregates); ``None``
    unless every part was run."""
    if not all(p in per and per[p].get("value") is not None for p in parts):
        return None
    if weighted:
        value = sum(per[p]["value"] * per[p]["n"] for p in parts) / sum(per[p]["n"] for p in parts)
    else:
        value = sum(per[p]["value"] for p in parts) / len(parts)
    partial: list[str] = []
    for p in parts:
        if "partial" in per[p]:
            partial.extend(per[p]["partial"])
        elif per[p]["n"] < OFFICIAL_SIZES.get(p, 0):
            partial.append(p)
    return {"value": value, "parts": list(parts), "weighting": "entries" if weighted else "mean",
            "partial": partial}


def bfcl_metrics(results: list[SampleResult],
                 weights: dict[str, float] | None = None) -> dict[str, Any]:
    """Accuracy overall and per category (Wilson 95%), aggregates, error types, usage."""
    by_cat: dict[str, list[SampleResult]] = defaultdict(list)
    for r in results:
        cat = (r.metadata or {}).get("category") or _score_meta(r).get("category") or "unknown"
        by_cat[cat].append(r)
    scored = [r for r in results if r.error is None and r.scores]
    per: dict[str, dict[str, Any]] = {}
    for cat, rs in by_cat.items():
        ok = [r for r in rs if r.error is None and r.scores]
        p = clustered_rate(ok, _correct("bfcl"))
        p["errors"] = len(rs) - len(ok)
        p["official_size"] = OFFICIAL_SIZES.get(cat)
        per[cat] = p
    simple = _aggregate(SIMPLE, per, weighted=False)
    values = {cat: per_sample_means([r for r in rs if r.error is None and r.scores],
                                    _correct("bfcl")) for cat, rs in by_cat.items()}
    aggregates = {
        "simple": simple,
        "non_live_overall": _aggregate(("simple", "multiple", "parallel", "parallel_multiple"),
                                       {**per, "simple": simple} if simple else per,
                                       weighted=False),
        "live_overall": _aggregate(LIVE_AST, per, weighted=True),
        "irrelevance": _aggregate(("irrelevance", "live_irrelevance"), per, weighted=False),
        "multi_turn": _aggregate(MULTI_TURN, per, weighted=False),
        "web_search": _aggregate(WEB_SEARCH, per, weighted=False),
        "memory": _aggregate(MEMORY, per, weighted=False),
    }
    aggregates["agentic"] = _aggregate(("web_search", "memory"), {**per, **{
        k: v for k, v in aggregates.items() if v is not None}}, weighted=False)
    aggregates["overall"] = _overall(aggregates)
    _add_intervals(aggregates, values)
    tolerant = [r for r in scored if "bfcl_tolerant" in r.scores]
    error_types = Counter(
        _score_meta(r).get("error_type") or "unknown" for r in scored
        if r.score_value("bfcl") == 0.0
    )
    first_failing = Counter(
        _score_meta(r).get("first_failing_turn") for r in scored
        if r.score_value("bfcl") == 0.0 and "turn_verdicts" in _score_meta(r))
    out: dict[str, Any] = {
        "accuracy": clustered_rate(scored, _correct("bfcl")),
        "n_samples": len(results),
        "n_scored": len(scored),
        "n_errors": len(results) - len(scored),
        "error_rate": proportion(len(results) - len(scored), len(results)),
        "categories": dict(sorted(per.items())),
        "aggregates": aggregates,
        "overall_note": _overall_note(aggregates["overall"], per),
        "error_types": dict(error_types.most_common()),
        # how the entries were asked (fc: native tool calls, prompt: calls written as text):
        # the advice on a decoding failure depends on it
        "modes": dict(Counter(str(((r.outcome or {}).get("metadata") or {}).get("mode"))
                              for r in scored).most_common()),
    }
    if first_failing:
        # multi-turn failures by first failing turn (None: a runner-level failure, e.g.
        # force_terminated, before any turn was checked)
        out["multi_turn_first_failing_turn"] = {
            str(k): v for k, v in sorted(first_failing.items(), key=lambda kv: (
                kv[0] is None, kv[0] if kv[0] is not None else 0))}
    if tolerant:
        out["tolerant_accuracy"] = clustered_rate(tolerant, _correct("bfcl_tolerant"))
    if weights:
        used = {c: float(w) for c, w in weights.items() if c in per and per[c]["n"]}
        total = sum(used.values())
        out["weighted_accuracy"] = (
            {"value": sum(w * per[c]["value"] for c, w in used.items()) / total,
             "weights": used} if total > 0 else None)
        if out["weighted_accuracy"] is not None:
            ci = bootstrap_interval(
                {c: values[c] for c in used},
                lambda m: sum(w * m[c] for c, w in used.items()) / total)
            out["weighted_accuracy"].update(_interval(ci))
    out.update(usage_summary(results))
    out["top_errors"] = error_messages(results)
    return out


#: the leaderboard's weights of its five groups (``generate_leaderboard_csv``)
OVERALL_WEIGHTS = {"non_live_overall": 10, "live_overall": 10, "irrelevance": 10,
                   "multi_turn": 30, "agentic": 40}
#: why a category may be missing from a run, for the overall note
_MISSING_HINT = {"memory_vector": "needs pip install 'assay[bfcl-vector]'",
                 "web_search_base": "needs SERPAPI_API_KEY",
                 "web_search_no_snippet": "needs SERPAPI_API_KEY"}


def _overall(aggregates: dict[str, Any]) -> dict[str, Any] | None:
    """The leaderboard's overall score (official weights), only when every group was run."""
    parts = [aggregates.get(k) for k in OVERALL_WEIGHTS]
    if any(p is None for p in parts):
        return None
    total = sum(OVERALL_WEIGHTS.values())
    value = sum(w * aggregates[k]["value"] for k, w in OVERALL_WEIGHTS.items()) / total
    partial = sorted({c for k in OVERALL_WEIGHTS for c in aggregates[k]["partial"]})
    return {"value": value, "parts": list(OVERALL_WEIGHTS),
            "weighting": "official weights 10/10/10/30/40", "partial": partial}


def _overall_note(overall: dict[str, Any] | None, per: dict[str, Any]) -> str:
    """Why the overall score is not shown (the categories it still needs), or how it is made."""
    if overall is not None:
        return ("0.1 non-live + 0.1 live + 0.1 irrelevance + 0.3 multi-turn + 0.4 agentic, "
                "as the official generate_leaderboard_csv")
    missing = [c for c in SUPPORTED if c != "live_relevance"
               and (c not in per or per[c].get("value") is None)]
    shown = [f"{c} ({_MISSING_HINT[c]})" if c in _MISSING_HINT else c for c in missing]
    return ("not computed: the leaderboard's overall score weighs every scoring category; "
            f"this run lacks {', '.join(shown)}")


def _interval(ci: tuple[float, float] | None) -> dict[str, Any]:
    return {"ci_low": ci[0] if ci else None, "ci_high": ci[1] if ci else None,
            "method": "bootstrap"}


def _aggregate_of(name: str, means: dict[str, float],
                  sizes: dict[str, int]) -> float:
    """An aggregate's value from per-category means (as :func:`_aggregate` computes it)."""
    if name == "simple":
        return sum(means[c] for c in SIMPLE) / len(SIMPLE)
    if name == "non_live_overall":
        return (_aggregate_of("simple", means, sizes) + means["multiple"] + means["parallel"]
                + means["parallel_multiple"]) / 4
    if name == "live_overall":
        return sum(means[c] * sizes[c] for c in LIVE_AST) / sum(sizes[c] for c in LIVE_AST)
    if name == "multi_turn":
        return sum(means[c] for c in MULTI_TURN) / len(MULTI_TURN)
    if name == "web_search":
        return sum(means[c] for c in WEB_SEARCH) / len(WEB_SEARCH)
    if name == "memory":
        return sum(means[c] for c in MEMORY) / len(MEMORY)
    if name == "agentic":
        return (_aggregate_of("web_search", means, sizes)
                + _aggregate_of("memory", means, sizes)) / 2
    if name == "overall":
        return sum(w * _aggregate_of(k, means, sizes)
                   for k, w in OVERALL_WEIGHTS.items()) / sum(OVERALL_WEIGHTS.values())
    return (means["irrelevance"] + means["live_irrelevance"]) / 2


def _add_intervals(aggregates: dict[str, Any], values: dict[str, list[float]]) -> None:
    """A stratified bootstrap interval (categories resampled apart) on every aggregate."""
    parts = {"simple": SIMPLE, "non_live_overall": (*SIMPLE, "multiple", "parallel",
                                                   "parallel_multiple"),
             "live_overall": LIVE_AST, "irrelevance": ("irrelevance", "live_irrelevance"),
             "multi_turn": MULTI_TURN, "web_search": WEB_SEARCH, "memory": MEMORY,
             "agentic": WEB_SEARCH + MEMORY}
    parts["overall"] = tuple(dict.fromkeys(c for k in OVERALL_WEIGHTS for c in parts[k]))
    sizes = {c: len(v) for c, v in values.items()}
    for name, cats in parts.items():
        agg = aggregates.get(name)
        if agg is None:
            continue
        ci = bootstrap_interval({c: values[c] for c in cats},
                                lambda m, name=name: _aggregate_of(name, m, sizes))
        agg.update(_interval(ci))


def _correct(name: str) -> Callable[[SampleResult], float]:
    """1.0 when score ``name`` passed, else 0.0 (one verdict per sample and epoch)."""
    return lambda r: 1.0 if r.score_value(name) == 1.0 else 0.0


def _score_meta(r: SampleResult) -> dict[str, Any]:
    s = r.scores.get("bfcl") if r.scores else None
    return (s or {}).get("metadata") or {}
