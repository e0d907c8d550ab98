"""OpenAI's Batch API, offline: assay's BatchClient against the fake server's batch
endpoints, over real HTTP."""

from __future__ import annotations

import asyncio
import json
import threading

import pytest

from assay.core.types import Message, Reply, ToolCall
from assay.errors import ModelCallError
from assay.models.openai_batch import BatchClient
from assay.models.openai_model import OpenAIModel
from assay.testing.fake_server import Rule


def _body(text: str) -> dict:
    return {"model": "fake", "messages": [{"role": "user", "content": text}], "max_tokens": 9}


async def _run(client: BatchClient, lines: list[tuple[str, dict]]) -> tuple[dict, dict]:
    batch = await client.wait(await client.submit(lines), initial=0.001)
    return batch, await client.results(batch)


def _one_line(e: ModelCallError) -> str:
    assert "\n" not in str(e)
    return str(e)


async def test_results_are_the_chat_replies_and_no_chat_request_is_made(fake_server) -> None:
    def responder(body: dict) -> object:
        text = body["messages"][-1]["content"]
        if "weather" in text:
            return {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]}
        return f"the answer to {text} is 42"

    srv = fake_server(responder=responder)
    client = BatchClient(srv.base_url, "k")
    lines = [("q1", _body("life")), ("q2", _body("weather in Paris?")), ("q3", _body("x y z"))]
    bid = await client.submit(lines, metadata={"run": "r1"})
    assert srv.batches[bid]["batch"]["status"] == "validating"
    polls: list[str] = []
    batch = await client.wait(bid, initial=0.001, on_poll=lambda b: polls.append(b["status"]))
    got = await client.results(batch)
    await client.aclose()
    assert polls == ["in_progress", "completed"]  # batch_polls=2
    assert batch["object"] == "batch" and batch["metadata"] == {"run": "r1"}
    assert batch["request_counts"] == {"total": 3, "completed": 3, "failed": 0}
    assert batch["error_file_id"] is None and batch["output_file_id"].startswith("file-")
    assert srv.requests == [] and srv.batch_requests == [b for _, b in lines]
    model = OpenAIModel("fake", base_url=srv.base_url, api_key="k")
    direct = {cid: await model.generate([Message("user", b["messages"][0]["content"])],
                                        max_tokens=9) for cid, b in lines}
    await model.aclose()
    assert set(got) == {"q1", "q2", "q3"} and len(srv.requests) == 3
    for cid, reply in got.items():
        assert isinstance(reply, Reply)
        assert reply.message == direct[cid].message
        assert reply.usage == direct[cid].usage and reply.usage.input_tokens > 0
    assert got["q1"].message.content == "the answer to life is 42"
    assert got["q2"].message.tool_calls == [ToolCall("get_weather", {"city": "Paris"}, "call_0")]


async def test_the_wire_format_is_openais(fake_server) -> None:
    srv = fake_server(batch_polls=1)
    client = BatchClient(srv.base_url)
    bid = await client.submit([("a", _body("hi"))])
    entry = srv.batches[bid]
    file, content = srv.batch_files[entry["batch"]["input_file_id"]]
    assert file["object"] == "file" and file["purpose"] == "batch"
    assert file["bytes"] == len(content) and file["id"].startswith("file-")
    assert bid.startswith("batch_") and entry["batch"]["completion_window"] == "24h"
    batch = await client.status(bid)
    assert batch["status"] == "completed" and batch["completed_at"] is not None
    raw = await client._request("GET", f"/files/{batch['output_file_id']}/content", raw=True)
    line = json.loads(raw)
    assert line["id"].startswith("batch_req_") and line["custom_id"] == "a"
    assert line["error"] is None and line["response"]["status_code"] == 200
    assert line["response"]["request_id"] and line["response"]["body"]["object"] == (
        "chat.completion")
    with pytest.raises(ModelCallError, match="HTTP 404") as e:
        await client._request("GET", "/files/file-nope/content")
    await client.aclose()
    assert "Batch API" in _one_line(e.value)


