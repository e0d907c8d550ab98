"""Bringing an older store up to the current schema, in place, in idempotent steps run
inside the opening write. History: 2 ``samples`` got ``model_s``, ``wait_s``, ``sample``,
``outcome``; 3 ``parent_id``, ``metrics``; 4 ``benchmark`` became ``task``; 5 ``headline``,
``report`` (filled by ``assay store migrate``: it needs task code); 6 ``kind``, ``steps``,
``plan_session`` runs moved to ``plan_sessions``; 7 ``config`` (configuration, fingerprint).
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

#: parent runs an older assay stored as pseudo-tasks (before schema 6), by kind
OLD_PARENT_KINDS = {"plan": "plan", "datagen_pipeline": "pipeline"}
OLD_SESSION_TASK = "plan_session"


def schema_version(db: sqlite3.Connection) -> int:
    try:
        row = db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
    except sqlite3.OperationalError:
        return 0
    return int(row[0]) if row else 0


def _columns(db: sqlite3.Connection, table: str) -> set[str]:
    return {r[1] for r in db.execute(f"PRAGMA table_info({table})")}


def migrate(db: sqlite3.Connection) -> bool:
    """Bring a store to :data:`SCHEMA_VERSION`; ``True`` when anything changed (uncommitted)."""
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
