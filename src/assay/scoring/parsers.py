"""Answer parsers that catalogue (gallery) entries name: the answer a reply gives, or
``None`` (lm-eval's ``[invalid]``; the entry's failure policy decides what it counts as).
The ``gsm8k_*`` ones are lm-evaluation-harness's filters, rule for rule (tested against
lm-eval's ``RegexFilter``)."""

from __future__ import annotations

import re
from collections.abc import Callable

from assay.data.boxed import last_boxed
from assay.scoring.extraction import extract_answer, strip_reasoning
from assay.scoring.vocabulary import unknown_name

_GSM8K_STRICT = re.compile(r"#### (\-?[0-9\.\,]+)")
_GSM8K_FLEXIBLE = re.compile(r"(-?[$0-9.,]{2,})|(-?[0-9]+)")
_COT_ANSWER = re.compile(r"The answer is (\-?[0-9\.\,]+).")


def gsm8k_strict(text: str) -> str | None:
    m = _GSM8K_STRICT.search(text)
    return m.group(1).strip() if m else None


def gsm8k_flexible(text: str) -> str | None:
    found = _GSM8K_FLEXIBLE.findall(text)
    if not found:
        return None
    last = found[-1]
    return (last[0] or last[1]).strip()


def gsm8k_cot(text: str) -> str | None:
    m = _COT_ANSWER.search(text)
    return m.group(1).strip() if m else None


def answer_line(text: str) -> str | None:
    """assay's general rule (:func:`assay.scoring.extraction.extract_answer`)."""
    answer, _ = extract_answer(text)
    return answer


def boxed(text: str) -> str | None:
    return last_boxed(strip_reasoning(text))


def first_line(text: str) -> str | None:
    for line in strip_reasoning(text).splitlines():
        if line.strip():
            return line.strip()
    return None


def whole(text: str) -> str | None:
    """The whole reply (the metric reads it itself), unless empty."""
    return text if text.strip() else None


def parser_extraction(name: str, text: str) -> str | None:
    """A score's ``metadata["extraction"]``: ``answer_line``'s method, a pattern parser's
    name, ``None`` for ``whole`` (the metric reads the reply itself and says how)."""
    if name == "whole":
        return None
    return extract_answer(text)[1] if name == "answer_line" else name


PARSERS: dict[str, Callable[[str], str | None]] = {
    f.__name__: f for f in (answer_line, gsm8k_strict, gsm8k_flexible, gsm8k_cot, boxed,
                            first_line, whole)}


def get_parser(name: str) -> Callable[[str], str | None]:
    try:
        return PARSERS[name]
    except (KeyError, TypeError):
        raise unknown_name("answer parser", name, PARSERS, list(PARSERS)) from None
