"""GAIA answer extraction and matchers, each ``(model_answer, ground_truth) -> bool``.

:func:`official_match` (default) is the leaderboard's rule, picked by the gold: ``float()``-able
is a **number** (``$ % ,`` removed, ``float()`` or +inf, exact); else with ``,``/``;`` a **list**
(split on both, same length, in order, numbers by the number rule, others without whitespace,
lowercased); else a **string** (no whitespace or ASCII punctuation, lowercased). ``None`` is
``"None"``. :func:`lenient_match`: the Hello-Agents book's rule, two bugs fixed
(:data:`FIXES_NOTE`); :func:`partial_match` its never-correct diagnostic. No code copied."""

from __future__ import annotations

import math
import re
import string
from collections.abc import Callable

from assay.errors import ConfigError
from assay.scoring import strip_reasoning

__all__ = [
    "FIXES_NOTE",
    "SCORERS",
    "extract_final_answer",
    "get_scorer",
    "lenient_match",
    "normalize_lenient",
    "normalize_official_list_element",
    "normalize_official_number",
    "normalize_official_string",
    "official_branch",
    "official_match",
    "partial_match",
    "split_official_list",
]

FIXES_NOTE = (
    "The lenient scorer follows the Hello-Agents book's quasi-exact-match rules "
    "(lowercase, drop a leading article, drop $ % € £ and thousands separators, collapse "
    "spaces, strip trailing punctuation, compare comma lists sorted) with two bugs of "
    "HelloAgents 0.2.x fixed: thousands separators are removed before lists are split on "
    "commas, and only inside \\d{1,3}(,\\d{3})+ number patterns, so '1,000' is the number "
    "1000 rather than the list ['1', '000']; and a leading 'the', 'a' or 'an' is removed "
    "only when another word follows it, so the answers 'A' and 'An' are no longer emptied "
    "and equal. It is not the leaderboard's rule; the official scorer is."
)

# Markdown bold may wrap the marker: "**FINAL ANSWER:** x" or "**FINAL ANSWER**: x".
_BOLD_MARKER = r"(\*\*)?[ \t]*(?:{core})[ \t]*(\*\*)?[ \t]*{colon}(?(1)(?(2)|(?:[ \t]*\*\*)?))"
_FINAL_MARKER = re.compile(
    _BOLD_MARKER.format(core=r"(?<![A-Za-z])final[ \t]+answer", colon=":"), re.IGNORECASE
)
# The book's fallbacks: 答案 / 最终答案 / Final answer / Answer, ASCII or full-width colon.
_ANSWER_MARKER = re.compile(
    _BOLD_MARKER.format(core=r"最终答案|答案|(?<![A-Za-z])(?:final[ \t]+)?answer", colon="[：:]"),
    re.IGNORECASE,
)


def _unwrap(s: str, open_ch: str, close_ch: str) -> str | None:
    no, nc = len(open_ch), len(close_ch)
    if len(s) < no + nc or not s.startswith(open_ch) or not s.endswith(close_ch):
        return None
    if open_ch == close_ch:  # "**a** and **b**" is not one wrapped span
        inner = s[no:-nc]
        return None if open_ch in inner else inner
    depth = 0
    for i, ch in enumerate(s):
        if ch == open_ch:
            depth += 1
        elif ch == close_ch:
            depth -= 1
            if depth == 0 and i != len(s) - 1:
                return None  # "[a] and [b]": the first bracket closes early
    return s[no:-nc] if depth == 0 else None


def _clean_answer(s: str) -> str:
    """Strip whitespace, surrounding ``[ ]`` and ``** **``, repeatedly (a trailing period stays)."""
    prev = None
    s = s.strip()
    while s != prev:
        prev = s
        for open_ch, close_ch in (("**", "**"), ("[", "]")):
            inner = _unwrap(s, open_ch, close_ch)
            if inner is not None:
                s = inner.strip()
    return s


