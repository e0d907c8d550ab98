"""BFCL-specific report sections: categories, official aggregates, error types, advice."""

from __future__ import annotations

from typing import Any

from assay.reports.render import fmt_rate

_ADVICE = {
    "ast_decoder:decoder_failed": "Outputs often do not decode as calls. In prompt mode the "
    "official decoder accepts only a bare [func(a=1)] list: no prose, no ```python fences. "
    "Compare with the tolerant score to see how much is format rather than skill.",
    "ast_decoder:decoder_wrong_output_format": "Decoded outputs are not lists of calls; check "
    "the output shape.",
    "simple_function_checker:missing_required": "Required parameters are missing: the agent "
    "drops arguments (in prompt mode, positional arguments are dropped by the official "
    "decoder: use keyword arguments).",
    "simple_function_checker:unexpected_param": "The agent adds parameters the ground truth "
    "does not list (even documented optional ones at their default fail).",
    "simple_function_checker:wrong_func_name": "Wrong function names: check the '.'/'_' rule "
    "(--underscore-to-dot) and whether the agent picks the right tool among several.",
    "simple_function_checker:wrong_count": "The number of calls is wrong where one call is "
    "expected.",
    "multiple_function_checker:wrong_count": "More or fewer than one call where one is "
    "expected.",
    "parallel_function_checker_no_order:wrong_count": "Parallel questions need one call per "
    "requested action: the count is wrong.",
    "parallel_function_checker_no_order:cannot_find_match": "Parallel calls do not match; note "
    "the official matcher is greedy in ground-truth order.",
    "type_error:simple": "Values have the wrong type (strict: 3.0 is not an int, True is not "
    "an int, '5' is not a number).",
    "type_error:java": "Java values must be sent as strings in Java literal syntax ('800', "
    "'1.5f', '7L', 'true').",
    "type_error:js": "JavaScript values must be sent as strings in JS literal syntax.",
    "value_error:string": "String values differ from every accepted option (only spaces and "
    ", . / - _ * ^ and case are ignored).",
    "value_error:others": "Numbers, booleans or enum values differ from the accepted ones.",
    "value_error:list/tuple": "Lists differ (order matters).",
    "irrelevance_error:decoder_success": "The agent calls a function when none applies: "
    "teach it to answer in text when no tool fits.",
    "relevance_error:decoder_failed": "The agent answers in text when a call is expected.",
}


def report_extra(metrics: dict[str, Any]) -> dict[str, Any]:
    """Sections for the generic report templates."""
    cats = metrics.get("categories") or {}
    cat_rows = [
        [cat, fmt_rate(p), p.get("errors", 0),
         f"{p['n']}/{p['official_size']}" if p.get("official_size") else p["n"]]
        for cat, p in cats.items()
    ]
    agg_rows = []
    for name, agg in (metrics.get("aggregates") or {}).items():
        if name == "overall":
            agg_rows.append([name, "not reported", metrics.get("overall_note", "")])
        elif agg is None:
            agg_rows.append([name, "not reported", "not all of its categories were run"])
        else:
            note = f"{agg['weighting']} of {', '.join(agg['parts'])}"
            if agg["partial"]:
                note += f"; PARTIAL: {', '.join(agg['partial'])} run on a subset"
            agg_rows.append([name, f"{agg['value']:.4f}", note])
    errors = metrics.get("error_types") or {}
    n_scored = metrics.get("n_scored") or 1
    sections = [
        {"title": "Categories", "headers": ["category", "accuracy [95% CI] (correct/n)",
                                            "errors", "entries run / official"],
         "rows": cat_rows,
         "bars": [(c, p["value"]) for c, p in cats.items() if p.get("value") is not None]},
        {"title": "Leaderboard aggregates", "headers": ["aggregate", "value", "how"],
         "rows": agg_rows,
         "note": "Computed as the official generate_leaderboard_csv does; shown only when "
                 "every part was run."},
    ]
    tol = metrics.get("tolerant_accuracy")
    if tol:
        sections.append({"title": "Tolerant score (not the official number)",
                         "headers": ["score", "value"],
                         "rows": [["official", fmt_rate(metrics["accuracy"])],
                                  ["tolerant", fmt_rate(tol)]],
                         "note": "The tolerant score also accepts calls wrapped in prose, "
                                 "code fences or JSON. It is for agents not built for BFCL's "
                                 "format and never replaces the official score."})
    if errors:
        sections.append({
            "title": "Error types", "headers": ["error type", "count", "share of scored"],
            "rows": [[k, v, f"{v / n_scored:.1%}"] for k, v in errors.items()],
            "bars": [(k, v / n_scored) for k, v in errors.items()],
        })
    recs = [_ADVICE[k] for k in list(errors)[:4] if k in _ADVICE]
    if metrics.get("n_errors"):
        recs.append(f"{metrics['n_errors']} samples ended in errors (not wrong answers); see "
                    "the Errors section and resume the run to retry them.")
    if not recs and metrics.get("accuracy", {}).get("value") == 1.0:
        recs.append("Every scored entry passed; try harder categories (live, parallel_multiple).")
    return {"sections": sections, "recommendations": recs}
