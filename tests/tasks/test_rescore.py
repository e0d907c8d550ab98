"""``assay score RUN``: stored outcomes scored again with no model calls; metrics once."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import assay
from assay.store.sqlite import Store
from assay.tasks.qa import QATask
from assay.testing import FakeServer, Rule


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "assay", *args], capture_output=True,
                          text=True, timeout=300)


def verdicts(store: Store, run_id: str) -> dict[tuple[str, int], tuple]:
    return {(r.sample_id, r.epoch): (r.error, r.prediction,
                                     {k: (v["value"], v["answer"], v["explanation"])
                                      for k, v in r.scores.items()})
            for r in store.results(run_id)}


def test_score_reproduces_every_qa_verdict_with_no_requests(workspace, tmp_path):
    data = tmp_path / "q.jsonl"
    rows = [{"id": f"q{i}", "question": f"Say {i}", "answer": ["The cat", "2", "x"][i % 3]}
            for i in range(12)]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    answers = {f"Say {i}": ["Answer: the cat.", "Answer: 2", "I think y"][i % 3]
               for i in range(12)}
    answers["Say 5"] = "x" * 5000  # past --max-reply-bytes: that sample is an error
    with FakeServer(responder=lambda body: answers[body["messages"][-1]["content"].split(
            "\n")[0]]) as srv:
        first = cli("run", "qa", "--data", str(data), "--model", "openai/fake", "--base-url",
                    srv.base_url, "--max-reply-bytes", "2000", "-q")
        assert first.returncode == 0, first.stderr
        parent = first.stdout.split()[1]
        sent = srv.stats["requests"]
        again = cli("score", parent)
        assert again.returncode == 0, again.stderr
        child = again.stdout.split()[1]
        lenient = cli("score", parent, "--scorer", "includes", "--no-report")
        assert lenient.returncode == 0, lenient.stderr
        assert srv.stats["requests"] == sent  # no model call at all
    assert "no call to the model under test" in again.stdout and "1 error," in again.stdout
    store = Store()
    try:
        before, after = verdicts(store, parent), verdicts(store, child)
        assert after == before and len(after) == 12
        assert before[("q5", 0)][0] is not None  # the failed sample stays an error
        run = store.get_run(child)
        assert run["parent_id"] == store.get_run(parent)["id"]
        assert (run["metrics"]["normalized_match"]
                == store.get_run(parent)["metrics"]["normalized_match"])
        # the stored options say which scorer the data implied, so a re-score uses it
        assert run["spec"]["task_options"]["scorer"] == "normalized_match"
        other = lenient.stdout.split()[1]
        assert store.get_run(other)["spec"]["task_options"]["scorer"] == "includes_match"
        changed = {k: v[2] for k, v in verdicts(store, other).items() if v[0] is None}
        assert {k: list(v) for k, v in changed.items()} == {
            k: ["includes_match"] for k in changed}
    finally:
        store.close()
    p = cli("score", parent, "--scorer", "nonsense")
    assert p.returncode == 2 and "nonsense" in p.stderr and len(p.stderr.splitlines()) == 1


def test_metrics_are_computed_once_per_run_and_reports_read_them(workspace, tmp_path,
                                                                  monkeypatch):
    data = tmp_path / "q.jsonl"
    data.write_text("".join(json.dumps({"question": f"Repeat after me: w{i}",
                                        "answer": f"w{i}"}) + "\n" for i in range(5)))
    calls = []
    real = QATask.metrics.__func__

    def counting(cls, results, options=None):
        calls.append(len(results))
        return real(cls, results, options)

    monkeypatch.setattr(QATask, "metrics", classmethod(counting))
    with FakeServer(rules=[Rule(r"Repeat after me: (\S+)", "Answer: \\1")]) as srv:
        result = assay.evaluate("qa", model="openai/fake", base_url=srv.base_url,
                                data=str(data))
    assert calls == [5]  # the run's end; the API result and the reports read the stored ones
    assert result.metrics["normalized_match"]["successes"] == 5
    from assay.reports.render import write_reports

    store = Store()
    try:
        write_reports(store, result.run_id)
        assert calls == [5]
        assert store.get_run(result.run_id)["metrics"] == result.metrics
    finally:
        store.close()


@pytest.mark.parametrize("epochs", [3])
def test_qa_epochs_are_clustered_by_sample(workspace, tmp_path, epochs):
    data = tmp_path / "q.jsonl"
    data.write_text("".join(json.dumps({"question": f"Repeat after me: w{i}",
                                        "answer": f"w{i}" if i % 2 else "no"}) + "\n"
                            for i in range(10)))
    with FakeServer(rules=[Rule(r"Repeat after me: (\S+)", "Answer: \\1")]) as srv:
        one = assay.evaluate("qa", model="openai/fake", base_url=srv.base_url,
                             data=str(data)).metrics["normalized_match"]
        many = assay.evaluate("qa", model="openai/fake", base_url=srv.base_url,
                              data=str(data), epochs=epochs,
                              cache=False).metrics["normalized_match"]
    assert many["value"] == one["value"] == 0.5
    assert many["n"] == 10 and many.get("clustered_by") == "sample"
    # identical epochs add no information: the interval is not narrower than one epoch's
    assert many["ci_high"] - many["ci_low"] >= (one["ci_high"] - one["ci_low"]) - 1e-9
