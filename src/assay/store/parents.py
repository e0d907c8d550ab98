"""Parent runs' steps and planning sessions, in the store.
A parent run (``kind`` ``plan`` or ``pipeline``) keeps its steps in ``steps``: a list of
``{"key", "task", "run", "status", "error"}`` in run order, written as each step starts,
finishes or fails, so a resumed parent finds its children again. A planning session
(``assay plan``) is a ``plan_sessions`` row, its whole state saved after every step."""

from __future__ import annotations

import json
import time
from typing import Any

from assay.errors import RunNotFoundError
from assay.store.described import StoreMixin, stored_json
from assay.store.owner import effective_status, owner

#: as runs': ``running`` is shown ``interrupted`` once its process is gone
SESSION_STATUSES = ("running", "finished", "interrupted")


class ParentRuns(StoreMixin):
    def children(self, run_id: str) -> list[str]:
        """Ids of ``run_id``'s child runs, oldest first."""
        return [r[0] for r in self._db.execute(
            "SELECT id FROM runs WHERE parent_id = ? ORDER BY created_at, id", (run_id,))]

    def set_run_steps(self, run_id: str, steps: list[dict[str, Any]]) -> None:
        self._commit("UPDATE runs SET steps=? WHERE id=?", (stored_json(steps), run_id),
                     f"record the steps of run {run_id}")

    # -- planning sessions --------------------------------------------------------------
    def create_plan_session(self, *, session_id: str, request: str, model: dict[str, Any],
                            state: dict[str, Any], package_version: str) -> str:
        self._commit("INSERT INTO plan_sessions (id, status, created_at, request, model, state,"
                     " stats, package_version) VALUES (?,?,?,?,?,?,?,?)",
                     (session_id, "running", time.time(), request, stored_json(model),
                      stored_json(state), stored_json({"owner": owner()}), package_version),
                     "create a planning session")
        return session_id

    def get_plan_session(self, session_id: str) -> dict[str, Any]:
        """A planning session by its id or a unique prefix of it."""
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
        return [_session(r) for r in self._db.execute(
            "SELECT id, status, created_at, finished_at, request, model, state, stats"
            " FROM plan_sessions ORDER BY created_at DESC LIMIT ?", (limit,))]

    def save_plan_session(self, session_id: str, state: dict[str, Any],
                          status: str | None = None) -> None:
        """Save a session's state, and its status when given (``running``: this process
        owns it)."""
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
