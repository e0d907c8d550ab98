"""A plan run's children: which stored child run is which task of the plan, for the plan
report of a run whose children were not given (a plan run stored before parent runs
recorded their steps: see :mod:`assay.pipelines.parent`)."""

from __future__ import annotations

from typing import Any

from assay.errors import AssayError
from assay.plan.schema import Plan, PlanTask
from assay.store.sqlite import Store
from assay.tasks.registry import resolve


def task_ref(task: PlanTask) -> str:
    """The name the task registry builds the task from."""
    return "qa" if task.source == "hub" else task.task


def step_key(index: int) -> str:
    """The key of the plan's ``index``-th task (from 0) among its parent run's steps."""
    return f"task {index + 1}"


def match_children(store: Store, plan_run_id: str, plan: Plan) -> list[dict[str, Any] | None]:
    """The stored child run of each task (``None``: not started): the run its step
    recorded. A plan run stored before steps were recorded: the first unused child that
    runs the task's kind (its name or, for an alias, the entry's name); children are made
    in plan order, but a task that failed before its run began makes its child later (on
    resume), so a child is matched by kind, not by position."""
    recorded = {s["key"]: s["run"] for s in store.get_run(plan_run_id)["steps"]}
    if recorded:
        return [store.get_run(recorded[step_key(i)]) if recorded.get(step_key(i)) else None
                for i in range(len(plan.tasks))]
    runs = [store.get_run(c) for c in store.children(plan_run_id)]
    used: set[str] = set()
    out: list[dict[str, Any] | None] = []
    for task in plan.tasks:
        names = {task_ref(task), _canonical(task_ref(task))}
        found = next((r for r in runs if r["id"] not in used and r["task"] in names),
                     None)
        if found is not None:
            used.add(found["id"])
        out.append(found)
    return out


def _canonical(task: str) -> str:
    """The task's registered name (a gallery alias resolves to its entry's name)."""
    try:
        return resolve(task).name
    except AssayError:
        return task
