"""A stored sample made readable for the sample template, without knowing its task.

Transcripts are chat messages (tool calls and results included), a converse run's
conversation (``outcome.metadata.conversation``), GAIA's annotator steps (in the row), or
anything else as pretty JSON. Everything is returned as text; the template escapes it."""

from __future__ import annotations

import json
from typing import Any

from assay.metrics.format import by_name
from assay.scoring import target_letters
from assay.store.described import usd

__all__ = ["message_turns", "pretty", "sample_view"]

_ROLE_LABELS = {"system": "System", "user": "User", "assistant": "Assistant", "tool": "Tool result",
                "examiner": "Examiner", "agent": "Agent", "developer": "Developer"}
_MESSAGE_KEYS = {"role", "content", "tool_calls", "tool_call_id", "reasoning"}


def pretty(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def _arguments(call: dict[str, Any]) -> str:
    args = call.get("arguments")
    if args is None and isinstance(call.get("function"), dict):
        args = call["function"].get("arguments")
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except ValueError:
            return args
    if isinstance(args, dict) and args and any(isinstance(v, str) and "\n" in v
                                               for v in args.values()):
        # code or a long text: shown as written, not as one JSON string of \n escapes
        return "\n".join(f"{k}:\n{v}" if isinstance(v, str) and "\n" in v
                         else f"{k}: {json.dumps(v, ensure_ascii=False, default=str)}"
                         for k, v in args.items())
    return json.dumps(args, indent=2, ensure_ascii=False, default=str)


def _tool_calls(calls: Any) -> list[dict[str, str]]:
    out = []
    for c in calls if isinstance(calls, list) else []:
        if not isinstance(c, dict):
            out.append({"name": "?", "id": "", "arguments": pretty(c)})
            continue
        name = c.get("name")
        if name is None and isinstance(c.get("function"), dict):
            name = c["function"].get("name")
        out.append({"name": str(name) if name is not None else "?",
                    "id": str(c.get("id") or ""), "arguments": _arguments(c)})
    return out


def message_turns(items: Any) -> list[dict[str, Any]] | None:
    """Chat messages as display turns (role, label, content or content_json, tool_calls,
    tool_call_id, round/final, extra keys as JSON); None when not a list of messages."""
    if not isinstance(items, list) or not all(
            isinstance(m, dict) and isinstance(m.get("role"), str) for m in items):
        return None
    turns = []
    for m in items:
        content = m.get("content")
        role = m["role"]
        extra = {k: v for k, v in m.items()
                 if k not in _MESSAGE_KEYS and k not in ("round", "final")}
        turns.append({
            "role": role, "label": _ROLE_LABELS.get(role, role),
            "content": content if isinstance(content, str) else None,
            # a reasoning model's thinking (``<think>`` blocks), shown folded above the reply
            "reasoning": "" if m.get("reasoning") in (None, "") else pretty(m["reasoning"]),
            "content_json": None if content is None or isinstance(content, str)
            else pretty(content),
            "tool_calls": _tool_calls(m.get("tool_calls")),
            "tool_call_id": str(m["tool_call_id"]) if m.get("tool_call_id") is not None else "",
            "round": m.get("round"), "final": bool(m.get("final")),
            "extra": pretty(extra) if extra else ""})
    return turns


def _block(value: Any) -> dict[str, Any] | None:
    """Input or target: ``{"text"}``, ``{"turns"}`` (messages) or ``{"json"}``."""
    if value is None:
        return None
    if isinstance(value, str):
        return {"text": value}
    turns = message_turns(value)
    if turns is not None:
        return {"turns": turns}
    return {"json": pretty(value)}


def _conversation(outcome: Any) -> dict[str, Any] | None:
    meta = outcome.get("metadata") if isinstance(outcome, dict) else None
    conv = meta.get("conversation") if isinstance(meta, dict) else None
    if not isinstance(conv, dict):
        return None
    turns = message_turns(conv.get("chat"))
    facts = [(k, pretty(v)) for k, v in conv.items() if k != "chat" and v not in (None, [], {})]
    return {"turns": turns, "json": None if turns is not None else pretty(conv.get("chat")),
            "facts": facts}


def _reference_steps(sample: Any) -> str | None:
    row = sample.get("row") if isinstance(sample, dict) else None
    notes = row.get("Annotator Metadata") if isinstance(row, dict) else None
    if isinstance(notes, dict) and notes.get("Steps"):
        return str(notes["Steps"])
    return None


def _scores(scores: Any) -> tuple[list[dict[str, Any]], str | None]:
    if not isinstance(scores, dict):
        return [], None if scores in (None, {}) else pretty(scores)
    out = []
    for i, (name, s) in enumerate(scores.items()):
        if not isinstance(s, dict):
            out.append({"name": str(name), "value": pretty(s), "answer": "", "explanation": "",
                        "metadata": "", "primary": i == 0})
            continue
        value = s.get("value")
        tables, meta = _record_tables(s.get("metadata"))
        out.append({
            "name": str(name), "primary": i == 0,
            "value": "none" if value is None else
            (f"{value:.4g}" if isinstance(value, float) else pretty(value)),
            "answer": "" if s.get("answer") is None else pretty(s["answer"]),
            "explanation": "" if s.get("explanation") is None else pretty(s["explanation"]),
            "tables": tables, "metadata": pretty(meta) if meta not in (None, {}, []) else ""})
    return out, None


def _record_tables(meta: Any) -> tuple[list[dict[str, Any]], Any]:
    """Lists of records in a score's metadata as tables, and the rest of it."""
    if not isinstance(meta, dict):
        return [], meta
    tables, rest = [], {}
    for key, value in meta.items():
        if (isinstance(value, list) and value and len(value) <= 200
                and all(isinstance(v, dict) for v in value)):
            columns: list[str] = []
            for record in value:
                columns += [str(c) for c in record if str(c) not in columns]
            rows = [["" if r.get(c) is None else pretty(r.get(c)) for c in columns]
                    for r in value]
            tables.append({"title": str(key), "columns": columns, "rows": rows})
        else:
            rest[key] = value
    return tables, rest


def _workdir_summary(snapshot: Any) -> Any:
    """A converse outcome's stored working folder as its file list and sizes."""
    if not isinstance(snapshot, dict) or not isinstance(snapshot.get("files"), list):
        return snapshot
    files = [f"{f.get('path')} ({len(f.get('text') or f.get('base64') or '')} chars"
             f"{', base64' if 'base64' in f else ''})" for f in snapshot["files"]
             if isinstance(f, dict)]
    return {"files": files, "bytes": snapshot.get("bytes"),
            "left_out": snapshot.get("left_out") or []}


#: why a tool loop ended, in words
ENDED_WORDS = {"answer": "the model answered", "max_steps": "the step limit was reached",
               "max_tokens": "the token limit was reached",
               "time_limit": "the time limit was reached",
               "repeated_call": "the same tool call was repeated"}


def _agent_facts(outcome: Any) -> list[tuple[str, str]]:
    """How the sample's tool loop went (the model ran with an agent), as label/value rows."""
    meta = outcome.get("metadata") if isinstance(outcome, dict) else None
    agent = meta.get("agent") if isinstance(meta, dict) else None
    if not isinstance(agent, dict):
        return []
    tools = agent.get("tools") or {}
    return [("ended", ENDED_WORDS.get(str(agent.get("ended")), str(agent.get("ended")))),
            ("steps (model calls)", str(agent.get("steps"))),
            ("tool calls", by_name(tools) or "none"),
            ("tool errors", str(agent.get("tool_errors", 0)))]


def usage_text(outcome: Any) -> str | None:
    """A sample's ``outcome.usage``: ``subject 42 in (10 cached), 42 out (5 reasoning),
    $0.0001; judge ...``; None where the sample kept none."""
    usage = outcome.get("usage") if isinstance(outcome, dict) else None
    if not isinstance(usage, dict) or not usage:
        return None
    return "; ".join(
        f"{name} {u.get('input_tokens') or 0:,} in"
        + (f" ({u['cached_input_tokens']:,} cached)" if u.get("cached_input_tokens") else "")
        + f", {u.get('output_tokens') or 0:,} out"
        + (f" ({u['reasoning_tokens']:,} reasoning)" if u.get("reasoning_tokens") else "")
        + f", {usd(u.get('cost_usd'))}" for name, u in usage.items() if isinstance(u, dict))


def sample_view(row: dict[str, Any]) -> dict[str, Any]:
    """Everything the sample page shows, from :func:`assay.store.queries.sample_row`."""
    transcript = row.get("transcript")
    turns = message_turns(transcript)
    outcome = row.get("outcome")
    conversation = _conversation(outcome)
    outcome_rest: Any = None
    if isinstance(outcome, dict):
        rest = dict(outcome)
        if isinstance(rest.get("metadata"), dict):
            meta = {k: _workdir_summary(v) if k == "workdir" else v
                    for k, v in rest["metadata"].items()
                    if not (k == "conversation" and conversation is not None)}
            rest["metadata"] = meta
        # the call log is the page's timeline, not shown again as JSON
        rest = {k: v for k, v in rest.items() if v not in (None, {}, []) and k != "call_log"}
        outcome_rest = pretty(rest) if rest else None
    elif outcome is not None:
        outcome_rest = pretty(outcome)
    sample = row.get("sample")
    tools = sample.get("tools") if isinstance(sample, dict) else None
    files = sample.get("files") if isinstance(sample, dict) else None
    scores, scores_json = _scores(row.get("scores"))
    meta = row.get("metadata")
    choices = meta.get("choices") if isinstance(meta, dict) else None
    # a multiple-choice target as the letter the prompt asks for, as the answer is shown
    letters = target_letters(row.get("target"), choices)
    return {
        "input": _block(row.get("input")), "target": _block(letters or row.get("target")),
        "turns": turns,
        "transcript_json": None if turns is not None or transcript in (None, [])
        else pretty(transcript),
        "conversation": conversation, "reference_steps": _reference_steps(sample),
        "output": row.get("output") or "",
        "prediction": "" if row.get("prediction") is None else str(row["prediction"]),
        "scores": scores, "scores_json": scores_json, "error": row.get("error"),
        "tools": pretty(tools) if tools else None,
        "row": pretty(sample["row"]) if isinstance(sample, dict) and sample.get("row") else None,
        "files": [str(f) for f in files] if isinstance(files, list) else [],
        "metadata": [(str(k), pretty(v)) for k, v in meta.items()] if isinstance(meta, dict)
        else [], "metadata_json": None if isinstance(meta, dict) or meta is None
        else pretty(meta),
        "outcome": outcome_rest, "agent": _agent_facts(outcome),
        "facts": [(label, row.get(key)) for key, label in (
            ("latency_s", "latency (s)"), ("model_s", "model time (s)"),
            ("wait_s", "waiting (s)"), ("input_tokens", "input tokens"),
            ("output_tokens", "output tokens"), ("model_calls", "model calls"),
            ("cache_hits", "cache hits")) if row.get(key) is not None]
        + ([("cost", used)] if (used := usage_text(outcome)) else [])}
