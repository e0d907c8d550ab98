"""Finalize, once: a finished run's metrics, headline, report data and exports, from its task's
code; readers use only what it stores, never a task's code. Older runs: :mod:`.upgrade`."""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assay.errors import AssayError
from assay.metrics.format import agent_section
from assay.metrics.registry import get_metric
from assay.metrics.summary import agent_summary
from assay.models.registry import forms_of
from assay.store.described import first_rate, headline_record, is_rate
from assay.store.fingerprint import configuration_of

if TYPE_CHECKING:
    from assay.core.types import SampleResult
    from assay.store.sqlite import Store
    from assay.tasks.base import Task

__all__ = ["describe", "finalize", "metric_facts", "provider_text", "run_configuration",
           "write_exports"]


def metric_facts(names: Iterable[str]) -> dict[str, dict[str, Any]]:
    """``{name: facts}`` for each of ``names`` (or alias) the metric registry knows: its
    registered ``name``, ``higher_is_better``, ``level`` and ``dimension``."""
    out = {}
    for name in dict.fromkeys(names):
        try:
            info = get_metric(name)
        except AssayError:
            continue
        out[name] = {"name": info.name, "higher_is_better": bool(info.higher_is_better),
                     "level": info.level, "dimension": info.dimension}
    return out


def provider_text(name: str) -> str:
    """What the model spec ``name`` names, in the words its provider registered
    (``assay list models``): the form written exactly so, else the provider's first."""
    forms = forms_of(name.partition("/")[0])
    text = dict(forms).get(name) or (forms[0][1] if forms and forms[0][1] else "model")
    return re.sub(r"\s*\((?:--|-T )[^)]*\)$", "", text)  # not the CLI flag that sets it


def headline_of(metrics: dict[str, Any], name: str | None,
                facts: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    """The stored headline of ``metrics``: the task's ``headline_metric`` when it names
    one (``None`` if that is unset: nothing scored), else the first rate."""
    if name is not None:
        entry = metrics.get(name)
        found = (name, entry) if is_rate(entry) else None
    else:
        found = first_rate(metrics)
    if found is None or found[1].get("value") is None:
        return None
    return headline_record(found[0], found[1], (facts.get(found[0]) or {}).get("higher_is_better"))


def reader_facts(run: dict[str, Any], metrics: dict[str, Any],
                 results: list[SampleResult], *also: str) -> dict[str, Any]:
    """What readers show beside the task's report data: the facts of the run's metrics, of
    its samples' scores and of ``also``, and its model's provider."""
    scored = {k for r in results for k in r.scores or {}}
    model = (run.get("model") or {}).get("model") or (run.get("spec") or {}).get("model")
    # a rate or a number may be a metric; a table of counts or a note is none
    named = [k for k, v in metrics.items()
             if is_rate(v) or (isinstance(v, (int, float)) and not isinstance(v, bool))]
    return {"metric_facts": metric_facts([*named, *sorted(scored), *also]),
            "provider": provider_text(str(model or "unknown"))}


def describe(task: Task | type[Task], run: dict[str, Any], metrics: dict[str, Any],
             results: list[SampleResult]) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """``(headline, report data)`` of ``run``, from its task (an instance or its class)."""
    cls = task if isinstance(task, type) else type(task)
    name = getattr(task, "headline_metric", None)
    extra = (cls.report_extra(metrics, results) if results else {}) or {}
    sections = list(extra.get("sections") or [])
    agent = agent_section(metrics)
    if agent and not any(s.get("title") == agent["title"] for s in sections):
        sections.append(agent)
    report = {"sections": sections,
              "recommendations": [str(r) for r in extra.get("recommendations") or []],
              "headline_metric": name,
              "description": str(getattr(task, "description", "") or ""),
              # None: not written (an old run described later); finalize fills it in
              "exports": None, "task_code": True,
              **reader_facts(run, metrics, results, *([name] if name else []))}
    return headline_of(metrics, name, report["metric_facts"]), report


def write_exports(store: Store, run: dict[str, Any], task: Task | type[Task],
                  out_dir: Path) -> dict[str, str]:
    """Write the task's official exports (BFCL result files, a GAIA submission, ...) of
    ``run`` into its run folder ``out_dir``; returns ``{name: path}`` (relative inside it)."""
    cls = task if isinstance(task, type) else type(task)
    owner = next(k for k in cls.__mro__ if "write_artifacts" in vars(k))
    if owner.__mro__[1:] == (object,):  # the base Task's, which writes nothing
        return {}
    out_dir.mkdir(parents=True, exist_ok=True)
    full = store.results(run["id"], transcripts=False)
    return {k: _relative(Path(v), out_dir)
            for k, v in cls.write_artifacts(run, full, out_dir).items()}


def finalize(store: Store, run_id: str, *, task: Task | type[Task],
             results: list[SampleResult] | None = None, exports: bool = True
             ) -> dict[str, Any]:
    """Compute and store a finished run's metrics, headline and report data, write its exports;
    returns the metrics. ``task``: instance or class; ``results``: stored ones, if at hand."""
    run = store.get_run(run_id)
    cls = task if isinstance(task, type) else type(task)
    if results is None:
        results = store.results(run["id"], transcripts=False, texts=False)
    metrics = cls.metrics(results, run["spec"].get("task_options")) if results else {}
    if "agent" not in metrics:  # the model ran with an agent: how its loops went, any task
        metrics.update(agent_summary(results))
    head, report = describe(task, run, metrics, results)
    if exports:
        report["exports"] = write_exports(store, {**run, "metrics": metrics}, task,
                                          store.runs_dir / run["id"])
    store.set_description(run["id"], metrics=metrics, headline=head, report=report)
    store.set_config(run["id"], run_configuration(store, run))
    return metrics


def run_configuration(store: Store, run: dict[str, Any]) -> dict[str, Any]:
    """The configuration and fingerprint of ``run`` now (``--resume`` may change its spec);
    a re-scoring (its parent a task run) is marked so."""
    parent_kind = None
    if run.get("parent_id"):
        try:
            parent_kind = store.get_run(run["parent_id"])["kind"]
        except AssayError:  # the parent is gone: not known to be a re-scoring
            parent_kind = None
    return configuration_of({**run, "config": None}, parent_kind)


def _relative(path: Path, folder: Path) -> str:
    try:
        return str(path.resolve().relative_to(folder.resolve()))
    except ValueError:  # written outside the run folder: kept as it is
        return str(path)
