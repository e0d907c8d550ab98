"""The embedded model (SmolLM2-135M via llama.cpp) runs for real."""

from __future__ import annotations

import asyncio
import json

import pytest

from assay.core.types import Message, ToolSpec
from assay.errors import ModelSpecError
from assay.models.local_chat import tool_call_schema
from assay.models.local_model import LocalModel, default_model_path

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


def test_weights_are_loaded_into_plain_cpu_buffers(model: LocalModel) -> None:
    """On AMX CPUs llama.cpp's repacked weights crash the first batch of several tokens
    (SIGSEGV in llama-cpp-python 0.3.36); the model is loaded without them, and the
    library's defaults are left as they were."""
    from llama_cpp import llama_cpp as lib

    if hasattr(lib.llama_model_default_params(), "use_extra_bufts"):  # not in older versions
        assert model._llama.model_params.use_extra_bufts is False
        assert lib.llama_model_default_params().use_extra_bufts is True
    llama = model._llama
    llama.reset()
    llama.eval(llama.tokenize(b"Several tokens in one batch", add_bos=True))
    assert llama.n_tokens > 1


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


# -- the fast constrained path -------------------------------------------------------------

CALC = ToolSpec("calculate_area", "Area of a rectangle",
                {"type": "object",
                 "properties": {"width": {"type": "integer"}, "height": {"type": "integer"},
                                "unit": {"type": "string"}},
                 "required": ["width", "height"]})


def _prompt(tools: list[ToolSpec], question: str) -> list[dict]:
    from assay.models.local_chat import tools_system_prompt

    return [{"role": "system", "content": tools_system_prompt(tools)},
            {"role": "user", "content": question}]


def _llama_cpp_reply(model: LocalModel, messages: list[dict], schema: dict,
                     max_tokens: int) -> dict:
    """llama-cpp-python's own constrained chat completion, with the same grammar."""
    from llama_cpp.llama_grammar import LlamaGrammar

    from assay.models.local_grammar import schema_grammar

    model._llama.reset()  # both sides evaluate the prompt from scratch, in one batch
    return model._llama.create_chat_completion(
        messages=messages, max_tokens=max_tokens, temperature=0.0,
        grammar=LlamaGrammar.from_string(schema_grammar(schema)))


def _ours(model: LocalModel, messages: list[dict], schema: dict, max_tokens: int,
          jump_forward: bool = True) -> dict:
    model._llama.reset()
    model._greedy.jump_forward = jump_forward
    try:
        return model._complete(messages, schema, {"max_tokens": max_tokens})
    finally:
        model._greedy.jump_forward = True


CASES = [
    ([WEATHER], "What's the weather in Berlin in celsius?", True),
    ([CALC], "What is the area of a 7 by 3 rectangle in meters?", False),
    ([WEATHER, CALC], "How warm is it in Oslo, in fahrenheit?", True),
]


@pytest.mark.parametrize("tools,question,allow_text", CASES)
def test_argmax_first_sampling_matches_llama_cpp(model: LocalModel, tools, question,
                                                 allow_text) -> None:
    """Asking the grammar about the best token first picks what masking first picks."""
    messages = _prompt(tools, question)
    schema = tool_call_schema(tools, allow_text=allow_text)
    masks = model._greedy.full_masks
    ours = _ours(model, messages, schema, 96, jump_forward=False)
    theirs = _llama_cpp_reply(model, messages, schema, 96)
    assert ours["choices"][0]["message"]["content"] == theirs["choices"][0]["message"]["content"]
    assert ours["usage"] == {k: theirs["usage"][k] for k in ("prompt_tokens", "completion_tokens")}
    # the shortcut was taken: far fewer full masks than tokens
    assert model._greedy.full_masks - masks < ours["usage"]["completion_tokens"] / 2


