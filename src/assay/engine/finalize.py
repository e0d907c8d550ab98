"""Finalize, once: a finished run's metrics, headline, report data and official exports.

The one place where a run's task code is asked what the run means; its configuration
fingerprint (:mod:`assay.store.fingerprint`) is stored here too. It runs when a run
ends (:class:`assay.engine.runner.Engine`), when ``assay score`` has scored a run again
(:mod:`assay.rescore`), and once for each finished run an older assay stored without a
description (:func:`describe_old_runs`). What it stores (see
:mod:`assay.store.described`) is all any reader uses: reports, the viewer, compare,
history, plan and datagen reports never import a task's code and never write.

Old runs: :func:`describe_old_runs` describes every finished run that has samples and
no description. With its task's code importable, the task computes the metrics where
none are stored (the run predates stored metrics), and its headline and report sections
from them, exactly as if the run had just ended (its official exports are not written
again: ``assay report`` does that where the task's code is present). Without the code
(a ``@task`` file deleted, a plugin uninstalled), the stored metrics are kept, the
headline is their first rate and the report has no task sections; a run that has no
stored metrics either is left undescribed (readers show its sample counts).

Runs stopped half way (running, interrupted, failed) are never finalized here: their
metrics are computed when they finish, after ``--resume``.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assay.errors import AssayError
from assay.metrics.registry import get_metric
from assay.store.described import first_rate, generic_report, headline_record, is_rate, run_report
from assay.store.fingerprint import configuration_of
from assay.store.sqlite import Store
from assay.tasks.base import Task as BaseTask
from assay.tasks.registry import task_class

if TYPE_CHECKING:
    from assay.core.types import SampleResult
    from assay.store.sqlite import Store
    from assay.tasks.base import Task

__all__ = ["describe_old_runs", "describe_old_store", "exports_for_report", "finalize",
           "run_configuration", "write_exports"]

log = logging.getLogger(__name__)


def _direction(name: str) -> bool | None:
    """Whether metric ``name`` is better higher, as the metric registry says (``None``:
    the registry does not know it)."""
    try:
        return bool(get_metric(name).higher_is_better)
    except AssayError:
        return None


def headline_of(metrics: dict[str, Any], name: str | None) -> dict[str, Any] | None:
    """The stored headline of ``metrics``: the task's ``headline_metric`` when it names
    one (``None`` if that is unset: nothing scored), else the first rate."""
    if name is not None:
        entry = metrics.get(name)
        found = (name, entry) if is_rate(entry) else None
    else:
        found = first_rate(metrics)
    if found is None or found[1].get("value") is None:
        return None
    return headline_record(found[0], found[1], _direction(found[0]))


def describe(task: Task | type[Task], metrics: dict[str, Any],
             results: list[SampleResult]) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """``(headline, report data)`` of a run, from its task (an instance or its class)."""
    cls = task if isinstance(task, type) else type(task)
    name = getattr(task, "headline_metric", None)
    extra = cls.report_extra(metrics, results) if results else {}
    extra = extra or {}
    report = {"sections": list(extra.get("sections") or []),
              "recommendations": [str(r) for r in extra.get("recommendations") or []],
              "headline_metric": name,
              "description": str(getattr(task, "description", "") or ""),
              # None: not written (an old run described later); finalize fills it in
              "exports": None, "task_code": True}
    return headline_of(metrics, name), report


def write_exports(store: Store, run: dict[str, Any], task: Task | type[Task],
                  out_dir: Path) -> dict[str, Path]:
    """Write the task's official exports (BFCL result files, a GAIA submission, ...) of
    ``run`` into ``out_dir``; returns ``{name: path}`` (empty for a task with none)."""
    cls = task if isinstance(task, type) else type(task)
    if cls.write_artifacts.__func__ is BaseTask.write_artifacts.__func__:  # type: ignore[attr-defined]
        return {}
    out_dir.mkdir(parents=True, exist_ok=True)
    full = store.results(run["id"], transcripts=False)
    return {k: Path(v) for k, v in cls.write_artifacts(run, full, out_dir).items()}


def finalize(store: Store, run_id: str, *, task: Task | type[Task] | None = None,
             results: list[SampleResult] | None = None, exports: bool = True
             ) -> dict[str, Any]:
    """Compute and store a finished run's metrics, headline and report data, and write
    its official exports into its run folder; returns the metrics.

    ``task``: the run's task (the engine's instance, or a class); by default the one
    its spec names. ``results``: its stored results, when the caller has them.
    """
    run = store.get_run(run_id)
    if task is None:
        task = task_class(run["spec"]["task"])
    cls = task if isinstance(task, type) else type(task)
    if results is None:
        results = store.results(run["id"], transcripts=False, texts=False)
    metrics = cls.metrics(results, run["spec"].get("task_options")) if results else {}
    head, report = describe(task, metrics, results)
    if exports:
        folder = store.runs_dir / run["id"]
        written = write_exports(store, {**run, "metrics": metrics}, task, folder)
        report["exports"] = {k: _relative(p, folder) for k, p in written.items()}
    store.set_description(run["id"], metrics=metrics, headline=head, report=report)
    store.set_config(run["id"], run_configuration(store, run))
    return metrics


def run_configuration(store: Store, run: dict[str, Any]) -> dict[str, Any]:
    """The configuration and fingerprint of ``run`` as it is now (its spec may have
    changed on ``--resume``): a re-scoring (its parent a task run) is marked so."""
    parent_kind = None
    if run.get("parent_id"):
        try:
            parent_kind = store.get_run(run["parent_id"])["kind"]
        except AssayError:  # the parent is gone: not known to be a re-scoring
            parent_kind = None
    return configuration_of({**run, "config": None}, parent_kind)


def exports_for_report(store: Store, run: dict[str, Any], out_dir: Path
                       ) -> tuple[dict[str, Path], str]:
    """For ``assay report``: the official exports of a finished run that never wrote
    them (one an older assay stored), written into ``out_dir`` where its task's code is
    importable; returns ``(paths, note)``, the note saying why none were written.

    A run that wrote its exports when it ended (all runs since they are stored with
    their description) needs nothing here: the report copies them
    (:func:`assay.reports.render.stored_exports`).
    """
    if run["status"] != "finished" or run_report(run).get("exports") is not None:
        return {}, ""
    try:
        cls = task_class(run["spec"]["task"])
    except Exception as e:  # noqa: BLE001 - a task file deleted, a plugin uninstalled
        return {}, (f"official exports not written: the code of task {run['spec']['task']!r} "
                    f"is not importable ({type(e).__name__}); the report is from the store")
    return write_exports(store, run, cls, out_dir), ""


def _relative(path: Path, folder: Path) -> str:
    try:
        return str(path.resolve().relative_to(folder.resolve()))
    except ValueError:  # written outside the run folder: kept as it is
        return str(path)


def describe_old_runs(store: Store) -> int:
    """Describe once every finished run stored without a description (see the module
    docstring); returns how many were described. Never raises for one run: a run that
    cannot be described keeps the generic fallback readers use."""
    if getattr(store, "readonly", False):
        return 0
    done = 0
    for run_id in store.undescribed_runs():
        try:
            _describe_old(store, run_id)
            done += 1
        except Exception:  # noqa: BLE001 - one bad run must not stop a report of another
            log.debug("describing run %s", run_id, exc_info=True)
    return done


def describe_old_store(path: Path) -> int:
    """:func:`describe_old_runs` on the store file at ``path``, opened for writing only
    when it has runs to describe (a current store is not written); a missing or locked
    store is left as it is (readers then fall back on the stored metrics)."""
    if not path.is_file():
        return 0
    try:
        reader = Store(path, readonly=True)
        try:
            if not reader.undescribed_runs():
                return 0
        finally:
            reader.close()
        store = Store(path)
        try:
            return describe_old_runs(store)
        finally:
            store.close()
    except AssayError:
        log.debug("describing the old runs of %s", path, exc_info=True)
        return 0


def _describe_old(store: Store, run_id: str) -> None:
    run = store.get_run(run_id)
    try:
        cls = task_class(run["spec"]["task"])
    except (AssayError, ImportError, OSError, SyntaxError) as e:
        metrics = run.get("metrics")
        if metrics is None:  # nothing to describe it with: readers show its counts
            return
        found = first_rate(metrics)
        head = (headline_record(found[0], found[1], _direction(found[0]))
                if found is not None and found[1].get("value") is not None else None)
        note = (f"described from its stored metrics: the code of task "
                f"{run['spec']['task']!r} was not found ({type(e).__name__})")
        store.set_description(run_id, metrics=metrics, headline=head,
                              report=generic_report(note))
        return
    results = store.results(run_id, transcripts=False, texts=False)
    metrics = run.get("metrics")
    if metrics is None:  # an old run that predates stored metrics: computed once, here
        metrics = cls.metrics(results, run["spec"].get("task_options")) if results else {}
    head, report = describe(cls, metrics, results)
    store.set_description(run_id, metrics=metrics, headline=head, report=report)
