"""BFCL-specific report sections: categories, official aggregates, error types, advice."""

from __future__ import annotations

import json
from typing import Any

from assay.metrics.format import fmt_rate

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
    "multi_turn:force_terminated": "The agent kept calling functions until the step limit "
    "(21 steps in a turn) and the conversation was stopped: it must answer in text once the "
    "task is done.",
    "multi_turn:instance_state_mismatch": "After a turn, the simulated system's state differs "
    "from the ground truth's: see the state differences below (wrong or missing actions).",
    "multi_turn:execution_response_mismatch": "The agent's calls did not produce every result "
    "the ground truth's calls produce (a missing lookup or action).",
    "multi_turn:empty_turn_model_response": "The agent made no call in a turn that needed one.",
    "agentic:answer_not_found": "The final answer does not contain any accepted answer (after "
    "the official normalisation): check the memory it built or the pages it read.",
    "agentic:no_last_message": "The agent ended with function calls and never answered in "
    "text; its last non-call message is the answer.",
}

#: the advice on calls that do not decode, where the entries were asked for native tool calls
_NO_TOOL_CALLS = ("The model answered in text where a tool call was expected (fc mode): check "
                  "that the endpoint returns native tool calls for this model (llama.cpp's "
                  "llama-server needs --jinja; llama-cpp-python's server --chat_format "
                  "chatml-function-calling), or ask for calls as text with --mode prompt.")


def _advice(kind: str, metrics: dict[str, Any]) -> str:
    """What to do about an error type, in the mode the run asked in."""
    modes = metrics.get("modes") or {}
    if kind in ("ast_decoder:decoder_failed", "relevance_error:decoder_failed") and \
            modes and set(modes) == {"fc"}:
        return _NO_TOOL_CALLS
    return _ADVICE[kind]


_MARK = {True: "pass", False: "FAIL", None: "-"}


def _short(value: object, limit: int = 240) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False,
                                                           default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def multi_turn_sections(metrics: dict[str, Any], results: list[Any],
                        limit: int = 50) -> list[dict[str, Any]]:
    """Per-turn verdicts and first failing turns of failed multi-turn entries, and the state
    differences that failed them (model's value against the ground truth's)."""
    failed = []
    for r in results:
        meta = ((r.scores or {}).get("bfcl") or {}).get("metadata") or {}
        if "turn_verdicts" in meta and r.score_value("bfcl") == 0.0:
            failed.append((r, meta))
    sections: list[dict[str, Any]] = []
    first = metrics.get("multi_turn_first_failing_turn") or {}
    if first:
        sections.append({
            "title": "Multi-turn: where entries first failed",
            "headers": ["first failing turn", "entries"],
            "rows": [["before any turn (runner)" if k == "None" else f"turn {k}", v]
                     for k, v in first.items()],
            "note": "A runner-level failure (force-terminated after the step limit, a result "
                    "that is not a list) is found before any turn is checked."})
    if failed:
        sections.append({
            "title": "Multi-turn: per-turn verdicts of failed entries",
            "headers": ["entry", "category", "turns", "first failing", "error type"],
            "rows": [[r.sample_id, m.get("category"),
                      " ".join(_MARK.get(v, "-") for v in m["turn_verdicts"]),
                      m.get("first_failing_turn"), m.get("error_type")]
                     for r, m in failed[:limit]],
            "note": f"{len(failed)} failed entries" + (f"; the first {limit} shown"
                                                      if len(failed) > limit else "")})
    diffs = [[r.sample_id, f"{d.get('class')}.{d.get('attribute')}",
              f"- model: {_short(d.get('model'))}\n+ ground truth: "
              f"{_short(d.get('ground_truth'))}"]
             for r, m in failed for d in (m.get("state_diff") or [])[:3]]
    if diffs:
        sections.append({
            "title": "Multi-turn: state differences",
            "headers": ["entry", "attribute", "diff"], "rows": diffs[:limit],
            "note": "After the failing turn, the simulator attribute held the model's value "
                    "(-) where the ground truth's run held another (+)."})
    return sections


def aggregate_rows(metrics: dict[str, Any], run_categories: list[str]
                   ) -> tuple[list[list[Any]], str]:
    """The leaderboard aggregates this run has (each needs all its categories) and a note on
    how they are computed and why the others (the overall score among them) are not shown."""
    rows = []
    for name, agg in (metrics.get("aggregates") or {}).items():
        if agg is None:
            continue
        how = f"{agg['weighting']} of {', '.join(agg['parts'])}"
        if agg["partial"]:
            how += f"; PARTIAL: {', '.join(agg['partial'])} run on a subset"
        value = f"{agg['value']:.4f}"
        if agg.get("ci_low") is not None:
            value += f" [{agg['ci_low']:.4f}, {agg['ci_high']:.4f}]"
        rows.append([name, value, how])
    missing = [k for k, v in (metrics.get("aggregates") or {}).items()
               if v is None and k != "overall"]
    note = "Computed as the official generate_leaderboard_csv does."
    if not rows:
        note = ("No leaderboard aggregate: each needs every one of its categories, and "
                f"this run has only {', '.join(run_categories) or 'none'}.")
    elif missing:
        note += f" Not computed (some of their categories were not run): {', '.join(missing)}."
    overall = metrics.get("overall_note")
    if overall and (metrics.get("aggregates") or {}).get("overall") is None:
        note += f" Overall score: {overall}."
    return rows, note


def report_extra(metrics: dict[str, Any], results: list[Any] | None = None) -> dict[str, Any]:
    cats = metrics.get("categories") or {}
    cat_rows = [
        [cat, fmt_rate(p), p.get("errors", 0),
         f"{p['n']}/{p['official_size']}" if p.get("official_size") else p["n"]]
        for cat, p in cats.items()
    ]
    agg_rows, agg_note = aggregate_rows(metrics, list(cats))
    errors = metrics.get("error_types") or {}
    n_scored = metrics.get("n_scored") or 1
    sections = [
        {"title": "Categories", "headers": ["category", "accuracy [95% CI] (correct/n)",
                                            "errors", "entries run / official"],
         "rows": cat_rows,
         "bars": [(c, p["value"]) for c, p in cats.items() if p.get("value") is not None]},
        {"title": "Leaderboard aggregates",
         "headers": ["aggregate", "value [95% CI]", "how"] if agg_rows else None,
         "rows": agg_rows, "note": agg_note},
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
    sections.extend(multi_turn_sections(metrics, results or []))
    recs = [f"{v} of {n_scored} scored entries ({k}): {_advice(k, metrics)}"
            for k, v in list(errors.items())[:4] if k in _ADVICE]
    if metrics.get("n_errors"):
        recs.append(f"{metrics['n_errors']} samples ended in errors (not wrong answers); see "
                    "the Errors section and resume the run to retry them.")
    if not recs and metrics.get("accuracy", {}).get("value") == 1.0:
        recs.append("Every scored entry passed; try harder categories (live, parallel_multiple).")
    return {"sections": sections, "recommendations": recs}
