"""The one judge helper (:mod:`assay.scoring.judge`) against a real HTTP judge: the fake
OpenAI-compatible server, asked through the OpenAI provider."""

from __future__ import annotations

import json
from typing import Any

import pytest

from assay.core.types import Message
from assay.models.openai_model import OpenAIModel
from assay.scoring.judge import (
    JUDGE_ROLE,
    ask,
    combine,
    is_judge_role,
    jury_of,
    jury_roles,
    poll,
    read_json,
)

SCHEMA = {"type": "object", "properties": {"label": {"type": "string"}},
          "required": ["label"], "additionalProperties": False}
RETRY = 'Not a verdict ({why}). Answer with {{"label": "..."}} only.'
QUESTION = [Message("system", "You label things."), Message("user", "Label: a cat.")]


def parse(text: str) -> tuple[str | None, str | None]:
    def build(obj: dict[str, Any]) -> tuple[str | None, str | None]:
        label = obj.get("label")
        return (label, None) if isinstance(label, str) and label else (None, "no label")
    return read_json(text, build, strict=True)


async def test_garbage_then_json_is_one_corrective_retry(fake_server) -> None:
    srv = fake_server(script=["I think it is an animal.", '{"label": "animal"}'])
    judge = OpenAIModel("judge-a", base_url=srv.base_url)
    try:
        vote = await ask(judge, QUESTION, parse, retry=RETRY, schema=SCHEMA,
                         params={"temperature": 0.0})
    finally:
        await judge.aclose()
    assert vote.value == "animal" and not vote.invalid and vote.attempts == 2
    assert vote.refused == ["not JSON: Expecting value at position 0"]
    first, second = srv.requests
    assert first["response_format"]["json_schema"]["schema"] == SCHEMA
    assert first["temperature"] == 0.0
    # the retry shows the judge its reply and says what was wrong
    assert second["messages"][:2] == first["messages"]
    assert second["messages"][2] == {"role": "assistant", "content": "I think it is an animal."}
    assert second["messages"][3]["content"].startswith("Not a verdict (not JSON:")


async def test_always_garbage_is_invalid_counted_and_never_scored(fake_server) -> None:
    srv = fake_server(default_reply="no idea")
    judge = OpenAIModel("judge-a", base_url=srv.base_url)
    try:
        votes = await poll([judge], QUESTION, parse, retry=RETRY, schema=SCHEMA, samples=3,
                           seed=10)
    finally:
        await judge.aclose()
    assert len(srv.requests) == 6  # three votes, each retried once, then given up
    assert all(v.invalid and v.attempts == 2 for v in votes)
    verdict = combine([v.value for v in votes])
    assert verdict.invalid and verdict.value is None
    assert verdict.valid == 0 and verdict.invalid_votes == 3
    # a mean over no valid vote is not a number either
    assert combine([None, None], rule="mean").value is None


async def test_three_samples_are_seeded_and_the_majority_decides(fake_server) -> None:
    def responder(body: dict[str, Any]) -> str:
        return json.dumps({"label": "dog" if body["seed"] == 11 else "cat"})

    srv = fake_server(responder=responder)
    judge = OpenAIModel("judge-a", base_url=srv.base_url)
    try:
        votes = await poll([judge], QUESTION, parse, retry=RETRY, schema=SCHEMA,
                           params={"temperature": 0.0, "max_tokens": 50}, samples=3, seed=10)
    finally:
        await judge.aclose()
    assert sorted(b["seed"] for b in srv.requests) == [10, 11, 12]
    assert {b["temperature"] for b in srv.requests} == {0.7}  # sampled votes can differ
    assert sorted(v.value for v in votes) == ["cat", "cat", "dog"]
    verdict = combine([v.value for v in votes])
    assert verdict.value == "cat" and verdict.agreement == pytest.approx(2 / 3)
    assert verdict.valid == 3 and verdict.invalid_votes == 0


async def test_a_jury_of_two_that_disagrees_reports_its_agreement(fake_server) -> None:
    srv = fake_server(responder=lambda body: json.dumps(
        {"label": "cat" if body["model"] == "judge-a" else "lion"}))

    class Ctx:  # what a task's score gets: roles by name
        roles: dict[str, Any]

    ctx = Ctx()
    names = jury_roles(["openai/judge-a", "openai/judge-b"])
    assert names == [("judge", "openai/judge-a"), ("judge_2", "openai/judge-b")]
    ctx.roles = {"examiner": None, **{name: OpenAIModel(m.split("/")[1], base_url=srv.base_url)
                                      for name, m in names}}
    jury = jury_of(ctx)
    try:
        votes = await poll(jury, QUESTION, parse, retry=RETRY, schema=SCHEMA)
    finally:
        for j in jury:
            await j.aclose()
    assert sorted(b["model"] for b in srv.requests) == ["judge-a", "judge-b"]
    assert [v.judge for v in votes] == ["openai/judge-a", "openai/judge-b"]
    split = combine([v.value for v in votes])
    assert split.invalid and split.why.startswith("a tie")  # 1 vs 1: no majority
    tied = combine([v.value for v in votes], tie="tie")
    assert tied.value == "tie" and tied.agreement == 0.5
    ratings = combine([8.0, 4.0], rule="mean")  # numbers: their mean, and the agreement
    assert ratings.value == 6.0 and ratings.agreement == 0.5
    three = combine(["cat", "lion", "cat"])
    assert three.value == "cat" and three.agreement == pytest.approx(2 / 3)


def test_jury_role_names() -> None:
    assert JUDGE_ROLE == "judge" and is_judge_role("judge") and is_judge_role("judge_12")
    assert not is_judge_role("judge_1") and not is_judge_role("examiner")
    assert not is_judge_role("judge_x")


@pytest.mark.parametrize(("text", "strict", "value", "why"), [
    ('{"label": "a"}', True, "a", None),
    ('```json\n{"label": "a"}\n```', True, "a", None),
    ('Sure: {"label": "a"}', True, None, "not JSON: Expecting value at position 0"),
    ('Sure: {"label": "a"}', False, "a", None),
    ('["label"]', True, None, "a JSON list, not an object"),
    ("", False, None, "empty reply"),
    ('{"label": ""}', False, None, "no label"),
])
def test_read_json_strict_and_tolerant(text: str, strict: bool, value: str | None,
                                       why: str | None) -> None:
    def build(obj: dict[str, Any]) -> tuple[str | None, str | None]:
        return (obj["label"], None) if obj.get("label") else (None, "no label")
    assert read_json(text, build, strict=strict) == (value, why)