def _rest_of_line(text: str, end: int) -> str:
    """The text from ``end`` to the end of its line, or the next non-empty line if blank."""
    nl = text.find("\n", end)
    line = text[end:] if nl < 0 else text[end:nl]
    if not line.strip() and nl >= 0:
        for nxt in text[nl + 1:].split("\n"):
            if nxt.strip():
                return nxt
    return line


def extract_final_answer(output: str | None) -> tuple[str | None, str]:
    """``(answer, method)``, ``<think>`` blocks removed first. Methods, in order:
    ``final_answer`` (the rest of the line after the last ``FINAL ANSWER:``, or the next
    non-empty line), ``answer_marker`` (the same after ``答案:``/``最终答案:``/``Answer:``),
    ``last_line`` (the last non-empty line not starting with ``#``), ``full``;
    ``(None, "none")`` for no output or nothing after the last marker."""
    if not output:
        return None, "none"
    text = strip_reasoning(output).replace("\r\n", "\n").replace("\r", "\n")
    if not text.strip():
        return None, "none"
    for pattern, method in ((_FINAL_MARKER, "final_answer"), (_ANSWER_MARKER, "answer_marker")):
        matches = list(pattern.finditer(text))
        if matches:
            answer = _clean_answer(_rest_of_line(text, matches[-1].end()))
            return (answer, method) if answer else (None, "none")
    for line in reversed(text.split("\n")):
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            answer = _clean_answer(stripped)
            if answer:
                return answer, "last_line"
    return text.strip(), "full"


_WHITESPACE = re.compile(r"\s")  # Unicode whitespace, as Python's ``\s``
_LIST_SEP = re.compile(r"[,;]")
_ASCII_PUNCT = str.maketrans("", "", string.punctuation)
_NUMBER_STRIP = str.maketrans("", "", "$%,")


def _check_str(model_answer: object, ground_truth: object) -> str:
    if not isinstance(ground_truth, str):
        raise TypeError(f"GAIA ground truth must be a string, got {type(ground_truth).__name__}")
    if model_answer is None:
        return "None"
    if not isinstance(model_answer, str):
        raise TypeError(
            f"GAIA model_answer must be a string or None, got {type(model_answer).__name__} "
            f"({model_answer!r}); the leaderboard's scorer fails on non-strings, so convert "
            "or reject it when loading"
        )
    return model_answer


def _as_float(s: str) -> float | None:
    try:
        return float(s)
    except ValueError:
        return None


def normalize_official_number(s: str) -> float:
    """The number rule's value of an answer: ``$ % ,`` removed, ``float()``, else +inf."""
    v = _as_float(s.translate(_NUMBER_STRIP))
    return math.inf if v is None else v


def normalize_official_string(s: str) -> str:
    return _WHITESPACE.sub("", s).lower().translate(_ASCII_PUNCT)


def normalize_official_list_element(s: str) -> str:
    """A non-numeric list element: all whitespace removed and lowercased; punctuation kept."""
    return _WHITESPACE.sub("", s).lower()


def split_official_list(s: str) -> list[str]:
    return _LIST_SEP.split(s)


def official_branch(ground_truth: str) -> str:
    """``"number"``, ``"list"`` or ``"string"``: the rule the ground truth selects."""
    if _as_float(ground_truth) is not None:
        return "number"
    if "," in ground_truth or ";" in ground_truth:
        return "list"
    return "string"


