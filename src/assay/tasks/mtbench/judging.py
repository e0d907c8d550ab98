"""FastChat MT-Bench single-answer grading at temperature 0: turn 1 ``single-v1``, turn 2 the
whole conversation; ``single-math-*`` with the reference. Rating read as ``process_judgement``
(``[[n]]``, else ``[n]``). Unlike FastChat: outside 1-10 is none; ``float`` not
``literal_eval``; no rating gets ONE corrective retry, then *invalid* (counted, never scored)."""

from __future__ import annotations

import json
import re
from typing import Any

from assay.core.types import Message
from assay.models.registry import capabilities_of
from assay.scoring.judge import combine, poll
from assay.tasks.mtbench.dataset import SINGLE_PROMPTS, JudgePrompt, needs_reference

#: FastChat's ``one_score_pattern`` and ``one_score_pattern_backup``
RATING = re.compile(r"\[\[(\d+\.?\d*)\]\]")
RATING_BACKUP = re.compile(r"\[(\d+\.?\d*)\]")
MIN_RATING, MAX_RATING = 1.0, 10.0

RETRY = ("I could not find your rating in that reply ({why}). Reply with your rating of the "
         "assistant's response on the scale of 1 to 10, written in double square brackets, "
         "for example [[6]].")

#: the reply a local (GGUF) judge is held to with constrained decoding: a small model writes
#: no ``[[N]]`` of its own, so its rating is asked for as a schema field (our own shape)
RATING_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"explanation": {"type": "string", "maxLength": 600},
                   "rating": {"type": "integer", "enum": list(range(1, 11))}},
    "required": ["explanation", "rating"],
    "additionalProperties": False,
}


def as_fastchat_text(raw: str) -> str:
    """A constrained reply as FastChat's verdict text (``... Rating: [[N]]``); else as is."""
    try:
        data = json.loads(raw, strict=False)  # a small model puts raw newlines in strings
    except ValueError:
        return raw
    rating = data.get("rating") if isinstance(data, dict) else None
    if isinstance(rating, bool) or not isinstance(rating, int):
        return raw
    return f"{str(data.get('explanation') or '').strip()}\n\nRating: [[{rating}]]"


def constrained_judge(judge: Any) -> bool:
    """Whether a judge (model, context or spec) guarantees schema-constrained replies."""
    return judge is not None and capabilities_of(judge).constrained_decoding


def parse_rating(text: str | None) -> tuple[float | None, str | None]:
    raw = text or ""
    if not raw.strip():
        return None, "an empty reply"
    found = RATING.search(raw) or RATING_BACKUP.search(raw)
    if found is None:
        return None, "no [[rating]] in the reply"
    value = float(found.group(1))
    if not MIN_RATING <= value <= MAX_RATING:
        return None, f"the rating {found.group(1)} is outside 1-10"
    return value, None


def prompt_name(category: str, turn: int) -> str:
    return SINGLE_PROMPTS[(needs_reference(category), turn == 2)]


def judge_messages(prompt: JudgePrompt, turn: int, questions: list[str], answers: list[str],
                   reference: list[str] | None) -> list[Message]:
    values: dict[str, str] = {}
    if reference is not None:
        values["ref_answer_1"] = reference[0]
        if turn == 2:
            values["ref_answer_2"] = reference[1]
    if turn == 2:
        values.update(question_1=questions[0], question_2=questions[1],
                      answer_1=answers[0], answer_2=answers[1])
    else:
        values.update(question=questions[0], answer=answers[0])
    user = prompt.prompt_template.format(**values)
    return [Message("system", prompt.system_prompt), Message("user", user)]


def read_constrained(raw: str) -> tuple[float | None, str | None]:
    return parse_rating(as_fastchat_text(raw))


def rating_of(replies: list[str]) -> float | None:
    """The first rating among one vote's replies (``None``: invalid)."""
    for raw in replies:
        value, _ = parse_rating(raw)
        if value is not None:
            return value
    return None


async def grade_turn(jury: list[Any], prompt: JudgePrompt, turn: int, questions: list[str],
                     answers: list[str], reference: list[str] | None, *, samples: int,
                     max_tokens: int, seed: int | None) -> dict[str, Any]:
    """Every vote on one turn: ``{turn, prompt, user_prompt, votes: [{replies}]}``; each
    judge votes ``samples`` times through :func:`assay.scoring.judge.poll`."""
    messages = judge_messages(prompt, turn, questions, answers, reference)
    votes = []
    for judge in jury:
        constrained = constrained_judge(judge)
        for vote in await poll([judge], messages, read_constrained if constrained
                               else parse_rating, retry=RETRY,
                               schema=RATING_SCHEMA if constrained else None,
                               params={"max_tokens": max_tokens, "temperature": 0.0},
                               samples=samples, seed=seed):
            row: dict[str, Any] = {"replies": [as_fastchat_text(r) if constrained else r
                                               for r in vote.replies]}
            if len(jury) > 1:
                row["judge"] = vote.judge
            votes.append(row)
    return {"turn": turn, "prompt": prompt.name, "user_prompt": messages[1].content, "votes": votes}


def turn_verdict(judgment: dict[str, Any]) -> dict[str, Any]:
    """A turn's verdict: the mean of its valid votes (``invalid`` when none) and agreement."""
    ratings = [rating_of(v.get("replies") or []) for v in judgment.get("votes") or []]
    verdict = combine(ratings, rule="mean")
    replies = [len(v.get("replies") or []) for v in judgment.get("votes") or []]
    return {"turn": judgment.get("turn"), "prompt": judgment.get("prompt"),
            "rating": verdict.value, "invalid": verdict.invalid,
            "votes": ratings, "invalid_votes": verdict.invalid_votes,
            "retried_votes": sum(1 for n in replies if n > 1),
            "agreement": verdict.agreement}
