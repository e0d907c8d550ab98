"""The rendering of a plan run's report: its tables, Markdown and HTML (with inline SVG).

The part of :mod:`assay.plan.report` that turns numbers into text; nothing here reads the
store or computes a value. From :func:`~assay.plan.report.plan_summary`'s summary it makes

* the report's tables, shared by both formats (:func:`_sections`): capabilities, tasks,
  tasks that could not run, failure categories, errors by message, weakest groups and
  case studies (each cut to :data:`CASE_CHARS`);
* the plan's trace as steps of ``(key, kind, value)`` items (:func:`_trace`);
* ``report.md`` (:func:`_markdown`): ``&<>`` become entities and table pipes are
  escaped, and the plan and any structured value are escaped ``<pre>`` blocks;
* ``report.html`` (:func:`_html`): one self-contained page rendered by Jinja2 with
  autoescaping on over the shared report style, with the capability radar (from
  :func:`~assay.plan.report.radar_geometry`) or bars as inline SVG.
"""

from __future__ import annotations

import json
from typing import Any

import yaml

from assay.core.types import SampleResult
from assay.metrics.format import fmt_rate
from assay.plan.schema import Plan
from assay.reports.render import md_cell, md_escape

#: characters of a case study's input and output (its target: half of it)
CASE_CHARS = 400


# -- rendering ------------------------------------------------------------------------------
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
    """The Tasks table's primary metric: the plan's, and what stands for it; a primary the
    task does not compute is said to be so, never passed off as computed."""
    if t["metric_key"] in (None, t["primary"]):
        return t["primary"]
    if t["metric_key"] == t.get("reported_as"):
        return f"{t['primary']} (the run's {t['metric_key']})"
    if t.get("primary_computed") is False and t.get("scored_by"):
        return (f"{t['primary']}: NOT what the run scored (shown: its {t['metric_key']}, "
                f"by {t['scored_by']})")
    if t.get("primary_computed") is False:
        return f"{t['primary']}: NOT COMPUTED by {t['task']} (shown: its {t['metric_key']})"
    return f"{t['primary']} (read as {t['metric_key']})"


