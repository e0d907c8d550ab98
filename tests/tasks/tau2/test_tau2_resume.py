"""kill -9 in the middle of a τ²-bench run, then ``--resume``: the trials committed before the
kill are never simulated again, the one in flight is run again from its start, and every
trial ends stored once. The fake server's ``hold_after`` holds the run mid-trial (no
assertion depends on timing); each CLI session has its own API key, so each request is
attributed to the session that sent it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from replay import AGENT, USER, GoldReplay
from runwatch import committed, dispositions, kill9, the_run, wait_for
from test_tau2_loop import tasks_of

from assay.testing.fake_server import FakeServer

TRIAL = re.compile(r"\[trial \d+\]")


def first_words(srv: FakeServer, session: str) -> int:
    """How many trials ``session`` started (the user's first words, one per trial)."""
    with srv._lock:
        pairs = list(zip(srv.authorizations, srv.requests, strict=True))
    return sum(1 for auth, body in pairs if auth == f"Bearer {session}"
               and body["model"] == USER and not any(
                   TRIAL.search(str(m.get("content") or "")) for m in body["messages"]))


def test_kill_minus_nine_mid_trial_then_resume(tau2_root: Path, workspace: Path) -> None:
    tasks = tasks_of(tau2_root, "mock", "base")[:4]
    ids = ",".join(t["id"] for t in tasks)
    db = workspace / "assay.db"
    # trial 1 takes 4 requests (user, create_task, the agent's last words, user stop);
    # trial 2's third request is held open
    srv = FakeServer(responder=GoldReplay(tasks), hold_after=6).start()
    args = ["-m", "assay", "run", "tau2", "--domain", "mock", "--tau2-dir", str(tau2_root),
            "--model", f"openai/{AGENT}", "--user-model", f"openai/{USER}", "--base-url",
            srv.base_url, "-T", f"user_base_url={srv.base_url}", "--max-connections", "1",
            "--no-cache", "--sample-ids", ids, "-q"]
    try:
        proc = subprocess.Popen([sys.executable, *args], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, preexec_fn=dispositions(),
                                env=dict(os.environ, OPENAI_API_KEY="first"))
        wait_for("the first trial is committed and the second held", lambda: len(
            committed(db)) == 1 and srv.stats["requests"] == 7, proc)
        kill9(proc)
        done_before = committed(db)
        assert done_before == {tasks[0]["id"]}
        run_id, status, _ = the_run(db)
        assert status == "running"

        srv.hold_after = None
        srv.responder = GoldReplay(tasks[1:])  # what is left, in order
        env: dict[str, Any] = dict(os.environ, OPENAI_API_KEY="resume")
        resumed = subprocess.run([sys.executable, "-m", "assay", "run", "tau2", "--resume",
                                  run_id, "-q"], capture_output=True, text=True, env=env,
                                 timeout=600)
        assert resumed.returncode == 0, resumed.stderr[-2000:]
        assert the_run(db)[1] == "finished"
        assert committed(db) == {t["id"] for t in tasks}
        assert first_words(srv, "first") == 2  # trial 1, and trial 2 until the kill
        assert first_words(srv, "resume") == 3  # trials 2 (again), 3 and 4: never trial 1
    finally:
        srv.stop()
