"""A run's metrics: computed once, when the run ends, and stored with it.

Reports, ``assay score``, ``--official`` and the Python API read the stored metrics;
a run stored before metrics were kept (or one stopped half way) has them computed
here on first use, and stored then.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from assay.core.types import SampleResult
    from assay.store.sqlite import Store
    from assay.tasks.base import Task


def compute_metrics(store: Store, run: dict[str, Any], *,
                    results: list[SampleResult] | None = None,
                    task_cls: type[Task] | None = None) -> dict[str, Any]:
    """Compute a run's metrics from its stored results and store them."""
    from assay.tasks.registry import task_class

    if results is None:
        results = store.results(run["id"], transcripts=False, texts=False)
    cls = task_cls or task_class(run["spec"]["task"])
    metrics = cls.metrics(results, run["spec"].get("task_options")) if results else {}
    if not getattr(store, "readonly", False):  # a viewer computes, and leaves the file alone
        store.set_metrics(run["id"], metrics)
    return metrics


def run_metrics(store: Store, run_id: str) -> dict[str, Any]:
    """The stored metrics of a run (computed and stored first if it has none)."""
    run = store.get_run(run_id)
    if run.get("metrics") is not None:
        return run["metrics"]
    return compute_metrics(store, run)
