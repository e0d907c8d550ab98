"""``completion`` as τ²-bench calls it, asked of the run; the reply in the shape it reads."""

from __future__ import annotations

import json
from typing import Any

from assay.core.workers import ask

__all__ = ["ModelResponse", "Usage", "completion", "completion_cost"]


class _Record:
    """Attributes, plus ``get`` and ``to_dict`` as litellm's response objects have."""

    def __init__(self, **fields: Any) -> None:
        self.__dict__.update(fields)

    def get(self, key: str, default: Any = None) -> Any:
        return self.__dict__.get(key, default)

    def to_dict(self) -> dict[str, Any]:
        return {k: v.to_dict() if isinstance(v, _Record) else
                [x.to_dict() if isinstance(x, _Record) else x for x in v]
                if isinstance(v, list) else v for k, v in self.__dict__.items()}


class Usage(_Record):
    """``prompt_tokens`` and ``completion_tokens`` of one call (``None`` when not reported)."""


class ModelResponse(_Record):
    """``model``, ``choices`` (one), ``usage`` and the cost the run knows (``None``: unknown)."""


def completion(model: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None
               = None, tool_choice: Any = None, **kwargs: Any) -> ModelResponse:
    """One chat completion by the role ``model`` names, answered by the run."""
    params = {k: v for k, v in kwargs.items() if k not in ("num_retries", "caching")}
    answer = ask(("complete", {"model": model, "messages": messages, "tools": tools,
                               "tool_choice": tool_choice, "params": params}))
    calls = [_Record(id=c["id"], type="function",
                     function=_Record(name=c["name"], arguments=json.dumps(c["arguments"])))
             for c in answer.get("tool_calls") or []]
    message = _Record(role="assistant", content=answer.get("content"),
                      tool_calls=calls or None)
    usage = answer.get("usage") or {}
    return ModelResponse(
        model=model, cost=answer.get("cost"),
        choices=[_Record(index=0, finish_reason=answer.get("finish_reason") or "stop",
                         message=message)],
        usage=Usage(prompt_tokens=usage.get("prompt_tokens"),
                    completion_tokens=usage.get("completion_tokens")))


def completion_cost(completion_response: ModelResponse | None = None, **_kwargs: Any) -> Any:
    """The call's cost as the run knows it (``None`` when no price is known: never 0)."""
    return completion_response.get("cost") if completion_response is not None else None
