"""What a finished run says about itself: its metrics, headline and report data.

A run is *described* once, when it ends (:func:`assay.engine.finalize.finalize`): the
metrics its task computes, its **headline** (the metric a reader shows first) and the
**report data** its report needs from the task's code (sections, recommendations, the
task's description, the official exports written). Readers (reports, the viewer,
compare, history, plan and datagen reports, the CLI's headline lines) read these from
the store and never import a task's code, so a run of a deleted task file, or of a
plugin that is no longer installed, still reports.

Stored forms (JSON, through the store's one redaction policy):

- ``headline``: ``{"metric", "value", "ci_low", "ci_high", "higher_is_better"}``
  (``higher_is_better`` ``None`` where the metric registry does not know the metric);
  SQL ``NULL`` when the run has no headline (nothing scored) or is not described yet.
- ``report``: ``{"sections", "recommendations", "headline_metric", "description",
  "exports", "task_code"}``; SQL ``NULL`` until the run is described. ``exports``:
  ``{name: path relative to the run folder}`` of the official exports written when the
  run ended, ``None`` for an old run described later (nothing was written). ``task_code`` is
  ``False`` for a run described without its task's code (an old run whose task file is
  gone): its headline is then the stored metrics' first rate and it has no sections.

Helpers here are pure: a run that was never described (one from an older store not yet
upgraded, or one stopped half way) gets the generic headline from whatever metrics are
stored, and no sections.
"""

from __future__ import annotations

import json
from typing import Any

from assay.core.redact import redact_tree
from assay.store.fingerprint import configuration_of

__all__ = ["DescribedRuns", "generic_report", "is_rate", "run_headline", "run_report"]

#: metrics keys a generic headline never picks (they are about errors, not the task)
_NOT_HEADLINES = frozenset({"error_rate"})


def stored_json(value: Any) -> str:
    """A run record's JSON column as written: the one redaction policy applied, so no
    credential reaches the file whoever built it."""
    return json.dumps(redact_tree(value), ensure_ascii=False, default=str)


def is_rate(value: Any) -> bool:
    """Whether a metrics entry is a rate/mean with an interval."""
    return isinstance(value, dict) and "value" in value and "ci_low" in value


def first_rate(metrics: dict[str, Any] | None) -> tuple[str, dict[str, Any]] | None:
    """The first rate in ``metrics`` (the generic headline), ``None`` when there is none."""
    for k, v in (metrics or {}).items():
        if is_rate(v) and k not in _NOT_HEADLINES:
            return k, v
    return None


def headline_record(name: str, entry: dict[str, Any],
                    higher_is_better: bool | None) -> dict[str, Any]:
    """The stored form of a headline (see the module docstring)."""
    return {"metric": name, "value": entry.get("value"), "ci_low": entry.get("ci_low"),
            "ci_high": entry.get("ci_high"), "higher_is_better": higher_is_better}


def generic_report(note: str = "") -> dict[str, Any]:
    """Report data for a run described without its task's code: no sections."""
    return {"sections": [], "recommendations": [], "headline_metric": None,
            "description": "", "exports": None, "task_code": False,
            **({"note": note} if note else {})}


def run_report(run: dict[str, Any]) -> dict[str, Any]:
    """A run record's report data: the stored one, else :func:`generic_report`."""
    stored = run.get("report")
    return stored if isinstance(stored, dict) else generic_report()


def run_headline(run: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """``(metric name, rate entry)`` of a run record's headline, or ``None``.

    A described run: its stored headline (the full entry from its metrics where it is
    there, so counts such as ``13/20`` show), or ``None`` when it stored none (nothing
    was scored). A run never described: the first rate of its stored metrics, if any.
    """
    metrics = run.get("metrics") or {}
    head = run.get("headline")
    if isinstance(head, dict) and head.get("metric"):
        name = str(head["metric"])
        entry = metrics.get(name)
        if not is_rate(entry):
            entry = {k: head.get(k) for k in ("value", "ci_low", "ci_high")}
        return (name, entry) if entry.get("value") is not None else None
    if isinstance(run.get("report"), dict):  # described, with no headline
        return None
    found = first_rate(metrics)
    return found if found is not None and found[1].get("value") is not None else None


class DescribedRuns:
    """The :class:`~assay.store.sqlite.Store` methods that write and find run
    descriptions (mixed into it; they use its ``_db`` and ``_write``)."""

    _db: Any

    def _write(self, fn: Any, what: str) -> Any:  # pragma: no cover - the Store's
        raise NotImplementedError

    def set_metrics(self, run_id: str, metrics: dict[str, Any]) -> None:
        """Store a run's metrics alone (a pipeline's summary over its steps); a task run's
        are stored with its description by :meth:`set_description`."""
        def update() -> None:
            self._db.execute("UPDATE runs SET metrics=? WHERE id=?", (stored_json(metrics), run_id))
            self._db.commit()

        self._write(update, f"save the metrics of run {run_id}")

    def set_description(self, run_id: str, *, metrics: dict[str, Any],
                        headline: dict[str, Any] | None, report: dict[str, Any]) -> None:
        """Store a finished run's metrics, headline and report data, in one commit."""
        def update() -> None:
            self._db.execute(
                "UPDATE runs SET metrics=?, headline=?, report=? WHERE id=?",
                (stored_json(metrics), None if headline is None else stored_json(headline),
                 stored_json(report), run_id))
            self._db.commit()

        self._write(update, f"save the description of run {run_id}")

    def new_run_config(self, task: str, spec: dict[str, Any], model: dict[str, Any],
                       dataset: dict[str, Any], parent_id: str | None, kind: str) -> str:
        """The stored configuration of a run being created (a re-scoring, whose parent
        is a task run, marked so); :func:`assay.engine.finalize.finalize` stores it again
        from the spec the run ended with."""
        row = (self._db.execute("SELECT kind FROM runs WHERE id = ?", (parent_id,)).fetchone()
               if parent_id else None)
        run = {"task": task, "spec": spec, "model": model, "dataset": dataset,
               "parent_id": parent_id, "kind": kind}
        return stored_json(configuration_of(run, row[0] if row else None))

    def set_config(self, run_id: str, config: dict[str, Any]) -> None:
        """Store a run's configuration and fingerprint (:mod:`assay.store.fingerprint`)."""
        def update() -> None:
            self._db.execute("UPDATE runs SET config=? WHERE id=?", (stored_json(config), run_id))
            self._db.commit()

        self._write(update, f"save the configuration of run {run_id}")

    def undescribed_runs(self) -> list[str]:
        """Ids of finished runs (oldest first) that have no description yet: those stored
        by an older assay. A pipeline's parent run (a plan, a datagen pipeline) is left
        out: it has no samples of its own, and its driver stores its summary."""
        return [r[0] for r in self._db.execute(
            "SELECT id FROM runs r WHERE report IS NULL AND status = 'finished'"
            " AND EXISTS (SELECT 1 FROM samples s WHERE s.run_id = r.id)"
            " ORDER BY created_at, id")]


def decode(text: str | None) -> Any:
    """A stored JSON column, ``None`` for SQL ``NULL``."""
    return json.loads(text) if text else None
