"""The SQLite workspace store: WAL, runs, sample rows, the response cache, background writes."""

from __future__ import annotations

import dataclasses
import json
import os
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from assay.errors import RunNotFoundError
from assay.store.sqlite import Store, new_run_id, workspace_dir


def run_kwargs(**over):
    kw = dict(task="qa", spec={"task": "qa", "limit": 3},
              model={"model": "openai/fake", "base_url": "http://127.0.0.1:1/v1"},
              dataset={"source": "file", "content_hash": "abc"}, package_version="9.9.9")
    kw.update(over)
    return kw


def sample_row(sample_id: str, *, epoch: int = 0, seq: int = 0, output: str = "Answer: x",
               error: str | None = None, value: float = 1.0) -> tuple:
    """A row in the column order Store.record expects (after run_id)."""
    scores = {} if error else {"normalized": {"name": "normalized", "value": value,
                                              "answer": "x", "explanation": "",
                                              "metadata": {}}}
    return (
        sample_id, epoch, seq, json.dumps(f"question {sample_id}"), json.dumps("x"),
        json.dumps([{"role": "user", "content": f"question {sample_id}"},
                    {"role": "assistant", "content": output}]),
        "" if error else output, None if error else "x", json.dumps(scores), error,
        0.25, 10, 2, 1, 0, json.dumps({"source": f"d.jsonl:{seq + 1}"}), time.time(),
    )


@pytest.fixture
def store(tmp_path):
    s = Store(tmp_path / "ws" / "assay.db")
    yield s
    s.close()


def test_default_location_is_assay_home(workspace):
    assert workspace_dir() == workspace
    s = Store()
    try:
        assert s.path == workspace / "assay.db"
        assert s.path.is_file()
        assert s.runs_dir == workspace / "runs"
    finally:
        s.close()


def test_wal_mode_is_on(store):
    assert store._db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    other = sqlite3.connect(store.path)
    try:  # WAL is persistent: a plain connection sees it too
        assert other.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        other.close()


def test_run_ids_are_sortable_and_unique():
    ids = {new_run_id() for _ in range(50)}
    assert len(ids) == 50
    for i in ids:
        date, clock, rand = i.split("-")
        assert len(date) == 8 and len(clock) == 6 and len(rand) == 6


def test_create_get_and_update_status(store):
    rid = store.create_run(**run_kwargs())
    run = store.get_run(rid)
    assert run["id"] == rid and run["status"] == "running" and run["finished_at"] is None
    assert run["task"] == "qa"
    assert run["spec"] == {"task": "qa", "limit": 3}
    assert run["model"]["model"] == "openai/fake"
    assert run["dataset"]["content_hash"] == "abc"
    assert run["package_version"] == "9.9.9"
    # the owning process is recorded, so a run whose process died shows as interrupted
    assert run["stats"]["owner"]["host"] == socket.gethostname()
    assert run["stats"]["owner"]["pid"] == os.getpid()
    store.set_run_status(rid, "interrupted")
    assert store.get_run(rid)["status"] == "interrupted"
    assert store.get_run(rid)["finished_at"] is not None
    store.set_run_status(rid, "finished", {"samples": 3, "errors": 1})
    run = store.get_run(rid)
    assert run["status"] == "finished" and run["stats"] == {"samples": 3, "errors": 1}


def test_list_runs_newest_first_with_sample_counts(store):
    first = store.create_run(**run_kwargs(), run_id="20260101-000000-aaaaaa")
    time.sleep(0.01)
    second = store.create_run(**run_kwargs(task="other"), run_id="20260101-000001-bbbbbb")
    store.record(first, sample_row("s1"))
    store.record(first, sample_row("s2", seq=1))
    runs = store.list_runs()
    assert [r["id"] for r in runs] == [second, first]
    assert [r["samples"] for r in runs] == [0, 2]
    assert runs[0]["task"] == "other" and runs[1]["model"]["model"] == "openai/fake"
    assert [r["id"] for r in store.list_runs(limit=1)] == [second]


def test_prefix_lookup_and_ambiguous_prefix(store):
    a = store.create_run(**run_kwargs(), run_id="20260101-000000-aaaaaa")
    b = store.create_run(**run_kwargs(), run_id="20260101-000000-abbbbb")
    assert store.get_run("20260101-000000-aa")["id"] == a
    assert store.get_run("20260101-000000-ab")["id"] == b
    with pytest.raises(RunNotFoundError, match="ambiguous"):
        store.get_run("20260101-000000-a")


