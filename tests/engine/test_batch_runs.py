"""``--batch`` end to end: the real CLI (a subprocess) against the fake server's Batch API
over real HTTP, into the test's own store. Submitted, the process killed, resumed later and
scored; lines the provider failed are those samples' errors and are resubmitted on resume;
an expired, a cancelled and a failed batch; a second run answered by the cache sends
nothing; the cost is the batch price. Waits are on the store and the server's state, never
on time."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from runwatch import dispositions, kill9, wait_for

from assay.models.openai_batch import BatchClient
from assay.store.sqlite import Store
from assay.testing import FakeServer, Rule
from assay.testing.fake_replies import last_user_text

N = 6


def qa_file(folder: Path) -> Path:
    path = folder / "qa.jsonl"
    path.write_text("".join(json.dumps({"id": f"q{i}", "question": f"Say {i}",
                                        "answer": f"Say {i}"}) + "\n" for i in range(N)),
                    encoding="utf-8")
    return path


def args(data: Path, srv: FakeServer, *extra: str) -> list[str]:
    return ["run", "qa", "--data", str(data), "--model", "openai/fake", "--base-url",
            srv.base_url, "--batch", "--batch-poll", "0.01", "-q", *extra]


def cli(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "assay", *argv], capture_output=True,
                          text=True, timeout=600, env={**os.environ, "OPENAI_API_KEY": "sk-t"})


def start(*argv: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "assay", *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=dispositions(),
                            env={**os.environ, "OPENAI_API_KEY": "sk-t"})


def batches_stored(db: Path) -> list[dict[str, Any]]:
    if not db.exists():
        return []
    con = sqlite3.connect(db)
    try:
        rows = con.execute("SELECT stats FROM runs").fetchall()
    except sqlite3.OperationalError:
        return []
    finally:
        con.close()
    return [b for (stats,) in rows for b in (json.loads(stats or "{}").get("batches") or [])]


def stored(run_id: str) -> tuple[dict[str, Any], list[Any]]:
    store = Store()
    try:
        return store.get_run(run_id), store.results(run_id)
    finally:
        store.close()


def test_submit_kill_resume_later_then_a_cached_run_sends_nothing(
        tmp_path: Path, workspace: Path) -> None:
    data = qa_file(tmp_path)
    prices = tmp_path / "p.yaml"
    prices.write_text("openai/fake: {input: 2.0, output: 8.0}\n", encoding="utf-8")
    with FakeServer(batch_polls=10**9) as srv:  # the batch runs until the test says
        proc = start(*args(data, srv, "--pricing", str(prices)))
        wait_for("the batch is submitted and stored",
                 lambda: [b["status"] for b in batches_stored(workspace / "assay.db")]
                 == ["submitted"], proc)
        kill9(proc)
        ((record,),) = [batches_stored(workspace / "assay.db")]
        assert record["requests"] == N and not srv.requests  # nothing sent directly
        run_id = Store().list_runs(1)[0]["id"]
        # hours later: the provider has it; 'assay batch status' says so
        srv.batch_polls = 0
        said = cli("batch", "status", run_id)
        assert said.returncode == 0, said.stderr
        assert f"{record['id']}  openai/fake  {N} requests  submitted" in said.stdout
        assert "at the provider: completed" in said.stdout
        resumed = cli("run", "qa", "--resume", run_id, "-q")
        assert resumed.returncode == 0, resumed.stderr
        assert not srv.requests and len(srv.batch_requests) == N  # each line answered once
        usages = list(srv.usages)
        run, results = stored(run_id)
        assert run["status"] == "finished" and len(results) == N
        assert all(r.error is None and r.scores for r in results)
        assert all(r.model_calls == 1 and r.cache_hits == 0 for r in results)  # paid for
        # the batch price: half of the file's, where the file gives no batch price
        by_hand = sum(u["prompt_tokens"] * 1.0 + u["completion_tokens"] * 4.0
                      for u in usages) / 1e6
        assert run["stats"]["cost"]["usd"] == pytest.approx(by_hand, rel=1e-9)
        assert [b["status"] for b in run["stats"]["batches"]] == ["collected"]

        srv.reset()  # a new run of the same samples: every reply is cached
        again = cli(*args(data, srv))
        assert again.returncode == 0, again.stderr
        assert not srv.requests and not srv.batch_requests and not srv.batches
    run, results = stored(again.stdout.split()[1])
    assert all(r.cache_hits == 1 for r in results) and "batches" not in run["stats"]
    assert run["stats"]["cost"]["usd"] == 0.0


def test_failed_lines_are_sample_errors_and_resume_resubmits_only_them(
        tmp_path: Path, workspace: Path) -> None:
    data = qa_file(tmp_path)
    bad = Rule(match=r"Say [24]\b", reply={"status": 400, "error": "content policy (fake)"})
    with FakeServer(rules=[bad]) as srv:
        p = cli(*args(data, srv))
        run_id = p.stdout.split()[1]
        run, results = stored(run_id)
        errors = {r.sample_id: r.error for r in results if r.error}
        assert set(errors) == {"q2", "q4"} and all("content policy" in e for e in errors.values())
        assert "HTTP 400" in errors["q2"]
        assert len([r for r in results if r.error is None]) == N - 2
        assert len(srv.batch_requests) == N and not srv.requests
        srv.rules.clear()
        r = cli("run", "qa", "--resume", run_id, "-q")
        assert r.returncode == 0, r.stderr
        resent = [last_user_text(b) for b in srv.batch_requests[N:]]
    assert sorted(t.split()[1] for t in resent) == ["2", "4"]  # the others never again
    run, results = stored(run_id)
    assert run["status"] == "finished" and not any(r.error for r in results)
    assert len(run["stats"]["batches"]) == 2


@pytest.mark.parametrize("outcome", ["expired", "failed"])
def test_an_expired_or_failed_batch_leaves_errors_that_resume_sends_again(
        tmp_path: Path, workspace: Path, outcome: str) -> None:
    data = qa_file(tmp_path)
    with FakeServer() as srv:
        srv.batch_outcome = outcome
        p = cli(*args(data, srv))
        run_id = p.stdout.split()[1] if p.stdout.startswith("run ") else None
        assert run_id, p.stderr
        run, results = stored(run_id)
        failed = [r for r in results if r.error]
        if outcome == "expired":  # the provider answered half before the window closed
            assert len(failed) == N - N // 2
            assert all("batch_expired" in r.error for r in failed)
        else:  # nothing answered: each sample says why
            assert len(failed) == N and all("failed" in r.error for r in failed)
            assert run["status"] == "failed"
        answered = {r.sample_id for r in results if r.error is None}
        srv.batch_outcome = "completed"
        first = len(srv.batch_requests)
        r = cli("run", "qa", "--resume", run_id, "-q")
        assert r.returncode == 0, r.stderr
        resent = {last_user_text(b).split()[1] for b in srv.batch_requests[first:]}
    assert not resent & {s[1:] for s in answered}
    run, results = stored(run_id)
    assert run["status"] == "finished" and not any(r.error for r in results)


def test_a_batch_cancelled_at_the_provider(tmp_path: Path, workspace: Path) -> None:
    data = qa_file(tmp_path)
    with FakeServer(batch_polls=10**9) as srv:
        proc = start(*args(data, srv))
        wait_for("the batch is submitted",
                 lambda: bool(batches_stored(workspace / "assay.db")), proc)
        batch_id = batches_stored(workspace / "assay.db")[0]["id"]

        async def cancel() -> None:
            client = BatchClient(srv.base_url, "sk-t")
            try:
                await client.cancel(batch_id)
            finally:
                await client.aclose()
        asyncio.run(cancel())
        out, err = proc.communicate(timeout=600)
        run_id = out.split()[1]
        run, results = stored(run_id)
        assert all(r.error and "batch_cancelled" in r.error for r in results), err
        assert len(results) == N and run["status"] == "failed"
        srv.batch_polls = 0
        r = cli("run", "qa", "--resume", run_id, "-q")
        assert r.returncode == 0, r.stderr
    run, results = stored(run_id)
    assert run["status"] == "finished" and all(r.error is None for r in results)


def test_batch_is_refused_in_one_line_where_it_cannot_work(tmp_path: Path,
                                                           workspace: Path) -> None:
    data = qa_file(tmp_path)
    for extra, said in ((["--model", "local"], "--batch needs a model served with a Batch API"),
                        (["--model", "openai/m", "--no-cache"], "leave out --executor ray and "
                         "--no-cache")):
        p = cli("run", "qa", "--data", str(data), "--batch", "-q", *extra)
        assert p.returncode == 2 and said in p.stderr, p.stderr
        assert len(p.stderr.strip().splitlines()) == 1
    assert not (workspace / "assay.db").exists() or not Store().list_runs(5)