async def test_failed_lines_are_errors_and_the_others_replies(fake_server) -> None:
    srv = fake_server(rules=[Rule("refuse", {"status": 400, "error": "bad request body"})])
    srv.batch_fail_ids = {"b"}
    client = BatchClient(srv.base_url)
    batch, got = await _run(client, [("a", _body("one")), ("b", _body("two")),
                                     ("c", _body("refuse this"))])
    await client.aclose()
    assert batch["status"] == "completed"
    assert batch["request_counts"] == {"total": 3, "completed": 1, "failed": 2}
    assert isinstance(got["a"], Reply) and got["a"].message.content == "one"
    b, c = got["b"], got["c"]
    assert isinstance(b, ModelCallError) and b.transient and b.status == 500
    assert "HTTP 500" in _one_line(b) and "server had an error" in str(b)
    assert isinstance(c, ModelCallError) and not c.transient and c.status == 400
    assert "bad request body" in _one_line(c)
    assert len(srv.batch_requests) == 3


async def test_an_expired_batch_answers_the_first_half(fake_server) -> None:
    srv = fake_server()
    srv.batch_outcome = "expired"
    client = BatchClient(srv.base_url)
    batch, got = await _run(client, [(f"id{i}", _body(f"q{i}")) for i in range(5)])
    await client.aclose()
    assert batch["status"] == "expired" and batch["expired_at"] is not None
    assert batch["request_counts"] == {"total": 5, "completed": 2, "failed": 3}
    assert [got[f"id{i}"].message.content for i in range(2)] == ["q0", "q1"]
    for i in range(2, 5):
        err = got[f"id{i}"]
        assert isinstance(err, ModelCallError) and err.transient
        assert "batch_expired" in _one_line(err)
    assert len(srv.batch_requests) == 2


async def test_cancel(fake_server) -> None:
    srv = fake_server(batch_polls=5)
    client = BatchClient(srv.base_url)
    bid = await client.submit([("a", _body("one")), ("b", _body("two"))])
    assert (await client.cancel(bid))["status"] == "cancelling"
    batch = await client.wait(bid, initial=0.001)
    got = await client.results(batch)
    assert batch["status"] == "cancelled" and batch["output_file_id"] is None
    assert set(got) == {"a", "b"}
    assert all(isinstance(e, ModelCallError) and e.transient and "batch_cancelled" in str(e)
               for e in got.values())
    assert srv.batch_requests == [] and srv.requests == []
    with pytest.raises(ModelCallError, match="Cannot cancel a batch with status 'cancelled'"):
        await client.cancel(bid)
    await client.aclose()


async def test_a_failed_batch_says_why(fake_server) -> None:
    srv = fake_server()
    srv.batch_outcome = "failed"
    client = BatchClient(srv.base_url)
    batch = await client.wait(await client.submit([("a", _body("one"))]), initial=0.001)
    assert batch["status"] == "failed" and batch["output_file_id"] is None
    assert batch["errors"]["object"] == "list" and batch["errors"]["data"][0]["code"]
    with pytest.raises(ModelCallError, match="failed: batch_failed") as e:
        await client.results(batch)
    await client.aclose()
    assert not e.value.transient and batch["id"] in _one_line(e.value)
    assert srv.batch_requests == []


@pytest.mark.parametrize(("lines", "endpoint", "why"), [
    ([("a", _body("x")), ("a", _body("y"))], "/v1/chat/completions", "duplicate custom_id"),
    ([("a", _body("x"))], "/v1/embeddings", "url /v1/chat/completions"),
    ([], "/v1/chat/completions", "no requests")])
async def test_a_rejected_input_file_is_one_line(fake_server, lines, endpoint, why) -> None:
    srv = fake_server()
    client = BatchClient(srv.base_url)
    with pytest.raises(ModelCallError, match="HTTP 400") as e:
        await client.submit(lines, endpoint=endpoint)
    await client.aclose()
    assert why in _one_line(e.value) and not e.value.transient
    assert '"error"' not in str(e.value)  # the provider's message, not its JSON
    assert srv.batch_files == {} and srv.batches == {}


