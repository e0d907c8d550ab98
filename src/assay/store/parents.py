"""Parent runs' steps and planning sessions, in the store.

A parent run (``kind`` ``plan`` or ``pipeline``: see :data:`~assay.store.schema.RUN_KINDS`)
records its steps in its ``steps`` column: a list of ``{"key", "task", "run", "status",
"error"}`` in the order the driver runs them (:mod:`assay.pipelines.parent`), written
each time a step starts, finishes or fails, so a reader sees which child run is which
step, and a resumed parent finds its children again.

A planning session (``assay plan``) is a row of ``plan_sessions``: its request, status,
models and its whole state (stage, plan so far, history, trace), saved after every step
and every answer.
"""

from __future__ import annotations

import json
import time
from typing import Any

from assay.errors import RunNotFoundError
from assay.store.described import stored_json
from assay.store.owner import effective_status, owner

#: planning session statuses (as runs': ``running`` is shown ``interrupted`` once its
#: process is gone)
SESSION_STATUSES = ("running", "finished", "interrupted")


class ParentRuns:
    """The :class:`~assay.store.sqlite.Store` methods for parent runs' steps and planning
    sessions (mixed into it; they use its ``_db`` and ``_write``)."""

    _db: Any

    def _write(self, fn: Any, what: str) -> Any:  # pragma: no cover - the Store's
        raise NotImplementedError

    def children(self, run_id: str) -> list[str]:
        """Ids of the runs whose parent is ``run_id``, oldest first."""
        return [r[0] for r in self._db.execute(
            "SELECT id FROM runs WHERE parent_id = ? ORDER BY created_at, id", (run_id,))]

    def set_run_steps(self, run_id: str, steps: list[dict[str, Any]]) -> None:
        """Record a parent run's steps (see the module docstring)."""
        def update() -> None:
            self._db.execute("UPDATE runs SET steps=? WHERE id=?", (stored_json(steps), run_id))
            self._db.commit()

        self._write(update, f"record the steps of run {run_id}")

    # -- planning sessions --------------------------------------------------------------
    def create_plan_session(self, *, session_id: str, request: str, model: dict[str, Any],
                            state: dict[str, Any], package_version: str) -> str:
        """Insert a new planning session in status ``running``; returns its id."""
        def insert() -> None:
            self._db.execute(
                "INSERT INTO plan_sessions (id, status, created_at, request, model, state,"
                " stats, package_version) VALUES (?,?,?,?,?,?,?,?)",
                (session_id, "running", time.time(), request, stored_json(model),
                 stored_json(state), stored_json({"owner": owner()}), package_version))
            self._db.commit()

        self._write(insert, "create a planning session")
        return session_id

    def get_plan_session(self, session_id: str) -> dict[str, Any]:
        """A planning session (a unique id prefix is accepted): ``id``, ``status``,
        ``created_at``, ``finished_at``, ``request``, ``model``, ``state``."""
        rows = self._db.execute(
            "SELECT id, status, created_at, finished_at, request, model, state, stats"
            " FROM plan_sessions WHERE substr(id, 1, ?) = ? ORDER BY id",
            (len(session_id), session_id)).fetchall() if session_id else []
        exact = [r for r in rows if r[0] == session_id]
        rows = exact or rows
        if len(rows) != 1:
            why = "is ambiguous; give more characters" if rows else "is not in the store"
            raise RunNotFoundError(f"planning session {session_id!r} {why}; see 'assay list "
                                   "runs'")
        return _session(rows[0])

    def list_plan_sessions(self, limit: int = 50) -> list[dict[str, Any]]:
        """The most recent planning sessions first."""
        return [_session(r) for r in self._db.execute(
            "SELECT id, status, created_at, finished_at, request, model, state, stats"
            " FROM plan_sessions ORDER BY created_at DESC LIMIT ?", (limit,))]

    def save_plan_session(self, session_id: str, state: dict[str, Any],
                          status: str | None = None) -> None:
        """Save a session's state, and its status when given (``running`` records this
        process as its owner)."""
        if status is not None and status not in SESSION_STATUSES:
            raise ValueError(f"unknown planning session status {status!r}")

        def update() -> None:
            self._db.execute("UPDATE plan_sessions SET state=? WHERE id=?",
                             (stored_json(state), session_id))
            if status is not None:
                self._db.execute(
                    "UPDATE plan_sessions SET status=?, finished_at=?, stats=? WHERE id=?",
                    (status, None if status == "running" else time.time(),
                     stored_json({"owner": owner()} if status == "running" else {}),
                     session_id))
            self._db.commit()

        self._write(update, f"save planning session {session_id}")


def _session(r: tuple[Any, ...]) -> dict[str, Any]:
    return {"id": r[0], "status": effective_status(r[1], json.loads(r[7])),
            "created_at": r[2], "finished_at": r[3], "request": r[4],
            "model": json.loads(r[5]), "state": json.loads(r[6])}