def test_exact_id_wins_over_longer_ids_sharing_the_prefix(store):
    short = store.create_run(**run_kwargs(), run_id="run1")
    store.create_run(**run_kwargs(), run_id="run10")
    assert store.get_run("run1")["id"] == short


def test_unknown_run(store):
    store.create_run(**run_kwargs(), run_id="20260101-000000-aaaaaa")
    with pytest.raises(RunNotFoundError) as e:
        store.get_run("nosuchrun")
    assert "'nosuchrun'" in str(e.value) and "assay list runs" in str(e.value)


@pytest.mark.parametrize("bad", ["", "%", "2026____-000000-aaaaaa", "20260101-000000-AAAAAA"])
def test_prefix_lookup_is_literal(store, bad):
    store.create_run(**run_kwargs(), run_id="20260101-000000-aaaaaa")
    with pytest.raises(RunNotFoundError):
        store.get_run(bad)


def test_record_and_results_round_trip_in_dataset_order(store):
    rid = store.create_run(**run_kwargs())
    store.record(rid, sample_row("b", seq=1, value=0.0))
    store.record(rid, sample_row("a", seq=0))
    store.record(rid, sample_row("c", seq=2, error="HTTP 400 from x: bad"))
    res = store.results(rid)
    assert [r.sample_id for r in res] == ["a", "b", "c"]
    a = res[0]
    assert a.run_id == rid and a.epoch == 0
    assert a.input == "question a" and a.target == "x" and a.output == "Answer: x"
    assert a.prediction == "x" and a.score_value() == 1.0 and a.error is None
    assert a.latency_s == 0.25 and (a.input_tokens, a.output_tokens) == (10, 2)
    assert a.transcript[-1] == {"role": "assistant", "content": "Answer: x"}
    assert a.metadata == {"source": "d.jsonl:1"}
    assert res[1].score_value() == 0.0
    assert res[2].error == "HTTP 400 from x: bad" and res[2].scores == {}
    totals = store.sample_totals(rid)
    assert totals == {"samples": 3, "errors": 1, "input_tokens": 30, "output_tokens": 6,
                      "model_calls": 3, "cache_hits": 0}


def test_result_lines_are_the_results_as_json(store):
    """results.jsonl copies the stored JSON instead of decoding it: every line must still
    be exactly the sample result (odd text, None fields, an error row, a second epoch)."""
    rid = store.create_run(**run_kwargs())
    odd = sample_row("é \"q\"\n|<b>", seq=0, output='line1\n"quoted" \u2028 ✓')
    store.record(rid, odd)
    store.record(rid, sample_row("e", seq=1, error="HTTP 500: {\"x\": 1}"))
    store.record(rid, (*sample_row("n", seq=2)[:3], None, None, None, "", None, None, None,
                       None, None, None, None, None, None, time.time(), 1.5, 0.125))
    store.record(rid, sample_row("e", seq=1, epoch=1, value=0.5))
    lines = list(store.iter_result_lines(rid))
    results = store.results(rid)
    assert len(lines) == len(results) == 4
    for line, r in zip(lines, results, strict=True):
        got = json.loads(line)
        want = {f.name: getattr(r, f.name) for f in dataclasses.fields(r) if f.name != "run_id"}
        assert got == want


def test_recording_the_same_sample_again_replaces_it(store):
    rid = store.create_run(**run_kwargs())
    store.record(rid, sample_row("a", error="timeout"))
    store.record(rid, sample_row("a"))
    res = store.results(rid)
    assert len(res) == 1 and res[0].error is None


def test_results_are_per_run(store):
    r1 = store.create_run(**run_kwargs())
    r2 = store.create_run(**run_kwargs())
    store.record(r1, sample_row("a"))
    assert store.results(r2) == []
    assert [r.sample_id for r in store.results(r1)] == ["a"]


def test_completed_keys_leave_errors_out_unless_asked(store):
    rid = store.create_run(**run_kwargs())
    store.record(rid, sample_row("ok", epoch=0))
    store.record(rid, sample_row("ok", epoch=1))
    store.record(rid, sample_row("bad", seq=1, error="HTTP 500"))
    assert store.completed_keys(rid) == {("ok", 0), ("ok", 1)}
    assert store.completed_keys(rid, include_errors=True) == {("ok", 0), ("ok", 1), ("bad", 0)}


