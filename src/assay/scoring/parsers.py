"""Answer parsers that catalogue (gallery) entries name: the answer a reply gives, or
``None`` when it gives none.

``gsm8k_strict`` and ``gsm8k_flexible`` are lm-evaluation-harness's two GSM8K filters,
rule for rule (the tests check them against lm-eval's own ``RegexFilter``):

* strict-match: the first match of ``#### (\\-?[0-9\\.\\,]+)``, group 1;
* flexible-extract: the last match of ``(-?[$0-9.,]{2,})|(-?[0-9]+)``, its non-empty group.

lm-eval returns the literal ``[invalid]`` when nothing matches; here that is ``None``, and
the entry's failure policy decides what it counts as.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from assay.data.math500 import last_boxed
from assay.scoring.extraction import extract_answer, strip_reasoning
from assay.scoring.vocabulary import unknown_name

_GSM8K_STRICT = re.compile(r"#### (\-?[0-9\.\,]+)")
_GSM8K_FLEXIBLE = re.compile(r"(-?[$0-9.,]{2,})|(-?[0-9]+)")
_COT_ANSWER = re.compile(r"The answer is (\-?[0-9\.\,]+).")


def gsm8k_strict(text: str) -> str | None:
    """lm-eval's GSM8K ``strict-match`` filter."""
    m = _GSM8K_STRICT.search(text)
    return m.group(1).strip() if m else None


def gsm8k_flexible(text: str) -> str | None:
    """lm-eval's GSM8K ``flexible-extract`` filter (the last number-like run)."""
    found = _GSM8K_FLEXIBLE.findall(text)
    if not found:
        return None
    last = found[-1]
    return (last[0] or last[1]).strip()


def gsm8k_cot(text: str) -> str | None:
    """lm-eval's ``gsm8k_cot`` strict filter: ``The answer is N.``"""
    m = _COT_ANSWER.search(text)
    return m.group(1).strip() if m else None


def answer_line(text: str) -> str | None:
    """assay's general rule: ``Answer: ...``, ``\\boxed{}``, ``the answer is ...``, or a
    short reply as a whole (see :func:`assay.scoring.extraction.extract_answer`)."""
    answer, _ = extract_answer(text)
    return answer


def boxed(text: str) -> str | None:
    """The last ``\\boxed{...}`` (the MATH convention)."""
    return last_boxed(strip_reasoning(text))


def first_line(text: str) -> str | None:
    """The first non-empty line of the reply."""
    for line in strip_reasoning(text).splitlines():
        if line.strip():
            return line.strip()
    return None


def whole(text: str) -> str | None:
    """The whole reply (the metric reads it itself); ``None`` only when it is empty."""
    return text if text.strip() else None


def parser_extraction(name: str, text: str) -> str | None:
    """How parser ``name`` found its answer in ``text``, as a score's
    ``metadata["extraction"]``: ``answer_line``'s method (``marker``, ``boxed``, or
    ``full`` for the whole reply taken as the answer), the parser's own name for a pattern
    parser (``gsm8k_flexible``), ``None`` for ``whole`` (the metric reads the reply itself
    and says how)."""
    if name == "whole":
        return None
    if name == "answer_line":
        return extract_answer(text)[1]
    return name


PARSERS: dict[str, Callable[[str], str | None]] = {
    "answer_line": answer_line,
    "gsm8k_strict": gsm8k_strict,
    "gsm8k_flexible": gsm8k_flexible,
    "gsm8k_cot": gsm8k_cot,
    "boxed": boxed,
    "first_line": first_line,
    "whole": whole,
}


def get_parser(name: str) -> Callable[[str], str | None]:
    """The answer parser named ``name``; a one-line ``ConfigError`` with a suggestion when
    there is none."""
    try:
        return PARSERS[name]
    except (KeyError, TypeError):
        raise unknown_name("answer parser", name, PARSERS, list(PARSERS)) from None
