"""The Python API; the CLI is a thin layer over it.

>>> from assay import evaluate
>>> result = evaluate("qa", model="local", data="examples/qa_example.jsonl", limit=5)
>>> result.metrics["normalized_match"]["value"]  # the scorer's metric, by its name
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.core.redact import redact_tree, redact_url
from assay.engine.loop import run
from assay.engine.runner import Engine, RunSpec, credentials_needed
from assay.errors import ConfigError
from assay.metrics.run import stored_metrics
from assay.models.base import get_subject
from assay.reports.render import write_reports
from assay.store.sqlite import Store
from assay.tasks.options import did_you_mean, path_options
from assay.tasks.registry import looks_like_file, reference_of, resolve

_ENGINE_FIELDS = set(RunSpec.__dataclass_fields__) - {"task", "model", "task_options"}


@dataclass
class RunResult:
    """What a finished run produced."""

    run_id: str
    metrics: dict[str, Any]
    reports: dict[str, Path] = field(default_factory=dict)
    #: ``finished``, or ``failed`` past ``max_error_rate`` (see :mod:`assay.core.failures`)
    status: str = "finished"
    stats: dict[str, Any] = field(default_factory=dict)
    #: a failed run's most common error (``None`` otherwise)
    error: str | None = None


def _absolute(value: Any) -> Any:
    """A path option's value stored absolute when it names something on disk (so that
    ``--resume`` works from any folder); other text (an HF id) as given."""
    if not isinstance(value, str):
        return value
    path = Path(value).expanduser()
    return str(path.resolve()) if path.exists() else value


def make_spec(task: str, model: str = "local", *, task_options: dict[str, Any] | None = None,
              engine: dict[str, Any] | None = None, **options: Any) -> RunSpec:
    """A RunSpec from keyword options: the task's own go to the task (``seed=7`` is its seed
    where it has one), engine settings (``limit``, ...) to the engine, others are an error;
    ``task_options``/``engine`` say which explicitly. Paths are made absolute (for resume)."""
    ref = resolve(task)
    fields = ref.Options.model_fields
    given = {k: v for k, v in options.items() if v is not None}
    bench = {k: v for k, v in given.items() if k in fields}
    eng = {k: v for k, v in given.items() if k not in fields and k in _ENGINE_FIELDS}
    unknown = [k for k in given if k not in fields and k not in _ENGINE_FIELDS]
    if unknown:
        raise ConfigError(
            f"unknown option{'s' if len(unknown) > 1 else ''} {', '.join(sorted(unknown))} "
            f"for task {ref.name}{did_you_mean(sorted(unknown), [*fields, *_ENGINE_FIELDS])}; "
            f"task options: {', '.join(sorted(fields)) or 'none'}; engine settings: "
            f"{', '.join(sorted(_ENGINE_FIELDS))}")
    bench.update({k: v for k, v in (task_options or {}).items() if v is not None})
    eng.update({k: v for k, v in (engine or {}).items() if v is not None})
    paths = path_options(ref.Options)  # the options the task declares as files
    bench = {k: _absolute(v) if k in paths else v for k, v in bench.items()}
    name = ref.ref if looks_like_file(task) else task
    return RunSpec(task=name, model=model, task_options=bench, **eng)


def resume_spec(store: Store, run_id: str, spec: RunSpec | None,
                overrides: dict[str, Any] | None) -> RunSpec:
    """The spec a resumed run continues with: the stored one, plus allowed overrides and the
    credentials never stored: a base URL's from ``overrides``, ``spec`` or the same endpoint's
    ``$OPENAI_BASE_URL``; a task option's from ``overrides["task_options"]`` (``-T``) or
    ``spec``, if the same once redacted. One not given back is an error, not ``***`` sent."""
    record = store.get_run(run_id)
    stored = RunSpec.from_dict(record["spec"])
    overrides = dict(overrides or {})
    given_options = dict(overrides.pop("task_options", None) or {})
    base_url = overrides.get("base_url") or (spec.base_url if spec else None)
    if overrides.get("executor", "ray") != "ray":  # resumed in this process: no cluster
        stored.workers = stored.ray_address = None
    for name, value in overrides.items():
        if name != "base_url":
            setattr(stored, name, value)
    if base_url:
        stored.base_url = base_url
    elif record["spec"].get("base_url_has_secrets"):
        env = os.environ.get("OPENAI_BASE_URL")
        if env and redact_url(env) == stored.base_url:
            stored.base_url = env
        else:
            raise ConfigError(
                f"run {record['id']} used an endpoint with credentials in its URL, which are "
                "never stored; resume with --base-url giving the full URL again")
    _restore_redacted(record, stored, spec, given_options)
    return stored


def _restore_redacted(record: dict[str, Any], stored: RunSpec, spec: RunSpec | None,
                      given: dict[str, Any]) -> None:
    """Put back into ``stored`` the values its stored form had redacted (see
    :func:`resume_spec`); refuse task options given on resume that were not redacted."""
    run_id = record["id"]
    paths = record["spec"].get("redacted") or []
    tops = {p.split(".")[0].split("[")[0] for p in paths}
    redacted_options = {p.split(".")[1].split("[")[0] for p in paths
                        if p.startswith("task_options.")}
    refused = sorted(set(given) - redacted_options)
    if refused:
        flags = ", ".join("--" + n.replace("_", "-") for n in refused)
        raise ConfigError(f"--resume continues a run with the options it started with; {flags} "
                          "would change its samples or scoring, so start a new run instead")
    missing: list[str] = []
    for name in sorted(redacted_options):
        if name in given:
            value, flag = given[name], f"-T {name}"
        elif spec is not None and name in spec.task_options:
            value, flag = spec.task_options[name], f"the task option {name}"
        else:
            missing.append(f"task_options.{name}")
            continue
        if redact_tree(value, name) != stored.task_options.get(name):
            raise ConfigError(
                f"{flag} is not the value run {run_id} started with (credentials aside); "
                "a resume keeps the run's options, so start a new run to change it")
        stored.task_options[name] = value
    for top in sorted(tops - {"task_options"}):
        value = getattr(spec, top, None) if spec is not None else None
        if value is None or redact_tree(value, top) != getattr(stored, top):
            missing.append(top)
            continue
        setattr(stored, top, value)
    if missing:
        raise credentials_needed(run_id, missing)


async def run_async(spec: RunSpec | None = None, *, resume: str | None = None,
                    store: Store | None = None, quiet: bool = True, reports: bool = True,
                    api_key: str | None = None, engine: Engine | None = None,
                    overrides: dict[str, Any] | None = None,
                    parent_id: str | None = None) -> RunResult:
    """Run (or resume) a spec, write its reports and return the metrics. On ``resume``,
    ``spec`` only supplies credentials and ``overrides`` settings that keep the samples."""
    own_store = store is None
    store = store or Store()
    try:
        engine = engine or Engine(store, quiet=quiet)
        if resume:
            spec = resume_spec(store, resume, spec, overrides)
        if spec is None:
            raise ValueError("give a RunSpec or a run id to resume")
        # without api_key, the provider reads OPENAI_API_KEY itself
        subject = get_subject(spec.model, base_url=spec.base_url, api_key=api_key,
                              timeout=spec.timeout, endpoints=spec.endpoints) if api_key else None
        run_id = await engine.run(spec, resume=resume, subject=subject, parent_id=parent_id)
        run = store.get_run(run_id)
        metrics = stored_metrics(run) or {}  # stored by the engine's finalize
        paths: dict[str, Path] = write_reports(store, run_id) if reports else {}
        error = run["stats"].get("error") if run["status"] == "failed" else None
        return RunResult(run_id, metrics, paths, run["status"], run["stats"], error)
    finally:
        if own_store:
            store.close()


def evaluate(task: Any, model: str = "local", **options: Any) -> RunResult:
    """Run ``task`` on ``model`` synchronously: a task's name or file, or the task itself (a
    ``@task`` function or Task subclass, as a notebook defines it). Options are the CLI's,
    in Python spelling: the task's (``data``, ``scorer``, ...) and the engine's (``limit``,
    ``max_connections``, ``seed``, ``base_url``, ``resume``...; see :func:`make_spec`).
    ``api_key`` is never stored."""
    api_key = options.pop("api_key", None)
    quiet = options.pop("quiet", True)
    resume = options.pop("resume", None)
    if not isinstance(task, str):
        task = reference_of(task)
    spec = make_spec(task, model, **options)
    return run(run_async(spec, quiet=quiet, api_key=api_key, resume=resume))
