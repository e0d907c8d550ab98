"""The text of a plan run's report (tables and trace, for the ``plan`` page) from
:func:`~assay.plan.report.plan_summary`'s summary; nothing here reads the store."""

from __future__ import annotations

import json
from typing import Any

import yaml

from assay.core.types import SampleResult
from assay.metrics.format import fmt_rate
from assay.reports.render import shown_target

#: characters of a case study's input and output (its target: half of it)
CASE_CHARS = 400


def _short(value: Any, limit: int) -> str:
    if isinstance(value, list):  # a message list: its last user turn
        users = [m.get("content") for m in value if isinstance(m, dict) and m.get("role") == "user"]
        value = users[-1] if users else value
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _value_text(t: dict[str, Any]) -> str:
    if t["value"] is not None:
        return fmt_rate(t["value"])
    if t["status"] == "not run":
        return "not run"
    return "not finished" if t["status"] != "finished" else "no scored samples"


def _primary_text(t: dict[str, Any]) -> str:
    """The plan's primary and what stands for it; one not computed is said to be so."""
    if t["metric_key"] in (None, t["primary"]):
        return t["primary"]
    if t["metric_key"] == t.get("reported_as"):
        return f"{t['primary']} (the run's {t['metric_key']})"
    if t.get("primary_computed") is False and t.get("scored_by"):
        by = "" if t["scored_by"] == t["metric_key"] else f", by {t['scored_by']}"
        return f"{t['primary']}: NOT what the run scored (shown: its {t['metric_key']}{by})"
    if t.get("primary_computed") is False:
        return f"{t['primary']}: NOT COMPUTED by {t['task']} (shown: its {t['metric_key']})"
    return f"{t['primary']} (read as {t['metric_key']})"


def _sections(summary: dict[str, Any],
              texts: dict[tuple[str, str, int], SampleResult]) -> list[dict[str, Any]]:
    tasks = summary["tasks"]
    secs: list[dict[str, Any]] = [{
        "title": "Capabilities", "notes": ["Each capability: the mean over its tasks of the "
                                           "primary metric on [0, 1] (1 is best).",
                                           *summary["notes"]],
        "headers": ["capability", "value (0-1)", "tasks measured", "not measured"],
        "rows": [[a["capability"], "not measured" if a["value"] is None else f"{a['value']:.3f}",
                  ", ".join(a["tasks"]) or "none", ", ".join(a["not_measured"]) or "none"]
                 for a in summary["capabilities"]]}, {
        "title": "Tasks", "notes": ["Values with their 95% interval; a Hub dataset is "
                                    "unverified (run as generic question answering)."],
        "headers": ["task", "source", "primary metric", "value [95% CI]", "errors", "run",
                    "status"],
        "rows": [[t["label"], "hub (unverified)" if t["source"] == "hub" else t["source"],
                  _primary_text(t),
                  _value_text(t), "-" if t["n_errors"] is None
                  else f"{t['n_errors']}/{t['n_samples']}", t["run_id"] or "-",
                  t["status"] if t["status"] in ("finished", "not run")
                  else f"{t['status']} (not finished)"] for t in tasks]}]
    secs.append({"title": "Why these tasks", "notes": [
        "Per task: the field's prior (its standing for the capability asked about), the "
        "request's words, and the planner model."],
        "headers": ["task", "chosen because"],
        "rows": [[t["label"], t.get("chosen") or "-"] for t in tasks], "long": True})
    failed = summary.get("failures") or {}
    if failed:
        secs.append({"title": "Tasks that could not run", "headers": ["task", "why"],
                     "rows": [[tasks[int(i)]["label"] if str(i).isdigit() and int(i) < len(tasks)
                               else f"task {i}", why] for i, why in failed.items()],
                     "long": True})
    ran = [t for t in tasks if t["failures"]]
    secs.append({"title": "Failure categories", "notes": [
                 "Errors are calls that failed after retries: never counted as wrong "
                 "answers. 'No answer' means no answer could be read from the reply."],
                 "headers": ["task", "samples", "errors", "no answer", "wrong", "partly right",
                             "right", "unscored"],
                 "rows": [[t["label"], *(t["failures"][k] for k in (
                     "samples", "errors", "no_answer", "wrong", "partial", "correct",
                     "unscored"))] for t in ran]})
    errors = [[t["label"], e["message"], e["count"]] for t in ran
              for e in t["failures"]["error_messages"]]
    if errors:
        secs.append({"title": "Errors by message", "headers": ["task", "message", "count"],
                     "rows": errors, "long": True})
    weak = [[t["label"], g["field"], g["group"], fmt_rate(g["value"])]
            for t in tasks for g in t["weakest_groups"]]
    if weak:
        secs.append({"title": "Weakest groups", "headers": ["task", "breakdown", "group",
                                                             "value [95% CI]"], "rows": weak})
    for t in tasks:
        rows = []
        for which in ("worst", "best"):
            for c in t["cases"][which]:
                r = texts.get((t["run_id"], c["sample_id"], c["epoch"]))
                rows.append([which, c["sample_id"] if c["epoch"] == 0 else
                             f"{c['sample_id']}#{c['epoch']}", f"{c['score']:.3g}",
                             _short(r.input if r else "", CASE_CHARS),
                             # a function-calling reply has no text: its decoded calls
                             _short(r.error or r.output or r.prediction or ""
                                    if r else "", CASE_CHARS),
                             _short(shown_target(r.target, r.metadata) if r else "",
                                    CASE_CHARS // 2)])
        secs.append({"title": f"Cases: {t['label']}", "long": True,
                     "notes": [] if rows else [f"No scored samples ({_value_text(t)})."],
                     "headers": ["case", "sample", "score", "input", "output", "target"]
                     if rows else None, "rows": rows})
    return secs


def _trace(trace: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each step of ``trace`` as ``{name, items: [(key, "text" | "list" | "yaml", value)]}``."""
    steps = []
    for i, step in enumerate(trace, 1):
        items = []
        for key, v in step.items():
            if key == "step" or v in (None, "", [], {}):
                continue
            if isinstance(v, (str, int, float)):
                items.append((key, "text", str(v)))
            elif isinstance(v, list) and all(isinstance(x, str) for x in v):
                items.append((key, "list", v))
            else:
                items.append((key, "yaml", yaml.safe_dump(
                    v, sort_keys=False, allow_unicode=True, width=100).rstrip()))
        steps.append({"name": str(step.get("step") or f"step {i}"), "items": items})
    return steps
