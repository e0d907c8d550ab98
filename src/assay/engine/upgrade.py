"""One-time upgrade of runs an older assay stored (``assay store migrate``), with code no reader
imports: undescribed finished runs are described from stored metrics; plans: :func:`plan_facts`."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from assay.engine.finalize import describe, headline_of, metric_facts, reader_facts, write_exports
from assay.errors import AssayError
from assay.store.described import generic_report
from assay.tasks.gallery.entry import find_entry
from assay.tasks.registry import task_class

if TYPE_CHECKING:
    from assay.store.sqlite import Store

__all__ = ["plan_facts", "upgrade_runs"]

log = logging.getLogger(__name__)


def plan_facts(plan: dict[str, Any]) -> dict[str, Any]:
    """What a plan run stores for its report (``plan``: JSON-ready): per task, the key of
    its child's metrics that holds the plan's primary (the gallery entry's ``reported_as``:
    ``bfcl_accuracy`` -> ``accuracy``, else its own name), and its metrics' facts."""
    keys = []
    for task in plan.get("tasks") or []:
        primary = next((m["name"] for m in task.get("metrics") or []
                        if m.get("role") == "primary"), None)
        entry = find_entry(task["task"]) if task.get("source") != "hub" else None
        keys.append(entry.metrics.reported_name(primary) if entry is not None else primary)
    names = [m["name"] for task in plan.get("tasks") or [] for m in task.get("metrics") or []]
    return {"reported_as": keys, "metric_facts": metric_facts(names)}


def upgrade_runs(store: Store) -> int:
    """Upgrade every run of ``store`` that needs it; returns how many were (one that cannot
    be is logged and never stops the others)."""
    done = 0
    for run_id in store.runs_to_upgrade():
        try:
            done += _upgrade(store, store.get_run(run_id))
        except Exception:  # noqa: BLE001 - one bad run must not stop the others
            log.warning("run %s was not upgraded", run_id, exc_info=True)
    return done


def _upgrade(store: Store, run: dict[str, Any]) -> bool:
    if run["kind"] == "plan":
        dataset = run.get("dataset") or {}
        store.set_run_dataset(run["id"], {**dataset, **plan_facts(dataset.get("plan") or {})})
        return True
    results = store.results(run["id"], transcripts=False, texts=False)
    metrics, report = run.get("metrics"), run.get("report")
    if isinstance(report, dict):  # described when it ended: what readers show is added
        store.set_description(run["id"], metrics=metrics or {}, headline=run.get("headline"),
                              report={**report, **reader_facts(run, metrics or {}, results)})
        return True
    try:
        cls = task_class(run["spec"]["task"])
    except (AssayError, ImportError, OSError, SyntaxError) as e:
        if metrics is None:  # nothing to describe it with: readers show its counts
            return False
        facts = reader_facts(run, metrics, results)
        note = (f"described from its stored metrics: the code of task "
                f"{run['spec']['task']!r} was not found ({type(e).__name__})")
        store.set_description(run["id"], metrics=metrics,
                              headline=headline_of(metrics, None, facts["metric_facts"]),
                              report={**generic_report(note), **facts})
        return True
    if metrics is None:  # an old run that predates stored metrics: computed once, here
        metrics = cls.metrics(results, run["spec"].get("task_options")) if results else {}
    head, report = describe(cls, run, metrics, results)
    try:
        report["exports"] = write_exports(store, {**run, "metrics": metrics}, cls,
                                          store.runs_dir / run["id"])
    except Exception:  # noqa: BLE001 - its description stands without them
        log.warning("the official exports of run %s were not written", run["id"], exc_info=True)
    store.set_description(run["id"], metrics=metrics, headline=head, report=report)
    return True
