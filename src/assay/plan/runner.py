"""``assay run plan.yaml``: every task of a plan as a child run of one parent run.

The parent is a run of task ``plan`` whose dataset record holds the plan (trace
included), its file and its hash. Each task runs as an ordinary engine run with the
parent as its parent (``parent_id``), one after another in the plan's order, so each
child is exactly what ``assay run TASK`` would have made (options, data hash, scorer,
metrics, report). A Hub task is downloaded first (:func:`assay.plan.hub.fetch_split`)
and runs as ``qa`` on the local file.

The store is the only state. ``assay run plan.yaml --resume ID`` (after Ctrl-C or
kill -9) matches the parent's children to the plan's tasks (the i-th child of a task's
kind belongs to the i-th task of that kind), keeps the finished ones, continues an
interrupted one with the engine's own resume (no committed sample is sent again) and
runs the rest. A task that fails (its data cannot be had, say) is recorded and the
others still run; ``--resume`` tries it again. The combined report is written last
(:mod:`assay.plan.report`).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.core.version import __version__
from assay.errors import AssayError, ConfigError
from assay.plan.children import match_children, task_ref
from assay.plan.schema import Plan, PlanTask, read_plan
from assay.plan.untrusted import check_models, check_task_ref, task_options
from assay.store.owner import check_resumable
from assay.store.sqlite import Store, new_run_id

NAME = "plan"


def plan_hash(plan: Plan) -> str:
    """The identity of a plan's content (its trace left out)."""
    text = json.dumps(plan.without_trace(), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass
class PlanRun:
    """What ``run_plan`` did."""

    run_id: str
    children: list[str | None]
    failures: dict[int, str] = field(default_factory=dict)
    reports: dict[str, Path] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)


def child_options(task: PlanTask, plan: Plan, base: Path | None = None) -> dict[str, Any]:
    """The task options a child run gets: a Hub task's data fetched here first, a
    relative path read from the plan file's folder ``base`` (and kept inside it: see
    :mod:`assay.plan.untrusted`)."""
    options = dict(task.options)
    if base is not None:  # every file an option names: inside the plan's folder, absolute
        options = task_options(options, base, f"plan {base}: task {task.label}")
    if task.source == "hub" and task.hub is not None:
        from assay.plan.hub import fetch_split

        options["data"] = str(fetch_split(task.hub))
    if plan.models.judge and task.source != "hub":
        # the plan's judge for every task with a judge role (MT-Bench, converse's judge
        # and examiner), unless the task names its own
        from assay.tasks.registry import resolve

        fields = resolve(task.task).Options.model_fields
        for role in ("judge_model", "examiner_model"):
            if role in fields:
                options.setdefault(role, plan.models.judge)
    return options


def prepare(task: PlanTask, echo: Callable[[str], None]) -> None:
    """Fetch what a task needs before its run, as ``assay data pull`` would: each data
    source the task declares that can tell it is missing here (BFCL's data from the
    bfcl-eval wheel on PyPI), unless an option of the task names its data. Catalogue
    entries pull their own data when they start."""
    if task.source == "hub":
        return
    from assay.tasks.options import path_options
    from assay.tasks.registry import resolve

    ref = resolve(task_ref(task))
    if any(task.options.get(k) for k in path_options(ref.Options)):
        return  # the plan gives the data itself
    for source in ref.info.data:
        if source.present and not source.is_present():
            echo(f"{source.description}: not found here, pulling it (assay data pull "
                 f"{source.name})")
            source.fetch()


def start_plan(store: Store, path: str | Path, *, model: str | None, engine: dict[str, Any],
               quiet: bool = True, echo: Callable[[str], None] = print,
               on_created: Callable[[str], None] | None = None) -> PlanRun:
    """Run the plan in ``path`` as a new parent run. ``model`` overrides the plan's
    model under test; ``engine`` holds the engine settings every child uses (``limit``
    overrides each task's own limit)."""
    path = Path(path)
    plan = read_plan(path)
    if not plan.tasks:
        raise ConfigError(f"{path}: the plan has no tasks; add one (assay plan ... or edit "
                          "tasks:) before running it")
    _validate(plan, path, model_given=bool(model))
    subject = model or plan.models.model
    pid = new_run_id()
    stored = {k: v for k, v in engine.items() if v is not None}
    if stored.get("base_url"):
        from assay.core.redact import redact_url

        # credentials in an endpoint are never stored: a resume gets them again
        stored["base_url"] = redact_url(engine["base_url"])
        if stored["base_url"] != engine["base_url"]:
            stored["base_url_has_secrets"] = True
    spec = {"task": NAME, "model": subject, "plan_file": str(path.resolve()),
            "engine": stored}
    store.create_run(task=NAME, spec=spec, run_id=pid,
                     model={"model": subject, "judge": plan.models.judge,
                            "planner": plan.models.planner},
                     dataset={"plan": plan.model_dump(mode="json"),
                              "plan_file": str(path.resolve()), "plan_hash": plan_hash(plan)},
                     package_version=__version__)
    if on_created is not None:
        on_created(pid)
    return _drive(store, pid, plan, subject, dict(engine), quiet=quiet, echo=echo,
                  existing=[None] * len(plan.tasks), base=path.resolve().parent)


