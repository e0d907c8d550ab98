"""Bringing an older store up to the current schema, in place, in idempotent steps run
inside the opening write. History: 2 ``samples`` got ``model_s``, ``wait_s``, ``sample``,
``outcome``; 3 ``parent_id``, ``metrics``; 4 ``benchmark`` became ``task``; 5 ``headline``,
``report`` (filled by ``assay store migrate``: it needs task code); 6 ``kind``, ``steps``,
``plan_session`` runs moved to ``plan_sessions``; 7 ``config`` (configuration, fingerprint);
8 stored metric names are the registry's (:func:`_metric_names`).
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
#: before schema 8: the scoring vocabulary's verdicts were named by these aliases
OLD_SCORE_NAMES = {"exact": "exact_match", "normalized": "normalized_match",
                   "includes": "includes_match", "numeric": "numeric_match", "f1": "token_f1",
                   "choice": "choice_accuracy", "math": "math_verify"}
#: what a run of the default metrics (qa's, a YAML or @task file's) stored beside "accuracy"
_DEFAULT_METRICS = {"accuracy", "extraction_rate", "score_errors_as_wrong"}


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
    if schema_version(db) < 8:
        _metric_names(db)
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


def _renamed(scores: dict[str, Any]) -> dict[str, str]:
    """``{old: new}`` for one sample's scores: a vocabulary verdict (it records how its answer
    was extracted) by its metric's name; MT-Bench's ``score`` (beside ``turn_1``) as
    ``mtbench_score``."""
    out = {k: OLD_SCORE_NAMES[k] for k, v in scores.items() if k in OLD_SCORE_NAMES
           and isinstance(v, dict) and "extraction" in (v.get("metadata") or {})
           and OLD_SCORE_NAMES[k] not in scores}
    if {"score", "turn_1", "turn_2"} <= scores.keys():
        out["score"] = "mtbench_score"
    return out


def _metric_names(db: sqlite3.Connection) -> None:
    """Name what older runs stored as the metric registry does, so readers show one name:
    samples' scores; a run's ``accuracy`` (the default metrics) under its primary score's
    name, MT-Bench's ``score`` as ``mtbench_score``; its headline and metric facts alike."""
    olds = (*OLD_SCORE_NAMES, "score")
    done: dict[str, dict[str, str]] = {}  # run id -> the scores renamed in it
    sql = ("SELECT rowid, run_id, scores FROM samples WHERE rowid > ? AND json_valid(scores)"
           " AND EXISTS (SELECT 1 FROM json_each(scores) WHERE key IN"
           f" ({','.join('?' * len(olds))})) ORDER BY rowid LIMIT 2000")
    last = 0
    while rows := db.execute(sql, (last, *olds)).fetchall():  # in pages: a store may be big
        for rowid, run_id, text in rows:
            scores = json.loads(text)
            renames = _renamed(scores) if isinstance(scores, dict) else {}
            if renames:
                done.setdefault(run_id, {}).update(renames)
                new = {renames.get(k, k): {**v, "name": renames[k]} if k in renames else v
                       for k, v in scores.items()}
                db.execute("UPDATE samples SET scores=? WHERE rowid=?",
                           (json.dumps(new, ensure_ascii=False), rowid))
        last = rows[-1][0]
    for run_id, text, head, report in db.execute(
            "SELECT id, metrics, headline, report FROM runs").fetchall():
        metrics, keys = _loads(text), dict(done.get(run_id, {}))
        if _DEFAULT_METRICS <= metrics.keys():
            row = db.execute("SELECT scores FROM samples WHERE run_id = ? AND error IS NULL AND"
                             " json_valid(scores) AND scores <> '{}' ORDER BY seq, epoch LIMIT 1",
                             (run_id,)).fetchone()
            first = next(iter(_loads(row[0])), None) if row else None
            if first is not None and first not in metrics:
                keys["accuracy"] = first
        if {"judged_turns", "score"} <= metrics.keys():
            keys["score"] = "mtbench_score"
        if not keys:
            continue
        described, headline = _loads(report), _loads(head)
        if isinstance(described.get("metric_facts"), dict):
            described["metric_facts"] = {keys.get(k, k): v
                                         for k, v in described["metric_facts"].items()}
        for record, key in ((described, "headline_metric"), (headline, "metric")):
            if record.get(key) in keys:
                record[key] = keys[record[key]]
        db.execute("UPDATE runs SET metrics=?, headline=?, report=? WHERE id=?", (
            json.dumps({keys.get(k, k): v for k, v in metrics.items()}, ensure_ascii=False)
            if text else text, json.dumps(headline) if head else head,
            json.dumps(described, ensure_ascii=False) if report else report, run_id))


def _loads(text: str | None) -> dict[str, Any]:
    try:
        value = json.loads(text) if text else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