def official_match(model_answer: str | None, ground_truth: str) -> bool:
    """The leaderboard scorer's verdict (rules: module docstring). Quirks kept: ``"17.0"``
    matches ``"17"``; gold ``"nan"`` never matches, ``"inf"`` any unparsable answer.
    ``TypeError`` for a non-string answer or ground truth."""
    answer = _check_str(model_answer, ground_truth)
    gt_value = _as_float(ground_truth)
    if gt_value is not None:
        return normalize_official_number(answer) == gt_value
    if "," in ground_truth or ";" in ground_truth:
        gt_elems = split_official_list(ground_truth)
        ans_elems = split_official_list(answer)
        if len(gt_elems) != len(ans_elems):
            return False
        for ans, gt in zip(ans_elems, gt_elems, strict=True):
            v = _as_float(gt)
            if v is not None:
                if normalize_official_number(ans) != v:
                    return False
            elif normalize_official_list_element(ans) != normalize_official_list_element(gt):
                return False
        return True
    return normalize_official_string(answer) == normalize_official_string(ground_truth)


# A thousands-separated number: not glued to other digits or to a "d," / "d." before it,
# and not followed by a digit or another ",d" (so "1,2345" and "1,2,000" are left alone).
_THOUSANDS = re.compile(r"(?<!\d)(?<!\d[,.])\d{1,3}(?:,\d{3})+(?!\d|,\d)")
_ARTICLES = frozenset({"the", "a", "an"})
_CURRENCY = str.maketrans("", "", "$%€£")
_TRAILING_PUNCT = ".,;:!?"


def _remove_thousands(s: str) -> str:
    return _THOUSANDS.sub(lambda m: m.group().replace(",", ""), s)


def normalize_lenient(s: str) -> str:
    """Trim, lowercase, drop a leading article when a word follows, remove ``$ % € £``,
    collapse whitespace, strip trailing ``.,;:!?`` (thousands separators go before)."""
    s = s.strip().lower()
    words = s.split()
    if len(words) > 1 and words[0] in _ARTICLES:
        s = " ".join(words[1:])
    s = " ".join(s.translate(_CURRENCY).split())
    return s.rstrip(_TRAILING_PUNCT).rstrip()


def _lenient_items(s: str) -> list[str]:
    return sorted(normalize_lenient(p) for p in s.split(","))


def lenient_match(model_answer: str | None, ground_truth: str) -> bool:
    """The book's quasi-exact match with :data:`FIXES_NOTE`'s fixes: a gold with a comma
    compares sorted normalized elements. No float parsing, ``;`` no separator, ``None``
    never matches."""
    if model_answer is None:
        _check_str("", ground_truth)
        return False
    answer = _remove_thousands(_check_str(model_answer, ground_truth))
    gold = _remove_thousands(ground_truth)
    if "," in gold:
        return _lenient_items(answer) == _lenient_items(gold)
    return normalize_lenient(answer) == normalize_lenient(gold)


def _partial_key(s: str) -> str:
    s = _remove_thousands(s)
    if "," in s:
        return ",".join(_lenient_items(s))
    return normalize_lenient(s)


_WORD_SPLIT = re.compile(r"[\s,]+")


def partial_match(model_answer: str | None, ground_truth: str) -> bool:
    """The book's diagnostic, never counted as correct: after lenient normalization, one
    side contains the other, or 70% of the gold's words are the answer's. Unlike
    HelloAgents, an empty side never matches."""
    if model_answer is None:
        _check_str("", ground_truth)
        return False
    pred = _partial_key(_check_str(model_answer, ground_truth))
    gold = _partial_key(ground_truth)
    if not pred or not gold:
        return False
    if gold in pred or pred in gold:
        return True
    gold_words = [w for w in _WORD_SPLIT.split(gold) if w]
    if not gold_words:
        return False
    pred_words = set(_WORD_SPLIT.split(pred))
    found = sum(1 for w in gold_words if w in pred_words)
    return found >= 0.7 * len(gold_words)


SCORERS: dict[str, Callable[[str | None, str], bool]] = {
    "official": official_match,
    "lenient": lenient_match,
}


def get_scorer(name: str) -> Callable[[str | None, str], bool]:
    try:
        return SCORERS[name]
    except (KeyError, TypeError):
        raise ConfigError(f"unknown GAIA scorer {name!r}; choose official or lenient") from None
