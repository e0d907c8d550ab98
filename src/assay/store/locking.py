"""Opening the store's SQLite file and writing to it while other processes hold the lock."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import time
from pathlib import Path
from typing import Any

from assay.errors import StoreError


def lock_timeout() -> float:
    """Seconds to retry a write while another process holds the lock ($ASSAY_LOCK_TIMEOUT)."""
    try:
        value = float(os.environ.get("ASSAY_LOCK_TIMEOUT") or 300.0)
    except ValueError:
        value = 300.0
    return value if value > 0 else 300.0


def _is_locked(e: BaseException) -> bool:
    return isinstance(e, sqlite3.OperationalError) and (
        "locked" in str(e) or "busy" in str(e))


def retry_locked(fn: Any, path: Path, *, what: str = "write") -> Any:
    """Call ``fn()``, retrying with backoff while another process holds a long lock (SQLite's
    busy wait covers short ones), up to :func:`lock_timeout`; then a one-line StoreError."""
    deadline = time.monotonic() + lock_timeout()
    wait = 0.05
    while True:
        try:
            return fn()
        except sqlite3.OperationalError as e:
            if not _is_locked(e):
                raise StoreError(f"the store {path} cannot be used ({e}); "
                                 "check the file or set ASSAY_HOME to another folder") from e
            if time.monotonic() >= deadline:
                raise StoreError(
                    f"the store {path} stayed locked by another process for more than "
                    f"{lock_timeout():g}s while trying to {what}; finish or stop that process, "
                    "or raise ASSAY_LOCK_TIMEOUT") from e
            time.sleep(min(wait, max(0.0, deadline - time.monotonic())))
            wait = min(wait * 2, 2.0)


def rollback(db: sqlite3.Connection) -> None:
    with contextlib.suppress(sqlite3.Error):
        db.rollback()


def write_retrying(db: sqlite3.Connection, fn: Any, path: Path, what: str) -> Any:
    """:func:`retry_locked` for a write on ``db``: a failed try is rolled back first."""

    def attempt() -> Any:
        try:
            return fn()
        except sqlite3.OperationalError:
            rollback(db)
            raise

    return retry_locked(attempt, path, what=what)


def connect_readonly(path: Path) -> sqlite3.Connection:
    """Open the store read-only (readers never block writers in WAL); a missing file is a
    StoreError, not an empty database created as a side effect."""
    if not path.is_file():
        raise StoreError(f"no store at {path}: run something first ('assay run ...'), or set "
                         "ASSAY_HOME to the workspace that holds assay.db")
    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True,
                             timeout=min(1.0, lock_timeout()), check_same_thread=False)
        db.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
    except sqlite3.Error as e:
        raise StoreError(f"the store {path} cannot be read ({e}); check the file") from e
    return db


def connect(path: Path) -> sqlite3.Connection:
    # SQLite's own busy wait covers short locks; retry_locked covers long ones
    db = sqlite3.connect(path, timeout=min(1.0, lock_timeout()), check_same_thread=False)

    def setup() -> None:
        db.execute("PRAGMA journal_mode=WAL")
        # NORMAL in WAL mode: a commit survives a process crash (kill -9); only an
        # OS crash can lose the last commits, never corrupt the file.
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("PRAGMA foreign_keys=ON")

    try:
        retry_locked(setup, path, what="open it")
    except BaseException:
        db.close()
        raise
    return db


def storable(value: Any) -> Any:
    """``value`` in a form SQLite accepts: valid UTF-8 text, a 64-bit int, a float or NULL."""
    if value is None or isinstance(value, float):
        return value
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value if -(1 << 63) <= value < (1 << 63) else str(value)
    if not isinstance(value, str):
        value = json.dumps(value, ensure_ascii=False, default=str)
    return value.encode("utf-8", "replace").decode("utf-8")
