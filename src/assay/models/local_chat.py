"""The local model's side of a chat: tool calls asked for as constrained JSON, messages
flattened for a chat template that knows no tool roles, the JSON read back as calls."""

from __future__ import annotations

import json
from typing import Any

from assay.core.types import Message, ToolCall, ToolSpec

__all__ = ["chat_formatter", "decode_tool_reply", "to_chat_message", "tool_call_schema",
           "tools_system_prompt"]


def tool_call_schema(tools: list[ToolSpec], allow_text: bool = False,
                     parallel: bool = False) -> dict[str, Any]:
    """JSON Schema for one call ``{"name", "arguments"}`` (or with ``parallel``,
    ``{"tool_calls": [...]}``: a small model's greedy decoding otherwise repeats its call
    to the token limit), or with ``allow_text`` a text answer ``{"content": ...}``."""
    options = [{"type": "object",
                "properties": {"name": {"const": t.name},
                               "arguments": t.parameters or {"type": "object", "properties": {}}},
                "required": ["name", "arguments"]} for t in tools]
    call = options[0] if len(options) == 1 else {"anyOf": options}
    if parallel:
        call = {"type": "object",
                "properties": {"tool_calls": {"type": "array", "items": call, "minItems": 1}},
                "required": ["tool_calls"]}
    if not allow_text:
        return call
    text = {"type": "object", "properties": {"content": {"type": "string"}}, "required": ["content"]}
    return {"anyOf": [call, text]}


def tools_system_prompt(tools: list[ToolSpec], parallel: bool = False) -> str:
    # The instructions come first so that every call shares them as a cached prefix.
    shape = ('{"tool_calls": [{"name": <function name>, "arguments": {...}}, ...]}' if parallel
             else '{"name": <function name>, "arguments": {...}}')
    listing = json.dumps([t.to_openai()["function"] for t in tools], ensure_ascii=False)
    return (f"You are a function-calling assistant. Answer with JSON: {shape}. "
            f"These functions are available:\n{listing}")


def chat_formatter(llama: Any) -> Any:
    """The GGUF's own chat template as create_chat_completion would use it, or None."""
    template = (llama.metadata or {}).get("tokenizer.chat_template")
    if not template or llama.chat_handler is not None or llama.chat_format != "chat_template.default":
        return None
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter  # optional

    def text(token: int) -> str:
        return llama._model.token_get_text(token) if token != -1 else ""

    return Jinja2ChatFormatter(template=template, eos_token=text(llama.token_eos()),
                               bos_token=text(llama.token_bos()),
                               stop_token_ids=[llama.token_eos()])


def to_chat_message(m: Message) -> dict[str, Any]:
    """Flatten a message for a chat template that knows nothing of tool roles."""
    if m.role == "tool":
        return {"role": "user", "content": f"Function result: {m.content}"}
    if m.tool_calls:
        calls = [{"name": tc.name, "arguments": tc.arguments} for tc in m.tool_calls]
        body = calls[0] if len(calls) == 1 else {"tool_calls": calls}
        return {"role": "assistant", "content": json.dumps(body, ensure_ascii=False)}
    return {"role": m.role, "content": m.content or ""}


def decode_tool_reply(text: str) -> Message:
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        # Generation stopped at max_tokens mid-JSON: keep the text, it scores as no call.
        return Message("assistant", text)
    if isinstance(data, dict) and "name" in data and "arguments" in data:
        data = {"tool_calls": [data]}
    if isinstance(data, dict) and isinstance(data.get("tool_calls"), list):
        calls = [ToolCall(str(c.get("name", "")),
                          c["arguments"] if isinstance(c.get("arguments"), dict) else {},
                          f"call_{i}")
                 for i, c in enumerate(data["tool_calls"]) if isinstance(c, dict)]
        return Message("assistant", None, calls or None)
    if isinstance(data, dict) and "content" in data:
        return Message("assistant", str(data["content"]))
    return Message("assistant", text)
