"""The embedded model (SmolLM2-135M via llama.cpp) runs for real."""

from __future__ import annotations

import asyncio
import json

import pytest

from assay.core.types import Message, ToolSpec
from assay.errors import ModelSpecError
from assay.models.local_model import LocalModel, default_model_path, tool_call_schema

pytest.importorskip("llama_cpp")

WEATHER = ToolSpec("get_weather", "Get the current weather for a city",
                   {"type": "object",
                    "properties": {"city": {"type": "string"},
                                   "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
                    "required": ["city", "unit"]})


@pytest.fixture(scope="module")
def model() -> LocalModel:
    return LocalModel.load()


def test_default_weights_come_from_the_wheel() -> None:
    path = default_model_path()
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and path.stat().st_size > 50_000_000
    assert LocalModel.load() is LocalModel.load()  # one loaded model shared by the run


async def test_text_generation(model: LocalModel) -> None:
    prompt = ('What is the capital of France? Give only the final answer, on one line '
              'starting with "Answer:".')
    reply = await model.generate([Message("user", prompt)], max_tokens=24)
    assert "Paris" in (reply.message.content or "")
    assert reply.usage.output_tokens > 0 and reply.latency_s > 0
    again = await model.generate([Message("user", prompt)], max_tokens=24)
    assert again.message.content == reply.message.content  # greedy by default: repeatable


async def test_tool_call_is_schema_valid(model: LocalModel) -> None:
    reply = await model.generate([Message("user", "What's the weather in Berlin in celsius?")],
                                 tools=[WEATHER], max_tokens=80)
    calls = reply.message.tool_calls
    assert calls and calls[0].name == "get_weather"
    assert set(calls[0].arguments) == {"city", "unit"}
    assert calls[0].arguments["unit"] in ("celsius", "fahrenheit")


async def test_response_schema_constrains_output(model: LocalModel) -> None:
    schema = {"type": "object", "properties": {"score": {"type": "integer", "minimum": 1,
                                                         "maximum": 5}},
              "required": ["score"]}
    reply = await model.generate([Message("user", "Rate this joke from 1 to 5: why did...")],
                                 response_schema=schema, max_tokens=20)
    data = json.loads(reply.message.content or "")
    assert isinstance(data["score"], int)


async def test_calls_do_not_block_the_event_loop(model: LocalModel) -> None:
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    task = asyncio.create_task(ticker())
    await model.generate([Message("user", "Tell me about the sea.")], max_tokens=48)
    task.cancel()
    assert ticks >= 3


def test_tool_schema_allows_text_when_asked() -> None:
    schema = tool_call_schema([WEATHER], allow_text=True)
    assert len(schema["anyOf"]) == 2


def test_missing_gguf_is_a_clear_error(tmp_path) -> None:
    with pytest.raises(ModelSpecError, match="GGUF file not found"):
        LocalModel.load(str(tmp_path / "nope.gguf"))
