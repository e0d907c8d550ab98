"""A plan run's combined report, read from the store alone (nothing re-scored, no task code
imported); a task that did not finish is shown as such, never as 0. Tables: ``report_render``."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

import yaml

from assay.compare.paired import holm
from assay.core.atomic import atomic_write_text
from assay.core.types import SampleResult
from assay.errors import ConfigError
from assay.metrics.summary import error_messages
from assay.plan.children import match_children, model_children, models_of
from assay.plan.report_render import _sections, _short, _trace
from assay.reports.models import comparison, test_line
from assay.reports.pages import write_pages
from assay.reports.render import is_rate
from assay.store.described import metric_fact, run_headline, run_report
from assay.store.sqlite import Store

#: metrics whose values are not on [0, 1]: (worst, best end of the scale)
SCALES: dict[str, tuple[float, float]] = {
    "mtbench_score": (1.0, 10.0),
    "judge_score": (1.0, 5.0),
    "bleu": (0.0, 100.0),
    "chrf": (0.0, 100.0),
}
WEAKEST_GROUPS = 3


def _plan(run: dict[str, Any]) -> dict[str, Any]:
    plan = (run.get("dataset") or {}).get("plan")
    if run.get("kind") != "plan" or not isinstance(plan, dict):
        raise ConfigError(f"run {run['id']} is not a plan run (it is a {run.get('kind')} run "
                          f"of {run.get('task')!r}); see 'assay list runs'")
    return plan


def chosen_line(task: dict[str, Any]) -> str:
    """Why the plan holds ``task``, in one line: the field's prior, the words, the model."""
    why = task.get("why") or {}
    agent = task.get("agent")
    run_with = (f"; run with the {agent.get('name')} agent (tools: "
                f"{', '.join(agent.get('tools') or []) or 'none'})" if agent else "")
    if "prior" in why:
        return (f"prior: {why['prior']}; words: {why.get('words', '-')}; "
                f"model: {why.get('model', '-')}{run_with}")
    return (why.get("selected") or "added by hand (the plan records no reason)") + run_with


def task_value(metrics: dict[str, Any], primary: str, run: dict[str, Any], *,
               key: str | None = None) -> tuple[str, dict[str, Any]] | None:
    """``(key, rate)``: the run's value of the primary (stored under ``key``, default its
    name), else its stored headline; ``None`` when unset, never another metric's value."""
    key = key or primary
    value = metrics.get(key)
    if is_rate(value):
        return (key, value) if value.get("value") is not None else None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return key, {"value": float(value), "ci_low": None, "ci_high": None}
    found = run_headline({**run, "metrics": metrics})
    return found if found is not None and found[1].get("value") is not None else None


def _metric_info(name: str, facts: dict[str, Any] | None
                 ) -> tuple[bool, tuple[float, float] | None]:
    """Whether metric ``name`` is better higher, from the stored facts, and its scale."""
    fact = metric_fact(facts, name)
    return fact.get("higher_is_better", True), SCALES.get(fact.get("name") or name)


def normalise(primary: str, value: float, facts: dict[str, Any] | None = None
              ) -> tuple[float | None, str | None]:
    """``value`` on [0, 1] with 1 the best, and a note on how it was mapped (``None``: as
    is); a value off its scale gives ``(None, why)``."""
    higher_is_better, scale = _metric_info(primary, facts)
    notes = []
    low, high = scale or (0.0, 1.0)
    v = (value - low) / (high - low)
    if scale:
        notes.append(f"{primary} is on a {low:g}-{high:g} scale: shown as "
                     f"(value - {low:g}) / {high - low:g}")
    if not -1e-9 <= v <= 1 + 1e-9:
        return None, (f"{primary} = {value:.4g} is outside its {low:g}-{high:g} scale, so it "
                      "is left off the radar")
    if not higher_is_better:
        v = 1.0 - v
        notes.append(f"{primary} is better when lower: shown as 1 - value")
    return min(max(v, 0.0), 1.0), "; ".join(notes) or None


def score_key(results: list[SampleResult], primary: str,
              facts: dict[str, Any] | None = None) -> str | None:
    """The primary's key in the samples' scores: its name or an alias, else the first."""
    first = next((r for r in results if r.scores), None)
    if first is None:
        return None
    if primary in first.scores:
        return primary
    for key in first.scores:
        if metric_fact(facts, key).get("name") == primary:
            return key
    return next(iter(first.scores))


def computes_primary(key: str | None, primary: str,
                     facts: dict[str, Any] | None = None) -> bool | None:
    """Whether score ``key`` is the primary (``None``: nothing was scored; ``False``: the
    task computes something else, which the report must not pass off as it)."""
    if key is None:
        return None
    return key == primary or metric_fact(facts, key).get("name") == primary


