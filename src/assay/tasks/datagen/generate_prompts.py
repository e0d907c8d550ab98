"""The generator's prompts: the book's AIME prompt, the correction sent on a retry, and
the JSON Schema of a generation (sent for constrained decoding where supported)."""

from __future__ import annotations

from typing import Any

#: the book's topic list
TOPICS = ("Algebra", "Geometry", "Number Theory", "Combinatorics", "Probability")
SYSTEM_PROMPT = "You are a professional mathematics competition problem designer."
#: room for a full solution (``max_tokens``); a model with a smaller context stops where
#: its context ends
DEFAULT_MAX_TOKENS = 2048

REFERENCE_BLOCK = """【Reference Example】(For style reference only, please generate a completely different problem)
Problem: {problem}
Answer: {answer}

"""

GENERATION_PROMPT = """You are a professional mathematics competition problem designer, skilled in creating AIME (American Invitational Mathematics Examination) style problems.

{reference}AIME Problem Characteristics:
1. Answer: An integer between 0 and 999
2. Topics: {topic_list}
3. Style: Requires multi-step reasoning, but no advanced theory
4. Difficulty: Medium to hard (similar to AIME problems 6-9)

Please generate a **completely different** AIME-style mathematics problem on the topic {topic}, including:
1. Problem statement (clear and complete, different from the reference)
2. Answer (an integer between 0 and 999, different from the reference)
3. Detailed solution (including all reasoning steps)
4. Topic classification ({topic})

Please output only the following JSON object (in JSON strings, write each LaTeX backslash twice, as in "\\\\frac"):
{{
    "problem": "Problem statement in English",
    "answer": 123,
    "solution": "Detailed solution steps in English",
    "topic": "{topic}"
}}
"""

CORRECTION_PROMPT = (
    "Your previous reply could not be used: {reasons}. Reply again with only one JSON object "
    'with the keys "problem" (string), "answer" (an integer from 0 to 999), "solution" '
    '(string) and "topic" (string). In JSON strings, write each LaTeX backslash twice '
    '("\\\\frac").'
)


def response_schema(topics: list[str] | None = None) -> dict[str, Any]:
    """JSON Schema of a generation: the answer an integer 0..999; topic from ``topics``."""
    topic: dict[str, Any] = {"type": "string"}
    if topics:
        topic["enum"] = list(topics)
    return {"type": "object",
            "properties": {"problem": {"type": "string"},
                           "answer": {"type": "integer", "minimum": 0, "maximum": 999},
                           "solution": {"type": "string"}, "topic": topic},
            "required": ["problem", "answer", "solution", "topic"],
            "additionalProperties": False}
