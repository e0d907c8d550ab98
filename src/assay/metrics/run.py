"""A run's metrics, as stored with it when it ended (:mod:`assay.engine.finalize`): read,
never computed here, so a reader cannot store numbers from whatever code is installed.
A run stopped half way has none until it finishes (after ``--resume``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from assay.store.sqlite import Store

#: what readers say in place of the numbers of a run that has none stored
NOT_FINISHED_NOTE = "metrics are computed when the run finishes or is resumed"


def stored_metrics(run: dict[str, Any]) -> dict[str, Any] | None:
    """A run record's stored metrics (``None``: the run has not finished)."""
    metrics = run.get("metrics")
    return metrics if isinstance(metrics, dict) else None


def run_metrics(store: Store, run_id: str) -> dict[str, Any]:
    return stored_metrics(store.get_run(run_id)) or {}