def resume_plan(store: Store, run_id: str, *, path: str | Path | None = None,
                overrides: dict[str, Any] | None = None, quiet: bool = True,
                echo: Callable[[str], None] = print) -> PlanRun:
    """Continue a plan run: finished children kept, an interrupted one resumed by the
    engine, the rest run. ``path``: the plan file given on the command line, which must
    still be the plan the run started with."""
    record = store.get_run(run_id)
    pid = record["id"]
    check_resumable(record, NAME, "plan run")
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
    engine = dict(record["spec"].get("engine") or {})
    engine.update({k: v for k, v in (overrides or {}).items() if v is not None})
    if engine.pop("base_url_has_secrets", False) and not (overrides or {}).get("base_url"):
        from assay.core.redact import redact_url

        env = os.environ.get("OPENAI_BASE_URL")
        if not (env and redact_url(env) == engine.get("base_url")):
            raise ConfigError(f"plan run {pid} used an endpoint with credentials, which are "
                              "never stored; give it again with --base-url")
        engine["base_url"] = env
    return _drive(store, pid, plan, record["spec"]["model"], engine, quiet=quiet, echo=echo,
                  existing=match_children(store, pid, plan), overrides=overrides,
                  base=Path(record["spec"]["plan_file"]).parent)


def _validate(plan: Plan, path: Path, *, model_given: bool = False) -> None:
    """Every task builds and names only metrics it computes, names no file outside the
    plan's folder and no code (:mod:`assay.plan.untrusted`); one line otherwise. The
    files are checked before any task's options are validated (a task may read a file
    while validating its options)."""
    from assay.plan.steps import check_metrics
    from assay.tasks.registry import resolve

    check_models(plan.models, model_given=model_given, where=str(path))
    base = path.resolve().parent
    for i, task in enumerate(plan.tasks, 1):
        where = f"{path}: task {i} ({task.label})"
        check_task_ref(task.task, where)
        options = task_options(dict(task.options), base, where)
        try:
            check_metrics(task)
            if task.source != "hub":
                ref = resolve(task.task)
                from assay.tasks.options import validate_options

                validate_options(ref.Options, options, task.task)
        except AssayError as e:
            raise ConfigError(f"{where}: {e}") from None


def _drive(store: Store, pid: str, plan: Plan, model: str, engine: dict[str, Any], *,
           quiet: bool, echo: Callable[[str], None],
           existing: list[dict[str, Any] | None],
           overrides: dict[str, Any] | None = None, base: Path | None = None) -> PlanRun:
    from assay.tasks.datagen.steps import resume_step, run_step

    started = time.perf_counter()
    store.set_run_status(pid, "running")
    result = PlanRun(pid, [None] * len(plan.tasks))
    try:
        for i, task in enumerate(plan.tasks):
            found = existing[i]
            label = f"[{i + 1}/{len(plan.tasks)}] {task.label}"
            if found is not None and found["status"] == "finished":
                echo(f"{label}: finished before (run {found['id']}), kept")
                result.children[i] = found["id"]
                continue
            try:
                if found is not None:
                    echo(f"{label}: resuming run {found['id']}")
                    # task options whose credentials were never stored, from the plan
                    masked = {p.split(".")[1].split("[")[0]
                              for p in found["spec"].get("redacted") or []
                              if p.startswith("task_options.")}
                    again = {k: v for k, v in child_options(task, plan, base).items()
                             if k in masked}
                    result.children[i] = resume_step(
                        store, found["id"], parent_id=pid, quiet=quiet,
                        overrides={**(overrides or {}), "task_options": again}
                        if again else overrides)
                else:
                    settings = dict(engine)
                    if settings.get("limit") is None and task.limit is not None:
                        settings["limit"] = task.limit
                    echo(f"{label}: running" + (f" (limit {settings['limit']})"
                                                if settings.get("limit") is not None else ""))
                    prepare(task, echo)
                    result.children[i] = run_step(store, task_ref(task), model,
                                                  child_options(task, plan, base), engine=settings,
                                                  parent_id=pid, quiet=quiet)
            except AssayError as e:
                result.failures[i] = str(e)
                echo(f"{label}: failed: {e}")
    except (KeyboardInterrupt, SystemExit):
        _stop(store, pid, "interrupted")
        raise
    except BaseException:
        _stop(store, pid, "failed")
        raise
    from assay.plan.report import plan_summary, write_plan_report

    stats = {k: v for k, v in store.get_run(pid)["stats"].items() if k != "owner"}
    stats["elapsed_s"] = round(stats.get("elapsed_s", 0.0) + time.perf_counter() - started, 3)
    stats["sessions"] = stats.get("sessions", 0) + 1
    store.set_run_status(pid, "failed" if result.failures else "finished", stats)
    summary = plan_summary(store, pid, children=result.children)
    summary["failures"] = {str(k): v for k, v in result.failures.items()}
    store.set_metrics(pid, summary)
    result.summary = summary
    result.reports = write_plan_report(store, pid, summary=summary)
    return result


def _stop(store: Store, pid: str, status: str) -> None:
    try:
        store.set_run_status(pid, status)
    except AssayError:
        pass  # the store is locked: 'assay list runs' shows the run as interrupted
