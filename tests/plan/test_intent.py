"""Step 1: the request structured by the rules and by a planner model."""

from __future__ import annotations

from typing import Any

import pytest

from assay.plan.intent import parse_rules
from assay.plan.intent_model import intent_schema, parse_with_model


@pytest.mark.parametrize(("request_text", "budget"), [
    ("evaluate math, 0 datasets from the hub", {"hub": 0}),
    ("evaluate math with no hub datasets", {"hub": 0}),
    ("math only, hub quota 0, gallery quota 0", {"hub": 0, "gallery": 0}),
    ("math, zero tasks from the gallery", {"gallery": 0}),
    ("evaluate on 0 samples", {"limit": 0}),
    ("at most 3 benchmarks, 25 questions each, 1 from the hub",
     {"max_tasks": 3, "limit": 25, "hub": 1}),
    ("two benchmarks about code", {"max_tasks": 2}),
    ("Run MATH-500 only, nothing else", {"gallery": 0}),
    ("evaluate code", {}),
])
def test_stated_quotas_are_taken_exactly_zero_included(request_text: str,
                                                      budget: dict[str, int]) -> None:
    got = parse_rules(request_text).intent.budget.model_dump()
    assert {k: v for k, v in got.items() if v is not None} == budget


def test_each_quota_has_its_words_as_the_reason() -> None:
    result = parse_rules("math, 0 datasets from the hub, 10 samples")
    assert result.reasons["budget.hub"] == "stated in the request: '0 datasets from the hub'"
    assert result.reasons["budget.limit"] == "stated in the request: '10 samples'"


@pytest.mark.parametrize(("text", "named"), [
    ("Run GSM8K and MMLU", ["gsm8k", "mmlu"]),
    ("run BoolQ and SQuAD", ["boolq", "squad"]),
    ("the MATH benchmark and gsm-8k", ["gsm8k", "math"]),
    ("grade school math word problems", ["gsm8k"]),  # an alias of gsm8k
    ("do some math and drop the easy ones", []),      # words, not benchmark names
    ("Math skills", []),
    ("science like ARC", ["arc_challenge"]),            # the gallery's alias
    ("biology with LAB-Bench", ["lab_bench_dbqa", "lab_bench_protocolqa"]),  # a family
])
def test_named_benchmarks(text: str, named: list[str]) -> None:
    assert sorted(parse_rules(text).intent.benchmarks) == sorted(named)


def test_an_unknown_name_is_reported_with_the_closest_gallery_names() -> None:
    intent = parse_rules("evaluate on TruthfulQA, HumanEvl and GSM8K").intent
    assert intent.benchmarks == ["gsm8k"]
    unknown = {u["name"]: u["closest"] for u in intent.unknown_benchmarks}
    assert set(unknown) == {"TruthfulQA", "HumanEvl"}
    assert "humaneval" in unknown["HumanEvl"]


@pytest.mark.parametrize(("text", "languages"), [
    ("math in Chinese too", ["en", "zh"]),
    ("math, Chinese only", ["zh"]),
    # written in Chinese, asking for no language: the request's language is not the
    # benchmarks' (issue 40)
    ("我的模型数学怎么样", ["en"]),
    ("测一下模型的中文数学能力", ["zh"]),
    ("math", ["en"]),
    ("multilingual reading", ["en", "multi"]),
])
def test_languages(text: str, languages: list[str]) -> None:
    assert parse_rules(text).intent.languages == languages


@pytest.mark.parametrize(("text", "agent"), [
    ("evaluate my agent's tool calling", True),
    ("plain text only, no tools: math", False),
    ("reading comprehension", None),
])
def test_agent_or_text(text: str, agent: bool | None) -> None:
    assert parse_rules(text).intent.agent is agent


