"""What the fake OpenAI server answers: reply rules, seeded fault plans, and the
chat-completion payloads (see :class:`assay.testing.fake_server.FakeServer`)."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ALL_KINDS", "FAULT_KINDS", "FaultPlan", "Reply", "Responder", "Rule",
           "chat_completion", "last_user_text", "text_of"]

Reply = str | dict[str, Any]
Responder = Callable[[dict[str, Any]], Any]
FAULT_KINDS = ("500", "429", "hang", "malformed")
#: strange but valid replies, drawn only when named: ``content`` as a list of text parts (as
#: several servers send it), and a reply of ``oversize_bytes`` characters
ALL_KINDS = (*FAULT_KINDS, "list_content", "oversized")


@dataclass
class Rule:
    """Reply with ``reply`` when regex ``match`` is found in the last user message: a text
    expanded with the match (``"\\1"``), a dict as is (``{"status": 400, "error": ...}``
    answers with that HTTP error)."""

    match: str
    reply: Reply
    _pattern: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._pattern = re.compile(self.match)

    def apply(self, text: str) -> Reply | None:
        m = self._pattern.search(text)
        if m is None:
            return None
        return m.expand(self.reply) if isinstance(self.reply, str) else self.reply


@dataclass
class FaultPlan:
    """Seeded fault injection: each request fails with probability ``rate``, its kind drawn
    by weight from ``kinds``; ``fail_first=k``: the first ``k`` requests for each distinct
    last user message fail whatever the rate."""

    rate: float = 0.0
    kinds: dict[str, float] = field(default_factory=lambda: dict.fromkeys(FAULT_KINDS, 1.0))
    retry_after: float = 1.0
    hang_s: float = 30.0
    seed: int = 0
    fail_first: int = 0
    oversize_bytes: int = 4_000_000

    def __post_init__(self) -> None:
        unknown = set(self.kinds) - set(ALL_KINDS)
        if unknown:
            raise ValueError(f"unknown fault kinds {sorted(unknown)}; expected {ALL_KINDS}")
        if (self.rate > 0 or self.fail_first > 0) and not any(w > 0 for w in self.kinds.values()):
            raise ValueError("FaultPlan.kinds needs at least one positive weight")


def text_of(content: Any) -> str:
    """An OpenAI message ``content`` (str, list of parts, or None) as plain text."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(p.get("text", "")) if isinstance(p, dict) else str(p) for p in content)
    return str(content)


def last_user_text(body: dict[str, Any]) -> str:
    for msg in reversed(body.get("messages") or []):
        if isinstance(msg, dict) and msg.get("role") == "user":
            return text_of(msg.get("content"))
    return ""


def chat_completion(body: dict[str, Any], reply: Reply, number: int,
                    seen: set[str] | None = None) -> dict[str, Any]:
    """The ``chat.completion`` answering ``body`` with ``reply`` (a text, or a dict with
    ``content``, ``tool_calls``, ``reasoning_content`` and ``finish_reason``); token counts
    are word counts, with OpenAI's details: reasoning tokens (the ``reasoning_content``'s
    words, part of the completion's) and cached tokens (a leading system message's words
    when ``seen`` holds its text from an earlier request: a prompt cache)."""
    if isinstance(reply, str):
        reply = {"content": reply}
    message: dict[str, Any] = {"role": "assistant", "content": reply.get("content")}
    tool_calls = reply.get("tool_calls") or []
    if tool_calls:
        message["tool_calls"] = [
            {"id": f"call_{i}", "type": "function",
             "function": {"name": tc["name"],
                          "arguments": tc["arguments"] if isinstance(tc.get("arguments"), str)
                          else json.dumps(tc.get("arguments") or {})}}
            for i, tc in enumerate(tool_calls)]
    thought = reply.get("reasoning_content")
    if thought is not None:
        message["reasoning_content"] = thought
    messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    prompt = sum(len(text_of(m.get("content")).split()) for m in messages)
    reasoning = len(text_of(thought).split())
    completion = len(text_of(message["content"]).split()) + reasoning
    cached = 0
    if seen is not None and messages and messages[0].get("role") == "system":
        system = text_of(messages[0].get("content"))
        cached = len(system.split()) if system in seen else 0
        seen.add(system)
    return {"id": f"chatcmpl-fake-{number}", "object": "chat.completion",
            "created": int(time.time()), "model": body.get("model", "fake"),
            "choices": [{"index": 0, "message": message, "finish_reason": reply.get(
                "finish_reason", "tool_calls" if tool_calls else "stop")}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                      "total_tokens": prompt + completion,
                      "prompt_tokens_details": {"cached_tokens": cached},
                      "completion_tokens_details": {"reasoning_tokens": reasoning}}}