def test_cache_put_get_and_clear(store):
    assert store.cache_get("k1") is None
    store.cache_put("k1", "openai/a", '{"reply": 1}')
    store.cache_put("k2", "openai/b", '{"reply": 2}')
    store.commit()
    assert store.cache_get("k1") == '{"reply": 1}'
    store.cache_put("k1", "openai/a", '{"reply": 3}')  # replace
    store.commit()
    assert store.cache_get("k1") == '{"reply": 3}'
    assert store.cache_clear("openai/a") == 1
    assert store.cache_get("k1") is None and store.cache_get("k2") == '{"reply": 2}'
    assert store.cache_clear() == 1
    assert store.cache_get("k2") is None


def test_cache_rows_ride_along_with_the_next_record(store):
    rid = store.create_run(**run_kwargs())
    store.cache_put("key", "m", "reply")
    store.record(rid, sample_row("a"))
    other = Store(store.path)
    try:
        assert other.cache_get("key") == "reply"
    finally:
        other.close()


def _count(path: Path, sql: str, *args) -> int:
    db = sqlite3.connect(path)
    try:
        return db.execute(sql, args).fetchone()[0]
    finally:
        db.close()


def test_background_writes_commit_everything_by_exit(store):
    rid = store.create_run(**run_kwargs())
    n = 200
    with store.background_writes():
        for i in range(n):
            store.cache_put(f"key{i}", "m", f"reply{i}")
            store.record(rid, sample_row(f"s{i}", seq=i))
        store.cache_put("last", "m", "tail")  # a cache row after the last sample row
    # a second, independent connection sees every row
    assert _count(store.path, "SELECT COUNT(*) FROM samples WHERE run_id = ?", rid) == n
    assert _count(store.path, "SELECT COUNT(*) FROM cache") == n + 1
    assert store.cache_get("last") == "tail"
    assert [r.sample_id for r in store.results(rid)] == [f"s{i}" for i in range(n)]


def test_background_writes_flush_makes_rows_visible_mid_block(store):
    rid = store.create_run(**run_kwargs())
    with store.background_writes():
        store.record(rid, sample_row("a"))
        store.flush()
        assert _count(store.path, "SELECT COUNT(*) FROM samples") == 1
        assert store.completed_keys(rid) == {("a", 0)}


def test_background_writes_commit_even_when_the_block_raises(store):
    rid = store.create_run(**run_kwargs())
    with pytest.raises(RuntimeError), store.background_writes():
        store.record(rid, sample_row("a"))
        store.record(rid, sample_row("b", seq=1))
        raise RuntimeError("cancelled")
    assert _count(store.path, "SELECT COUNT(*) FROM samples WHERE run_id = ?", rid) == 2
    # writes after the block go straight to the main connection again
    store.record(rid, sample_row("c", seq=2))
    assert len(store.results(rid)) == 3


def test_two_handles_on_one_file_see_each_other(tmp_path):
    path = tmp_path / "shared.db"
    a, b = Store(path), Store(path)
    try:
        rid = a.create_run(**run_kwargs())
        assert b.get_run(rid)["status"] == "running"
        with a.background_writes():
            a.record(rid, sample_row("x"))
        assert [r.sample_id for r in b.results(rid)] == ["x"]
        b.set_run_status(rid, "finished", {"samples": 1})
        assert a.get_run(rid)["status"] == "finished"
        assert [r["id"] for r in b.list_runs()] == [rid]
    finally:
        a.close()
        b.close()
    reopened = Store(path)
    try:
        assert reopened.get_run(rid)["stats"] == {"samples": 1}
        assert len(reopened.results(rid)) == 1
    finally:
        reopened.close()


def test_a_running_run_whose_process_is_gone_lists_as_interrupted_and_resumable(store):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    rid = store.create_run(**run_kwargs())
    store._db.execute("UPDATE runs SET stats=? WHERE id=?",
                      (json.dumps({"owner": {"host": socket.gethostname(), "pid": dead.pid}}), rid))
    store._db.commit()
    (run,) = store.list_runs()
    assert run["status"] == "interrupted" and run["resumable"]
    assert store.get_run(rid)["status"] == "interrupted"
    # a live pid with another start time is another process that reused the pid
    store._db.execute("UPDATE runs SET stats=? WHERE id=?", (json.dumps({"owner": {
        "host": socket.gethostname(), "pid": os.getpid(), "start": 1}}), rid))
    store._db.commit()
    assert store.get_run(rid)["status"] == "interrupted"
    # while its process lives, it is running and not offered for resume
    store.set_run_status(rid, "running")
    (run,) = store.list_runs()
    assert run["status"] == "running" and not run["resumable"]


def test_unknown_status_is_refused(store):
    rid = store.create_run(**run_kwargs())
    with pytest.raises(ValueError):
        store.set_run_status(rid, "done")
