"""The store's tables, and the statements that write sample and cache rows."""

from __future__ import annotations

SCHEMA_VERSION = 8

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    task TEXT NOT NULL,
    status TEXT NOT NULL,
    created_at REAL NOT NULL,
    finished_at REAL,
    spec TEXT NOT NULL,
    model TEXT NOT NULL,
    dataset TEXT NOT NULL,
    package_version TEXT NOT NULL,
    stats TEXT NOT NULL DEFAULT '{}',
    parent_id TEXT,
    metrics TEXT,
    headline TEXT,
    report TEXT,
    kind TEXT NOT NULL DEFAULT 'task',
    steps TEXT,
    config TEXT
);
CREATE TABLE IF NOT EXISTS samples (
    run_id TEXT NOT NULL REFERENCES runs(id),
    sample_id TEXT NOT NULL,
    epoch INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    input TEXT,
    target TEXT,
    transcript TEXT,
    output TEXT,
    prediction TEXT,
    scores TEXT,
    error TEXT,
    latency_s REAL,
    input_tokens INTEGER,
    output_tokens INTEGER,
    model_calls INTEGER,
    cache_hits INTEGER,
    metadata TEXT,
    created_at REAL NOT NULL,
    model_s REAL,
    wait_s REAL,
    sample TEXT,
    outcome TEXT,
    PRIMARY KEY (run_id, sample_id, epoch)
);
CREATE TABLE IF NOT EXISTS cache (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    reply TEXT NOT NULL,
    created_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS cache_model ON cache (model);
"""

#: planning sessions (``assay plan``): the whole state, saved after every step and answer
PLAN_SESSIONS = """
CREATE TABLE IF NOT EXISTS plan_sessions (
    id TEXT PRIMARY KEY,
    status TEXT NOT NULL,
    created_at REAL NOT NULL,
    finished_at REAL,
    request TEXT NOT NULL,
    model TEXT NOT NULL,
    state TEXT NOT NULL,
    stats TEXT NOT NULL DEFAULT '{}',
    package_version TEXT NOT NULL
)"""
SCHEMA += PLAN_SESSIONS + ";\n"

INSERT_SAMPLE = (
    "INSERT OR REPLACE INTO samples (run_id, sample_id, epoch, seq, input, target, transcript,"
    " output, prediction, scores, error, latency_s, input_tokens, output_tokens, model_calls,"
    " cache_hits, metadata, created_at, model_s, wait_s, sample, outcome)"
    " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)")

#: position of the ``error`` and ``created_at`` columns in a sample row (run_id first)
ERROR_COL = 10
CREATED_COL = 17
#: columns added after schema version 1: (name, type)
ADDED_SAMPLE_COLUMNS = (("model_s", "REAL"), ("wait_s", "REAL"), ("sample", "TEXT"),
                        ("outcome", "TEXT"))
#: columns of ``runs`` added after schema version 2 (``parent_id``, ``metrics``), 4
#: (``headline``, ``report``), 5 (``kind``, a parent run's ``steps``) and 6 (``config``)
ADDED_RUN_COLUMNS = (("parent_id", "TEXT"), ("metrics", "TEXT"), ("headline", "TEXT"),
                     ("report", "TEXT"), ("kind", "TEXT NOT NULL DEFAULT 'task'"),
                     ("steps", "TEXT"), ("config", "TEXT"))
#: what a run is: an ordinary run of a task, or a parent run whose steps are child runs
RUN_KINDS = ("task", "plan", "pipeline")
SAMPLE_COLUMNS = 21

INSERT_CACHE = "INSERT OR REPLACE INTO cache (key, model, reply, created_at) VALUES (?,?,?,?)"
