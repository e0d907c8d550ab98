"""A task's primary metric over time (``assay history TASK``), with drops flagged.

Runs are grouped by configuration fingerprint (:mod:`assay.store.fingerprint`) into series,
so runs with another scorer, template, temperature or data are never one line; a re-scoring
(``assay score``) is never the series shown by default, and is marked as one. Each finished
run is tested against the previous one of its series: paired on shared samples (as ``assay
compare``), else Fisher's exact test on the pass counts; a significant decrease is a drop."""

from __future__ import annotations

import time
from collections import defaultdict
from typing import TYPE_CHECKING, Any

from assay.compare.runs import compare_runs, model_name
from assay.errors import ConfigError
from assay.metrics.format import counted
from assay.reports.values import cost_cell, rescored_text
from assay.store.described import run_cost, run_headline
from assay.store.fingerprint import differences, differences_text

if TYPE_CHECKING:
    from assay.store.sqlite import Store

__all__ = ["task_history"]


def _unpaired(prev: dict[str, Any], cur: dict[str, Any], alpha: float) -> dict[str, Any] | None:
    """Fisher's exact test on two pass counts (runs that share no sample)."""
    if "successes" not in prev or "successes" not in cur:
        return None
    from scipy.stats import fisher_exact  # heavy

    table = [[cur["successes"], cur["n"] - cur["successes"]],
             [prev["successes"], prev["n"] - prev["successes"]]]
    p = float(fisher_exact(table).pvalue)
    delta = cur["value"] - prev["value"]
    return {"test": "fisher_exact", "p_value": p, "delta": delta, "shared": 0,
            "significant": p < alpha and delta != 0}


def _change(store: Store, prev: dict[str, Any], cur: dict[str, Any], score: str | None,
            alpha: float) -> dict[str, Any] | None:
    try:
        res = compare_runs(store, prev["id"], cur["id"], score=score, alpha=alpha,
                           outputs=False)
    except ConfigError:  # no shared scored sample
        return _unpaired(prev["metric"], cur["metric"], alpha)
    p = res["primary"]
    return {"test": p["test"], "p_value": p["p_value"], "delta": p["delta"],
            "ci_low": p["ci_low"], "ci_high": p["ci_high"], "shared": p["n"],
            "significant": p["significant"], "warnings": res["warnings"]}


def _rescoring(run: dict[str, Any]) -> bool:
    return bool((run["config"]["parts"].get("scorer") or {}).get("rescored"))


def _configurations(runs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """``{fingerprint: {fingerprint, runs, newest, model, parts, rescored}}`` in first-run
    order; ``rescored``: the newest run's ``re-scored from RUN by ...`` (a re-scoring)."""
    out: dict[str, dict[str, Any]] = {}
    for run in runs:
        fp = run["config"]["fingerprint"]
        entry = out.setdefault(fp, {"fingerprint": fp, "runs": 0, "model": model_name(run),
                                    "parts": run["config"]["parts"]})
        entry["runs"] += 1
        entry["newest"] = run["id"]
        entry["rescored"] = (rescored_text(run) or "re-scored") if _rescoring(run) else None
    return out


def _pick(configs: dict[str, dict[str, Any]], wanted: str | None, newest: str) -> str:
    if wanted is None:
        return newest
    found = [fp for fp in configs if fp.startswith(wanted)]
    if len(found) == 1:
        return found[0]
    listing = ", ".join(f"{fp} ({counted(c['runs'], 'run')})" for fp, c in configs.items())
    what = "matches several" if found else "matches none"
    raise ConfigError(f"--fingerprint {wanted!r} {what} of this history's configurations: "
                      f"{listing}")


def task_history(store: Store, task: str, *, model: str | None = None,
                 score: str | None = None, alpha: float = 0.05,
                 limit: int | None = None, fingerprint: str | None = None,
                 mix: bool = False) -> dict[str, Any]:
    """Every run of ``task`` (``model``: exact, else a substring) oldest first, with its
    headline and change from the previous finished run of its configuration: the ``fingerprint``
    given (a unique prefix) or the newest run's, or, with ``mix``, each as a series."""
    if not 0 < alpha < 1:
        raise ConfigError(f"--alpha must be between 0 and 1, not {alpha}")
    if mix and fingerprint:
        raise ConfigError("give --fingerprint F (one configuration) or --all (every one), "
                          "not both")
    runs = [store.get_run(rid) for rid in store.runs_of(task)]
    if not runs:  # a catalogue alias (mt_bench): the task of the runs started by it
        named = [t for t in store.tasks() if any(
            store.get_run(rid)["spec"].get("task") == task for rid in store.runs_of(t))]
        runs = [store.get_run(rid) for t in named[:1] for rid in store.runs_of(t)]
    if not runs:
        known = store.tasks()
        raise ConfigError(f"no runs of task {task!r} in {store.path}; tasks with runs: "
                          f"{', '.join(known) or 'none'}")
    if model:
        exact = [r for r in runs if model_name(r) == model]
        runs = exact or [r for r in runs if model in model_name(r)]
        if not runs:
            raise ConfigError(f"no runs of task {task!r} with model {model!r}; see "
                              "'assay list runs'")
    configs = _configurations(runs)
    # the newest run scored as it ran; a re-scoring only where there is none
    newest = next((r for r in reversed(runs) if not _rescoring(r)), runs[-1])
    newest_fp = newest["config"]["fingerprint"]
    shown = None if mix else _pick(configs, fingerprint, newest_fp)
    base = configs[shown or newest_fp]["parts"]
    for c in configs.values():
        c["differences"] = differences(base, c["parts"])
        c["text"] = differences_text(c["differences"])
        c["shown"] = mix or c["fingerprint"] == shown
    if shown is not None:
        runs = [r for r in runs if r["config"]["fingerprint"] == shown]
    if limit:
        runs = runs[-limit:]
    points: list[dict[str, Any]] = []
    last: dict[str, dict[str, Any]] = {}
    for run in runs:
        head = run_headline(run)  # as stored: a deleted task file's runs are here too
        point = {"id": run["id"], "model": model_name(run), "status": run["status"],
                 "fingerprint": run["config"]["fingerprint"],
                 "created_at": run["created_at"],
                 "created": time.strftime("%Y-%m-%d %H:%M", time.localtime(run["created_at"])),
                 "metric_name": head[0] if head else None,
                 "metric": head[1] if head else None, "change": None, "drop": False,
                 "previous": None, "cost_usd": (run_cost(run) or {}).get("usd"),
                 "cost": cost_cell(run),  # "unknown": a price unknown; "—": not kept
                 "rescored": (rescored_text(run) or "re-scored") if _rescoring(run) else None}
        points.append(point)
        if point["metric"] is None or run["status"] != "finished":
            continue
        prev = last.get(point["fingerprint"])
        if prev is not None:
            change = _change(store, prev, point, score, alpha)
            point["previous"] = prev["id"]
            point["change"] = change
            point["drop"] = bool(change and change["significant"] and change["delta"] < 0)
        last[point["fingerprint"]] = point
    series: dict[str, list[int]] = defaultdict(list)
    for i, p in enumerate(points):
        series[p["fingerprint"]].append(i)
    return {"task": task, "model": model, "alpha": alpha, "points": points,
            "fingerprint": shown, "mixed": mix, "configurations": list(configs.values()),
            "series": dict(series), "drops": [p["id"] for p in points if p["drop"]]}
