"""The openai/ provider speaks the chat-completions wire format over real HTTP."""

from __future__ import annotations

import pytest

from assay.core.types import Message, ToolCall, ToolSpec
from assay.errors import ConfigError, ModelCallError
from assay.models.base import get_subject, parse_model_spec
from assay.models.openai_model import OpenAIModel, parse_retry_after
from assay.testing.fake_server import FaultPlan

WEATHER = ToolSpec("get_weather", "Weather for a city",
                   {"type": "object", "properties": {"city": {"type": "string"}},
                    "required": ["city"]})


async def test_text_reply_usage_and_latency(fake_server) -> None:
    srv = fake_server(default_reply="Paris is the answer", latency=0.02)
    model = OpenAIModel("fake", base_url=srv.base_url, api_key="k")
    reply = await model.generate([Message("user", "capital of France?")], max_tokens=5)
    await model.aclose()
    assert reply.message.content == "Paris is the answer"
    assert reply.usage.input_tokens == 3 and reply.usage.output_tokens == 4
    assert reply.latency_s >= 0.02
    assert srv.requests[0]["max_tokens"] == 5


async def test_native_tool_calls_in_and_out(fake_server) -> None:
    srv = fake_server(default_reply={"tool_calls": [
        {"name": "get_weather", "arguments": {"city": "Paris"}}]})
    model = OpenAIModel("fake", base_url=srv.base_url)
    history = [
        Message("user", "weather?"),
        Message("assistant", None, [ToolCall("get_weather", {"city": "Rome"}, "call_9")]),
        Message("tool", "sunny", tool_call_id="call_9"),
        Message("user", "and Paris?"),
    ]
    reply = await model.generate(history, tools=[WEATHER])
    await model.aclose()
    assert reply.message.tool_calls == [ToolCall("get_weather", {"city": "Paris"}, "call_0")]
    sent = srv.requests[0]
    assert sent["tools"][0] == {"type": "function", "function": {
        "name": "get_weather", "description": "Weather for a city",
        "parameters": WEATHER.parameters}}
    assert sent["messages"][1]["tool_calls"][0]["function"] == {
        "name": "get_weather", "arguments": '{"city": "Rome"}'}
    assert sent["messages"][2] == {"role": "tool", "content": "sunny", "tool_call_id": "call_9"}


async def test_response_schema_is_sent_as_json_schema(fake_server) -> None:
    srv = fake_server(default_reply='{"answer": "x"}')
    model = OpenAIModel("fake", base_url=srv.base_url)
    schema = {"type": "object", "properties": {"answer": {"type": "string"}}}
    await model.generate([Message("user", "q")], response_schema=schema)
    await model.aclose()
    assert srv.requests[0]["response_format"]["json_schema"]["schema"] == schema


async def test_api_key_is_sent_as_bearer(fake_server) -> None:
    srv = fake_server(require_api_key="sk-abc")
    ok = OpenAIModel("fake", base_url=srv.base_url, api_key="sk-abc")
    assert (await ok.generate([Message("user", "hi")])).message.content == "hi"
    await ok.aclose()
    bad = OpenAIModel("fake", base_url=srv.base_url, api_key="wrong")
    with pytest.raises(ModelCallError) as info:
        await bad.generate([Message("user", "hi")])
    await bad.aclose()
    assert info.value.status == 401 and not info.value.transient


async def test_env_base_url_and_key(fake_server, monkeypatch) -> None:
    srv = fake_server(require_api_key="sk-env")
    monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    subject = get_subject("openai/fake")
    reply = await subject.session().generate([Message("user", "hello")])
    await subject.aclose()
    assert reply.message.content == "hello"
    assert "sk-env" not in str(subject.describe())


@pytest.mark.parametrize(("kind", "status", "retry_after"),
                         [("500", 500, None), ("429", 429, 2.0)])
async def test_transient_errors_are_classified(fake_server, kind, status, retry_after) -> None:
    srv = fake_server(faults=FaultPlan(rate=1.0, kinds={kind: 1}, retry_after=2.0))
    model = OpenAIModel("fake", base_url=srv.base_url)
    with pytest.raises(ModelCallError) as info:
        await model.generate([Message("user", "x")])
    await model.aclose()
    assert info.value.transient and info.value.status == status
    assert info.value.retry_after == retry_after


async def test_malformed_body_and_timeout_are_transient(fake_server) -> None:
    srv = fake_server(faults=FaultPlan(rate=1.0, kinds={"malformed": 1}))
    model = OpenAIModel("fake", base_url=srv.base_url)
    with pytest.raises(ModelCallError, match="malformed JSON") as info:
        await model.generate([Message("user", "x")])
    assert info.value.transient
    await model.aclose()
    hang = fake_server(faults=FaultPlan(rate=1.0, kinds={"hang": 1}, hang_s=5))
    slow = OpenAIModel("fake", base_url=hang.base_url, timeout=0.2)
    with pytest.raises(ModelCallError, match="timed out after 0.2s") as info:
        await slow.generate([Message("user", "x")])
    assert info.value.transient
    await slow.aclose()


async def test_preflight_names_the_endpoint() -> None:
    model = OpenAIModel("fake", base_url="http://127.0.0.1:9/v1")
    with pytest.raises(ConfigError, match=r"cannot reach model endpoint http://127\.0\.0\.1:9/v1"):
        await model.preflight()


def test_retry_after_parsing() -> None:
    assert parse_retry_after({"retry-after-ms": "1500"}) == 1.5
    assert parse_retry_after({"retry-after": "3"}) == 3.0
    assert parse_retry_after({}) is None
    date = parse_retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"})
    assert date == 0.0  # in the past: no wait


@pytest.mark.parametrize("spec", ["foo/bar", "openai", "openai/", "gpt-4", ""])
def test_bad_model_specs(spec: str) -> None:
    from assay.errors import ModelSpecError

    with pytest.raises(ModelSpecError, match="unknown model spec"):
        parse_model_spec(spec)


@pytest.mark.parametrize("declared", [True, False])
async def test_reply_past_the_cap_is_refused_with_or_without_content_length(declared) -> None:
    """A streamed (chunked) body is cut off at the cap too, not read whole into memory."""
    import json

    from aiohttp import web

    body = json.dumps({"choices": [{"message": {"role": "assistant",
                                                "content": "x" * 3_000_000}}]}).encode()
    sent = []

    async def handler(request: web.Request) -> web.StreamResponse:
        if declared:
            return web.Response(body=body, content_type="application/json")
        resp = web.StreamResponse(headers={"Content-Type": "application/json"})
        resp.enable_chunked_encoding()
        await resp.prepare(request)
        try:
            for i in range(0, len(body), 1 << 16):
                await resp.write(body[i:i + (1 << 16)])
                sent.append(1)
        except (ConnectionError, RuntimeError):
            pass  # the client hung up at the cap
        return resp

    app = web.Application()
    app.router.add_post("/v1/chat/completions", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    model = OpenAIModel("m", base_url=f"http://127.0.0.1:{port}/v1", max_reply_bytes=200_000)
    try:
        with pytest.raises(ModelCallError, match="too large.*--max-reply-bytes") as e:
            await model.generate([Message("user", "hi")])
        assert not e.value.transient
        small = OpenAIModel("m", base_url=f"http://127.0.0.1:{port}/v1",
                            max_reply_bytes=10_000_000)
        reply = await small.generate([Message("user", "hi")])
        await small.aclose()
        assert len(reply.message.content) == 3_000_000
    finally:
        await model.aclose()
        await runner.cleanup()
