"""How the book's classes run things: one engine run per call, in the workspace store. An
agent or LLM given in Python goes through :func:`assay.models.python_agent.python_subject`;
a spec string (``"local"``, ``"openai/gpt-4o"``, ``"python/my_agent:make"``) is built by the
engine as on the command line; either way runs resume with ``assay run TASK --resume RUN``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Coroutine
from contextlib import closing
from pathlib import Path
from typing import Any

from assay.engine.loop import run
from assay.engine.runner import Engine, RunSpec
from assay.errors import ConfigError
from assay.metrics.run import run_metrics
from assay.models.python_agent import agent_spec, display_name, python_subject
from assay.reports.render import write_reports
from assay.store.sqlite import Store

__all__ = ["agent_name", "evaluate", "run_metrics", "run_sync", "run_task", "subject_for",
           "write_run_reports"]


def run_sync(coro: Coroutine[Any, Any, Any]) -> Any:
    """Run ``coro`` to the end from synchronous code (the book's API is synchronous)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return run(coro)
    coro.close()
    raise ConfigError("the book's classes are synchronous: call them from synchronous code "
                      "(an event loop is already running here; use assay.api.run_async)")


def subject_for(agent: Any, *, shared: bool = False) -> Any:
    """The subject for ``agent``: None for a spec string (the engine builds it)."""
    if agent is None or isinstance(agent, str):
        return None
    return python_subject(agent, shared=shared)


def run_task(task: str, options: dict[str, Any], agent: Any, store: Store, *,
             limit: int | None = None, resume: str | None = None, shared: bool = False,
             rpm: float | None = None) -> tuple[str, float]:
    """Run ``task`` for ``agent`` (an object, factory or spec string); (run id, seconds).
    ``resume`` continues that run with ``agent``; ``rpm`` caps model calls per minute."""
    subject = subject_for(agent, shared=shared)
    spec = None if resume else RunSpec(
        task=task, model=agent_spec(agent if agent is not None else "local"),
        limit=limit or None, rpm=rpm,
        task_options={k: v for k, v in options.items() if v is not None})
    started = time.perf_counter()
    run_id = run_sync(Engine(store, quiet=True).run(spec, resume=resume, subject=subject))
    return run_id, time.perf_counter() - started


def evaluate(evaluator: Any, task: str, options: dict[str, Any], agent: Any,
             max_samples: int | None, resume: str | None) -> dict[str, Any]:
    """An evaluator's run of ``task`` in its ``store`` (else the workspace's), as the book's
    result dict (its ``_book_results``); ``resume`` continues a run with this agent."""
    store = evaluator.store or Store()
    try:
        run_id, elapsed = run_task(task, options, agent, store, limit=max_samples, resume=resume)
        evaluator.last_run_id = run_id
        return evaluator._book_results(store, run_id, agent, elapsed)
    finally:
        if evaluator.store is None:
            store.close()


def write_run_reports(run_id: str) -> dict[str, Path]:
    """The run's reports, written from the workspace store; their paths by kind."""
    with closing(Store()) as store:
        return write_reports(store, run_id)


def agent_name(agent: Any) -> str:
    """The book's ``agent_name``: the agent's ``name``, else its spec or type."""
    return agent if isinstance(agent, str) else display_name(agent)