def test_a_planner_reply_adds_domains_but_never_names_quotas_or_languages() -> None:
    calls: list[tuple[str, dict[str, Any]]] = []

    def ask(prompt: str, schema: dict[str, Any]) -> dict[str, Any]:
        calls.append((prompt, schema))
        return {"domains": ["math", "reasoning"], "languages": ["en", "zh"], "agent": False,
                "special_requests": ["use a judge"]}

    result = parse_with_model("how good is it at the things I care about, 0 from the hub", ask)
    assert calls and calls[0][1] == intent_schema()
    intent = result.intent
    assert intent.domains == ["math", "reasoning"]  # the request's words gave none
    assert intent.languages == ["en"]  # the request names no language: a guess is not taken
    assert "also suggested zh (not taken" in result.reasons["languages"]
    assert intent.budget.hub == 0 and intent.budget.max_tasks is None
    assert intent.special_requests == ["use a judge"]
    assert result.model_calls[0]["accepted"] is True
    # where the words give domains (or name a benchmark), the planner's are suggestions
    worded = parse_with_model("grade-school math", ask)
    assert worded.intent.domains == ["math"]
    assert "also suggested reasoning (not taken" in worded.reasons["domains"]


@pytest.mark.parametrize("reply", [None, {"domains": ["astrology"], "languages": [],
                                          "agent": True, "special_requests": []},
                                   {"domains": "math"}, ["math"]])
def test_a_planner_reply_outside_the_schema_keeps_the_rules(reply: Any) -> None:
    result = parse_with_model("tool calling", lambda _p, _s: reply)
    assert result.intent == parse_rules("tool calling").intent
    assert result.model_calls[0]["accepted"] is False
    assert "rules kept" in result.reasons["model"]


def test_a_planner_model_over_http_is_asked_once_per_request_then_cached(
        fake_server: Any, tmp_path: Any) -> None:
    import json

    from assay.plan.planner import Settings, plan_request
    from assay.plan.schema import read_plan
    from assay.store.sqlite import Store

    reply = {"domains": ["reasoning"], "languages": ["en"], "agent": False,
             "special_requests": ["a judge"]}
    server = fake_server(default_reply=json.dumps(reply))
    store = Store()
    try:
        def make(name: str) -> Any:
            return read_plan(plan_request(
                store, "how good is it at the things I care about",
                Settings(output=str(tmp_path / name), planner="openai/planner",
                         base_url=server.base_url),
                prompt=lambda _t: None, echo=lambda _t: None, yes=True))

        first = make("a.yaml")
        assert len(server.requests) == 1
        body = server.requests[0]
        assert body["model"] == "planner"
        assert body["response_format"]["json_schema"]["schema"] == intent_schema()
        second = make("b.yaml")
    finally:
        store.close()
    assert len(server.requests) == 1, "the same request is answered from the cache"
    for plan in (first, second):
        assert plan.intent.domains == ["reasoning"] and plan.intent.agent is False
        step = plan.trace[0]
        assert step["model_calls"][0]["accepted"] is True
    assert "cached" not in first.trace[0]["raw_model_calls"][0]
    assert second.trace[0]["raw_model_calls"][0]["cached"] is True
    # the planner's tokens as the server counted them, and its cost (here self-hosted: free)
    asked = first.trace[0]["raw_model_calls"][0]
    assert (asked["input_tokens"], asked["output_tokens"]) == (
        server.usages[0]["prompt_tokens"], server.usages[0]["completion_tokens"])
    assert asked["cost_usd"] == 0.0 and "cost_usd" not in second.trace[0]["raw_model_calls"][0]


def test_domains_the_planner_guessed_let_the_request_lead_retrieval(
        fake_server: Any, tmp_path: Any) -> None:
    import json

    from assay.plan.planner import Settings, plan_request
    from assay.plan.schema import read_plan
    from assay.store.sqlite import Store

    reply = {"domains": ["math"], "languages": ["en"], "agent": False, "special_requests": []}
    server = fake_server(default_reply=json.dumps(reply))
    store = Store()
    try:
        plan = read_plan(plan_request(
            store, "social intelligence and emotional understanding",
            Settings(output=str(tmp_path / "p.yaml"), planner="openai/planner",
                     base_url=server.base_url),
            prompt=lambda _t: None, echo=lambda _t: None, yes=True))
    finally:
        store.close()
    assert plan.trace[0]["domains_from"] == "planner" and plan.intent.domains == ["math"]
    select = next(s for s in plan.trace if s["step"] == "select")
    assert select["candidates"][0]["name"] == "social_iqa"
