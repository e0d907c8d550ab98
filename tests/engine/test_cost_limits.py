"""A run's budget and a reasoning model's replies, end to end through the real CLI (a
subprocess) over real HTTP to the fake server: --cost-limit stops new samples, in-flight
ones finish, --resume with a higher limit finishes the run re-sending nothing committed;
a price unknown is said, never $0; reasoning is kept in the transcript and out of the
scored text, and a reply cut off inside it is an error, not a wrong answer."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from assay.core.types import Usage
from assay.errors import ConfigError
from assay.models.base import get_subject
from assay.models.openai_model import OpenAIModel, parse_completion, reasoning_params
from assay.models.pricing import Price, Pricer, load_pricing
from assay.store.sqlite import Store
from assay.testing import FakeServer
from assay.testing.fake_replies import last_user_text

QUESTIONS = [f"Question {i}: " + " ".join(["word"] * (i + 3)) + "?" for i in range(10)]


def qa_file(folder: Path, questions: list[str] | None = None,
            answers: list[str] | None = None) -> Path:
    path = folder / "qa.jsonl"
    qs = questions or QUESTIONS
    path.write_text("".join(json.dumps({"id": f"q{i}", "question": q,
                                        "answer": (answers or ["x"] * len(qs))[i]}) + "\n"
                            for i, q in enumerate(qs)), encoding="utf-8")
    return path


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "assay", *args], capture_output=True,
                          text=True, timeout=600,
                          env={**os.environ, "OPENAI_API_KEY": "sk-test", **(env or {})})


def prices(folder: Path, text: str = "openai/fake: {input: 1.0, output: 1.0}\n") -> Path:
    path = folder / "prices.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def the_run(run_id: str) -> tuple[dict[str, Any], list[Any]]:
    store = Store()
    try:
        return store.get_run(run_id), store.results(run_id)
    finally:
        store.close()


def sample_of(body: dict[str, Any]) -> int:
    return int(last_user_text(body).split("Question ")[1].split(":")[0])


def test_cost_limit_stops_new_samples_and_resume_finishes_sending_nothing_again(
        tmp_path: Path, workspace: Path) -> None:
    data = qa_file(tmp_path)
    with FakeServer() as srv:
        base = ["run", "qa", "--data", str(data), "--model", "openai/fake", "--base-url",
                srv.base_url, "--pricing", str(prices(tmp_path)), "-q", "--no-cache"]
        # one sample at a time: sample i starts only while the cost so far is under the limit
        p = cli(*base, "-c", "1", "--cost-limit", "0.00004")
        assert p.returncode == 0, p.stderr
        run_id = p.stdout.split()[1]
        first = [sample_of(b) for b in srv.requests]
        usages = list(srv.usages)
    spent = [(u["prompt_tokens"] + u["completion_tokens"]) / 1e6 for u in usages]
    # every sample started while the spend was under the limit, none after it
    for k in range(len(first)):
        assert sum(spent[:k]) < 0.00004
    assert sum(spent) >= 0.00004 and len(first) < len(QUESTIONS)
    run, results = the_run(run_id)
    assert run["status"] == "interrupted" and "cost limit reached" in run["stats"]["stopped"]
    assert sorted(int(r.sample_id[1:]) for r in results) == sorted(first)
    assert run["stats"]["cost"]["usd"] == pytest.approx(sum(spent), rel=1e-9)
    assert "stopped: cost limit reached" in p.stdout and f"--resume {run_id}" in p.stdout

    with FakeServer() as srv:
        r = cli("run", "qa", "--resume", run_id, "--base-url", srv.base_url,
                "--cost-limit", "1", "-q")
        assert r.returncode == 0, r.stderr
        again = [sample_of(b) for b in srv.requests]
        more = [(u["prompt_tokens"] + u["completion_tokens"]) / 1e6 for u in srv.usages]
    assert not set(again) & set(first)  # 0 committed samples re-sent
    assert sorted(first + again) == list(range(len(QUESTIONS)))
    run, results = the_run(run_id)
    assert run["status"] == "finished" and "stopped" not in run["stats"]
    assert run["stats"]["cost"]["usd"] == pytest.approx(sum(spent) + sum(more), rel=1e-9)


def test_the_overshoot_is_the_in_flight_samples_only(tmp_path: Path, workspace: Path) -> None:
    data = qa_file(tmp_path)
    limit, conns = 0.00003, 3
    with FakeServer() as srv:
        p = cli("run", "qa", "--data", str(data), "--model", "openai/fake", "--base-url",
                srv.base_url, "--pricing", str(prices(tmp_path)), "-q", "--no-cache",
                "-c", str(conns), "--cost-limit", str(limit))
        assert p.returncode == 0, p.stderr
        spent = [(u["prompt_tokens"] + u["completion_tokens"]) / 1e6 for u in srv.usages]
    run, _ = the_run(p.stdout.split()[1])
    assert run["status"] == "interrupted" and len(spent) < len(QUESTIONS)
    # what went past the limit is at most the samples that were running when it was crossed
    assert sum(spent) - limit < conns * max(spent)


def test_token_and_time_limits_and_a_price_unknown(tmp_path: Path, workspace: Path) -> None:
    data = qa_file(tmp_path)
    with FakeServer() as srv:
        common = ["run", "qa", "--data", str(data), "--model", "openai/fake", "--base-url",
                  srv.base_url, "-q", "--no-cache", "-c", "1"]
        p = cli(*common, "--token-limit", "30")
        run, results = the_run(p.stdout.split()[1])
        assert "token limit reached" in run["stats"]["stopped"] and len(results) < 10
        # the fake server here is self-hosted (127.0.0.1): free unless priced
        assert run["stats"]["cost"]["usd"] == 0.0 and "cost $0" in p.stdout
        p = cli(*common, "--time-limit", "0.000001")
        run, results = the_run(p.stdout.split()[1])
        assert "time limit reached" in run["stats"]["stopped"] and len(results) == 0
    # a Python agent: nobody knows what it pays for
    (tmp_path / "agentmod.py").write_text(
        "class A:\n    def run(self, prompt):\n        return 'x'\n\n"
        "def make():\n    return A()\n", encoding="utf-8")
    env = {"PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    p = cli("run", "qa", "--data", str(data), "--model", "python/agentmod:make", "-q",
            "--limit", "2", env=env)
    assert p.returncode == 0, p.stderr
    run, _ = the_run(p.stdout.split()[1])
    assert run["stats"]["cost"]["usd"] is None
    assert "cost unknown (" in p.stdout
    assert "no price for python/agentmod:make; give one with --pricing FILE" in p.stdout
    refused = cli("run", "qa", "--data", str(data), "--model", "python/agentmod:make", "-q",
                  "--cost-limit", "1", env=env)
    assert refused.returncode == 2
    assert "--cost-limit needs a price for python/agentmod:make" in refused.stderr


def test_reasoning_is_kept_apart_and_a_reply_cut_off_in_it_is_an_error(
        tmp_path: Path, workspace: Path) -> None:
    replies = {
        0: "<think>two and two make four</think>\n4",
        1: {"content": "Paris", "reasoning_content": "France's capital is Paris"},
        2: {"content": "", "reasoning_content": "so very long a thought",
            "finish_reason": "length"},
        3: "<think>still thinking when the tokens ran out",
        4: "<reason>custom markers</reason>blue",
    }
    data = qa_file(tmp_path, [f"Question {i}: q?" for i in range(5)],
                   ["4", "Paris", "x", "x", "blue"])
    with FakeServer(responder=lambda body: replies[sample_of(body)]) as srv:
        p = cli("run", "qa", "--data", str(data), "--model", "openai/fake", "--base-url",
                srv.base_url, "-q", "-c", "1", "--reasoning-effort", "high",
                "--reasoning-tags",
                "<think>", "</think>", "--reasoning-tags", "<reason>", "</reason>")
        assert p.returncode == 0, p.stderr
        assert all(b["reasoning_effort"] == "high" for b in srv.requests)
        said = {sample_of(b): u["completion_tokens_details"]["reasoning_tokens"]
                for b, u in zip(srv.requests, srv.usages, strict=True)}
    run, results = the_run(p.stdout.split()[1])
    by = {int(r.sample_id[1:]): r for r in results}
    for i, thought in ((0, "two and two make four"), (1, "France's capital is Paris"),
                       (4, "custom markers")):
        assert by[i].error is None and by[i].prediction is not None and next(
            iter(by[i].scores.values()))["value"] == 1.0, i
        assert "<think>" not in by[i].output and "<reason>" not in by[i].output
        assert by[i].transcript[-1]["reasoning"] == thought
    for i in (2, 3):
        assert by[i].error and "truncated inside its reasoning" in by[i].error
        assert not by[i].scores  # not scored as a wrong answer
    assert by[2].error.startswith("reply truncated inside its reasoning (5 reasoning tokens)")
    assert run["stats"]["cost"]["roles"]["subject"]["reasoning_tokens"] == sum(said.values())


def test_reasoning_params_as_each_provider_takes_them() -> None:
    assert reasoning_params("api.openai.com", "high", None) == {"reasoning_effort": "high"}
    assert reasoning_params("openrouter.ai", None, 2000) == {"reasoning": {"max_tokens": 2000}}
    assert reasoning_params("openrouter.ai", "low", None) == {"reasoning": {"effort": "low"}}
    assert reasoning_params("api.anthropic.com", None, 1024) == {
        "thinking": {"type": "enabled", "budget_tokens": 1024}}
    with pytest.raises(ConfigError, match="takes no reasoning-token budget"):
        reasoning_params("api.openai.com", None, 100)


def test_prices_from_genai_prices_a_file_and_the_batch_rate(tmp_path: Path) -> None:
    import genai_prices

    usage = Usage(1_000_000, 200_000, cached_input_tokens=400_000)
    official = Pricer(OpenAIModel("gpt-4o-mini", base_url="https://api.openai.com/v1"))
    expected = genai_prices.calc_price(
        genai_prices.Usage(input_tokens=1_000_000, cache_read_tokens=400_000,
                           output_tokens=200_000), model_ref="gpt-4o-mini",
        provider_id="openai")
    assert official.source == "genai-prices"
    assert official.cost(usage) == pytest.approx(float(expected.total_price))
    assert official.cost(Usage(1_000_000, 0), batch=True) == pytest.approx(
        official.cost(Usage(1_000_000, 0)) / 2)
    assert Pricer(OpenAIModel("x", base_url="http://10.0.0.5:8000/v1")).cost(usage) == 0
    unknown = OpenAIModel("no-such-model-anywhere", base_url="https://api.openai.com/v1")
    assert Pricer(unknown).cost(usage) is None and Pricer(unknown).source == "unknown"
    # an agent driving a model, a pool of its endpoints: the model inside is priced
    assert Pricer(get_subject("agent/react?model=openai/gpt-4o-mini&tools=calculator",
                              base_url="https://api.openai.com/v1")).source == "genai-prices"
    assert Pricer(get_subject("openai/gpt-4o-mini", endpoints=[
        "https://api.openai.com/v1", "https://api.openai.com/v1/"])).source == "genai-prices"
    assert Pricer(get_subject("local")).source == "free"
    priced = load_pricing(prices(tmp_path, "openai/m: {input: 2, cached_input: 1, output: 8}\n"))
    assert priced == {"openai/m": Price(2.0, 8.0, 1.0)}
    # 600k at 2, 400k cached at 1, 200k out at 8; the batch at half of each
    mine = OpenAIModel("m", base_url="http://127.0.0.1:9/v1")
    assert Pricer(mine, priced).cost(usage) == pytest.approx(1.2 + 0.4 + 1.6)
    assert Pricer(mine, priced).cost(usage, batch=True) == pytest.approx(1.6)
    for bad, said in (("openai/m: {input: 1}\n", "needs 'input' and 'output'"),
                      ("openai/m: {input: 1, output: -1}\n", "output must be a number >= 0"),
                      ("openai/m: {input: 1, output: 1, extra: 1}\n", "unknown field 'extra'"),
                      ("- a list\n", "expected a mapping")):
        with pytest.raises(ConfigError, match=said):
            load_pricing(prices(tmp_path, bad))


def test_usage_fields_a_provider_leaves_out_stay_missing_never_zero() -> None:
    choice = {"message": {"role": "assistant", "content": "4"}, "finish_reason": "stop"}
    bare = parse_completion({"choices": [choice],
                             "usage": {"prompt_tokens": 7, "completion_tokens": 2}})
    assert bare.usage == Usage(7, 2, None, None) and bare.finish_reason == "stop"
    full = parse_completion({"choices": [choice], "usage": {
        "prompt_tokens": 7, "completion_tokens": 2,
        "prompt_tokens_details": {"cached_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 1}}})
    assert full.usage == Usage(7, 2, 0, 1)  # a reported 0 is a 0
    total = Usage()
    total.add(bare.usage)
    assert total.cached_input_tokens is None  # nothing reported: still missing
    total.add(full.usage)
    assert (total.input_tokens, total.cached_input_tokens, total.reasoning_tokens) == (14, 0, 1)
