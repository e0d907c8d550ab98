"""GAIA-specific report sections."""

from __future__ import annotations

from typing import Any

from assay.metrics.format import agent_section, fmt_rate
from assay.tasks.gaia.scoring import FIXES_NOTE


def _drop(value: dict[str, Any] | None) -> str:
    if value is None:
        return "n/a"
    if value.get("ci_low") is None:
        return f"{value['value']:.1%}"
    return f"{value['value']:.1%} [{value['ci_low']:.1%}, {value['ci_high']:.1%}]"


def report_extra(metrics: dict[str, Any]) -> dict[str, Any]:
    levels = metrics.get("level_accuracy") or {}
    sections: list[dict[str, Any]] = [{
        "title": "Levels",
        "headers": ["level", "exact match [95% CI] (correct/n)"],
        "rows": [[k.replace("_", " "), fmt_rate(v)] for k, v in levels.items()],
        "bars": [(k.replace("_", " "), v["value"]) for k, v in levels.items()
                 if v.get("value") is not None],
        "note": "Drop rate k->k+1 = (acc_k - acc_k+1) / acc_k. "
                + ", ".join(f"{k}: {_drop(metrics.get(k))}"
                            for k in ("drop_rate_1_to_2", "drop_rate_2_to_3")),
    }]
    agent = agent_section(metrics)
    if agent:
        sections.append(agent)
    else:
        sections.append({"title": "No tools (GAIA's tool-less mode)",
                         "note": "The model answered each question once, with no tools: text "
                                 "attachments were put in the prompt, others only named. A "
                                 "score from this run says little about the model as an "
                                 "agent; run it with one: --agent react --tools files,python."})
    methods = metrics.get("extraction_methods") or {}
    if methods:
        sections.append({
            "title": "Answer extraction",
            "headers": ["method", "answers"],
            "rows": [[k, v] for k, v in methods.items()],
            "note": "final_answer = the agent used 'FINAL ANSWER:'; anything else is a fallback "
                    "that a strict harness would not find.",
        })
    partial = metrics.get("partial_match_rate_diagnostic")
    if partial and partial.get("value") is not None:
        sections.append({
            "title": "Partial match (diagnostic only)",
            "headers": ["score", "value"],
            "rows": [["exact (official)", fmt_rate(metrics["exact_match_rate"])],
                     ["partial (diagnostic)", fmt_rate(partial)]],
            "note": "The book's partial match (containment or 70% word overlap) is shown to "
                    "help diagnose near misses. It is never counted as correct.",
        })
    if metrics.get("scorer") == "lenient":
        sections.append({"title": "Lenient scorer (not the leaderboard's rules)",
                         "note": FIXES_NOTE})
    recs = []
    ext = metrics.get("extraction_rate") or {}
    if ext.get("value") is not None and ext["value"] < 0.9:
        recs.append(f"Only {ext['value']:.0%} of answers used 'FINAL ANSWER:'; keep the official "
                    "system prompt and make the agent end with that line.")
    drop = metrics.get("drop_rate_1_to_2")
    if drop is not None and drop["value"] > 0.3:
        recs.append("Accuracy falls sharply from Level 1 to 2: multi-step tasks need planning "
                    "and tools (search, file reading, code execution).")
    if metrics.get("subset_note"):
        recs.append(metrics["subset_note"] + ".")
    if metrics.get("unscored_note"):
        recs.append(metrics["unscored_note"] + ".")
    if metrics.get("n_errors"):
        recs.append(f"{metrics['n_errors']} tasks ended in errors (not wrong answers); resume "
                    "the run to retry them.")
    return {"sections": sections, "recommendations": recs}
