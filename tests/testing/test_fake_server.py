"""Real-HTTP tests for the OpenAI-compatible fake server."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import aiohttp
import openai
import pytest

from assay.testing import FakeServer, FaultPlan, Rule
from assay.testing.pytest_plugin import *  # noqa: F403  (fake_server, fake_server_subprocess)

USER = "user"


def client(srv_or_url: FakeServer | str, **kw: object) -> openai.AsyncOpenAI:
    """A real openai SDK client with retries disabled."""
    url = srv_or_url if isinstance(srv_or_url, str) else srv_or_url.base_url
    kw.setdefault("api_key", "x")
    return openai.AsyncOpenAI(base_url=url, max_retries=0, **kw)  # type: ignore[arg-type]


async def ask(c: openai.AsyncOpenAI, text: str, model: str = "m", **kw: object):
    return await c.chat.completions.create(
        model=model,
        messages=[{"role": USER, "content": text}],
        **kw,  # type: ignore[arg-type]
    )


async def post(url: str, body: dict, headers: dict | None = None) -> tuple[int, dict, bytes]:
    async with aiohttp.ClientSession() as s:
        async with s.post(f"{url}/chat/completions", json=body, headers=headers) as r:
            return r.status, dict(r.headers), await r.read()


def body(text: str) -> dict:
    return {"model": "m", "messages": [{"role": USER, "content": text}]}


async def test_rules_group_expansion_and_echo_default(fake_server):
    srv = fake_server(
        rules=[
            Rule(r"capital of (\w+)", r"The capital of \1 is X."),
            Rule(r"capital", "never reached"),
        ]
    )
    async with client(srv) as c:
        r = await ask(c, "What is the capital of France?", model="my-model")
        assert r.choices[0].message.content == "The capital of France is X."
        assert r.choices[0].finish_reason == "stop"
        assert r.model == "my-model" and r.object == "chat.completion"
        r = await ask(c, "hello there world")
        assert r.choices[0].message.content == "hello there world"
        assert (r.usage.prompt_tokens, r.usage.completion_tokens, r.usage.total_tokens) == (3, 3, 6)


async def test_default_reply_and_last_user_message_only(fake_server):
    srv = fake_server(rules=[Rule("yes", "matched")], default_reply="fallback")
    async with client(srv) as c:
        r = await c.chat.completions.create(
            model="m",
            messages=[
                {"role": "user", "content": "yes"},
                {"role": "assistant", "content": "ok"},
                {"role": "user", "content": "no"},
            ],
        )
        assert r.choices[0].message.content == "fallback"
        assert r.usage.prompt_tokens == 3


async def test_tool_calls_parsed_by_sdk(fake_server):
    reply = {
        "tool_calls": [
            {"name": "add", "arguments": {"a": 1, "b": 2}},
            {"name": "mul", "arguments": {"x": 3}},
        ]
    }
    srv = fake_server(rules=[Rule("add", reply)])
    async with client(srv) as c:
        r = await ask(c, "please add")
    msg = r.choices[0].message
    assert r.choices[0].finish_reason == "tool_calls"
    assert [tc.id for tc in msg.tool_calls] == ["call_0", "call_1"]
    assert msg.tool_calls[0].function.name == "add"
    assert json.loads(msg.tool_calls[0].function.arguments) == {"a": 1, "b": 2}
    assert msg.tool_calls[1].type == "function"


async def test_script_then_fallback_and_responder(fake_server):
    srv = fake_server(script=["first", {"content": "second"}], rules=[Rule(".*", "rule")])
    async with client(srv) as c:
        got = [(await ask(c, "q")).choices[0].message.content for _ in range(3)]
    assert got == ["first", "second", "rule"]
    srv2 = fake_server(responder=lambda b: f"n={len(b['messages'])}")
    async with client(srv2) as c:
        assert (await ask(c, "q")).choices[0].message.content == "n=1"


async def test_latency_applied(fake_server):
    srv = fake_server(latency=0.2)
    async with client(srv) as c:
        t0 = time.perf_counter()
        await ask(c, "hi")
        assert time.perf_counter() - t0 >= 0.2


async def test_fault_500_and_429(fake_server):
    srv = fake_server(faults=FaultPlan(rate=1.0, kinds={"500": 1}))
    status, _, raw = await post(srv.base_url, body("x"))
    assert status == 500 and "message" in json.loads(raw)["error"]
    async with client(srv) as c:
        with pytest.raises(openai.InternalServerError):
            await ask(c, "x")
    srv = fake_server(faults=FaultPlan(rate=1.0, kinds={"429": 1}, retry_after=2))
    status, headers, raw = await post(srv.base_url, body("x"))
    assert status == 429 and headers["Retry-After"] == "2"
    assert headers["retry-after-ms"] == "2000"
    assert json.loads(raw)["error"]["code"] == "rate_limit_exceeded"
    srv = fake_server(faults=FaultPlan(rate=1.0, kinds={"429": 1}, retry_after=0.5))
    _, headers, _ = await post(srv.base_url, body("x"))
    assert headers["Retry-After"] == "0.5"
    assert srv.stats["faults"]["429"] == 1 and srv.stats["completed"] == 0


async def test_fault_malformed_and_hang(fake_server):
    srv = fake_server(faults=FaultPlan(rate=1.0, kinds={"malformed": 1}))
    status, headers, raw = await post(srv.base_url, body("x"))
    assert status == 200 and headers["Content-Type"].startswith("application/json")
    with pytest.raises(ValueError):
        json.loads(raw)
    srv = fake_server(faults=FaultPlan(rate=1.0, kinds={"hang": 1}, hang_s=30))
    async with client(srv, timeout=0.3) as c:
        with pytest.raises(openai.APITimeoutError):  # the client gave up: no reply came
            await ask(c, "x")
    assert srv.stats["faults"]["hang"] == 1
    assert srv.stats["requests"] == 1 and srv.stats["completed"] == 0


async def test_fail_first_and_seeded_rate_are_deterministic(fake_server):
    srv = fake_server(faults=FaultPlan(fail_first=2, kinds={"500": 1}))
    seq = [(await post(srv.base_url, body(t)))[0] for t in ["a", "a", "b", "a", "b", "b"]]
    assert seq == [500, 500, 500, 200, 500, 200]
    runs = []
    for _ in range(2):
        s = fake_server(faults=FaultPlan(rate=0.5, kinds={"500": 1, "429": 1}, seed=7))
        runs.append([(await post(s.base_url, body(str(i))))[0] for i in range(20)])
    assert runs[0] == runs[1] and {500, 429, 200} <= set(runs[0])
    s.reset()
    assert [(await post(s.base_url, body(str(i))))[0] for i in range(20)] == runs[0]


async def test_api_key_stream_models_and_recording(fake_server):
    srv = fake_server(require_api_key="sk-test")
    async with client(srv, api_key="wrong") as c:
        with pytest.raises(openai.AuthenticationError):
            await ask(c, "x")
    assert (await post(srv.base_url, body("x")))[0] == 401
    async with client(srv, api_key="sk-test") as c:
        assert (await ask(c, "ok")).choices[0].message.content == "ok"
        assert [m.id for m in (await c.models.list()).data] == ["fake"]
    status, _, raw = await post(
        srv.base_url, {**body("s"), "stream": True}, {"Authorization": "Bearer sk-test"}
    )
    assert status == 400 and "error" in json.loads(raw)
    assert [r["messages"][0]["content"] for r in srv.requests] == ["x", "x", "ok", "s"]
    assert srv.stats["requests"] == 4 and srv.stats["completed"] == 1
    srv.reset()
    assert srv.requests == [] and srv.stats["requests"] == 0


async def test_async_context_manager_in_loop():
    async with FakeServer(rules=[Rule("ping", "pong")]) as srv:
        assert srv.base_url.startswith("http://127.0.0.1:")
        async with client(srv) as c:
            results = await asyncio.gather(*(ask(c, "ping") for _ in range(20)))
        assert {r.choices[0].message.content for r in results} == {"pong"}
    assert srv.stats["completed"] == 20


def test_sync_context_manager():
    with FakeServer() as srv:
        port = srv.port
        assert port > 0 and srv.base_url == f"http://127.0.0.1:{port}/v1"

        async def go() -> str:
            async with client(srv) as c:
                return (await ask(c, "sync")).choices[0].message.content

        assert asyncio.run(go()) == "sync"


async def test_subprocess_mode_ready_rules_and_log(fake_server_subprocess, tmp_path: Path):
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps([{"match": r"(\d+)\+(\d+)", "reply": r"sum \1 \2"}]))
    log = tmp_path / "req.jsonl"
    srv = fake_server_subprocess(
        "--latency", "0.01", "--rules", str(rules), "--log-requests", str(log)
    )
    assert srv.base_url.startswith("http://127.0.0.1:") and srv.base_url.endswith("/v1")
    async with client(srv.base_url) as c:
        assert (await ask(c, "2+3")).choices[0].message.content == "sum 2 3"
        assert (await ask(c, "echo me")).choices[0].message.content == "echo me"
    lines = log.read_text().splitlines()
    assert [json.loads(x)["messages"][0]["content"] for x in lines] == ["2+3", "echo me"]
    srv.stop()
    assert srv.proc.returncode == 0


async def test_subprocess_mode_faults(fake_server_subprocess):
    srv = fake_server_subprocess("--fault-rate", "1", "--fault-kinds", "429", "--retry-after", "3")
    status, headers, _ = await post(srv.base_url, body("x"))
    assert status == 429 and headers["Retry-After"] == "3"
