"""What the store keeps of a sample and an outcome beyond their columns, and the way back:
everything scoring needs, so ``assay score RUN`` scores a run again in any process."""

from __future__ import annotations

from typing import Any

from assay.core.types import Message, Outcome, Sample, SampleResult, ToolCall, ToolSpec


def sample_extra(sample: Sample) -> dict[str, Any] | None:
    """The ``sample`` column: tools, files and row."""
    extra: dict[str, Any] = {}
    if sample.tools:
        extra["tools"] = [{"name": t.name, "description": t.description,
                           "parameters": t.parameters} for t in sample.tools]
    if sample.files:
        extra["files"] = list(sample.files)
    if sample.row is not None:
        extra["row"] = sample.row
    return extra or None


def outcome_extra(outcome: Outcome | None) -> dict[str, Any] | None:
    """The ``outcome`` column: tool calls and the solve's metadata."""
    if outcome is None:
        return None
    extra: dict[str, Any] = {}
    if outcome.tool_calls is not None:
        extra["tool_calls"] = [c.to_dict() for c in outcome.tool_calls]
    if outcome.metadata:
        extra["metadata"] = outcome.metadata
    return extra or None


def sample_of(result: SampleResult) -> Sample:
    """The sample a stored result was made from (read with ``texts=True``)."""
    extra = result.sample or {}
    raw_input = result.input
    input_: str | list[Message] = (
        [Message.from_dict(m) for m in raw_input] if isinstance(raw_input, list)
        else (raw_input if raw_input is not None else ""))
    tools = [ToolSpec(t["name"], t.get("description", ""), t.get("parameters") or {})
             for t in extra.get("tools") or []] or None
    return Sample(id=result.sample_id, input=input_, target=result.target,
                  tools=tools, files=extra.get("files"), metadata=dict(result.metadata or {}),
                  row=extra.get("row"))


def outcome_of(result: SampleResult) -> Outcome:
    """The outcome as the solve returned it (read with ``texts=True`` and transcripts)."""
    extra = result.outcome or {}
    calls = extra.get("tool_calls")
    return Outcome(transcript=[Message.from_dict(m) for m in result.transcript or []],
                   output=result.output or "",
                   tool_calls=[ToolCall(c["name"], c.get("arguments") or {}, c.get("id"))
                               for c in calls] if calls is not None else None,
                   metadata=dict(extra.get("metadata") or {}))
