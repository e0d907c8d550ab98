"""A run's metrics, as stored with it: read, never computed here.

A run's metrics are computed once, when it ends, by the task's code and stored with its
headline and report data (:func:`assay.engine.finalize.finalize`; an old run is
described once by :func:`assay.engine.finalize.describe_old_runs`). Everything here
reads them: nothing imports a task's code or writes the store, so a reader that asks
first cannot store numbers computed with whatever code happens to be installed.

A run stopped half way (running, interrupted, failed) has no metrics until it finishes
(after ``--resume``): :func:`run_metrics` gives ``{}`` for it, and readers show its
sample counts and say so (:data:`NOT_FINISHED_NOTE`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from assay.store.sqlite import Store

#: what readers say in place of the numbers of a run that has none stored
NOT_FINISHED_NOTE = "metrics are computed when the run finishes or is resumed"


def stored_metrics(run: dict[str, Any]) -> dict[str, Any] | None:
    """A run record's stored metrics (``None``: none stored, the run has not finished)."""
    metrics = run.get("metrics")
    return metrics if isinstance(metrics, dict) else None


def run_metrics(store: Store, run_id: str) -> dict[str, Any]:
    """The stored metrics of a run; ``{}`` when it has none (see the module docstring)."""
    return stored_metrics(store.get_run(run_id)) or {}
