"""The engine against the fake OpenAI-compatible server over real HTTP."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from assay.engine.calls import RetryPolicy
from assay.engine.runner import Engine, RunSpec
from assay.errors import ConfigError
from assay.models.openai_model import OpenAIModel
from assay.store.sqlite import Store
from assay.testing.fake_server import FaultPlan, Rule

ECHO_RULES = [Rule(r"Repeat after me: (\S+)", "Answer: \\1")]


def write_repeat_data(path: Path, n: int) -> Path:
    """n samples whose right answer is the number the fake server repeats back."""
    with open(path, "w") as f:
        for i in range(n):
            f.write(json.dumps({"id": f"s{i}", "question": f"Repeat after me: {i}",
                                "answer": str(i)}) + "\n")
    return path


def spec_for(data: Path, base_url: str, **kw: Any) -> RunSpec:
    kw.setdefault("max_retries", 6)
    kw.setdefault("retry_initial", 0.02)
    return RunSpec(task="qa", model="openai/fake", base_url=base_url,
                   task_options={"data": str(data), "scorer": "exact"}, **kw)


def questions(requests: list[dict[str, Any]]) -> list[str]:
    """The "Repeat after me: i" line of each logged request body, in order."""
    return [r["messages"][-1]["content"].split("\n")[0] for r in requests]


def run(store: Store, spec: RunSpec, **kw: Any) -> str:
    return asyncio.run(Engine(store, quiet=True).run(spec, **kw))


@pytest.fixture
def store(workspace: Path) -> Store:
    s = Store()
    yield s
    s.close()


def test_run_scores_every_sample_and_records_usage(fake_server, store, tmp_path) -> None:
    srv = fake_server(rules=ECHO_RULES + [Rule(r"Repeat after me: 3", "Answer: wrong")])
    data = write_repeat_data(tmp_path / "d.jsonl", 10)
    run_id = run(store, spec_for(data, srv.base_url))
    results = store.results(run_id)
    assert [r.sample_id for r in results] == [f"s{i}" for i in range(10)]
    assert all(r.error is None for r in results)
    # rules are tried in order, so s3 still gets the right echo: every answer is right
    assert sum(r.score_value() for r in results) == 10
    assert all(r.input_tokens > 0 and r.output_tokens > 0 for r in results)
    assert all(r.latency_s > 0 for r in results)
    run_rec = store.get_run(run_id)
    assert run_rec["status"] == "finished"
    assert run_rec["dataset"]["content_hash"]
    assert run_rec["stats"]["model_calls"] == 10
    assert run_rec["model"] == {"model": "openai/fake", "base_url": srv.base_url}


def test_wrong_answers_are_wrong_not_errors(fake_server, store, tmp_path) -> None:
    srv = fake_server(rules=[Rule(r"Repeat after me: 3\b", "Answer: nope")] + ECHO_RULES)
    data = write_repeat_data(tmp_path / "d.jsonl", 5)
    results = store.results(run(store, spec_for(data, srv.base_url)))
    by_id = {r.sample_id: r for r in results}
    assert by_id["s3"].score_value() == 0.0 and by_id["s3"].error is None
    assert by_id["s3"].prediction == "nope"
    assert sum(r.score_value() for r in results) == 4


def test_twenty_percent_faults_every_sample_scored_or_error(fake_server, store, tmp_path) -> None:
    faults = FaultPlan(rate=0.2, kinds={"500": 1, "429": 1, "hang": 1, "malformed": 1},
                       retry_after=0.05, hang_s=5.0, seed=7)
    srv = fake_server(rules=ECHO_RULES, faults=faults, latency=0.01)
    data = write_repeat_data(tmp_path / "d.jsonl", 120)
    run_id = run(store, spec_for(data, srv.base_url, timeout=0.5, max_connections=40,
                                 max_retries=3))
    results = store.results(run_id)
    assert len(results) == 120
    assert len({r.sample_id for r in results}) == 120
    for r in results:
        assert (r.error is None and r.scores) or (r.error and not r.scores)
    injected = sum(srv.stats["faults"].values())
    assert injected >= 10, srv.stats  # the plan really did inject faults
    # retries recover nearly everything; what still fails is reported as an error
    scored = [r for r in results if r.error is None]
    assert len(scored) >= 110
    assert all(r.score_value() == 1.0 for r in scored)
    assert store.get_run(run_id)["status"] == "finished"


def test_retry_after_is_honoured(fake_server, store, tmp_path, monkeypatch) -> None:
    srv = fake_server(rules=ECHO_RULES, faults=FaultPlan(fail_first=1, kinds={"429": 1},
                                                         retry_after=1.0))
    waits: list[tuple[float | None, float]] = []
    real_wait = RetryPolicy.wait

    def wait(self: RetryPolicy, attempt: int, retry_after: float | None, rng: Any) -> float:
        waits.append((retry_after, real_wait(self, attempt, retry_after, rng)))
        return waits[-1][1]

    monkeypatch.setattr(RetryPolicy, "wait", wait)
    data = write_repeat_data(tmp_path / "d.jsonl", 1)
    results = store.results(run(store, spec_for(data, srv.base_url)))
    # the header's 1 s is read and waited, not the 0.01-0.02 s backoff of retry_initial
    assert waits == [(1.0, 1.0)]
    assert results[0].score_value() == 1.0
    assert srv.stats["requests"] == 2


def test_client_errors_are_not_retried_and_recorded_as_errors(fake_server, store,
                                                              tmp_path) -> None:
    srv = fake_server(rules=[Rule(r"Repeat after me: 1\b", {"status": 400,
                                                            "error": "context too long"})]
                      + ECHO_RULES)
    data = write_repeat_data(tmp_path / "d.jsonl", 3)
    run_id = run(store, spec_for(data, srv.base_url))
    by_id = {r.sample_id: r for r in store.results(run_id)}
    assert "HTTP 400" in by_id["s1"].error and "context too long" in by_id["s1"].error
    assert by_id["s1"].scores == {}
    assert srv.stats["requests"] == 3  # no retry of the 400
    assert store.get_run(run_id)["stats"]["errors"] == 1


def test_exhausted_retries_give_an_error_naming_attempts(fake_server, store, tmp_path) -> None:
    srv = fake_server(rules=ECHO_RULES, faults=FaultPlan(rate=1.0, kinds={"500": 1}))
    data = write_repeat_data(tmp_path / "d.jsonl", 2)
    results = store.results(run(store, spec_for(data, srv.base_url, max_retries=2)))
    assert all("HTTP 500" in r.error and "3 attempts" in r.error for r in results)
    assert srv.stats["requests"] == 6


def test_hang_times_out_then_retry_succeeds(fake_server, store, tmp_path) -> None:
    srv = fake_server(rules=ECHO_RULES, faults=FaultPlan(fail_first=1, kinds={"hang": 1},
                                                         hang_s=10))
    data = write_repeat_data(tmp_path / "d.jsonl", 2)
    results = store.results(run(store, spec_for(data, srv.base_url, timeout=0.3)))
    assert [r.score_value() for r in results] == [1.0, 1.0]
    assert srv.stats["requests"] == 4


def test_malformed_json_is_retried(fake_server, store, tmp_path) -> None:
    srv = fake_server(rules=ECHO_RULES, faults=FaultPlan(fail_first=2, kinds={"malformed": 1}))
    data = write_repeat_data(tmp_path / "d.jsonl", 2)
    results = store.results(run(store, spec_for(data, srv.base_url)))
    assert [r.score_value() for r in results] == [1.0, 1.0]
    assert srv.stats["requests"] == 6


def test_second_identical_run_hits_cache_for_every_call(fake_server, store, tmp_path) -> None:
    srv = fake_server(rules=ECHO_RULES)
    data = write_repeat_data(tmp_path / "d.jsonl", 8)
    first = run(store, spec_for(data, srv.base_url))
    assert srv.stats["requests"] == 8
    second = run(store, spec_for(data, srv.base_url))
    assert srv.stats["requests"] == 8  # nothing new reached the server
    stats = store.get_run(second)["stats"]
    assert stats["cache_hits"] == stats["model_calls"] == 8
    assert [r.output for r in store.results(second)] == [r.output for r in store.results(first)]
    # --no-cache goes to the server again
    run(store, spec_for(data, srv.base_url, cache=False))
    assert srv.stats["requests"] == 16


def test_cache_key_separates_params_and_epochs(fake_server, store, tmp_path) -> None:
    srv = fake_server(rules=ECHO_RULES)
    data = write_repeat_data(tmp_path / "d.jsonl", 3)
    run_id = run(store, spec_for(data, srv.base_url, epochs=2))
    assert len(store.results(run_id)) == 6
    assert srv.stats["requests"] == 6
    run(store, spec_for(data, srv.base_url, params={"temperature": 0.5}))
    assert srv.stats["requests"] == 9
    assert srv.requests[-1]["temperature"] == 0.5


def peak_tracker() -> tuple[dict[str, int], Any]:
    """A responder that holds each request briefly, and the most requests it held at once."""
    state = {"now": 0, "peak": 0}

    async def responder(body: dict[str, Any]) -> str:
        state["now"] += 1
        state["peak"] = max(state["peak"], state["now"])
        await asyncio.sleep(0.02)
        state["now"] -= 1
        return "Answer: x"

    return state, responder


def test_concurrency_is_bounded(fake_server, store, tmp_path) -> None:
    state, responder = peak_tracker()

    srv = fake_server(responder=responder)
    data = write_repeat_data(tmp_path / "d.jsonl", 30)
    run(store, spec_for(data, srv.base_url, max_connections=4))
    assert state["peak"] == 4


def test_limit_and_sample_ids(fake_server, store, tmp_path) -> None:
    srv = fake_server(rules=ECHO_RULES)
    data = write_repeat_data(tmp_path / "d.jsonl", 10)
    assert len(store.results(run(store, spec_for(data, srv.base_url, limit=3)))) == 3
    picked = run(store, spec_for(data, srv.base_url, sample_ids=["s7", "s2"]))
    assert sorted(r.sample_id for r in store.results(picked)) == ["s2", "s7"]
    with pytest.raises(ConfigError, match="unknown sample id"):
        run(store, spec_for(data, srv.base_url, sample_ids=["nope"]))


def test_sample_timeout_records_error(fake_server, store, tmp_path) -> None:
    srv = fake_server(rules=ECHO_RULES, latency=1.0)
    data = write_repeat_data(tmp_path / "d.jsonl", 2)
    results = store.results(run(store, spec_for(data, srv.base_url, sample_timeout=0.2)))
    assert all(r.error == "sample timed out after 0.2s" for r in results)


def test_seed_is_sent_and_recorded(fake_server, store, tmp_path) -> None:
    srv = fake_server(rules=ECHO_RULES)
    data = write_repeat_data(tmp_path / "d.jsonl", 1)
    run_id = run(store, spec_for(data, srv.base_url, seed=123))
    assert srv.requests[0]["seed"] == 123
    assert store.get_run(run_id)["spec"]["seed"] == 123


def test_resume_skips_finished_and_retries_errors(fake_server, store, tmp_path) -> None:
    # cache off: with it on, a re-sent finished sample would be answered from the cache
    # and never reach the server, so the request log could not show the re-send
    srv = fake_server(rules=[Rule(r"Repeat after me: 2\b", {"status": 400, "error": "bad"})]
                      + ECHO_RULES)
    data = write_repeat_data(tmp_path / "d.jsonl", 4)
    run_id = run(store, spec_for(data, srv.base_url, cache=False))
    assert sorted(questions(srv.requests)) == [f"Repeat after me: {i}" for i in range(4)]
    srv.rules = ECHO_RULES  # the endpoint is fixed; resume retries only the error
    assert run(store, None, resume=run_id) == run_id
    assert questions(srv.requests[4:]) == ["Repeat after me: 2"]  # finished ones not re-sent
    results = store.results(run_id)
    assert sorted(r.sample_id for r in results) == [f"s{i}" for i in range(4)]
    assert all(r.error is None for r in results)
    assert store.get_run(run_id)["stats"]["sessions"] == 2


def test_resume_refuses_a_changed_dataset(fake_server, store, tmp_path) -> None:
    srv = fake_server(rules=ECHO_RULES)
    data = write_repeat_data(tmp_path / "d.jsonl", 3)
    run_id = run(store, spec_for(data, srv.base_url))
    write_repeat_data(data, 4)
    with pytest.raises(ConfigError, match="dataset changed"):
        run(store, None, resume=run_id)


def test_unreachable_endpoint_fails_fast_with_one_line(store, tmp_path, monkeypatch) -> None:
    """Fails in the preflight: no model call is attempted, so nothing is retried."""
    calls: list[Any] = []
    real_generate, real_wait = OpenAIModel.generate, RetryPolicy.wait

    async def generate(self: OpenAIModel, *args: Any, **kwargs: Any) -> Any:
        calls.append("generate")
        return await real_generate(self, *args, **kwargs)

    def wait(self: RetryPolicy, *args: Any) -> float:
        calls.append("retry wait")
        return real_wait(self, *args)

    monkeypatch.setattr(OpenAIModel, "generate", generate)
    monkeypatch.setattr(RetryPolicy, "wait", wait)
    data = write_repeat_data(tmp_path / "d.jsonl", 3)
    with pytest.raises(ConfigError) as info:
        run(store, spec_for(data, "http://127.0.0.1:9/v1"))
    assert calls == []
    msg = str(info.value)
    assert "cannot reach model endpoint http://127.0.0.1:9/v1" in msg and "\n" not in msg
    assert store.list_runs() == []  # no half-made run left behind


def test_a_serial_model_runs_one_sample_at_a_time(fake_server, store, tmp_path) -> None:
    """A model that declares it answers one call at a time (the embedded one does) gets one
    sample at a time, so a multi-step sample keeps its prompt cache; --max-connections does
    not change that."""
    from assay.models.base import Subject
    from assay.models.registry import ModelCapabilities

    state, responder = peak_tracker()

    class Serial(OpenAIModel):
        capabilities = ModelCapabilities(one_call_at_a_time=True)

    srv = fake_server(responder=responder)
    data = write_repeat_data(tmp_path / "d.jsonl", 12)
    rid = run(store, spec_for(data, srv.base_url, max_connections=4),
              subject=Subject(Serial("fake", base_url=srv.base_url)))
    assert state["peak"] == 1 and len(store.results(rid)) == 12
