"""Single-answer grading as FastChat's MT-Bench does it, with invalid verdicts kept apart.

Per question, two verdicts (FastChat ``llm_judge/common.py``, ``create_conv_single`` and
``gen_judgment.py``'s ``make_judge_single``):

* turn 1: ``single-v1`` (or ``single-math-v1`` with the reference's first turn, for the
  categories graded against a reference), filled with the first question and answer;
* turn 2: ``single-v1-multi-turn`` (or ``single-math-v1-multi-turn`` with both reference
  turns), filled with the whole two-turn conversation.

The judge gets the prompt's ``system_prompt`` as the system message and the filled
template as the user message; it is asked at temperature 0 (FastChat's judge setting).

The rating is read as FastChat's ``process_judgement`` reads it: the first match of
``\\[\\[(\\d+\\.?\\d*)\\]\\]``, else the first of ``\\[(\\d+\\.?\\d*)\\]``; so ``[[8]]``,
``[[7.5]]`` and a bare ``[8]`` are ratings. Where this differs from FastChat:

* a number outside 1-10 is not a rating here (FastChat keeps it);
* the number is read with ``float`` (FastChat's ``ast.literal_eval`` raises on ``08``);
* a reply with no rating gets ONE corrective retry that shows the judge its reply (the
  NVIDIA wheel re-sends the same request up to 5 times, which at temperature 0 mostly
  repeats it, and which our response cache would answer with the same reply); a second
  failure makes the verdict *invalid*: counted and shown, never a score (FastChat writes
  ``-1`` and its ``show_result.py`` silently drops those rows);
* the wheel also tries ``Rating: (\\d+)`` but never uses what it finds (dead code); so
  does this module, by leaving it out.
"""

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

#: the corrective message after a reply with no rating (our own words)
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
    """A constrained reply as FastChat's verdict text (``explanation`` then ``Rating: [[N]]``),
    so that it is stored and read like any judge's reply; anything else is kept as it is."""
    try:
        data = json.loads(raw, strict=False)  # a small model puts raw newlines in strings
    except ValueError:
        return raw
    rating = data.get("rating") if isinstance(data, dict) else None
    if isinstance(rating, bool) or not isinstance(rating, int):
        return raw
    return f"{str(data.get('explanation') or '').strip()}\n\nRating: [[{rating}]]"


def constrained_judge(judge: Any) -> bool:
    """Whether a judge (a model, the engine's context around one, or a model spec) gets
    :data:`RATING_SCHEMA`: one whose provider guarantees schema-constrained replies (the
    embedded or any local GGUF model)."""
    return judge is not None and capabilities_of(judge).constrained_decoding


def parse_rating(text: str | None) -> tuple[float | None, str | None]:
    """The judge's rating (1-10), or ``None`` and why the reply has none."""
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
    """The judge prompt FastChat uses for a question of ``category`` at ``turn`` (1 or 2)."""
    return SINGLE_PROMPTS[(needs_reference(category), turn == 2)]


def judge_messages(prompt: JudgePrompt, turn: int, questions: list[str], answers: list[str],
                   reference: list[str] | None) -> list[Message]:
    """The judge's request for one turn: the prompt's system message and its template
    filled in as FastChat fills it (the reference only for reference-guided prompts)."""
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
    """The rating of a constrained (:data:`RATING_SCHEMA`) reply, read as FastChat's text."""
    return parse_rating(as_fastchat_text(raw))


def rating_of(replies: list[str]) -> float | None:
    """The rating of one stored vote: the first of its replies that has one (``None``:
    invalid)."""
    for raw in replies:
        value, _ = parse_rating(raw)
        if value is not None:
            return value
    return None


async def grade_turn(jury: list[Any], prompt: JudgePrompt, turn: int, questions: list[str],
                     answers: list[str], reference: list[str] | None, *, samples: int,
                     max_tokens: int, seed: int | None) -> dict[str, Any]:
    """Every vote on one turn: ``{turn, prompt, user_prompt, votes: [{replies}]}``.

    Each judge of the jury votes ``samples`` times through :func:`assay.scoring.judge.poll`
    (one vote at temperature 0, FastChat's judge setting; several sampled at 0.7 with
    seeds ``seed + i``); a reply with no rating gets one corrective retry. A constrained
    judge's replies are kept as FastChat's text (:func:`as_fastchat_text`).
    """
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
    return {"turn": turn, "prompt": prompt.name, "user_prompt": messages[1].content,
            "votes": votes}


def turn_verdict(judgment: dict[str, Any]) -> dict[str, Any]:
    """A turn's verdict from its stored votes: the mean of the valid votes' ratings
    (``None`` and ``invalid`` when no vote has one), and how far the votes agree
    (:func:`assay.scoring.judge.combine`, rule ``mean``)."""
    ratings = [rating_of(v.get("replies") or []) for v in judgment.get("votes") or []]
    verdict = combine(ratings, rule="mean")
    replies = [len(v.get("replies") or []) for v in judgment.get("votes") or []]
    return {"turn": judgment.get("turn"), "prompt": judgment.get("prompt"),
            "rating": verdict.value, "invalid": verdict.invalid,
            "votes": ratings, "invalid_votes": verdict.invalid_votes,
            "retried_votes": sum(1 for n in replies if n > 1),
            "agreement": verdict.agreement}
