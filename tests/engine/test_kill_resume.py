"""``kill -9`` in the middle of a CLI run, then ``--resume``: nothing lost, nothing redone."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from assay.testing.pytest_plugin import launch_subprocess_server


def _rows(db: Path) -> list[tuple[str, str | None]]:
    if not db.exists():
        return []
    con = sqlite3.connect(db)
    try:
        return con.execute("SELECT sample_id, error FROM samples").fetchall()
    except sqlite3.OperationalError:  # tables not created yet
        return []
    finally:
        con.close()


def _logged_questions(log: Path) -> list[str]:
    out = []
    for line in log.read_text().splitlines():
        body = json.loads(line)
        out.append(body["messages"][-1]["content"].split("\n")[0])
    return out


def test_kill_minus_nine_then_resume(tmp_path: Path, workspace: Path) -> None:
    n = 24
    data = tmp_path / "d.jsonl"
    with open(data, "w") as f:
        for i in range(n):
            f.write(json.dumps({"id": f"s{i}", "question": f"Repeat after me: {i}",
                                "answer": str(i)}) + "\n")
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps([{"match": r"Repeat after me: (\S+)", "reply": "Answer: \\1"}]))
    log = tmp_path / "requests.jsonl"
    server = launch_subprocess_server("--latency", "0.25", "--rules", str(rules),
                                      "--log-requests", str(log))
    try:
        cmd = [sys.executable, "-m", "assay", "run", "qa", "--data", str(data), "--model",
               "openai/fake", "--base-url", server.base_url, "--max-connections", "2", "-q"]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        db = workspace / "assay.db"
        deadline = time.time() + 60
        while len(_rows(db)) < 6 and time.time() < deadline:
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        done_before = {sid for sid, err in _rows(db) if err is None}
        assert 6 <= len(done_before) < n, "the kill must land mid-run"
        sent_before = len(log.read_text().splitlines())

        con = sqlite3.connect(db)
        (run_id,) = con.execute("SELECT id FROM runs").fetchone()
        status = con.execute("SELECT status FROM runs").fetchone()[0]
        con.close()
        assert status == "running"  # killed: no chance to mark it

        resumed = subprocess.run(
            [sys.executable, "-m", "assay", "run", "qa", "--resume", run_id, "-q"],
            capture_output=True, text=True, timeout=120,
        )
        assert resumed.returncode == 0, resumed.stderr
        assert f"run {run_id} finished" in resumed.stdout

        rows = _rows(db)
        ids = [sid for sid, _ in rows]
        assert sorted(ids) == sorted(f"s{i}" for i in range(n))  # each exactly once
        assert all(err is None for _, err in rows)
        after = _logged_questions(log)[sent_before:]
        resent = {q.removeprefix("Repeat after me: ") for q in after}
        assert not {f"s{i}" for i in map(int, resent)} & done_before
        assert len(after) == n - len(done_before)
    finally:
        server.stop()


def test_ctrl_c_marks_run_interrupted_and_keeps_finished_samples(tmp_path: Path,
                                                                 workspace: Path) -> None:
    n = 30
    data = tmp_path / "d.jsonl"
    with open(data, "w") as f:
        for i in range(n):
            f.write(json.dumps({"id": f"s{i}", "question": f"q{i}", "answer": f"q{i}"}) + "\n")
    server = launch_subprocess_server("--latency", "0.2")
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "assay", "run", "qa", "--data", str(data), "--model",
             "openai/fake", "--base-url", server.base_url, "-c", "2", "-q"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        db = workspace / "assay.db"
        deadline = time.time() + 60
        while len(_rows(db)) < 4 and time.time() < deadline:
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 130
        con = sqlite3.connect(db)
        run_id, status = con.execute("SELECT id, status FROM runs").fetchone()
        kept = con.execute("SELECT COUNT(*) FROM samples").fetchone()[0]
        con.close()
        assert status == "interrupted"
        assert 4 <= kept < n
        assert f"assay run qa --resume {run_id}" in err
    finally:
        server.stop()
