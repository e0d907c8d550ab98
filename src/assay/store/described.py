"""What a finished run says about itself: its metrics, headline and report data.

A run is *described* once, when it ends (:mod:`assay.engine.finalize`); readers (reports,
the viewer, compare, the CLI) read that from the store and never import a task's code, so
a run of a deleted task file or uninstalled plugin still reports. Stored forms (JSON,
redacted):

- ``headline``: ``{"metric", "value", "ci_low", "ci_high", "higher_is_better"}``; ``NULL``
  when nothing was scored or the run is not described yet.
- ``report``: ``{"sections", "recommendations", "headline_metric", "description",
  "exports", "task_code", "metric_facts", "provider"}``; ``exports`` maps a name to a path
  in the run folder; ``task_code`` is ``False`` when described without the task's code
  (headline: the first stored rate; no sections); ``metric_facts`` maps a metrics key to
  ``{"name", "higher_is_better", "level", "dimension"}``.

A run never described (an old store, a run stopped half way) gets the generic headline
from its stored metrics, no sections, and its metrics shown by name alone."""

from __future__ import annotations

import json
from typing import Any

from assay.core.redact import redact_tree
from assay.store.fingerprint import configuration_of

__all__ = ["DescribedRuns", "cost_line", "generic_report", "is_rate", "metric_fact",
           "run_cost", "run_headline", "run_report", "usd"]

_NOT_HEADLINES = frozenset({"error_rate"})


def stored_json(value: Any) -> str:
    """A run record's JSON column, redacted: no credential reaches the file."""
    return json.dumps(redact_tree(value), ensure_ascii=False, default=str)


def is_rate(value: Any) -> bool:
    return isinstance(value, dict) and "value" in value and "ci_low" in value


def first_rate(metrics: dict[str, Any] | None) -> tuple[str, dict[str, Any]] | None:
    """The first rate in ``metrics`` (the generic headline), if any."""
    for k, v in (metrics or {}).items():
        if is_rate(v) and k not in _NOT_HEADLINES:
            return k, v
    return None


def headline_record(name: str, entry: dict[str, Any],
                    higher_is_better: bool | None) -> dict[str, Any]:
    return {"metric": name, "value": entry.get("value"), "ci_low": entry.get("ci_low"),
            "ci_high": entry.get("ci_high"), "higher_is_better": higher_is_better}


def generic_report(note: str = "") -> dict[str, Any]:
    return {"sections": [], "recommendations": [], "headline_metric": None,
            "description": "", "exports": None, "task_code": False,
            **({"note": note} if note else {})}


def run_report(run: dict[str, Any]) -> dict[str, Any]:
    stored = run.get("report")
    return stored if isinstance(stored, dict) else generic_report()


def metric_fact(facts: dict[str, Any] | None, name: str | None) -> dict[str, Any]:
    """The stored facts of metric ``name`` (a metrics or scores key, or a registered name);
    ``{}``: readers show it by name alone."""
    facts = facts or {}
    return facts.get(name) or next((f for f in facts.values() if f.get("name") == name), {})


def run_headline(run: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """``(metric name, rate entry)`` of a run's headline: the stored one (the full metrics
    entry where there, so ``13/20`` shows), else for a run never described its first rate."""
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


class StoreMixin:
    """What the Store's mixins use of it: ``_db`` and ``_write``."""

    _db: Any

    def _write(self, fn: Any, what: str) -> Any:  # pragma: no cover - the Store's
        raise NotImplementedError

    def _commit(self, sql: str, args: tuple[Any, ...], what: str) -> None:
        """One statement, committed, retried while another process holds the lock."""
        def run() -> None:
            self._db.execute(sql, args)
            self._db.commit()

        self._write(run, what)


class DescribedRuns(StoreMixin):
    def set_metrics(self, run_id: str, metrics: dict[str, Any]) -> None:
        """Store a run's metrics alone (a pipeline's summary over its steps)."""
        self._commit("UPDATE runs SET metrics=? WHERE id=?", (stored_json(metrics), run_id),
                     f"save the metrics of run {run_id}")

    def set_description(self, run_id: str, *, metrics: dict[str, Any],
                        headline: dict[str, Any] | None, report: dict[str, Any]) -> None:
        self._commit("UPDATE runs SET metrics=?, headline=?, report=? WHERE id=?",
                     (stored_json(metrics), None if headline is None else stored_json(headline),
                      stored_json(report), run_id), f"save the description of run {run_id}")

    def new_run_config(self, task: str, spec: dict[str, Any], model: dict[str, Any],
                       dataset: dict[str, Any], parent_id: str | None, kind: str) -> str:
        """The stored configuration of a run being created (a re-scoring marked so); stored
        again from the spec the run ended with."""
        row = (self._db.execute("SELECT kind FROM runs WHERE id = ?", (parent_id,)).fetchone()
               if parent_id else None)
        run = {"task": task, "spec": spec, "model": model, "dataset": dataset,
               "parent_id": parent_id, "kind": kind}
        return stored_json(configuration_of(run, row[0] if row else None))

    def set_config(self, run_id: str, config: dict[str, Any]) -> None:
        self._commit("UPDATE runs SET config=? WHERE id=?", (stored_json(config), run_id),
                     f"save the configuration of run {run_id}")

    def runs_to_upgrade(self) -> list[str]:
        """Ids of the runs (oldest first) an older assay stored without what readers read:
        undescribed finished runs, no metric facts, plan runs without metrics' keys."""
        return [r[0] for r in self._db.execute(
            "SELECT id FROM runs r WHERE (CASE WHEN report IS NULL THEN status = 'finished'"
            " ELSE json_extract(report, '$.metric_facts') IS NULL END"
            " AND EXISTS (SELECT 1 FROM samples s WHERE s.run_id = r.id))"
            " OR (kind = 'plan' AND json_extract(dataset, '$.reported_as') IS NULL)"
            " ORDER BY created_at, id")]


def usd(value: float | None) -> str:
    """A cost as people read it: ``$0.0123``, ``$12.34``; ``unknown`` for ``None``."""
    if value is None:
        return "unknown"
    return f"${value:,.2f}" if value >= 1 else f"${value:.4f}" if value >= 1e-4 else (
        "$0" if value == 0 else f"${value:.2g}")


def run_cost(run: dict[str, Any]) -> dict[str, Any] | None:
    """The cost a run stored when it ended (``stats.cost``): ``usd`` (None: a price unknown),
    ``roles`` (each with ``model``, ``usd``, tokens) and ``unpriced``; None before this."""
    cost = (run.get("stats") or {}).get("cost")
    return cost if isinstance(cost, dict) else None


def cost_line(cost: dict[str, Any] | None) -> str | None:
    """One line for a run's cost: the total, each role's beside it, and what is unpriced."""
    if cost is None:
        return None
    roles = cost.get("roles") or {}
    parts = [f"{name} {usd(r.get('usd'))}" for name, r in roles.items()] if len(roles) > 1 else []
    paid = f"{cost['tokens']:,} tokens paid for" if cost.get("tokens") is not None else ""
    text = f"cost {usd(cost.get('usd'))}" + (f" ({'; '.join(filter(None, [paid, *parts]))})"
                                             if paid or parts else "")
    unpriced = [str((roles.get(n) or {}).get("model") or n) for n in cost.get("unpriced") or []]
    if unpriced:
        text += f": no price for {', '.join(unpriced)}; give one with --pricing FILE"
    return text


def decode(text: str | None) -> Any:
    return json.loads(text) if text else None
