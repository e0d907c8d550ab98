"""Asking a model for JSON: the whole reply must be one object of a given shape, and a
refused reply gets one corrective retry."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from assay.core.types import Message

M = TypeVar("M", bound=BaseModel)
T = TypeVar("T")

_FENCE = re.compile(r"^```(?:json)?\s*\n(.*)\n```$", re.DOTALL)


def read_reply(text: str, model: type[M], *, fence: bool = False) -> tuple[M | None, str | None]:
    """``model`` validated from the whole reply, or ``None`` and why the reply is not one.

    ``fence``: a reply wrapped in one Markdown code fence is unwrapped first. A raw line
    break inside a JSON string is read (small local models write them); anything else
    that is not exactly one JSON object of the model's shape is refused.
    """
    raw = (text or "").strip()
    if not raw:
        return None, "empty reply"
    fenced = _FENCE.match(raw) if fence else None
    if fenced:
        raw = fenced.group(1).strip()
    try:
        data = json.loads(raw, strict=False)
    except json.JSONDecodeError as e:
        return None, f"not JSON: {e.msg} at position {e.pos}"
    if not isinstance(data, dict):
        return None, f"a JSON {type(data).__name__}, not an object"
    try:
        return model.model_validate(data), None
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(x) for x in first["loc"]) or "reply"
        return None, f"{where}: {first['msg']}"


@dataclass
class Asked(Generic[T]):
    """What :func:`ask_with_retry` got: the value (``None``: invalid twice), why each
    refused reply was refused, and the last reply's text."""

    value: T | None
    refused: list[str]
    raw: str

    @property
    def attempts(self) -> int:
        """Replies asked for: one, or two after a refused one."""
        return len(self.refused) + (1 if self.value is not None else 0)


async def ask_with_retry(model: Any, messages: list[Message], schema: dict[str, Any],
                         parse: Callable[[str], tuple[T | None, str | None]], retry: str,
                         params: dict[str, Any]) -> Asked[T]:
    """Ask for JSON matching ``schema``; a refused reply gets ONE corrective retry
    (``retry`` formatted with ``why``), and a second refusal leaves the value ``None``."""
    refused: list[str] = []
    raw = ""
    for attempt in range(2):
        reply = await model.generate(messages, response_schema=schema, **params)
        raw = reply.message.content or ""
        value, why = parse(raw)
        if value is not None:
            return Asked(value, refused, raw)
        refused.append(str(why))
        if attempt == 0:
            messages = [*messages, Message("assistant", raw[:2000]),
                        Message("user", retry.format(why=why))]
    return Asked(None, refused, raw)
