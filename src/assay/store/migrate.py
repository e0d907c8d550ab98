"""Bringing a store written by an older assay up to the current schema, in place, once.

Each step is idempotent and runs inside the opening write (see :class:`Store`): a store
that another process migrated first is simply seen as current. Version history:

- 1 → 2: ``samples`` gained ``model_s``, ``wait_s``, ``sample`` and ``outcome``.
- 2 → 3: ``runs`` gained ``parent_id`` and ``metrics``.
- 3 → 4: a run names its ``task`` (the column and its spec were ``benchmark``;
  ``benchmark_options`` became ``task_options``, also in the spec's ``redacted`` list).
- 4 → 5: ``runs`` gained ``headline`` and ``report``: a finished run describes itself
  (see :mod:`assay.store.described`). The columns are added here; describing the runs
  finished before needs their task's code, which this layer never imports: that is
  :func:`assay.engine.upgrade.upgrade_runs`, run by ``assay store migrate`` (readers
  never upgrade: until then they show the stored metrics, the first rate as headline).
- 5 → 6: a run says what it is (``kind``: ``task``, ``plan``, ``pipeline``) and a
  parent run records its ``steps``; old ``plan`` and ``datagen_pipeline`` runs get
  their kind, and an old plan run's spec its engine settings at the top, as a run's spec
  has them (they were under ``engine``). Planning sessions, which were ``plan_session``
  runs, move to the ``plan_sessions`` table (their state, status and times kept).
- 6 → 7: ``runs`` gained ``config``: a run's configuration and its fingerprint
  (:mod:`assay.store.fingerprint`), computed here from each old run's stored spec,
  model and dataset; a re-scoring (a task run whose parent is a task run) is marked.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from assay.core.spec import current_spec
from assay.store.fingerprint import configuration
from assay.store.schema import (
    ADDED_RUN_COLUMNS,
    ADDED_SAMPLE_COLUMNS,
    PLAN_SESSIONS,
    SCHEMA_VERSION,
)

#: the kind of the parent runs an older assay stored as pseudo-tasks (schema 6)
OLD_PARENT_KINDS = {"plan": "plan", "datagen_pipeline": "pipeline"}
#: the pseudo-task planning sessions were stored as before schema 6
OLD_SESSION_TASK = "plan_session"


def schema_version(db: sqlite3.Connection) -> int:
    """The version a store says it has (0 when it has no ``meta`` row)."""
    try:
        row = db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
    except sqlite3.OperationalError:
        return 0
    return int(row[0]) if row else 0


def _columns(db: sqlite3.Connection, table: str) -> set[str]:
    return {r[1] for r in db.execute(f"PRAGMA table_info({table})")}


def migrate(db: sqlite3.Connection) -> bool:
    """Bring an existing store to :data:`SCHEMA_VERSION`; ``True`` when anything changed
    (the caller commits)."""
    changed = False
    for table, added in (("samples", ADDED_SAMPLE_COLUMNS), ("runs", ADDED_RUN_COLUMNS)):
        have = _columns(db, table)
        for name, kind in added:
            if name not in have:
                db.execute(f"ALTER TABLE {table} ADD COLUMN {name} {kind}")
                changed = True
    if "benchmark" in _columns(db, "runs"):
        db.execute("ALTER TABLE runs RENAME COLUMN benchmark TO task")
        changed = True
    if schema_version(db) < 4:
        for run_id, text in db.execute("SELECT id, spec FROM runs").fetchall():
            spec = json.loads(text)
            new = current_spec(spec) if isinstance(spec, dict) else spec
            if new != spec:
                db.execute("UPDATE runs SET spec=? WHERE id=?", (json.dumps(new), run_id))
        changed = True
    if schema_version(db) < 6:
        _parents_and_sessions(db)
        changed = True
    if schema_version(db) < 7:
        _configurations(db)
        changed = True
    if changed:
        db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('schema_version', ?)",
                   (str(SCHEMA_VERSION),))
    return changed


def _parents_and_sessions(db: sqlite3.Connection) -> None:
    """Schema 6: parent runs get their kind; ``plan_session`` runs become rows of
    ``plan_sessions``."""
    db.execute(PLAN_SESSIONS)
    for task, kind in OLD_PARENT_KINDS.items():
        db.execute("UPDATE runs SET kind=? WHERE task=?", (kind, task))
    for run_id, text in db.execute("SELECT id, spec FROM runs WHERE kind='plan'").fetchall():
        spec = json.loads(text)
        if isinstance(spec, dict) and isinstance(spec.get("engine"), dict):
            new = {k: v for k, v in spec.items() if k not in ("engine", "plan_file")}
            db.execute("UPDATE runs SET spec=? WHERE id=?",
                       (json.dumps({**new, **spec["engine"]}), run_id))
    db.execute(
        "INSERT OR IGNORE INTO plan_sessions (id, status, created_at, finished_at, request,"
        " model, state, stats, package_version) SELECT id, status, created_at, finished_at,"
        " COALESCE(json_extract(spec, '$.request'), ''), model, dataset, stats,"
        " package_version FROM runs WHERE task=?", (OLD_SESSION_TASK,))
    db.execute("DELETE FROM samples WHERE run_id IN (SELECT id FROM runs WHERE task=?)",
               (OLD_SESSION_TASK,))
    db.execute("DELETE FROM runs WHERE task=?", (OLD_SESSION_TASK,))


def _configurations(db: sqlite3.Connection) -> None:
    """Schema 7: every run without one gets its configuration from its stored spec."""
    rows = db.execute(
        "SELECT r.id, r.task, r.kind, r.parent_id, r.spec, r.model, r.dataset, p.kind"
        " FROM runs r LEFT JOIN runs p ON p.id = r.parent_id WHERE r.config IS NULL"
    ).fetchall()
    for run_id, task, kind, parent_id, spec, model, dataset, parent_kind in rows:
        run = {"task": task, "spec": _loads(spec), "model": _loads(model),
               "dataset": _loads(dataset)}
        rescored = bool(parent_id) and kind == "task" and parent_kind == "task"
        db.execute("UPDATE runs SET config=? WHERE id=?",
                   (json.dumps(configuration(run, rescored=rescored), ensure_ascii=False),
                    run_id))


def _loads(text: str | None) -> dict[str, Any]:
    try:
        value = json.loads(text) if text else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