def _sample_value(r: SampleResult, key: str | None) -> float | None:
    if r.error is not None or key is None or key not in (r.scores or {}):
        return None
    v = r.scores[key].get("value")
    return None if v is None else float(v)


def failure_categories(results: list[SampleResult], key: str | None, primary: str,
                       metrics: dict[str, Any], facts: dict[str, Any] | None = None
                       ) -> dict[str, Any]:
    """Counts of errors, no answer, wrong, partly right and right, and the error messages."""
    higher_is_better, scale = _metric_info(primary, facts)
    low, high = scale or (0.0, 1.0)
    best, worst = (high, low) if higher_is_better else (low, high)
    counts = dict.fromkeys(("errors", "no_answer", "wrong", "partial", "correct", "unscored"), 0)
    for r in results:
        if r.error is not None:
            counts["errors"] += 1
            continue
        score = (r.scores or {}).get(key or "") or {}
        v = score.get("value")
        if score and score.get("answer") is None and v in (None, worst):
            counts["no_answer"] += 1
        elif v is None:
            counts["unscored"] += 1
        elif v == worst:
            counts["wrong"] += 1
        elif v == best:
            counts["correct"] += 1
        else:
            counts["partial"] += 1
    messages = metrics.get("top_errors")
    if not isinstance(messages, list):
        messages = error_messages(results)
    return {"samples": len(results), **counts, "error_messages": messages}


