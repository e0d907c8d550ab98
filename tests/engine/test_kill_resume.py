"""``kill -9`` and Ctrl-C in the middle of a CLI run, then ``--resume``: nothing lost,
nothing duplicated, and no sample that was committed before the kill is sent again.

The runs use ``--no-cache``: with the response cache on, a re-sent sample would be
answered from the cache and never reach the server, so a re-send could not be seen. Every
CLI session gets its own API key (``OPENAI_API_KEY``), which the server records with each
request, so each request is attributed to the session that sent it (even one that reaches
the server after its sender was killed). The server's ``hold_after`` makes "the run is
still going when it is stopped" deterministic: requests past it are held open, never
answered. No assertion depends on timing; deadlines only stop a broken run from hanging.
"""

from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from runwatch import DEADLINE_S, committed, db_rows, dispositions, kill9, the_run, wait_for
from test_engine import write_repeat_data as write_data

from assay.testing.fake_server import FakeServer, Rule

ECHO = [Rule(r"Repeat after me: (\S+)", "Answer: \\1")]
QUESTION = re.compile(r"Repeat after me: (\d+)")


class SessionServer(FakeServer):
    """The fake server, read as ``(session, sample id)`` per chat request; the session
    is the bearer key the CLI process was started with."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(rules=ECHO, **kwargs)

    @property
    def sent(self) -> list[tuple[str, str]]:
        with self._lock:
            pairs = list(zip(self.authorizations, self.requests, strict=True))
        out = []
        for auth, body in pairs:
            match = QUESTION.search(body["messages"][-1]["content"])
            out.append((auth.removeprefix("Bearer "), f"s{match.group(1)}" if match else "?"))
        return out

    def sent_by(self, session: str) -> list[str]:
        return [sid for s, sid in self.sent if s == session]


def start_cli(args: list[str], session: str) -> subprocess.Popen[str]:
    env = dict(os.environ, OPENAI_API_KEY=session)
    return subprocess.Popen([sys.executable, "-m", "assay", "run", "qa", *args, "-q"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            preexec_fn=dispositions())


def resume_cli(run_id: str, session: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, OPENAI_API_KEY=session)
    return subprocess.run([sys.executable, "-m", "assay", "run", "qa", "--resume", run_id, "-q"],
                          capture_output=True, text=True, env=env, timeout=600)


def resume_to_the_end(run_id: str, session: str, db: Path, n: int) -> None:
    """Resume ``run_id`` as ``session``: it finishes with each sample stored once."""
    resumed = resume_cli(run_id, session)
    assert resumed.returncode == 0, resumed.stderr
    assert f"run {run_id} finished" in resumed.stdout
    assert the_run(db)[1] == "finished"
    assert_each_sample_once(db, n)












def assert_each_sample_once(db: Path, n: int) -> None:
    """The finished run has exactly one error-free row per (sample, epoch), all n of them.

    Rows are written with INSERT OR REPLACE on (run, sample, epoch), so the table cannot
    show a duplicate; the server's request log (checked by the callers) is what can.
    """
    rows = db_rows(db)
    per_key = Counter((sid, epoch) for sid, epoch, _ in rows)
    assert set(per_key) == {(f"s{i}", 0) for i in range(n)}
    assert set(per_key.values()) == {1}
    assert [r for r in rows if r[2] is not None] == []


def test_kill_minus_nine_then_resume(tmp_path: Path, workspace: Path) -> None:
    n, answered, conns = 24, 8, 2
    data = write_data(tmp_path / "d.jsonl", n)
    db = workspace / "assay.db"
    srv = SessionServer(latency=0.05, hold_after=answered).start()
    try:
        proc = start_cli(["--data", str(data), "--model", "openai/fake", "--base-url",
                          srv.base_url, "-c", str(conns), "--no-cache"], "first")
        # the first `answered` requests are answered; each worker then holds one open
        wait_for("the first session commits its answered samples and holds the rest",
                 lambda: len(committed(db)) == answered
                 and srv.stats["requests"] == answered + conns, proc)
        kill9(proc)
        done_before = committed(db)
        first = srv.sent_by("first")
        held = set(first) - done_before
        assert len(first) == answered + conns and len(held) == conns
        run_id, status, spec = the_run(db)
        assert status == "running"  # killed: no chance to mark it
        assert spec["cache"] is False  # the resume uses the stored spec: cache off too

        srv.hold_after = None
        resume_to_the_end(run_id, "resume", db, n)

        again = srv.sent_by("resume")
        assert not set(again) & done_before, "a sample committed before the kill was re-sent"
        assert held <= set(again)  # in flight at the kill, never committed: sent again
        assert Counter(again) == Counter({f"s{i}" for i in range(n)} - done_before)
        assert len(srv.sent) == len(first) + len(again)  # no request from anywhere else
    finally:
        srv.stop()


def test_twenty_random_kills_then_resume_to_the_end(tmp_path: Path, workspace: Path) -> None:
    """kill -9 at 20 seeded random moments, resuming after each, then resume to the end."""
    kills, per_session, conns = 20, 24, 4
    n = kills * per_session + 40  # each killed session answers at most per_session requests
    rng = random.Random(20260323)
    data = write_data(tmp_path / "d.jsonl", n)
    db = workspace / "assay.db"
    srv = SessionServer(latency=0.05).start()
    snapshots: list[set[str]] = []  # samples committed at each kill
    try:
        run_id = ""
        for k in range(kills):
            session = f"session-{k}"
            # a killed session can never finish the run: past per_session it is held
            srv.hold_after = srv.stats["requests"] + per_session
            if k == 0:
                proc = start_cli(["--data", str(data), "--model", "openai/fake", "--base-url",
                                  srv.base_url, "-c", str(conns), "--no-cache"], session)
            else:
                proc = start_cli(["--resume", run_id], session)
            wait_for(f"{session} sends its first request", lambda s=session: srv.sent_by(s),
                     proc)
            time.sleep(rng.uniform(0.0, 0.4))  # a random moment: sending, writing, holding
            kill9(proc)
            snapshots.append(committed(db))
            if k == 0:
                run_id, status, spec = the_run(db)
                assert spec["cache"] is False
            assert the_run(db)[1] == "running"
        srv.hold_after = None
        resume_to_the_end(run_id, "final", db, n)

        everything = {f"s{i}" for i in range(n)}
        sessions = [f"session-{k}" for k in range(kills)] + ["final"]
        before = [set()] + snapshots  # committed when each session started
        after = snapshots + [everything]  # committed when each session ended
        assert {s for s, _ in srv.sent} == set(sessions)
        for k, session in enumerate(sessions):
            sent = srv.sent_by(session)
            assert before[k] <= after[k], f"{session}: committed samples were lost"
            assert len(sent) == len(set(sent)), f"{session} sent a sample twice"
            assert not set(sent) & before[k], f"{session} re-sent a committed sample"
            assert after[k] - before[k] <= set(sent), f"{session} committed unsent samples"
        assert set(srv.sent_by("final")) == everything - snapshots[-1]
    finally:
        srv.stop()


def test_ctrl_c_marks_run_interrupted_and_keeps_finished_samples(tmp_path: Path,
                                                                 workspace: Path) -> None:
    n, answered, conns = 30, 4, 2
    data = write_data(tmp_path / "d.jsonl", n)
    db = workspace / "assay.db"
    srv = SessionServer(hold_after=answered).start()
    try:
        proc = start_cli(["--data", str(data), "--model", "openai/fake", "--base-url",
                          srv.base_url, "-c", str(conns), "--no-cache"], "ctrl-c")
        # each worker records its sample before it asks for the next one, so once both
        # hold a request every answered sample has been handed to the store
        wait_for("both workers hold a request", lambda: srv.stats["requests"] == answered
                 + conns, proc)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=DEADLINE_S)
        assert proc.returncode == 130, err
        run_id, status, _ = the_run(db)
        assert status == "interrupted"
        rows = db_rows(db)  # the answered samples, each once; the held ones are not kept
        kept = {sid for sid, _, _ in rows}
        assert len(rows) == len(kept) == answered and all(e is None for _, _, e in rows)
        assert kept < set(srv.sent_by("ctrl-c"))
        assert f"assay run qa --resume {run_id}" in err
    finally:
        srv.stop()
