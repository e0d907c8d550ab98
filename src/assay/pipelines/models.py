"""One task on several models: a ``pipeline`` parent run, one child per model; a failed model
is recorded and the rest still run. The comparison (Holm-adjusted) is the parent's metrics."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.api import make_spec
from assay.engine.runner import RunSpec
from assay.errors import ConfigError
from assay.pipelines.parent import (
    ALL_ENGINE_FIELDS,
    ParentRun,
    StepFailed,
    engine_settings,
    steps_of,
)
from assay.reports.models import (
    NAME,
    comparison,
    comparison_lines,
    is_models_run,
    models_label,
    write_models_report,
)
from assay.store.sqlite import Store
from assay.tasks.registry import resolve

__all__ = ["NAME", "ModelsResult", "comparison", "comparison_lines", "is_models_run",
           "resume_models", "start_models", "write_models_report"]


@dataclass
class ModelsResult:
    run_id: str
    task: str
    children: dict[str, str | None]  # model -> child run id (None: not run)
    failures: dict[str, str] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)
    reports: dict[str, Path] = field(default_factory=dict)
    label: str = ""  # "arc_easy on 2 models", as the viewer and the reports call it


def start_models(store: Store, task: str, models: list[str], *,
                 task_options: dict[str, Any], engine: dict[str, Any], quiet: bool = True,
                 echo: Callable[[str], Any] | None = None,
                 on_created: Callable[[str], Any] | None = None) -> ModelsResult:
    """Run ``task`` once per model as child runs of a new parent run (options checked
    before anything is stored; ``on_created`` gets the parent's id)."""
    repeated = sorted({m for m in models if models.count(m) > 1})
    if repeated:
        raise ConfigError(f"--model {repeated[0]} is given more than once; give each model once")
    if len(models) < 2:
        raise ConfigError("a multi-model run needs two models or more (--model A --model B)")
    # the task's options checked, and its files made absolute (a resume from another folder)
    checked = make_spec(task, models[0], task_options=task_options, engine=engine)
    settings = engine_settings(checked, ALL_ENGINE_FIELDS)
    spec = RunSpec(task=NAME, model=models[0],
                   task_options={"task": checked.task, "models": list(models),
                                 "options": checked.task_options}, **settings)
    parent = ParentRun.create(store, spec, kind="pipeline",
                              model={"model": ", ".join(models), "models": list(models)},
                              dataset={"task": checked.task}, quiet=quiet,
                              on_created=on_created)
    return _drive(parent, echo)


def resume_models(store: Store, run_id: str, *, task: str | None = None,
                  overrides: dict[str, Any] | None = None, quiet: bool = True,
                  echo: Callable[[str], Any] | None = None) -> ModelsResult:
    """Continue the multi-model run ``run_id``: finished children kept, an interrupted one
    resumed, the rest run. ``task``: the one the user named (refused if not the run's)."""
    record = store.get_run(run_id)
    stored_task = record["spec"]["task_options"]["task"]
    if task is not None and task != stored_task:
        raise ConfigError(f"run {record['id']} runs {stored_task} on several models; resume it "
                          f"with assay run {stored_task} --resume {record['id']}")
    parent = ParentRun.reopen(store, record["id"], kind="pipeline", what="multi-model run",
                              overrides=overrides, quiet=quiet)
    return _drive(parent, echo)


def _drive(parent: ParentRun, echo: Callable[[str], Any] | None) -> ModelsResult:
    opts = parent.spec.task_options
    task, models, options = opts["task"], list(opts["models"]), dict(opts["options"])
    settings = engine_settings(parent.spec, ALL_ENGINE_FIELDS)
    name = resolve(task).name  # the task name its child runs are stored under
    children: dict[str, str | None] = dict.fromkeys(models)
    failures: dict[str, str] = {}

    def body(run: ParentRun) -> dict[str, Any]:
        calls = [((f"model{i + 1}", task, model, options),
                  {"engine": settings, "names": (name,), "echo": echo, "label": model})
                 for i, model in enumerate(models)]
        for i, (model, done) in enumerate(zip(models, steps_of(run, calls), strict=True)):
            if isinstance(done, StepFailed):  # on Ray: the models side by side
                failures[model] = str(done)
                children[model] = _recorded_run(run, f"model{i + 1}")
            else:
                children[model] = done
        return comparison(run.store, task, children)

    summary = parent.drive(body)
    for model, child in children.items():
        if child is not None and model not in failures:
            record = parent.store.get_run(child)
            if record["status"] == "failed":
                failures[model] = str(record["stats"].get("error") or "the run failed")
    result = ModelsResult(parent.id, task, children, failures, summary,
                          label=models_label(parent.store.get_run(parent.id)) or task)
    result.reports = write_models_report(parent.store, parent.id)
    return result


def _recorded_run(parent: ParentRun, key: str) -> str | None:
    entry = next((s for s in parent.steps if s["key"] == key), None)
    return entry["run"] if entry else None
