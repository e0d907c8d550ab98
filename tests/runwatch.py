"""Watching a CLI run from outside, for the kill-and-resume tests: poll, kill -9, and read
the workspace's SQLite store directly (committed rows only), never through assay."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

DEADLINE_S = 120.0  # a guard against a hang only: a passing run never comes close


def dispositions(*, sigint_ignored: bool = False,
                 sigterm_ignored: bool = False) -> Callable[[], None]:
    """A ``preexec_fn`` that sets the signal dispositions a CLI under test starts with, instead
    of inheriting the caller's (a background job of a non-interactive shell, some CI runners
    and service managers start pytest with SIGINT ignored): SIGINT and SIGTERM at their
    defaults, as in a terminal; with ``sigint_ignored``, SIGINT ignored, as such a job has it
    (``sigterm_ignored``: SIGTERM too, as a parent that ignores it passes it on)."""

    def apply() -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN if sigterm_ignored else signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.SIG_IGN if sigint_ignored else signal.SIG_DFL)

    return apply


def wait_for(what: str, ok: Callable[[], bool], proc: subprocess.Popen[str]) -> None:
    """Poll until ``ok()``; fail (not hang) if the CLI exits first or the guard runs out."""
    deadline = time.monotonic() + DEADLINE_S
    while not ok():
        if proc.poll() is not None:
            raise AssertionError(f"the CLI exited (rc {proc.returncode}) before {what}:\n"
                                 f"{proc.stderr.read() if proc.stderr else ''}")
        if time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.01)


def kill9(proc: subprocess.Popen[str]) -> None:
    """``kill -9`` the CLI and reap it."""
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate()
    assert proc.returncode == -signal.SIGKILL


def db_rows(db: Path) -> list[tuple[str, int, str | None]]:
    """Every (sample_id, epoch, error) row of the samples table (committed rows only)."""
    if not db.exists():
        return []
    con = sqlite3.connect(db)
    try:
        return con.execute("SELECT sample_id, epoch, error FROM samples").fetchall()
    except sqlite3.OperationalError:  # tables not created yet
        return []
    finally:
        con.close()


def committed(db: Path) -> set[str]:
    """The sample ids stored without an error."""
    return {sid for sid, _, err in db_rows(db) if err is None}


def the_run(db: Path) -> tuple[str, str, dict[str, Any]]:
    """The one run in the store: its id, status and spec."""
    con = sqlite3.connect(db)
    try:
        ((run_id, status, spec),) = con.execute("SELECT id, status, spec FROM runs").fetchall()
    finally:
        con.close()
    return run_id, status, json.loads(spec)