def weakest_groups(metrics: dict[str, Any], primary: str, limit: int = WEAKEST_GROUPS,
                   facts: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """The lowest groups of every ``by_<field>`` breakdown of two groups or more."""
    higher_is_better, _ = _metric_info(primary, facts)
    out = []
    for field, groups in metrics.items():
        if not (field.startswith("by_") and isinstance(groups, dict)) or len(groups) < 2:
            continue
        rows = []
        for group, value in groups.items():
            if isinstance(value, dict) and not is_rate(value):
                value = value.get(primary) if is_rate(value.get(primary)) else next(
                    (v for v in value.values() if is_rate(v)), None)
            if is_rate(value) and value.get("value") is not None:
                rows.append({"field": field[3:], "group": str(group), "value": value})
        rows.sort(key=lambda g: g["value"]["value"], reverse=not higher_is_better)
        out.extend(rows[:limit])
    return out


def pick_cases(results: list[SampleResult], key: str | None, primary: str,
               n: int = 2, facts: dict[str, Any] | None = None
               ) -> dict[str, list[dict[str, Any]]]:
    """The ``n`` worst and ``n`` best samples by primary score, never both; a worst case
    scores below the scale's best end and a best case above its worst end."""
    higher_is_better, scale = _metric_info(primary, facts)
    low, high = scale or (0.0, 1.0)
    worst_end, best_end = (low, high) if higher_is_better else (high, low)
    scored = [(r, v) for r in results if (v := _sample_value(r, key)) is not None]
    order = sorted(range(len(scored)), key=lambda i: scored[i][1], reverse=not higher_is_better)
    worst = [i for i in order if scored[i][1] != best_end][:n]
    best = [i for i in sorted(order, key=lambda i: scored[i][1], reverse=higher_is_better)
            if i not in worst and (scored[i][1] > worst_end if higher_is_better
                                   else scored[i][1] < worst_end)][:n]

    def case(i: int) -> dict[str, Any]:
        r, v = scored[i]
        return {"sample_id": r.sample_id, "epoch": r.epoch, "score": v}

    return {"worst": [case(i) for i in worst], "best": [case(i) for i in best]}


def _task_summary(store: Store, index: int, task: dict[str, Any], child: dict[str, Any] | None,
                  reported_as: str | None, facts: dict[str, Any]) -> dict[str, Any]:
    """``reported_as``: the key of the child's metrics holding the primary."""
    primary = next((m["name"] for m in task.get("metrics") or [] if m.get("role") == "primary"),
                   None)  # None before the plan's metrics step
    if child is not None:  # the child's own facts: its metrics' and its scores' keys
        facts = {**facts, **(run_report(child).get("metric_facts") or {})}
    out: dict[str, Any] = {
        "index": index, "task": task["task"], "label": f"hub:{task['hub']['id']}" if task.get("hub") else task["task"],
        "source": task.get("source"), "verified": task.get("source") != "hub",
        "capabilities": list(task.get("capabilities") or []), "primary": primary,
        "higher_is_better": _metric_info(primary, facts)[0], "metric_key": None,
        "value": None, "normalised": None, "scale_note": None,
        "run_id": child["id"] if child else None,
        "status": child["status"] if child else "not run",
        "n_samples": None, "n_errors": None, "failures": None, "weakest_groups": [],
        "cases": {"worst": [], "best": []}, "primary_computed": None, "scored_by": None,
        "reported_as": reported_as or primary, "chosen": chosen_line(task),
    }
    if child is None:
        return out
    # the stored metrics (a child stopped half way has none: its value is not shown)
    metrics = child.get("metrics") or {}
    results = store.results(child["id"], transcripts=False, texts=False)
    key = score_key(results, primary, facts)
    # a run that keeps the primary in its metrics (under its name, or the entry's
    # reported_as) computes it: its samples' score may carry the task's own name (code
    # tasks score "pass")
    kept = out["reported_as"] != primary or primary in metrics
    out["primary_computed"] = (True if kept and key is not None
                               else computes_primary(key, primary, facts))
    if out["primary_computed"] is False:  # the registry metric its score key names, if any
        out["scored_by"] = metric_fact(facts, key).get("name")
    out["n_samples"] = metrics.get("n_samples", len(results))
    out["n_errors"] = metrics.get("n_errors", sum(r.error is not None for r in results))
    out["failures"] = failure_categories(results, key, primary, metrics, facts)
    out["weakest_groups"] = weakest_groups(metrics, primary, facts=facts)
    out["cases"] = pick_cases(results, key, primary, facts=facts)
    found = task_value(metrics, primary, child, key=out["reported_as"])
    if child["status"] == "finished" and found is not None:
        out["metric_key"], out["value"] = found
        # on the scale of the metric read: the primary's, else the task's own
        out["normalised"], out["scale_note"] = normalise(
            found[0] if out["primary_computed"] is False else primary, found[1]["value"],
            facts)
    return out


def capability_axes(tasks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One axis per capability tag: the mean normalised value of its measured tasks."""
    axes = []
    for cap in dict.fromkeys(c for t in tasks for c in t["capabilities"]):
        tagged = [t for t in tasks if cap in t["capabilities"]]
        measured = [t for t in tagged if t["normalised"] is not None]
        axes.append({
            "capability": cap,
            "value": (sum(t["normalised"] for t in measured) / len(measured)
                      if measured else None),
            "tasks": [t["label"] for t in measured],
            "not_measured": [t["label"] for t in tagged if t["normalised"] is None],
        })
    return axes


def plan_summary(store: Store, plan_run_id: str, *,
                 children: list[str | None] | None = None,
                 model: str | None = None) -> dict[str, Any]:
    """The numbers the plan report shows, JSON-ready. ``children``: each task's child run id
    (``None``: not run), else matched from the store; a plan run on several models has one
    per model (:func:`plan_models_summary`), ``model`` naming it."""
    run = store.get_run(plan_run_id)
    plan = _plan(run)
    if models_of(run) and children is None:
        return plan_models_summary(store, run["id"])
    if children is not None:
        if len(children) != len(plan["tasks"]):
            raise ConfigError(f"plan run {run['id']} has {len(plan['tasks'])} tasks, but "
                              f"{len(children)} child runs were given")
        runs = [store.get_run(c) if c else None for c in children]
    else:
        runs = match_children(store, run["id"], plan["tasks"])
    # stored by the plan run when it started (an older one's: the metrics' own names)
    keys = run["dataset"].get("reported_as") or [None] * len(runs)
    facts = run["dataset"].get("metric_facts") or {}
    tasks = [_task_summary(store, i, t, c, k, facts)
             for i, (t, c, k) in enumerate(zip(plan["tasks"], runs, keys, strict=True))]
    labels = [t["label"] for t in tasks]
    for t in tasks:  # two tasks with one label (two runs of qa): tell them apart
        if labels.count(t["label"]) > 1:
            t["label"] += f" (task {t['index'] + 1})"
    axes = capability_axes(tasks)
    notes = list(dict.fromkeys(t["scale_note"] for t in tasks if t["scale_note"]))
    chart = "radar" if len(axes) >= 3 else "bars"
    if axes and chart == "bars":
        notes.append(f"{len(axes)} capabilit{'y' if len(axes) == 1 else 'ies'} only: a radar "
                     "needs three axes, so the values are drawn as bars")
    drawn = [a["value"] for a in axes if a["value"] is not None]
    profile_note = None
    if drawn and not any(drawn):  # an all-zero profile has no area: say so, never a blank
        who = ("Every task" if not any(t["normalised"] for t in tasks) else
               "Every task on the chart")
        profile_note = (f"{who} scored 0: each capability's value is 0, "
                        + ("at the centre of the radar." if chart == "radar" else
                           "its bar a tick at 0."))
    untagged = [t["label"] for t in tasks if not t["capabilities"]]
    if untagged:
        notes.append(f"not on the chart (no capability tag): {', '.join(untagged)}")
    problems = []
    for t in tasks:
        if t["value"] is None or t["metric_key"] in (t["primary"], t["reported_as"]):
            continue
        if t["primary_computed"] is False and t["scored_by"]:
            shown = ("" if t["metric_key"] == t["scored_by"] else f" ({t['metric_key']})")
            problems.append(f"{t['label']}: the plan's primary metric is {t['primary']}, but "
                            f"the run scored its samples by {t['scored_by']}; the value "
                            f"shown{shown} is {t['scored_by']}, not "
                            f"{t['primary']}. Fix the plan: set the task's scorer option to "
                            f"{t['primary']}, or make {t['scored_by']} its primary.")
        elif t["primary_computed"] is False:
            problems.append(f"{t['label']}: the plan's primary metric {t['primary']} is not "
                            f"computed by {t['task']}; the value shown is {t['task']}'s own "
                            f"{t['metric_key']} (its own verdict), not {t['primary']}: read "
                            f"it as {t['task']}'s {t['metric_key']}.")
        else:
            notes.append(f"{t['label']}: the run has no {t['primary']}; its headline "
                         f"{t['metric_key']} stands for it")
    return {
        "plan_run": run["id"], "request": plan["request"], "status": run["status"],
        "model": model or (run.get("model") or {}).get("model") or plan["models"]["model"],
        "tasks": tasks, "capabilities": axes, "chart": chart, "notes": notes,
        "profile_note": profile_note,
        "problems": problems,
        "counts": {"tasks": len(tasks),
                   "finished": sum(t["status"] == "finished" for t in tasks),
                   "not_run": sum(t["status"] == "not run" for t in tasks)},
    }


def plan_models_summary(store: Store, plan_run_id: str, *,
                        children: dict[str, list[str | None]] | None = None
                        ) -> dict[str, Any]:
    """A plan run on several models: each model's summary as :func:`plan_summary` makes it
    (``per_model``), and per task the paired tests of the models on the samples both scored
    (``comparisons``), Holm-adjusted across every test of the plan."""
    run = store.get_run(plan_run_id)
    plan = _plan(run)
    models = models_of(run)
    children = children or model_children(store, run)
    per_model = [plan_summary(store, run["id"], children=children[m], model=m) for m in models]
    comparisons = [comparison(store, t["label"], {m: children[m][i] for m in models})
                   for i, t in enumerate(per_model[0]["tasks"])]
    tests = [p for c in comparisons for p in c["pairs"] if p.get("p_value") is not None]
    for pair, adjusted in zip(tests, holm([p["p_value"] for p in tests]), strict=True):
        pair["p_holm"] = adjusted
    counts = {k: sum(s["counts"][k] for s in per_model) for k in per_model[0]["counts"]}
    return {
        "plan_run": run["id"], "request": plan["request"], "status": run["status"],
        "model": ", ".join(models), "models": models, "per_model": per_model,
        "comparisons": comparisons, "n_tests": len(tests),
        "problems": list(dict.fromkeys(p for s in per_model for p in s["problems"])),
        "counts": {**counts, "models": len(models)},
    }


def radar_geometry(axes: list[dict[str, Any]], width: int = 720,
                   height: int = 440) -> dict[str, Any]:
    """Coordinates of the radar's rings, spokes, labels and polygon (axis ``i`` at
    ``-90° + 360° i / n``); wider than tall, for the labels at the sides."""
    cx, cy, radius = width / 2, height / 2, height / 2 - 50
    n = len(axes)

    def at(i: int, r: float) -> tuple[float, float]:
        a = -math.pi / 2 + 2 * math.pi * i / n
        return round(cx + r * math.cos(a), 1), round(cy + r * math.sin(a), 1)

    def poly(points: list[tuple[float, float]]) -> str:
        return " ".join(f"{x},{y}" for x, y in points)

    labels = []
    for i, a in enumerate(axes):
        x, y = at(i, radius + 14)
        anchor = "middle" if abs(x - cx) < 2 else ("start" if x > cx else "end")
        shown = "not measured" if a["value"] is None else f"{a['value']:.2f}"
        labels.append({"x": x, "y": round(y + 4, 1), "anchor": anchor,
                       "text": f"{_short(a['capability'], 20)} ({shown})"})
    dots = [at(i, radius * a["value"]) for i, a in enumerate(axes) if a["value"] is not None]
    return {"width": width, "height": height, "cx": cx, "cy": cy,
            "rings": [poly([at(i, radius * f) for i in range(n)]) for f in (0.25, 0.5, 0.75, 1)],
            "spokes": [at(i, radius) for i in range(n)], "labels": labels,
            "polygon": poly(dots), "dots": dots}


def plan_as_run(plan: dict[str, Any], run: dict[str, Any]) -> str:
    """The plan's YAML (no trace) as this run used it: ``--model`` and ``--limit`` applied
    and said in a header comment."""
    data = {k: v for k, v in plan.items() if k != "trace"}
    data["models"] = dict(data["models"])
    used = {k: v for k, v in (run.get("model") or {}).items()
            if k in data["models"] and v is not None}
    changed = [f"{k} {data['models'][k]} -> {v}" for k, v in used.items() if v != data["models"][k]]
    data["models"].update(used)
    limit = (run.get("spec") or {}).get("limit")
    if limit is not None:
        changed.append(f"limit -> {limit} sample{'' if limit == 1 else 's'} per task (--limit)")
    head = ("# as this run used it (changed from the plan file: " + "; ".join(changed) + ")\n"
            if changed else "")
    return head + yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100).rstrip()


def plan_page(store: Store, plan_run_id: str, *,
              summary: dict[str, Any] | None = None) -> dict[str, Any]:
    """The ``plan`` page's context (the report's, and the viewer's run page of a plan run);
    ``summary``: one already made or stored, else made from the store. ``parts``: one per
    model (a plan run on one model has one, unnamed)."""
    run = store.get_run(plan_run_id)
    plan = _plan(run)
    if summary is None:
        summary = plan_summary(store, run["id"])
        # why tasks could not start: recorded by the runner with the parent's metrics
        stored = (run.get("metrics") or {}).get("failures")
        if stored:
            summary["failures"] = stored
    many = "per_model" in summary
    parts = []
    for i, s in enumerate(summary["per_model"] if many else [summary]):
        texts: dict[tuple[str, str, int], SampleResult] = {}
        for t in s["tasks"]:
            keys = [(c["sample_id"], c["epoch"]) for w in ("worst", "best")
                    for c in t["cases"][w]]
            if keys:
                for r in store.iter_results(t["run_id"], transcripts=False, keys=keys):
                    texts[(t["run_id"], r.sample_id, r.epoch)] = r
        parts.append({"model": (f"model {i + 1} of {len(summary['per_model'])}: {s['model']}"
                                if many else None),
                      "s": s, "sections": _sections({**s, "failures": (summary.get("failures") or {})
                                                     .get(s["model"])} if many else s, texts),
                      "radar": radar_geometry(s["capabilities"]) if s["chart"] == "radar"
                      else None})
    dataset = run.get("dataset") or {}
    counts = summary["counts"]
    shown = (f"{counts['tasks'] // counts['models']} planned on {counts['models']} models: "
             f"{counts['finished']} of {counts['tasks']} runs finished, {counts['not_run']} "
             "not run" if many else f"{counts['tasks']} planned, {counts['finished']} "
             f"finished, {counts['not_run']} not run")
    return {
        "s": summary, "summary": summary, "parts": parts,
        "tests": [(c["task"], [test_line(p) for p in c["pairs"]])
                  for c in summary.get("comparisons") or []],
        "created": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(run["created_at"])),
        "facts": [("request", plan["request"]),
                  ("models under test" if many else "model under test", summary["model"]),
                  ("judge", plan["models"]["judge"] or "none"),
                  ("planner", plan["models"]["planner"]),
                  ("plan file", dataset.get("plan_file") or "-"),
                  ("plan hash", dataset.get("plan_hash") or "-"),
                  ("tasks", shown)],
        "plan_yaml": plan_as_run(plan, run),
        "trace": _trace(plan.get("trace") or []),
    }


def write_plan_report(store: Store, plan_run_id: str, out: Path | None = None, *,
                      summary: dict[str, Any] | None = None) -> dict[str, Path]:
    """Write ``report.md``, ``report.html`` and ``summary.json`` (default folder
    ``store.runs_dir / <run id>``); ``summary``: one the caller has just made."""
    ctx = plan_page(store, plan_run_id, summary=summary)
    summary = ctx["summary"]
    folder = out or store.runs_dir / summary["plan_run"]
    paths = write_pages(folder, "plan", ctx, stem="report")
    paths["json"] = atomic_write_text(folder / "summary.json",
                                      json.dumps(summary, indent=2, ensure_ascii=False) + "\n")
    return paths
