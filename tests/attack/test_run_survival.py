"""Runs survive any reply, any stop and a locked store; nothing secret or half-written is left.

Each test reproduces a defect that was seen: a list ``content`` killing the store's writer,
runs left ``running``, a 200 MB reply, query-string secrets written to the store and the
reports, resume from another folder or with a new endpoint, reports truncated by ``kill -9``
and raw HTML in report.md. Where the defect is an exit code or a message, the real CLI
runs in a subprocess against the real fake server.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from runwatch import dispositions

from assay.store.sqlite import Store
from assay.testing import FakeServer, Rule
from assay.testing.fake_server import FaultPlan
from attack.clitools import cli

REPO = Path(__file__).resolve().parents[2]
TOKEN_RULE = Rule(r"token-(\d+)", r"Answer: token-\1")


def start_cli(*args: str, cwd: Path | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "assay", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=cwd or REPO,
                            env=dict(os.environ, NO_COLOR="1"), preexec_fn=dispositions())


def token_data(path: Path, n: int) -> Path:
    path.write_text("".join(json.dumps({"id": f"t{i}", "question": f"Repeat token-{i}",
                                        "answer": f"token-{i}"}) + "\n" for i in range(n)))
    return path


def db_rows(home: Path, sql: str, *args: object) -> list[tuple]:
    with sqlite3.connect(home / "assay.db") as con:
        return con.execute(sql, args).fetchall()


def wait_for(predicate, what: str, deadline_s: float = 120.0) -> None:
    """Poll until ``predicate()``; the deadline only guards against a hang (never a verdict)."""
    end = time.monotonic() + deadline_s
    while not predicate():
        if time.monotonic() > end:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.05)


# ----------------------------------------------------------------- strange replies


def test_list_content_reply_is_scored_not_fatal(tmp_path: Path, workspace: Path) -> None:
    data = token_data(tmp_path / "d.jsonl", 6)
    plan = FaultPlan(rate=1.0, kinds={"list_content": 1.0})
    with FakeServer(rules=[TOKEN_RULE], faults=plan) as srv:
        p = cli("run", "qa", "--data", str(data), "--model", "openai/fake", "--base-url",
                srv.base_url, "-q", "--no-cache")
        assert srv.stats["faults"]["list_content"] == 6
    assert p.returncode == 0, p.stderr
    assert "normalized_match: 1.000" in p.stdout, p.stdout
    assert db_rows(workspace, "SELECT status FROM runs") == [("finished",)]
    # resume of a finished run works too (it used to crash the same way every time)
    run_id = db_rows(workspace, "SELECT id FROM runs")[0][0]
    with FakeServer(rules=[TOKEN_RULE]) as srv:
        p = cli("run", "qa", "--resume", run_id, "--base-url", srv.base_url, "-q")
    assert p.returncode == 0, p.stderr


def test_writer_turns_an_unstorable_row_into_that_samples_error(workspace: Path) -> None:
    store = Store()
    run = store.create_run(task="qa", spec={}, model={}, dataset={}, package_version="t")
    good = ("b", 0, 1, '"q"', '"a"', "[]", "fine", "a", "{}", None, 0.1, 1, 1, 1, 0, None, 0.0)
    with store.background_writes():
        # a list where text belongs, and a lone surrogate: both used to kill the writer
        store.record(run, ("a", 0, 0, '"q"', '"a"', "[]", [{"type": "text"}], "x", "{}", None,
                           0.1, 1, 1, 1, 0, None, 0.0))
        store.record(run, ("s", 0, 2, '"q"', '"a"', "[]", "bad \ud800 text", "x", "{}", None,
                           0.1, 1, 1, 1, 0, None, 0.0))
        store.record(run, good)
        store.flush()
    rows = {r[0]: r for r in db_rows(workspace, "SELECT sample_id, output, error FROM samples")}
    store.close()
    assert set(rows) == {"a", "s", "b"}
    assert "could not be stored" in rows["a"][2]
    assert "could not be stored" in rows["s"][2] and rows["s"][1] == "bad ? text"
    assert rows["b"] == ("b", "fine", None)


def test_mixed_hostile_server_every_sample_scored_or_error(tmp_path: Path,
                                                          workspace: Path) -> None:
    """List content, 429, 500, hangs, malformed and oversized replies, mixed."""
    n = 40
    data = token_data(tmp_path / "d.jsonl", n)
    plan = FaultPlan(rate=0.6, seed=11, retry_after=0.01, hang_s=60, oversize_bytes=300_000,
                     kinds={"list_content": 2, "429": 1, "500": 1, "hang": 1, "malformed": 1,
                            "oversized": 1})
    with FakeServer(rules=[TOKEN_RULE], faults=plan) as srv:
        p = cli("run", "qa", "--data", str(data), "--model", "openai/fake", "--base-url",
                srv.base_url, "-q", "--no-cache", "-c", "8", "--timeout", "1",
                "--max-retries", "2", "--max-reply-bytes", "100000")
        faults = dict(srv.stats["faults"])
    assert p.returncode == 0, p.stderr
    assert all(faults[k] > 0 for k in ("list_content", "429", "500", "hang", "oversized")), faults
    rows = db_rows(workspace, "SELECT sample_id, scores, error FROM samples")
    assert len(rows) == n and len({r[0] for r in rows}) == n
    for sid, scores, error in rows:
        assert (error is None) != (json.loads(scores or "{}") == {}), (sid, scores, error)
    errors = [r[2] for r in rows if r[2]]
    scored = [r for r in rows if r[2] is None]
    assert scored and all(json.loads(r[1])["normalized_match"]["value"] == 1.0 for r in scored)
    assert any("--max-reply-bytes" in e for e in errors), errors
    assert db_rows(workspace, "SELECT status FROM runs") == [("finished",)]


def test_oversized_reply_is_that_samples_error_not_memory(tmp_path: Path,
                                                          workspace: Path) -> None:
    data = token_data(tmp_path / "d.jsonl", 3)
    plan = FaultPlan(fail_first=1, kinds={"oversized": 1.0}, oversize_bytes=5_000_000)
    with FakeServer(rules=[TOKEN_RULE], faults=plan) as srv:
        p = cli("run", "qa", "--data", str(data), "--model", "openai/fake", "--base-url",
                srv.base_url, "-q", "--no-cache", "--max-reply-bytes", "1000000")
    assert p.returncode == 1, p.stderr  # every reply too large: the run failed
    errors = [r[0] for r in db_rows(workspace, "SELECT error FROM samples")]
    assert len(errors) == 3 and all(e and "too large" in e for e in errors), errors
    size = sum(f.stat().st_size for f in workspace.glob("assay.db*"))
    assert size < 2_000_000, size  # nothing of the 5 MB replies was stored


# ------------------------------------------------------------------ stops and locks


def test_sigterm_marks_interrupted_and_resume_from_elsewhere_with_new_endpoint(
        tmp_path: Path, workspace: Path) -> None:
    data = token_data(tmp_path / "d.jsonl", 6)
    rel = os.path.relpath(data, REPO)  # given relative to the first folder
    with FakeServer(rules=[TOKEN_RULE], hold_after=2) as srv:
        proc = start_cli("run", "qa", "--data", rel, "--model", "openai/fake", "--base-url",
                         srv.base_url, "-q", "--no-cache", "-c", "1")
        wait_for(lambda: srv.stats["requests"] >= 3, "the third (held) request")
        wait_for(lambda: (workspace / "assay.db").exists() and len(db_rows(
            workspace, "SELECT 1 FROM samples")) == 2, "two committed samples")
        # a second process may not resume a run whose process is still working on it
        (live_id,) = db_rows(workspace, "SELECT id FROM runs")[0]
        busy = cli("run", "qa", "--resume", live_id, "--base-url", srv.base_url, "-q")
        assert busy.returncode == 2 and "still running" in busy.stderr, busy.stderr
        listing = cli("list", "runs").stdout
        assert "running" in listing and "yes" not in listing, listing
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, (out, err)
    assert "Resume with" in err
    (run_id, status), = db_rows(workspace, "SELECT id, status FROM runs")
    assert status == "interrupted"
    # the spec holds the absolute path, so resuming from another folder finds the data
    spec = json.loads(db_rows(workspace, "SELECT spec FROM runs")[0][0])
    assert spec["task_options"]["data"] == str(data)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    with FakeServer(rules=[TOKEN_RULE]) as srv2:
        p = cli("run", "qa", "--resume", run_id, "--base-url", srv2.base_url, "-q",
                "--max-connections", "4", cwd=elsewhere)
        resent = [json.dumps(b) for b in srv2.requests]
    assert p.returncode == 0, p.stderr
    assert "--base-url changed from" in p.stderr and srv2.base_url in p.stderr
    assert "--max-connections changed from 1 to 4" in p.stderr
    assert len(resent) == 4 and not any("token-0" in r or "token-1" in r for r in resent)
    assert db_rows(workspace, "SELECT status, json_extract(spec, '$.base_url') FROM runs") == [
        ("finished", srv2.base_url)]


def test_resume_refuses_options_that_change_the_samples(tmp_path: Path,
                                                        workspace: Path) -> None:
    data = token_data(tmp_path / "d.jsonl", 2)
    with FakeServer(rules=[TOKEN_RULE]) as srv:
        p = cli("run", "qa", "--data", str(data), "--model", "openai/fake", "--base-url",
                srv.base_url, "-q")
        assert p.returncode == 0, p.stderr
        run_id = db_rows(workspace, "SELECT id FROM runs")[0][0]
        for extra, flag in ((["--data", str(data)], "--data"),
                            (["--model", "openai/other"], "--model"),
                            (["--epochs", "2"], "--epochs"),
                            (["--scorer", "exact"], "--scorer")):
            p = cli("run", "qa", "--resume", run_id, *extra, "-q")
            assert p.returncode == 2, (extra, p.stderr)
            assert len(p.stderr.strip().splitlines()) == 1 and flag in p.stderr, p.stderr
            assert "Traceback" not in p.stderr


def test_store_locked_at_startup_is_waited_for_then_a_one_line_error(
        tmp_path: Path, workspace: Path) -> None:
    data = token_data(tmp_path / "d.jsonl", 2)
    Store().close()
    holder = sqlite3.connect(workspace / "assay.db", isolation_level=None,
                             check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")
    with FakeServer(rules=[TOKEN_RULE]) as srv:
        args = ("run", "qa", "--data", str(data), "--model", "openai/fake", "--base-url",
                srv.base_url, "-q")
        p = cli(*args, env={"ASSAY_LOCK_TIMEOUT": "1.5"})
        assert p.returncode == 2, p.stderr
        assert len(p.stderr.strip().splitlines()) == 1 and "stayed locked" in p.stderr, p.stderr
        # a lock released while the run waits (past SQLite's own busy timeout) is survived
        release = threading.Timer(4.0, holder.execute, args=("ROLLBACK",))
        release.start()
        p = cli(*args, env={"ASSAY_LOCK_TIMEOUT": "120"})
        release.join()
    holder.close()
    assert p.returncode == 0, p.stderr
    assert db_rows(workspace, "SELECT status FROM runs") == [("finished",)]


AGENT_THAT_LOCKS_THE_STORE = '''
import os, sqlite3
_held = []

def make():
    return Agent()

class Agent:
    def run(self, prompt):
        if not _held:  # another connection takes the write lock and never lets go
            con = sqlite3.connect(os.path.join(os.environ["ASSAY_HOME"], "assay.db"),
                                  isolation_level=None, check_same_thread=False)
            con.execute("BEGIN IMMEDIATE")
            _held.append(con)
        return "Answer: 4"
'''


def test_store_locked_mid_run_ends_with_one_line_and_a_resumable_run(
        tmp_path: Path, workspace: Path) -> None:
    (tmp_path / "locking_agent.py").write_text(AGENT_THAT_LOCKS_THE_STORE)
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps({"question": f"q{i}", "answer": "4"}) + "\n"
                            for i in range(4)))
    p = cli("run", "qa", "--data", str(data), "--model", "python/locking_agent:make", "-q",
            cwd=tmp_path, env={"ASSAY_LOCK_TIMEOUT": "1"})
    assert p.returncode == 2, (p.stdout, p.stderr)
    assert "Traceback" not in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and "locked" in p.stderr, p.stderr
    listing = cli("list", "runs")
    assert listing.returncode == 0, listing.stderr
    row = next(line for line in listing.stdout.splitlines() if " qa " in line)
    assert ("interrupted" in row or "failed" in row) and "running" not in row, row
    (run,) = [r for r in json.loads(cli("list", "runs", "--json").stdout) if r["task"] == "qa"]
    assert run["resumable"] is True, run


# ---------------------------------------------------------------- secrets and files


def test_query_string_secrets_are_sent_but_never_written(tmp_path: Path,
                                                         workspace: Path) -> None:
    secret, key = "topsecretvalue123", "sk-testkey1234567890"
    data = token_data(tmp_path / "d.jsonl", 3)
    echo = {"status": 400, "error": f"bad api_key={secret}; header Authorization: Bearer {key}"}
    with FakeServer(rules=[Rule(r"token-2", echo), TOKEN_RULE]) as srv:
        url = f"{srv.base_url}/?api_key={secret}"
        p = cli("run", "qa", "--data", str(data), "--model", "openai/fake", "--base-url", url,
                "-q", "--no-cache", "--max-retries", "0", env={"OPENAI_API_KEY": key})
        queries = list(srv.queries)
    assert p.returncode == 0, p.stderr
    assert queries == [f"api_key={secret}"] * 3  # the path was joined before the query
    run_id = db_rows(workspace, "SELECT id FROM runs")[0][0]
    assert cli("report", run_id).returncode == 0
    errors = [e for (e,) in db_rows(workspace, "SELECT error FROM samples") if e]
    assert len(errors) == 1 and "HTTP 400" in errors[0]
    files = [f for f in workspace.rglob("*") if f.is_file()]
    assert any(f.name == "report.md" for f in files)
    for f in files:
        blob = f.read_bytes()
        assert secret.encode() not in blob and key.encode() not in blob, f
    for text in (p.stdout, p.stderr):
        assert secret not in text and key not in text


def test_report_md_escapes_html_from_data_and_replies(tmp_path: Path, workspace: Path) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"question": "<script>alert(1)</script> token-1",
                                "answer": "<b>x</b>"}) + "\n")
    with FakeServer(default_reply='Answer: <img src=x onerror="alert(2)">') as srv:
        p = cli("run", "qa", "--data", str(data), "--model", "openai/fake", "--base-url",
                srv.base_url, "-q")
    assert p.returncode == 0, p.stderr
    md = next(workspace.rglob("report.md")).read_text()
    assert "alert(1)" in md and "alert(2)" in md  # the text is there ...
    for raw in ("<script", "<img", "<b>"):  # ... but not as markup: each "<" backslashed
        assert raw not in md.replace("\\<", ""), raw
    assert "\\<script>" in md  # a backslash keeps it text in a Markdown viewer


def test_kill_9_during_report_never_leaves_a_truncated_file(workspace: Path) -> None:
    """Reports are written to a temporary name and renamed: each file is whole or absent."""
    n = 20_000
    store = Store()
    run = store.create_run(task="qa", spec={"task": "qa"}, model={"model": "m"},
                           dataset={}, package_version="t")
    rows = [(run, f"s{i}", 0, i, json.dumps(f"question {i}"), json.dumps("4"), "[]",
             "Answer: 4", "4", json.dumps({"normalized": {"name": "normalized", "value": 1.0,
                                                          "answer": "4"}}),
             None, 0.01, 5, 2, 1, 0, None, 0.0) for i in range(n)]
    store._db.executemany(
        "INSERT INTO samples (run_id, sample_id, epoch, seq, input, target, transcript, output,"
        " prediction, scores, error, latency_s, input_tokens, output_tokens, model_calls,"
        " cache_hits, metadata, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", rows)
    store._db.commit()
    store.set_run_status(run, "finished", {})
    store.close()
    out = workspace / "runs" / run
    started = time.monotonic()
    p = cli("report", run)  # a whole report first, to place the kills across its duration
    whole = time.monotonic() - started
    assert p.returncode == 0, p.stderr
    kills = 0
    for fraction in (0.3, 0.45, 0.55, 0.65, 0.72, 0.8, 0.86, 0.92, 0.97):
        for f in out.glob("*"):
            f.unlink()
        for f in out.glob(".*"):
            f.unlink()
        proc = subprocess.Popen([sys.executable, "-m", "assay", "report", run],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            proc.wait(timeout=whole * fraction)
        except subprocess.TimeoutExpired:
            proc.kill()
            kills += 1
        proc.wait()
        results = out / "results.jsonl"
        if results.exists():
            lines = results.read_text().splitlines()
            assert len(lines) == n and json.loads(lines[-1])["sample_id"] == f"s{n - 1}"
        html = out / "report.html"
        if html.exists():
            assert html.read_text().rstrip().endswith("</html>")
        md = out / "report.md"
        if md.exists():  # whole: the capped sample table is there, down to its last row
            text = md.read_text()
            assert f"of {n:,} samples" in text and text.rstrip().endswith("|")
    p = cli("report", run)
    assert p.returncode == 0, p.stderr
    assert len((out / "results.jsonl").read_text().splitlines()) == n


@pytest.mark.parametrize("content", ["Answer: 4", [{"type": "text", "text": "Answer: "},
                                                   {"type": "text", "text": "4"}]])
def test_openai_content_parts_become_text(content) -> None:
    from assay.models.openai_model import parse_completion

    reply = parse_completion({"choices": [{"message": {"role": "assistant",
                                                        "content": content}}]})
    assert reply.message.content == "Answer: 4"
