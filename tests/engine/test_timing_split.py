"""A sample's latency is split into the model's own time and the time its calls waited.

The embedded model runs one call at a time, so with many samples in flight most of a
sample's latency is queueing; reports must not present that as model speed. A model
reports its service time in ``Reply.latency_s``; the engine counts the rest as waiting.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3

from assay.core.types import Message, Reply, Usage
from assay.engine.runner import Engine, RunSpec
from assay.models.base import Subject
from assay.store.sqlite import Store


class QueueingModel:
    """Answers after ``hold_s`` but reports ``service_s`` as the model's own time."""

    model_id = "test/queueing"
    cacheable = False

    def __init__(self, hold_s: float, service_s: float) -> None:
        self.hold_s, self.service_s = hold_s, service_s

    async def generate(self, messages, **_):
        await asyncio.sleep(self.hold_s)
        return Reply(Message("assistant", "Answer: 4"), Usage(1, 1), self.service_s)


def test_model_time_and_waiting_are_stored_and_summarised(tmp_path) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps({"question": f"q{i}", "answer": "4"}) + "\n"
                            for i in range(3)))
    store = Store(tmp_path / "assay.db")
    spec = RunSpec(task="qa", model="test/queueing", task_options={"data": str(data)})
    run_id = asyncio.run(Engine(store, quiet=True).run(
        spec, subject=Subject(QueueingModel(hold_s=0.05, service_s=0.01))))
    results = store.results(run_id)
    assert [r.model_s for r in results] == [0.01, 0.01, 0.01]
    assert all(r.wait_s >= 0.04 and r.latency_s >= r.model_s + r.wait_s - 1e-9
               for r in results)
    from assay.tasks.qa import QATask

    m = QATask.metrics(results)
    assert m["mean_model_time_s"] == 0.01 and m["mean_wait_s"] >= 0.04
    store.close()


def test_a_store_from_before_the_split_is_upgraded_in_place(tmp_path) -> None:
    path = tmp_path / "assay.db"
    store = Store(path)
    run = store.create_run(task="qa", spec={}, model={}, dataset={}, package_version="t")
    store.record(run, ("a", 0, 0, '"q"', '"4"', "[]", "x", "x", "{}", None, 0.5, 1, 1, 1, 0,
                       None, 0.0))
    store.close()
    with sqlite3.connect(path) as con:  # what version 1 of the schema had
        con.execute("ALTER TABLE samples DROP COLUMN model_s")
        con.execute("ALTER TABLE samples DROP COLUMN wait_s")
    store = Store(path)
    (old,) = store.results(run)
    assert old.latency_s == 0.5 and old.model_s is None and old.wait_s is None
    store.record(run, ("b", 0, 1, '"q"', '"4"', "[]", "x", "x", "{}", None, 0.5, 1, 1, 1, 0,
                       None, 0.0, 0.2, 0.3))
    assert [(r.model_s, r.wait_s) for r in store.results(run)] == [(None, None), (0.2, 0.3)]
    store.close()


def test_rpm_spaces_the_starts_of_calls(workspace, tmp_path):
    """--rpm 150 allows one call start per 0.4 s, across samples run 8 at a time: six calls
    cannot end sooner than five intervals after the first starts. A lower bound on the
    monotonic clock (sleeps never end early), so a busy machine cannot fail it; without
    the limit the run takes a fraction of that."""
    import json
    import time

    import assay
    from assay.testing import FakeServer, Rule

    data = tmp_path / "q.jsonl"
    data.write_text("".join(json.dumps({"question": f"Repeat after me: w{i}",
                                        "answer": f"w{i}"}) + "\n" for i in range(6)))
    with FakeServer(rules=[Rule(r"Repeat after me: (\S+)", "Answer: \\1")]) as srv:
        started = time.monotonic()
        result = assay.evaluate("qa", model="openai/fake", base_url=srv.base_url,
                                data=str(data), max_connections=8, rpm=150, cache=False)
        elapsed = time.monotonic() - started
        assert len(srv.request_times) == 6
    assert result.metrics["normalized_match"]["successes"] == 6
    assert elapsed >= 5 * 0.4, elapsed
