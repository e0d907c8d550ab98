"""A plan run's children: which stored child run is which task of the plan, and the keys the
plan's driver (:mod:`assay.pipelines.plan`) records its steps under."""

from __future__ import annotations

from typing import Any

from assay.store.sqlite import Store


def task_ref(task: Any) -> str:
    """The name the task registry builds a plan task (a ``PlanTask``) from."""
    return "qa" if task.source == "hub" else task.task


def step_key(index: int, model: int | None = None) -> str:
    """The key of the plan's ``index``-th task (from 0) among its parent run's steps; on
    several models, of its run on the ``model``-th (from 0)."""
    return f"task {index + 1}" + ("" if model is None else f" model {model + 1}")


def models_of(run: dict[str, Any]) -> list[str]:
    """The models a plan run evaluates when it is given several (``[]``: one)."""
    models = (run.get("model") or {}).get("models")
    return [str(m) for m in models] if isinstance(models, list) and len(models) > 1 else []


def model_children(store: Store, run: dict[str, Any]) -> dict[str, list[str | None]]:
    """A plan run on several models: per model, each task's child run id (``None``: not
    started), from its recorded steps."""
    recorded = {s["key"]: s["run"] for s in store.get_run(run["id"])["steps"]}
    n = len(run["dataset"]["plan"]["tasks"])
    return {m: [recorded.get(step_key(i, j)) for i in range(n)]
            for j, m in enumerate(models_of(run))}


def match_children(store: Store, plan_run_id: str, tasks: list[dict[str, Any]]
                   ) -> list[dict[str, Any] | None]:
    """The stored child run of each of ``tasks`` (``None``: not started). For runs stored before
    steps were recorded, match by name, not position: a child may be made later, on resume."""
    recorded = {s["key"]: s["run"] for s in store.get_run(plan_run_id)["steps"]}
    if recorded:
        return [store.get_run(recorded[step_key(i)]) if recorded.get(step_key(i)) else None
                for i in range(len(tasks))]
    runs = [store.get_run(c) for c in store.children(plan_run_id)]
    out: list[dict[str, Any] | None] = []
    for task in tasks:
        name = "qa" if task.get("source") == "hub" else task["task"]
        used = {r["id"] for r in out if r}
        out.append(next((r for r in runs if r["id"] not in used
                         and name in (r["task"], r["spec"].get("task"))), None))
    return out
