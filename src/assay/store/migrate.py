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
  :func:`assay.engine.finalize.describe_old_runs`, run once by ``assay report`` and
  ``assay view`` (until then readers fall back on the stored metrics' first rate).
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from assay.store.schema import ADDED_RUN_COLUMNS, ADDED_SAMPLE_COLUMNS, SCHEMA_VERSION

#: spec keys renamed in schema 4: old name -> new name
RENAMED_SPEC_KEYS = {"benchmark": "task", "benchmark_options": "task_options"}


def schema_version(db: sqlite3.Connection) -> int:
    """The version a store says it has (0 when it has no ``meta`` row)."""
    try:
        row = db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
    except sqlite3.OperationalError:
        return 0
    return int(row[0]) if row else 0


def current_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """A stored spec in today's names (a spec of schema 3 or older named ``benchmark``)."""
    out = {RENAMED_SPEC_KEYS.get(k, k): v for k, v in spec.items()}
    if isinstance(out.get("redacted"), list):
        out["redacted"] = [_renamed_path(p) for p in out["redacted"]]
    return out


def _renamed_path(path: Any) -> Any:
    if not isinstance(path, str):
        return path
    head, dot, rest = path.partition(".")
    return RENAMED_SPEC_KEYS.get(head, head) + dot + rest


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
    if changed:
        db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('schema_version', ?)",
                   (str(SCHEMA_VERSION),))
    return changed