@pytest.mark.parametrize("tools,question,allow_text", CASES)
def test_forced_text_is_fed_in_batches(model: LocalModel, tools, question,
                                       allow_text) -> None:
    """The grammar's fixed text costs no decode steps; the answer is the same call.

    Arguments may differ from token-by-token decoding where the model is torn
    (the forced text is tokenized as the tokenizer would, not as the model
    happened to spell it), so only the call and its shape are compared.
    """
    llama = model._llama
    messages = _prompt(tools, question)
    schema = tool_call_schema(tools, allow_text=allow_text)
    slow = json.loads(_ours(model, messages, schema, 96, jump_forward=False)
                      ["choices"][0]["message"]["content"])
    evals: list[int] = []
    real_eval = llama.eval
    llama.eval = lambda tokens: (evals.append(len(tokens)), real_eval(tokens))[1]
    try:
        fast = _ours(model, messages, schema, 96)
    finally:
        del llama.eval
    text = fast["choices"][0]["message"]["content"]
    call = json.loads(text)
    assert text == json.dumps(call, ensure_ascii=False)  # one spelling of whitespace
    assert call["name"] == slow["name"]
    params = next(t.parameters for t in tools if t.name == call["name"])
    assert set(params["required"]) <= set(call["arguments"]) <= set(params["properties"])
    # the prompt, then fewer model evaluations than output tokens
    assert len(evals) - 1 < fast["usage"]["completion_tokens"] / 2


def test_forced_text_stops_before_a_choice(model: LocalModel) -> None:
    """A character the probe cannot spell alone (東 is several tokens) is still a choice."""
    greedy = model._greedy
    for schema, head in [
        ({"type": "object", "properties": {"city": {"enum": ["東京", "Tokyo"]}},
          "required": ["city"]}, '{"city": "'),
        ({"type": "object", "properties": {"n": {"type": "integer"}, "ok": {"type": "boolean"}},
          "required": ["n", "ok"]}, '{"n": '),
        (tool_call_schema([WEATHER], allow_text=True), '{"'),
        (tool_call_schema([WEATHER]), '{"name": "get_weather", "arguments": {"city": "'),
    ]:
        assert greedy._forced(model.grammars.get(schema)) == (head, False)


def test_response_schema_matches_llama_cpp(model: LocalModel) -> None:
    schema = {"type": "object",
              "properties": {"verdict": {"type": "string", "enum": ["A", "B", "tie"]},
                             "reason": {"type": "string", "maxLength": 40}},
              "required": ["verdict", "reason"]}
    messages = [{"role": "user", "content": "Which is larger, A=3 or B=5? Answer in JSON."}]
    ours = _ours(model, messages, schema, 60, jump_forward=False)
    theirs = _llama_cpp_reply(model, messages, schema, 60)
    assert ours["choices"][0]["message"]["content"] == theirs["choices"][0]["message"]["content"]
    fast = json.loads(_ours(model, messages, schema, 60)["choices"][0]["message"]["content"])
    assert fast["verdict"] in ("A", "B", "tie") and len(fast["reason"]) <= 40


async def test_grammar_is_compiled_once_and_reuse_gives_identical_output(
        model: LocalModel) -> None:
    model.grammars.close()  # start from an empty cache
    before = model.grammars.compiled
    question = [Message("user", "What is the area of a 4 by 9 rectangle?")]
    first = await model.generate(question, tools=[CALC], max_tokens=80)
    other = await model.generate([Message("user", "Weather in Rome, celsius?")],
                                 tools=[WEATHER], max_tokens=80)
    again = await model.generate(question, tools=[CALC], max_tokens=80)
    assert model.grammars.compiled == before + 2  # CALC's grammar was reset, not rebuilt
    assert first.message.tool_calls and other.message.tool_calls
    assert again.message.tool_calls == first.message.tool_calls
    assert again.usage == first.usage