async def test_wait_times_out_naming_the_batch(fake_server) -> None:
    srv = fake_server(batch_polls=10_000)
    client = BatchClient(srv.base_url)
    bid = await client.submit([("a", _body("one"))])
    with pytest.raises(ModelCallError) as e:
        await client.wait(bid, initial=0.01, timeout=0.05)
    await client.aclose()
    assert e.value.transient and bid in _one_line(e.value) and "in_progress" in str(e.value)


async def test_wait_backs_off_exponentially(fake_server, monkeypatch) -> None:
    srv = fake_server(batch_polls=6)
    client = BatchClient(srv.base_url)
    bid = await client.submit([("a", _body("one"))])
    slept: list[float] = []
    real_sleep = asyncio.sleep

    async def sleep(delay: float) -> None:
        if threading.current_thread() is threading.main_thread():
            slept.append(delay)
        await real_sleep(0)

    monkeypatch.setattr(asyncio, "sleep", sleep)
    batch = await client.wait(bid, initial=1.0, max_wait=4.0)
    monkeypatch.undo()
    await client.aclose()
    assert batch["status"] == "completed" and slept == [1.0, 2.0, 4.0, 4.0, 4.0]


async def test_wait_asks_again_after_a_transient_failure(fake_server) -> None:
    """Hours of polling meet a blip (the server restarting): the next poll goes on; a
    failure that is not transient (a revoked key) ends the wait."""
    srv = fake_server(batch_polls=2)
    client = BatchClient(srv.base_url)
    bid = await client.submit([("a", _body("one"))])
    polled: list[str] = []
    real_status, fails = client.status, ["blip", "blip"]

    async def flaky(batch_id: str) -> dict:
        if fails:
            fails.pop()
            await BatchClient("http://127.0.0.1:9/v1").status(batch_id)  # nothing listens
        return await real_status(batch_id)
    client.status = flaky  # type: ignore[method-assign]
    batch = await client.wait(bid, initial=0.0, on_poll=lambda b: polled.append(b["status"]))
    assert batch["status"] == "completed" and polled[-1] == "completed"
    assert all(p.startswith("unknown (cannot talk") for p in polled[:2]) and len(polled) > 2
    srv.require_api_key = "sk-another-key-0123456789"
    with pytest.raises(ModelCallError, match="HTTP 401"):
        await client.wait(bid, initial=0.0)
    await client.aclose()


async def test_the_api_key_is_required_and_never_shown(fake_server) -> None:
    srv = fake_server(require_api_key="sk-right-key-0123456789")
    wrong = BatchClient(srv.base_url, "sk-wrong-key-0123456789")
    with pytest.raises(ModelCallError, match="HTTP 401") as e:
        await wrong.submit([("a", _body("one"))])
    await wrong.aclose()
    assert "wrong-key" not in _one_line(e.value) and "check the API key" in str(e.value)
    right = BatchClient(srv.base_url, "sk-right-key-0123456789")
    batch, got = await _run(right, [("a", _body("one"))])
    await right.aclose()
    assert got["a"].message.content == "one"


async def test_an_unreachable_endpoint_is_one_transient_line() -> None:
    client = BatchClient("http://127.0.0.1:1/v1")
    with pytest.raises(ModelCallError, match="is the server running") as e:
        await client.status("batch_x")
    await client.aclose()
    assert e.value.transient and _one_line(e.value)


async def test_reset_clears_the_batches(fake_server) -> None:
    srv = fake_server(batch_polls=1)
    client = BatchClient(srv.base_url)
    await _run(client, [("a", _body("one"))])
    await client.aclose()
    assert srv.batches and srv.batch_files and srv.batch_requests
    srv.reset()
    assert not (srv.batches or srv.batch_files or srv.batch_requests)
