"""The examiner: assay's own prompt, a structured stop signal, and a window on the chat.

The conversation ends when ``task_finished`` is true, never because a word appears in the text.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, StrictBool, StrictStr

from assay.core.types import Message
from assay.scoring.judge import read_json

PROMPT_VERSION = "converse-examiner-1"

EXAMINER_SCHEMA: dict[str, Any] = {
    # the message bounded, so a rambling model still closes the string within its token limit
    "type": "object", "properties": {"message": {"type": "string", "maxLength": 800},
                                     "task_finished": {"type": "boolean"}},
    "required": ["message", "task_finished"], "additionalProperties": False}

SYSTEM = """You are an examiner testing an AI agent. You play the user: you give the agent \
a task and answer its questions, following the task description below. You never solve \
the task yourself.

Rules:
- Give the agent only information that the task description allows, and only when the \
description says so (for example, only when the agent asks). Never reveal the solution, \
the expected answer or how the agent will be graded.
- Keep each message short, like a real user.
- You do not judge whether the agent is right; someone else does.
- When the task description's script is complete, or the agent has clearly finished or \
given up, set "task_finished" to true (the "message" may then be empty).

Answer with JSON only: {"message": "<what you say to the agent>", "task_finished": \
<true or false>}.

The task description:
<<<
%s
>>>"""

KICKOFF = "The agent is ready. Send your first message to the agent."
RETRY = ("Your reply was not valid ({why}). Answer again with JSON only, exactly "
         '{{"message": "<text>", "task_finished": true or false}}.')
#: messages of the conversation the examiner sees, most recent last
WINDOW = 24
CLIP = 4000


class ExaminerTurn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    message: StrictStr
    task_finished: StrictBool


def _clip(text: str, limit: int = CLIP) -> str:
    return text if len(text) <= limit else text[:limit] + f" [... {len(text) - limit} chars]"


def examiner_messages(task_description: str, chat: list[dict[str, str]], rounds: int,
                      max_rounds: int, limit_chars: int | None = None) -> list[Message]:
    """The examiner's view: its instructions, then the conversation (itself = assistant),
    at most the last :data:`WINDOW` messages and fewer past ``limit_chars`` (a small local
    model's context), noting how many were left out."""
    msgs = [Message("system", SYSTEM % task_description.strip())]
    shown = chat[-WINDOW:]
    clip = CLIP if limit_chars is None else min(CLIP, max(200, limit_chars // 4))
    if limit_chars is not None:
        used = 0
        keep = 0
        for m in reversed(shown):
            used += min(len(m["content"]), clip) + 40
            if used > limit_chars and keep:
                break
            keep += 1
        shown = shown[-keep:] if keep else []
    skipped = len(chat) - len(shown)
    first = KICKOFF if not skipped else (
        f"{KICKOFF} ({skipped} earlier messages of this conversation are not shown.)")
    msgs.append(Message("user", first))
    for m in shown:
        if m["role"] == "examiner":
            msgs.append(Message("assistant", json.dumps(
                {"message": _clip(m["content"], clip), "task_finished": False},
                ensure_ascii=False)))
        elif msgs[-1].role == "user":  # the window opens on an agent message
            msgs[-1] = Message("user", f"{msgs[-1].content}\n\nAgent: "
                                       f"{_clip(m['content'], clip)}")
        else:
            msgs.append(Message("user", f"Agent: {_clip(m['content'], clip)}"))
    if rounds:
        msgs[-1] = Message("user", f"{msgs[-1].content}\n\n(The agent has replied {rounds} "
                                   f"time(s); the conversation may last {max_rounds}.)")
    return msgs


def parse_examiner(text: str) -> tuple[ExaminerTurn | None, str | None]:
    """The examiner's turn, or ``None`` and why the reply is not valid."""
    turn, why = read_json(text, lambda obj: (ExaminerTurn.model_validate(obj), None),
                          strict=True, fence=False)
    if turn is not None and not turn.task_finished and not turn.message.strip():
        return None, "an empty message without task_finished"
    return turn, why
