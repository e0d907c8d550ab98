"""The background writer: a thread that commits sample rows off the event loop."""

from __future__ import annotations

import queue
import sqlite3
import threading
from pathlib import Path
from typing import Any

from assay.store.locking import connect, rollback, storable, write_retrying
from assay.store.schema import CREATED_COL, ERROR_COL, INSERT_CACHE, INSERT_SAMPLE


class Writer:
    """Owns a second connection; commits every row queued so far (up to :attr:`BATCH`) in one
    transaction. A sample is done only once committed, so a kill loses only rows a resume
    runs again. SQLite releases the GIL while it writes: disk time never stalls requests."""

    BATCH = 512

    def __init__(self, path: Path) -> None:
        self.path = path
        self._db = connect(path)
        self._q: queue.Queue[tuple[str, tuple[Any, ...]] | None] = queue.Queue()
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._loop, name="assay-store-writer", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        q = self._q
        while True:
            batch = [q.get()]
            while len(batch) < self.BATCH and batch[-1] is not None:
                try:
                    batch.append(q.get_nowait())
                except queue.Empty:
                    break
            items = [b for b in batch if b is not None]
            try:
                if items and self.error is None:
                    self._write_batch(items)
            except BaseException as e:  # surfaced to the engine on the next put/flush
                self.error = e
            finally:
                for _ in batch:
                    q.task_done()
            if batch[-1] is None:
                return

    def _write_batch(self, items: list[tuple[str, tuple[Any, ...]]]) -> None:
        """Write rows in one transaction; a sample row that cannot be written as it is is
        written as that sample's error; only a lock held past the timeout stops the writer."""
        db = self._db
        # take the write lock now, or wait for it
        write_retrying(db, lambda: db.execute("BEGIN IMMEDIATE"), self.path, "save samples")
        try:
            samples = [args for kind, args in items if kind == "s"]
            caches = [args for kind, args in items if kind != "s"]
            for sql, rows, kind in ((INSERT_CACHE, caches, "c"), (INSERT_SAMPLE, samples, "s")):
                if not rows:
                    continue
                # all rows in one statement; if one is refused, undo them and go row by row
                db.execute("SAVEPOINT batch")
                try:
                    db.executemany(sql, rows)
                    db.execute("RELEASE batch")
                except (sqlite3.Error, ValueError, TypeError, OverflowError):
                    db.execute("ROLLBACK TO batch")
                    db.execute("RELEASE batch")
                    for args in rows:
                        self._write_row(kind, args)
            db.commit()
        except BaseException:
            rollback(db)
            raise

    def _write_row(self, kind: str, args: tuple[Any, ...]) -> None:
        db = self._db
        sql = INSERT_SAMPLE if kind == "s" else INSERT_CACHE
        try:
            db.execute(sql, args)
            return
        except (sqlite3.Error, ValueError, TypeError, OverflowError) as e:  # a bad value
            problem: BaseException = e
        if kind != "s":
            return  # a cache row that cannot be stored is simply not cached
        note = (f"the result could not be stored as it was ({type(problem).__name__}: "
                f"{str(problem)[:200]}); unreadable parts were replaced")
        row = [storable(v) for v in args]
        row[ERROR_COL] = row[ERROR_COL] and f"{row[ERROR_COL]}; {note}" or note
        try:
            db.execute(sql, tuple(row))
        except (sqlite3.Error, ValueError, TypeError, OverflowError):
            bare: list[Any] = [None] * len(row)  # last resort: ids and the error only
            for i in (0, 1, 2, 3, ERROR_COL, CREATED_COL):
                bare[i] = row[i]
            db.execute(sql, tuple(bare))

    def put(self, kind: str, args: tuple[Any, ...]) -> None:
        if self.error is not None:
            raise self.error
        self._q.put((kind, args))

    def flush(self) -> None:
        self._q.join()
        if self.error is not None:
            raise self.error

    def close(self) -> None:
        self._q.put(None)
        self._thread.join()
        self._db.close()
