"""The judge of one scoring point: ``{reason, is_hit}``, strictly, or *invalid*.

Anything else gets one corrective retry, then the vote is invalid (counted, never a hit or miss);
several votes: the majority of the valid ones, with the agreement rate.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, StrictBool, StrictStr, field_validator

from assay.core.types import Message
from assay.scoring.judge import combine, read_json

PROMPT_VERSION = "converse-judge-1"

JUDGE_SCHEMA: dict[str, Any] = {
    "type": "object", "properties": {"reason": {"type": "string", "maxLength": 600},
                                     "is_hit": {"type": "boolean"}},
    "required": ["reason", "is_hit"], "additionalProperties": False}

SYSTEM = """You grade a conversation between a user (the examiner) and an AI agent. You \
are given the task the user had in mind, the conversation, and one statement. Decide \
whether the statement is true of the conversation (and of the agent's work shown in \
it). Judge only this statement; quote the evidence in your reason.

Answer with JSON only: {"reason": "<one or two sentences>", "is_hit": <true if the \
statement holds, else false>}."""

RETRY = ("Your reply was not a valid verdict ({why}). Answer again with JSON only, exactly "
         '{{"reason": "<text>", "is_hit": true or false}}.')


class Verdict(BaseModel):
    model_config = ConfigDict(extra="forbid")

    reason: StrictStr
    is_hit: StrictBool

    @field_validator("is_hit", mode="before")
    @classmethod
    def _yes_no(cls, v: Any) -> Any:
        if isinstance(v, str) and v.strip().lower() in ("yes", "no"):
            return v.strip().lower() == "yes"
        return v


def parse_verdict(text: str) -> tuple[Verdict | None, str | None]:
    """The verdict, or ``None`` and why the reply is not one."""
    verdict, why = read_json(text, lambda obj: (Verdict.model_validate(obj), None), strict=True)
    if verdict is not None and not verdict.reason.strip():
        return None, "an empty reason"
    return verdict, why


def transcript_text(chat: list[dict[str, str]], limit: int) -> str:
    """The conversation as the judge reads it, within ``limit`` characters: when longer,
    its first message and as many of the last as fit, noting how many were left out."""
    lines = [f"[{m['role'].upper()}]: {m['content']}" for m in chat]
    text = "\n\n".join(lines)
    if len(text) <= limit or len(lines) < 2:
        return text[-limit:] if len(text) > limit else text
    head = lines[0][: limit // 4]
    tail: list[str] = []
    used = len(head) + 80
    for line in reversed(lines[1:]):
        if used + len(line) + 2 > limit:
            break
        tail.insert(0, line)
        used += len(line) + 2
    left = len(lines) - 1 - len(tail)
    return "\n\n".join([head, f"[... {left} message(s) left out ...]", *tail])


def judge_messages(task_description: str, chat_text: str, statement: str) -> list[Message]:
    user = (f"The task (the examiner's instructions):\n<<<\n{task_description.strip()}\n>>>\n\n"
            f"The conversation:\n<<<\n{chat_text}\n>>>\n\n"
            f"The statement:\n<<<\n{statement.strip()}\n>>>")
    return [Message("system", SYSTEM), Message("user", user)]


def majority(votes: list[dict[str, Any]]) -> dict[str, Any]:
    """The point's verdict from its votes (``{is_hit, invalid, reason, agreement, ...}``)."""
    verdict = combine([None if v.get("invalid") else v["is_hit"] for v in votes])
    hits = sum(1 for v in votes if not v.get("invalid") and v["is_hit"])
    out: dict[str, Any] = {"kind": "llm", "votes": votes, "valid_votes": verdict.valid,
                           "hits": hits, "misses": verdict.valid - hits,
                           "is_hit": verdict.value, "invalid": verdict.invalid,
                           "agreement": verdict.agreement}
    if verdict.invalid:
        why = "no valid verdict" if not verdict.valid else f"a tie ({hits} hit, {out['misses']} miss)"
        reasons = "; ".join(str(v.get("reason") or "") for v in votes)[:1000]
        return {**out, "reason": f"invalid: {why}" + (f" ({reasons})" if reasons else "")}
    return {**out, "reason": next(v["reason"] for v in votes
                                  if not v.get("invalid") and v["is_hit"] == verdict.value)}