def test_grammar_cache_is_bounded(model: LocalModel) -> None:
    from assay.models.local_grammar import GrammarCache

    cache = GrammarCache(model._llama._model.vocab, size=2)
    try:
        schemas = [{"type": "object", "properties": {f"k{i}": {"type": "integer"}},
                    "required": [f"k{i}"]} for i in range(3)]
        first = cache.get(schemas[0])
        assert cache.get(schemas[0]) is first  # reused
        cache.get(schemas[1])
        cache.get(schemas[2])  # evicts schemas[0], the least recently used
        assert len(cache._items) == 2 and cache.compiled == 3
        cache.get(schemas[0])
        assert cache.compiled == 4
    finally:
        cache.close()
    assert not cache._items


def test_shared_prompt_prefix_is_not_evaluated_again(model: LocalModel) -> None:
    """The instructions lead the tool prompt, so the next call reuses their KV cache."""
    llama = model._llama
    model._complete(_prompt([CALC], "Area of 2 by 3?"), tool_call_schema([CALC]),
                    {"max_tokens": 40})
    evals: list[int] = []
    real_eval = llama.eval
    llama.eval = lambda tokens: (evals.append(len(tokens)), real_eval(tokens))[1]
    try:
        out = model._complete(_prompt([WEATHER], "Weather in Paris, celsius?"),
                              tool_call_schema([WEATHER]), {"max_tokens": 40})
    finally:
        del llama.eval
    # the first evaluation is the prompt (and the forced head) less the shared instructions
    assert 0 < evals[0] < out["usage"]["prompt_tokens"] - 15


async def test_single_call_is_an_object_and_parallel_calls_a_list(model: LocalModel) -> None:
    assert set(tool_call_schema([WEATHER])["properties"]) == {"name", "arguments"}
    assert "tool_calls" in tool_call_schema([WEATHER], parallel=True)["properties"]
    reply = await model.generate([Message("user", "Weather in Berlin and in Paris, celsius?")],
                                 tools=[WEATHER], parallel_tool_calls=True, max_tokens=120)
    assert reply.message.tool_calls
    assert all(c.name == "get_weather" for c in reply.message.tool_calls)


def test_decoding_both_reply_shapes() -> None:
    from assay.models.local_chat import decode_tool_reply, to_chat_message

    one = decode_tool_reply('{"name": "f", "arguments": {"a": 1}}')
    assert [(c.name, c.arguments) for c in one.tool_calls or []] == [("f", {"a": 1})]
    many = decode_tool_reply('{"tool_calls": [{"name": "f", "arguments": {}}, '
                             '{"name": "g", "arguments": {"b": 2}}]}')
    assert [c.name for c in many.tool_calls or []] == ["f", "g"]
    assert decode_tool_reply('{"content": "no tool fits"}').content == "no tool fits"
    assert decode_tool_reply('{"name": "f", "argu').content == '{"name": "f", "argu'
    # a call in the transcript is shown to the model in the shape it answers in
    assert json.loads(to_chat_message(one)["content"]) == {"name": "f", "arguments": {"a": 1}}


async def test_token_limit_mid_call_is_text_not_a_call(model: LocalModel) -> None:
    reply = await model.generate([Message("user", "What is the area of a 4 by 9 rectangle?")],
                                 tools=[CALC], max_tokens=5)
    assert reply.message.tool_calls is None and reply.usage.output_tokens == 5


async def test_sampling_with_temperature_still_follows_the_schema(model: LocalModel) -> None:
    reply = await model.generate([Message("user", "Weather in Madrid, celsius?")],
                                 tools=[WEATHER], temperature=0.7, seed=3, max_tokens=80)
    calls = reply.message.tool_calls
    assert calls and calls[0].name == "get_weather" and set(calls[0].arguments) >= {"city"}


async def test_prompt_over_the_context_window_is_a_model_error(model: LocalModel) -> None:
    from assay.errors import ModelCallError

    with pytest.raises(ModelCallError, match="context window"):
        await model.generate([Message("user", "word " * 9000)],
                             response_schema={"type": "object"}, max_tokens=8)
