"""The rubric judge's prompts (Prometheus style: every dimension with its five anchored
levels, the candidate's statement, stated answer and solution, and optionally a real
problem as the score-5 anchor) and the corrective retry."""

from __future__ import annotations

from typing import Any

from assay.core.types import Message
from assay.tasks.datagen.rubric import Rubric, verdict_example

PROMPT_VERSION = "judge-v1"

JUDGE_SYSTEM = (
    "You are an impartial, strict judge of competition mathematics problems. You evaluate "
    "one problem at a time against a score rubric with anchored levels, and you reply with "
    "JSON only."
)

JUDGE_TEMPLATE = """###Task Description
Evaluate the candidate AIME-style problem below (its statement, stated answer and solution) \
on every dimension of the score rubric.
1. Check the mathematics yourself: work out the answer and compare it with the stated answer \
before scoring correctness.
2. For each dimension, choose the level whose description fits best; judge strictly by the \
level descriptions, not by your general impression.
3. Do not reward length or elaborate wording; a concise, precise problem can score 5.
4. Write a short rationale (two or three sentences), then the scores.
Reply with only a JSON object of this form:
{example}
{reference}
###Candidate problem
{problem}

###Stated answer
{answer}

###Solution
{solution}

###Score rubric
{rubric}
"""

REFERENCE_TEMPLATE = """
###Reference problem (score 5)
A real competition problem, given as the standard of a score of 5 on every dimension:
{problem}
Answer: {answer}
"""

RETRY_TEMPLATE = (
    "Your reply could not be used: {why}. Reply again with only a JSON object of the form "
    "{example} with an integer from 1 to 5 for each of: {dims}. No other text."
)


def rationale_limit(max_tokens: Any, *, cap: int = 500, room: int = 200) -> int:
    """The rationale's ``maxLength``: at most ``cap`` characters, and ``room`` tokens fewer
    than ``max_tokens`` (a token is at least one character), so that a constrained judge
    always has the tokens left to write its verdict after the rationale."""
    try:
        budget = int(max_tokens)
    except (TypeError, ValueError):
        return cap
    return max(20, min(cap, budget - room))


def judge_messages(problem: dict[str, Any], rubric: Rubric,
                   anchor: dict[str, Any] | None = None) -> list[Message]:
    """System role, then the rubric prompt for ``problem`` (``problem``, ``answer``,
    ``solution``), with ``anchor`` (``problem``, ``answer``) as the score-5 reference."""
    ref = ""
    if anchor:
        ref = REFERENCE_TEMPLATE.format(problem=str(anchor["problem"]).strip(),
                                        answer=anchor["answer"])
    user = JUDGE_TEMPLATE.format(
        example=verdict_example(rubric), reference=ref,
        problem=str(problem["problem"]).strip(),
        answer=str(problem.get("answer", "")).strip() or "(none given)",
        solution=str(problem.get("solution") or "").strip() or "(none given)",
        rubric=rubric.render())
    return [Message("system", JUDGE_SYSTEM), Message("user", user)]


def retry_text(why: str | None, rubric: Rubric) -> str:
    """The corrective message after a reply that is not a valid verdict."""
    return RETRY_TEMPLATE.format(why=why, example=verdict_example(rubric),
                                 dims=", ".join(rubric.names))
