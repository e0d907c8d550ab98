"""GAIA metrics: exact match (Wilson 95%), per level, drop rate k->k+1 = (acc_k - acc_k+1)
/ acc_k (the book's), annotator steps of solved tasks, extraction methods, the partial
diagnostic (never correct), and the leaderboard score (only over a whole split).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from assay.core.types import SampleResult
from assay.metrics.registry import task_metric
from assay.metrics.stats import bootstrap_interval, mean_with_ci, proportion
from assay.metrics.summary import (
    agent_of,
    agent_summary,
    clustered_rate,
    error_messages,
    per_sample_means,
    usage_summary,
)

OFFICIAL_TOTAL = {"validation": 165, "test": 301}


task_metric("gaia_exact_match", "gaia", aliases=("gaia",), category="agent",
            description="GAIA exact match: the share of questions whose final answer the "
                        "leaderboard's quasi-exact-match scorer accepts (numbers, comma lists and "
                        "strings normalised as the official scorer does).",
            usage="Computed by the gaia task only (assay run gaia); the run's 'exact_match_rate' "
                  "holds it.",
            reference="gaia-benchmark/leaderboard scorer.py")


def _score(r: SampleResult, name: str = "gaia") -> dict[str, Any]:
    return (r.scores or {}).get(name) or {}


def _passed(name: str) -> Any:
    return lambda r: 1.0 if _score(r, name).get("value") == 1.0 else 0.0


def gaia_metrics(results: list[SampleResult], options: dict[str, Any]) -> dict[str, Any]:
    answered = [r for r in results if r.error is None and r.scores]
    scored = [r for r in answered if _score(r).get("value") is not None]
    correct = [r for r in scored if _score(r)["value"] == 1.0]
    by_level = {lvl: [r for r in scored if (r.metadata or {}).get("level") == lvl]
                for lvl in (1, 2, 3)}
    levels = {lvl: clustered_rate(rs, _passed("gaia")) for lvl, rs in by_level.items() if rs}
    level_values = {lvl: per_sample_means(by_level[lvl], _passed("gaia")) for lvl in levels}
    drops: dict[str, Any] = {}
    for lo, hi in ((1, 2), (2, 3)):
        key = f"drop_rate_{lo}_to_{hi}"
        a, b = levels.get(lo), levels.get(hi)
        if a is None or b is None:
            drops[key] = None
        elif not a["value"]:
            drops[key] = None  # undefined: nothing solved at the lower level
        else:
            # a bootstrap interval, levels resampled apart (no closed form for a ratio)
            ci = bootstrap_interval(
                {"lo": level_values[lo], "hi": level_values[hi]},
                lambda m: (m["lo"] - m["hi"]) / m["lo"] if m["lo"] else None)
            drops[key] = {"value": (a["value"] - b["value"]) / a["value"],
                          "ci_low": ci[0] if ci else None, "ci_high": ci[1] if ci else None,
                          "method": "bootstrap"}
    steps = [s for r in correct if (s := _steps((r.metadata or {}).get("steps"))) is not None]
    methods = Counter(_score(r).get("metadata", {}).get("extraction", "none") for r in answered)
    split = (options or {}).get("split") or "validation"
    total = OFFICIAL_TOTAL.get(split)
    full_split = total is not None and len(results) == total and not (options or {}).get("level")
    out: dict[str, Any] = {
        "exact_match_rate": clustered_rate(scored, _passed("gaia")),
        "n_samples": len(results), "n_scored": len(scored),
        "n_unscored": len(answered) - len(scored), "n_errors": len(results) - len(answered),
        "error_rate": proportion(len(results) - len(answered), len(results)),
        "level_accuracy": {f"level_{k}": v for k, v in levels.items()},
        **drops,
        "mean_annotator_steps_correct": mean_with_ci(steps) if steps else None,
        "extraction_rate": proportion(methods.get("final_answer", 0), len(answered)),
        "extraction_methods": dict(methods.most_common()),
        "partial_match_rate_diagnostic": clustered_rate(scored, _passed("gaia_partial")),
        "scorer": next((_score(r).get("metadata", {}).get("scorer") for r in scored), None),
        "leaderboard_score": (len(correct) / total) if full_split and scored else None,
        "subset_note": None if full_split else (
            f"{len(results)} of {total} tasks of the {split} split were run: a subset, not "
            "comparable with the leaderboard" if total else None),
    }
    if out["n_unscored"] and not scored:
        out["exact_match_rate"] = None
        out["unscored_note"] = ("test split: gold answers are private, so nothing was scored; "
                                "upload the submission file to the leaderboard")
    out.update(usage_summary(results))
    out.update(agent_summary(results))
    if "agent" in out:  # the agent's tool calls beside the annotators' steps, sample by sample
        pairs = [(float(a.get("tool_calls", 0)), float(s)) for r in answered
                 if (a := agent_of(r)) is not None
                 and (s := _steps((r.metadata or {}).get("steps"))) is not None]
        out["agent"]["tool_calls_minus_annotator_steps"] = (
            mean_with_ci([a - s for a, s in pairs]) if pairs else None)
        out["agent"]["annotator_steps"] = mean_with_ci([s for _, s in pairs]) if pairs else None
    out["top_errors"] = error_messages(results)
    return out


def _steps(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None