def _sections(summary: dict[str, Any],
              texts: dict[tuple[str, str, int], SampleResult]) -> list[dict[str, Any]]:
    """The report's tables, as ``{title, note, headers, rows, long}`` (shared by both formats)."""
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
                             _short(r.target if r else "", CASE_CHARS // 2)])
        secs.append({"title": f"Cases: {t['label']}", "long": True,
                     "notes": [] if rows else [f"No scored samples ({_value_text(t)})."],
                     "headers": ["case", "sample", "score", "input", "output", "target"]
                     if rows else None, "rows": rows})
    return secs


def _trace(plan: Plan) -> list[dict[str, Any]]:
    """Each planning step as ``{name, items: [(key, kind, value)]}``, whatever its keys:
    a text as ``text``, a list of texts as ``list``, anything else as ``yaml`` text."""
    steps = []
    for i, step in enumerate(plan.trace, 1):
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


def _md_block(text: str) -> list[str]:
    """A ``<pre>`` block: Markdown passes it through as HTML, so its text is escaped
    (``&<>`` as entities, shown as the characters) and nothing in it is markup."""
    return [f"<pre>{md_escape(text)}</pre>", ""]


def _md_text(value: Any) -> str:
    return md_escape(str(value))


def _markdown(ctx: dict[str, Any]) -> str:
    s = ctx["summary"]
    lines = ["# Evaluation plan report", "", f"Plan run {s['plan_run']} ({s['status']}), "
             f"{ctx['created']}", "", f"> {_md_text(s['request'])}".replace("\n", " "), "",
             "| | |", "|---|---|"]
    lines += [f"| {md_cell(_md_text(k))} | {md_cell(_md_text(v))} |" for k, v in ctx["facts"]]
    if s.get("problems"):
        lines += ["", "## Plan problems", ""]
        lines += [f"- **{_md_text(p)}**".replace("\n", " ") for p in s["problems"]]
    for sec in ctx["sections"]:
        lines += ["", f"## {_md_text(sec['title'])}".replace("\n", " "), ""]
        notes = sec.get("notes") or []
        lines += [("- " if len(notes) > 1 else "") + _md_text(n).replace("\n", " ")
                  for n in notes] + ([""] if notes else [])
        if sec.get("headers"):
            lines += ["| " + " | ".join(sec["headers"]) + " |",
                      "|" + "---|" * len(sec["headers"])]
            lines += ["| " + " | ".join(md_cell(_md_text(c)) for c in row) + " |"
                      for row in sec["rows"]]
    lines += ["", "## The plan", "", *_md_block(ctx["plan_yaml"]), "## How the plan was made", ""]
    for i, step in enumerate(ctx["trace"], 1):
        lines += [f"### {i}. {_md_text(step['name'])}".replace("\n", " "), ""]
        for key, kind, value in step["items"]:
            lines += [f"**{_md_text(key)}**", ""]
            if kind == "text":
                lines += [_md_text(value), ""]
            elif kind == "list":
                lines += [f"- {_md_text(x)}".replace("\n", " ") for x in value] + [""]
            else:
                lines += _md_block(value)
    if not ctx["trace"]:
        lines += ["The plan has no trace (written by hand, or by an older assay).", ""]
    return "\n".join(lines).rstrip() + "\n"


_HTML = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Evaluation plan: {{ s.request|truncate(80) }}</title>
{% include "_style.html" %}
<style>pre{background:#f6f8fa;padding:.5rem;white-space:pre-wrap;word-break:break-word}
h3{font-size:1rem;margin-top:1.2rem}h4{font-size:.9rem;margin:.6rem 0 .2rem}</style>
</head>
<body>
<h1>Evaluation plan report</h1>
<div class="muted">plan run {{ s.plan_run }} ({{ s.status }}), {{ created }}</div>
<p class="headline">{{ s.request }}</p>
<table>{% for k, v in facts %}<tr><td>{{ k }}</td><td>{{ v }}</td></tr>{% endfor %}</table>
{% if s.problems %}<h2>Plan problems</h2>
{% for p in s.problems %}<p class="warning" style="color:#9a3412"><strong>{{ p }}</strong></p>
{% endfor %}{% endif %}
<h2>Capability profile</h2>
{% if not s.capabilities %}<p class="muted">No task has a capability tag.</p>
{% elif s.chart == "radar" %}{% set g = radar %}
<svg width="{{ g.width }}" height="{{ g.height }}" viewBox="0 0 {{ g.width }} {{ g.height }}"
 role="img" aria-label="capability radar">
{% for ring in g.rings %}<polygon points="{{ ring }}" fill="none" stroke="#dde3ea"></polygon>
{% endfor %}{% for x, y in g.spokes %}<line x1="{{ g.cx }}" y1="{{ g.cy }}" x2="{{ x }}"
 y2="{{ y }}" stroke="#dde3ea"></line>
{% endfor %}{% if g.dots %}<polygon points="{{ g.polygon }}" fill="#e07a5f" fill-opacity="0.3"
 stroke="#e07a5f" stroke-width="2"></polygon>{% endif %}
{% for x, y in g.dots %}<circle cx="{{ x }}" cy="{{ y }}" r="3.5" fill="#e07a5f"></circle>
{% endfor %}{% for l in g.labels %}<text x="{{ l.x }}" y="{{ l.y }}" font-size="12"
 text-anchor="{{ l.anchor }}">{{ l.text }}</text>
{% endfor %}</svg>
{% else %}
<svg width="640" height="{{ s.capabilities|length * 24 + 8 }}" role="img"
 aria-label="capability bars">
{% for a in s.capabilities %}{% set y = loop.index0 * 24 + 4 %}
<text x="0" y="{{ y + 14 }}" font-size="12">{{ a.capability }}</text>
{% if a.value is not none %}<rect x="220" y="{{ y + 3 }}" width="{{ (a.value * 340)|round(1) }}"
 height="14" fill="#e07a5f"></rect>{% endif %}
<text x="570" y="{{ y + 14 }}" font-size="12">{{ "not measured" if a.value is none
 else "%.3f"|format(a.value) }}</text>
{% endfor %}</svg>
{% endif %}
{% for sec in sections %}
<h2>{{ sec.title }}</h2>
{% for note in sec.notes %}<p class="muted">{{ note }}</p>{% endfor %}
{% if sec.headers %}<table><tr>{% for h in sec.headers %}<th>{{ h }}</th>{% endfor %}</tr>
{% for row in sec.rows %}<tr>{% for c in row %}<td{% if sec.long and (c|string|length) > 40 %} class="q"{% endif %}>{{ c }}</td>{% endfor %}</tr>
{% endfor %}</table>{% endif %}
{% endfor %}
<h2>The plan</h2>
<pre>{{ plan_yaml }}</pre>
<h2>How the plan was made</h2>
{% for step in trace %}<h3>{{ loop.index }}. {{ step.name }}</h3>
{% for key, kind, value in step["items"] %}<h4>{{ key }}</h4>
{% if kind == "text" %}<p>{{ value }}</p>{% elif kind == "list" %}<ul>{% for x in value %}<li>{{ x }}</li>{% endfor %}</ul>
{% else %}<pre>{{ value }}</pre>{% endif %}
{% endfor %}{% else %}<p class="muted">The plan has no trace (written by hand, or by an older
assay).</p>{% endfor %}
</body>
</html>
"""


def _html(ctx: dict[str, Any]) -> str:
    """The HTML page: autoescaped Jinja2 over the shared report style (no script, no link)."""
    from jinja2 import ChoiceLoader, DictLoader, Environment, PackageLoader  # startup

    env = Environment(loader=ChoiceLoader([DictLoader({"plan_report.html": _HTML}),
                                           PackageLoader("assay.reports", "templates")]),
                      autoescape=True, trim_blocks=True, lstrip_blocks=True)
    return env.get_template("plan_report.html").render(**ctx)
