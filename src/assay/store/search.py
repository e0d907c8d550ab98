"""Full-text search over the stored samples' inputs, targets and outputs (SQLite FTS5).
The index is derived data in ``assay-search.db`` beside the store (in memory where the
folder is not writable), brought up to date before each search from the rows above the
last rowid indexed; hits whose sample is gone or rewritten are dropped. A query is words,
each quoted as a phrase (never FTS syntax), all required; results are paged, BM25 first."""

from __future__ import annotations

import json
import re
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay.store.sqlite import Store

__all__ = ["INDEX_BATCH", "MARK_END", "MARK_START", "SearchHit", "SearchIndex",
           "fts_query", "index_path", "sample_text"]

INDEX_BATCH = 500  # sample rows read per indexing step
MARK_START, MARK_END = "\x02", "\x03"  # marks a match in an excerpt (no stored text has them)

_MAX_FIELD = 20_000  # characters of each text indexed per sample
_WORD = re.compile(r"\w+", re.UNICODE)

_SCHEMA = """
CREATE VIRTUAL TABLE IF NOT EXISTS sample_text USING fts5(
    input, target, output, run_id UNINDEXED, sample_id UNINDEXED, epoch UNINDEXED,
    created_at UNINDEXED, tokenize = 'unicode61');
CREATE TABLE IF NOT EXISTS indexed (store TEXT PRIMARY KEY, last_rowid INTEGER NOT NULL);
"""


def index_path(store_path: Path) -> Path:
    return store_path.with_name(f"{store_path.stem}-search.db")


def _text_of(value: Any) -> str:
    """A stored JSON value's words: a string, messages' contents joined, or compact JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(m, dict) for m in value):
        return "\n".join(m["content"] if isinstance(m.get("content"), str)
                         else json.dumps(m.get("content"), ensure_ascii=False)
                         for m in value if m.get("content") is not None)
    return json.dumps(value, ensure_ascii=False, default=str)


def sample_text(column: str | None) -> str:
    if column is None:
        return ""
    try:
        value = json.loads(column)
    except ValueError:
        value = column
    return _text_of(value)[:_MAX_FIELD]


def fts_query(text: str) -> str | None:
    """An FTS5 query for every word of ``text``, each quoted; None when it has none."""
    words = _WORD.findall(text)
    return " ".join('"' + w.replace('"', '""') + '"' for w in words[:32]) if words else None


@dataclass
class SearchHit:
    run_id: str
    sample_id: str
    epoch: int
    field: str
    excerpt: str


class SearchIndex:
    """The search index of one store; one connection, used under a lock."""

    def __init__(self, store_path: Path) -> None:
        self.store_path = store_path
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self.in_memory = False

    def _open(self) -> sqlite3.Connection:
        if self._db is None:
            try:
                db = sqlite3.connect(index_path(self.store_path), check_same_thread=False,
                                     timeout=30)
                db.executescript(_SCHEMA)
            except (OSError, sqlite3.Error):  # a folder we may not write: keep it in memory
                db = sqlite3.connect(":memory:", check_same_thread=False)
                db.executescript(_SCHEMA)
                self.in_memory = True
            self._db = db
        return self._db

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    def refresh(self, store: Store) -> int:
        """Index the sample rows not indexed yet; returns how many."""
        with self._lock:
            db = self._open()
            key = str(self.store_path.resolve())
            row = db.execute("SELECT last_rowid FROM indexed WHERE store = ?", (key,)).fetchone()
            last = row[0] if row else 0
            newest = store._db.execute("SELECT MAX(rowid) FROM samples").fetchone()[0]
            if last and newest == last:
                if _same_row(db, store, last):
                    return 0
                last = max(0, last - 64)  # the newest rows were written again in place
            added = 0
            while True:
                rows = store._db.execute(
                    "SELECT rowid, run_id, sample_id, epoch, created_at, input, target,"
                    " substr(output, 1, ?) FROM samples WHERE rowid > ? ORDER BY rowid LIMIT ?",
                    (_MAX_FIELD, last, INDEX_BATCH)).fetchall()
                if not rows:
                    break
                db.executemany(
                    "INSERT OR REPLACE INTO sample_text (rowid, input, target, output, run_id,"
                    " sample_id, epoch, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    [(r[0], sample_text(r[5]), sample_text(r[6]), r[7] or "", r[1], r[2],
                      r[3], r[4]) for r in rows])
                last = rows[-1][0]
                added += len(rows)
                db.execute("INSERT OR REPLACE INTO indexed (store, last_rowid) VALUES (?, ?)",
                           (key, last))
                db.commit()
            return added

    def search(self, store: Store, text: str, *, run_id: str | None = None, page: int = 1,
               page_size: int = 50) -> tuple[list[SearchHit], int, int]:
        """Samples (of ``run_id`` or all) holding every word of ``text``, best first:
        ``(hits on the page, total, page)``, ``page`` clamped to the pages there are."""
        self.refresh(store)
        query = fts_query(text)
        if query is None:
            return [], 0, 1
        where, args = "sample_text MATCH ?", [query]
        if run_id is not None:
            where += " AND run_id = ?"
            args.append(run_id)
        with self._lock:
            db = self._open()
            total = db.execute(f"SELECT COUNT(*) FROM sample_text WHERE {where}",
                               args).fetchone()[0]
            pages = max(1, -(-total // page_size))
            page = max(1, min(page, pages))
            rows = db.execute(
                "SELECT rowid, run_id, sample_id, epoch, created_at,"
                f" snippet(sample_text, 0, '{MARK_START}', '{MARK_END}', '…', 16),"
                f" snippet(sample_text, 1, '{MARK_START}', '{MARK_END}', '…', 16),"
                f" snippet(sample_text, 2, '{MARK_START}', '{MARK_END}', '…', 16)"
                f" FROM sample_text WHERE {where} ORDER BY rank LIMIT ? OFFSET ?",
                [*args, page_size, (page - 1) * page_size]).fetchall()
        return _live_hits(store, rows), total, page


def _same_row(db: sqlite3.Connection, store: Store, rowid: int) -> bool:
    here = db.execute("SELECT run_id, sample_id, epoch, created_at FROM sample_text"
                      " WHERE rowid = ?", (rowid,)).fetchone()
    there = store._db.execute("SELECT run_id, sample_id, epoch, created_at FROM samples"
                              " WHERE rowid = ?", (rowid,)).fetchone()
    return here == there


def _live_hits(store: Store, rows: list[tuple[Any, ...]]) -> list[SearchHit]:
    if not rows:
        return []
    current = {r[0]: r[1:] for r in store._db.execute(
        "SELECT rowid, run_id, sample_id, epoch, created_at FROM samples WHERE rowid IN"
        " (SELECT value FROM json_each(?))", (json.dumps([r[0] for r in rows]),))}
    hits = []
    for rowid, run_id, sample_id, epoch, created_at, *excerpts in rows:
        if current.get(rowid) != (run_id, sample_id, epoch, created_at):
            continue  # deleted or written again since it was indexed
        field, excerpt = next(((f, e) for f, e in zip(("input", "target", "output"), excerpts,
                                                      strict=True) if MARK_START in (e or "")),
                              ("input", excerpts[0] or ""))
        hits.append(SearchHit(run_id, sample_id, int(epoch), field, excerpt))
    return hits
