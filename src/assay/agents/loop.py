"""One tool loop: the model answers or calls tools, the tools' results go back, until it
answers or a limit ends the sample (the reason recorded: ``answer``, ``max_steps``,
``max_tokens``, ``time_limit``, ``repeated_call``).

Each step is one call through the sample's call context (cached, retried, rate-limited and
counted like any other). Native tool calls where the model has them; else the text format
below, which the model is told in its system message:

    <tool_call>{"name": "python", "arguments": {"code": "print(1 + 1)"}}</tool_call>

one or more per reply; each result comes back in a user message as
``<tool_result name="python">...</tool_result>``. A reply with no tool call is the answer.
Every call, result and error stays in the transcript."""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from assay.agents.tools import Tool, ToolResult, error
from assay.core.types import Message, ToolCall

#: the reasons a loop ends
ENDED = ("answer", "max_steps", "max_tokens", "time_limit", "repeated_call")
TEXT_CALL = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.S)
TEXT_FORMAT = (
    "You can call tools. To call one, write a block like this (one or more per reply):\n"
    '<tool_call>{{"name": "TOOL", "arguments": {{...}}}}</tool_call>\n'
    "and wait: each result comes back as <tool_result name=\"TOOL\">...</tool_result>. "
    "When you have the answer, reply without a tool call.\nThe tools:\n{tools}")


@dataclass
class LoopLimits:
    """When a loop stops short of an answer: model calls, tokens over all of them (``None``:
    no cap), wall seconds, and the same call (name and arguments) this many times in a row."""

    max_steps: int = 20
    max_tokens: int | None = None
    time_limit_s: float | None = None
    max_repeats: int = 3


@dataclass
class LoopResult:
    transcript: list[Message]
    output: str
    ended: str
    steps: int = 0
    calls: list[ToolCall] = field(default_factory=list)
    tool_counts: Counter[str] = field(default_factory=Counter)
    tool_errors: int = 0

    def summary(self) -> dict[str, Any]:
        """What the sample's outcome keeps of the loop (metrics and the viewer read it)."""
        return {"ended": self.ended, "steps": self.steps, "tool_calls": len(self.calls),
                "tools": dict(self.tool_counts), "tool_errors": self.tool_errors}


def text_calls(content: str) -> tuple[list[ToolCall], list[str]]:
    """The tool calls written in ``content`` (the text format), and a problem per block that
    is not one (returned to the model as a tool error)."""
    calls, problems = [], []
    for i, block in enumerate(TEXT_CALL.findall(content or "")):
        try:
            data = json.loads(block)
        except ValueError as e:
            problems.append(f"tool call {i + 1} is not JSON ({e.msg}); write "
                            '{"name": ..., "arguments": {...}}')
            continue
        if not isinstance(data, dict) or not isinstance(data.get("name"), str):
            problems.append(f"tool call {i + 1} has no \"name\"")
            continue
        args = data.get("arguments") or {}
        calls.append(ToolCall(data["name"], args if isinstance(args, dict) else {"": args},
                              f"t{i + 1}"))
    return calls, problems


async def tool_loop(ctx: Any, messages: list[Message], tools: list[Tool], *,
                    limits: LoopLimits | None = None, native: bool = True,
                    **params: Any) -> LoopResult:
    """Run the loop from ``messages`` (a copy is extended) with ``tools``; ``ctx``: the
    sample's call context (``generate``, and ``usage`` for ``max_tokens``)."""
    limits = limits or LoopLimits()
    by_name = {t.spec.name: t for t in tools}
    specs = [t.spec for t in tools]
    transcript = list(messages)
    if not native and tools:
        listed = "\n".join(f"- {s.name}: {s.description} Arguments (JSON schema): "
                           f"{json.dumps(s.parameters, ensure_ascii=False)}" for s in specs)
        note = TEXT_FORMAT.format(tools=listed)
        if transcript and transcript[0].role == "system":
            transcript[0] = Message("system", f"{transcript[0].content}\n\n{note}")
        else:
            transcript.insert(0, Message("system", note))
    result = LoopResult(transcript, "", "answer")
    started, last, repeats = time.monotonic(), None, 0
    usage = getattr(ctx, "usage", None)  # a sample's call context counts its tokens
    tokens0 = usage.total_tokens if usage is not None else 0
    while True:
        if result.steps >= limits.max_steps:
            return _end(result, "max_steps")
        if (limits.max_tokens is not None and usage is not None
                and usage.total_tokens - tokens0 >= limits.max_tokens):
            return _end(result, "max_tokens")
        if limits.time_limit_s is not None and time.monotonic() - started >= limits.time_limit_s:
            return _end(result, "time_limit")
        reply = await ctx.generate(transcript, tools=specs if native and specs else None,
                                   **params)
        result.steps += 1
        message = reply.message
        transcript.append(message)
        result.output = message.content or ""
        if native:
            calls, problems = list(message.tool_calls or []), []
        else:
            calls, problems = text_calls(message.content or "")
        if not calls and not problems:
            return result  # the answer
        results: list[tuple[ToolCall | None, ToolResult]] = [
            (None, error(p)) for p in problems]
        for call in calls:
            if call.id is None:  # a tool result names its call
                call.id = f"call_{len(result.calls)}"
            key = json.dumps([call.name, call.arguments], sort_keys=True, default=str)
            repeats = repeats + 1 if key == last else 1
            last = key
            if repeats >= limits.max_repeats:  # not run again: the loop ends here
                return _end(result, "repeated_call")
            result.calls.append(call)
            result.tool_counts[call.name] += 1
            tool = by_name.get(call.name)
            done = (await tool.call(call.arguments) if tool is not None else
                    error(f"no tool {call.name!r}; the tools are {', '.join(by_name) or 'none'}"))
            results.append((call, done))
        for call, done in results:
            result.tool_errors += done.error
            text = ("error: " if done.error else "") + done.text
            if native and call is not None:
                transcript.append(Message("tool", text, tool_call_id=call.id))
            else:
                name = call.name if call is not None else "?"
                transcript.append(Message("user", f'<tool_result name="{name}">\n{text}\n'
                                          "</tool_result>"))


def _end(result: LoopResult, why: str) -> LoopResult:
    result.ended = why
    return result
