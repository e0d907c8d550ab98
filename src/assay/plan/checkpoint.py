"""Human checkpoints: a free-text answer becomes approve, edit, drop, add, back, or ``None`` (ask
again); rules first, then the planner model. Nothing is ever approved by default."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

ACTIONS = ("approve", "edit", "drop", "add", "back")
PROMPT = "approve / edit / drop TASK / add TASK / back"

_APPROVE = {"approve", "approved", "a", "yes", "y", "ok", "okay", "lgtm", "looks good",
            "go", "go ahead", "continue", "accept", "proceed", "fine", "good", "next"}
_BACK = {"back", "b", "go back", "undo", "previous", "previous step", "one step back"}
_EDIT = {"edit", "e", "open editor", "editor", "change it", "let me edit"}


@dataclass
class Action:
    action: str
    targets: list[str]
    by: str  # rules | model

    def to_dict(self) -> dict[str, Any]:
        return {"action": self.action, "targets": self.targets, "by": self.by}


def _clean(text: str) -> str:
    return re.sub(r"[\s.!]+$", "", " ".join(text.strip().lower().split()))


def _split_targets(text: str) -> list[str]:
    return [t.strip() for t in re.split(r"\s*(?:,|\band\b|&|\+)\s*", text) if t.strip()]


def read_rules(answer: str) -> Action | None:
    """The action an answer states in so many words, else ``None``."""
    text = _clean(answer)
    if not text:
        return None
    if text in _APPROVE:
        return Action("approve", [], "rules")
    if text in _BACK:
        return Action("back", [], "rules")
    if text in _EDIT:
        return Action("edit", [], "rules")
    m = re.fullmatch(r"(?:drop|remove|delete|d|without)\s+(.+)", text)
    if m:
        return Action("drop", _split_targets(m.group(1)), "rules")
    m = re.fullmatch(r"(?:add|include|plus)\s+(.+)", text)
    if m:
        return Action("add", _split_targets(m.group(1)), "rules")
    return None


def answer_schema() -> dict[str, Any]:
    """The schema a planner model reads a free-text answer under."""
    return {"type": "object",
            "properties": {"action": {"type": "string", "enum": [*ACTIONS, "unclear"]},
                           "targets": {"type": "array", "items": {"type": "string",
                                                                  "maxLength": 60},
                                       "maxItems": 4}},
            "required": ["action", "targets"], "additionalProperties": False}


def read_with_model(answer: str, ask: Any, tasks: list[str]) -> tuple[Action | None,
                                                                       dict[str, Any]]:
    """The planner model's reading of an answer (``None``: unclear), and the call made."""
    prompt = ("A user reviews an evaluation plan whose tasks are: "
              f"{', '.join(tasks) or 'none'}. Their answer: {answer!r}\n"
              "Which action does the answer ask for? approve (accept the plan as it is), "
              "edit (open the file), drop (remove the named tasks), add (add the named "
              "tasks), back (undo the last step), or unclear.\nJSON:")
    reply = ask(prompt, answer_schema())
    call = {"step": "checkpoint", "prompt": prompt, "reply": reply}
    ok = (isinstance(reply, dict) and reply.get("action") in ACTIONS
          and isinstance(reply.get("targets"), list)
          and all(isinstance(t, str) for t in reply["targets"]))
    call["accepted"] = bool(ok)
    if not ok:
        return None, call
    action = Action(reply["action"], [t.strip() for t in reply["targets"] if t.strip()], "model")
    # approval (and edit, back) must be said in words the rules read: a model never
    # approves for the user; a drop or add is taken only with targets the answer names
    said = _norm(answer)
    if action.action not in ("drop", "add") or not action.targets or not all(
            _norm(t) and _norm(t) in said for t in action.targets):
        call["accepted"] = False
        return None, call
    return action, call


def _norm(text: str) -> str:
    return re.sub(r"[\s_\-]+", "", text.lower())


def interpret(answer: str, *, ask: Any = None, tasks: list[str] | None = None
              ) -> tuple[Action | None, list[dict[str, Any]]]:
    """The action an answer asks for (``None``: ask again), and the model calls made."""
    action = read_rules(answer)
    if action is not None or ask is None or not _clean(answer):
        return action, []
    action, call = read_with_model(answer, ask, tasks or [])
    return action, [call]
