"""One datagen step: an ordinary engine run, built as ``assay run`` builds one.

A step is a :class:`~assay.engine.runner.RunSpec` made by :func:`assay.api.make_spec`
from the task's options and the engine settings (``base_url``, ``max_connections``,
``timeout``, ``max_retries``, ``cache``, ``rpm``, ``seed``, ...; anything not given
keeps the RunSpec default, as on ``assay run``). A step of a pipeline is a child run
of the pipeline's run (``parent_id``); an interrupted step is continued with the
engine's own resume, so no committed sample is solved twice.
"""

from __future__ import annotations

from typing import Any

from assay.engine.runner import Engine, RunSpec
from assay.store.sqlite import Store

#: the RunSpec fields a datagen command or pipeline may set for its steps
ENGINE_FIELDS = ("base_url", "max_connections", "timeout", "max_retries", "retry_initial",
                 "sample_timeout", "seed", "cache", "params", "max_reply_bytes", "rpm")


def engine_settings(spec: RunSpec) -> dict[str, Any]:
    """The engine settings of ``spec`` (what its steps inherit)."""
    return {name: getattr(spec, name) for name in ENGINE_FIELDS}


def run_step(store: Store, task: str, model: str, options: dict[str, Any], *,
             engine: dict[str, Any] | None = None, parent_id: str | None = None,
             quiet: bool = True) -> str:
    """Run ``task`` on ``model`` with the task ``options`` and the ``engine`` settings;
    its reports are written. Returns the run id."""
    from assay.api import make_spec

    spec = make_spec(task, model, task_options={k: v for k, v in options.items()
                                                if v is not None},
                     engine={k: v for k, v in (engine or {}).items() if v is not None})
    return _execute(store, spec, None, None, parent_id, quiet)


def resume_step(store: Store, run_id: str, *, overrides: dict[str, Any] | None = None,
                parent_id: str | None = None, quiet: bool = True) -> str:
    """Continue an interrupted step with the engine's resume: samples already committed
    are not sent again. ``overrides``: engine settings that may change on resume
    (endpoint, connections, timeouts, retries, cache, rpm)."""
    return _execute(store, None, run_id, overrides, parent_id, quiet)


def _execute(store: Store, spec: RunSpec | None, resume: str | None,
             overrides: dict[str, Any] | None, parent_id: str | None, quiet: bool) -> str:
    from assay.api import run_async
    from assay.engine.loop import run

    engine = Engine(store, quiet=quiet)
    result = run(run_async(spec, resume=resume, store=store, quiet=quiet, engine=engine,
                           overrides=overrides, parent_id=parent_id))
    return result.run_id


def metrics_of(store: Store, run_id: str) -> dict[str, Any]:
    """A run's metrics, as stored when it finished."""
    from assay.metrics.run import run_metrics

    return run_metrics(store, run_id)
