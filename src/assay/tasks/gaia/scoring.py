"""GAIA answer extraction and the official / lenient answer matchers.

Everything here is pure and fast (stdlib only, no I/O). Three matchers, each
``(model_answer, ground_truth) -> bool``:

* :func:`official_match`, the default: the GAIA leaderboard's rules, verdict for
  verdict. The ground truth alone picks the branch: a string Python ``float()``
  parses is a **number** (``$ % ,`` removed from the answer, ``float()`` or
  infinity, exact equality); otherwise one containing ``,`` or ``;`` is a
  **list** (both split on every ``,`` and ``;``, same length, compared in
  order, numeric elements by the number rule, others with all whitespace
  removed and lowercased, punctuation kept); otherwise a **string** (all
  whitespace and all ASCII punctuation removed, lowercased, equal). A ``None``
  answer counts as the string ``"None"``.
* :func:`lenient_match`: the quasi-exact match of the Hello-Agents book, with two
  bugs of its shipped implementation fixed (see :data:`FIXES_NOTE`). Never the
  default; reports must name it.
* :func:`partial_match`: the book's partial-match diagnostic. It is reported as a
  labelled diagnostic only and is **never** counted as correct.

The rules are written here from their description; no scorer code is copied.
"""

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

# --------------------------------------------------------------------------- extraction

# Markdown bold may wrap the marker: "**FINAL ANSWER:** x" or "**FINAL ANSWER**: x".
_BOLD_MARKER = r"(\*\*)?[ \t]*(?:{core})[ \t]*(\*\*)?[ \t]*{colon}(?(1)(?(2)|(?:[ \t]*\*\*)?))"
# "FINAL ANSWER:", any case.
_FINAL_MARKER = re.compile(
    _BOLD_MARKER.format(core=r"(?<![A-Za-z])final[ \t]+answer", colon=":"), re.IGNORECASE
)
# The book's fallbacks: 答案 / 最终答案 / Final answer / Answer, ASCII or full-width colon.
_ANSWER_MARKER = re.compile(
    _BOLD_MARKER.format(core=r"最终答案|答案|(?<![A-Za-z])(?:final[ \t]+)?answer", colon="[：:]"),
    re.IGNORECASE,
)


def _unwrap(s: str, open_ch: str, close_ch: str) -> str | None:
    """``s[len(open):-len(close)]`` when ``open`` at the start closes at the very end."""
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
    """Strip whitespace, surrounding ``[ ]`` and surrounding ``** **``, repeatedly.

    Nothing else is removed: a trailing period or inner brackets stay.
    """
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
    """The answer a GAIA model output gives, and how it was found.

    Returns ``(answer, method)``; ``<think>...</think>`` blocks are removed first.
    In order:

    * ``"final_answer"``: the rest of the line after the **last** ``FINAL ANSWER:``
      (any case; ``**FINAL ANSWER:**`` allowed), or the next non-empty line when
      the marker ends its line;
    * ``"answer_marker"``: the same after the last ``答案:`` / ``最终答案:`` /
      ``Final answer:`` / ``Answer:`` (ASCII or full-width colon);
    * ``"last_line"``: the last non-empty line that does not start with ``#``;
    * ``"full"``: the whole stripped output (every line starts with ``#``).

    The answer has surrounding whitespace, ``[ ]`` and ``** **`` removed and is
    otherwise kept as written (a trailing period stays). ``(None, "none")`` for
    ``None``, an empty output, or when the last marker has nothing after it.
    """
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


# --------------------------------------------------------------------------- official

_WHITESPACE = re.compile(r"\s")  # Unicode whitespace, as Python's ``\s``
_LIST_SEP = re.compile(r"[,;]")
_ASCII_PUNCT = str.maketrans("", "", string.punctuation)
_NUMBER_STRIP = str.maketrans("", "", "$%,")


def _check_str(model_answer: object, ground_truth: object) -> str:
    """The model answer as a string (``None`` -> ``"None"``); TypeError on non-strings."""
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
    """``float(s)`` with Python's own rules, or ``None`` when it does not parse."""
    try:
        return float(s)
    except ValueError:
        return None


def normalize_official_number(s: str) -> float:
    """The number rule's value of an answer: ``$ % ,`` removed, ``float()``, else +inf."""
    v = _as_float(s.translate(_NUMBER_STRIP))
    return math.inf if v is None else v


def normalize_official_string(s: str) -> str:
    """The string rule: all (Unicode) whitespace removed, lowercased, ASCII punctuation removed."""
    return _WHITESPACE.sub("", s).lower().translate(_ASCII_PUNCT)


def normalize_official_list_element(s: str) -> str:
    """A non-numeric list element: all whitespace removed and lowercased; punctuation kept."""
    return _WHITESPACE.sub("", s).lower()


def split_official_list(s: str) -> list[str]:
    """Split on every ``,`` and every ``;`` (empty elements kept)."""
    return _LIST_SEP.split(s)


def official_branch(ground_truth: str) -> str:
    """``"number"``, ``"list"`` or ``"string"``: the rule the ground truth selects."""
    if _as_float(ground_truth) is not None:
        return "number"
    if "," in ground_truth or ";" in ground_truth:
        return "list"
    return "string"


def official_match(model_answer: str | None, ground_truth: str) -> bool:
    """Whether the GAIA leaderboard's scorer counts ``model_answer`` as correct.

    See the module docstring for the rules. Quirks kept on purpose: the number
    rule is exact float equality (``"17.0"`` matches ``"17"``, ``"17.01"`` does
    not); a ground truth ``"nan"`` never matches; ``"inf"`` matches any
    unparsable answer; list elements are compared in order. Raises
    ``TypeError`` for a non-string, non-``None`` answer or ground truth.
    """
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


# --------------------------------------------------------------------------- lenient

# A thousands-separated number: not glued to other digits or to a "d," / "d." before it,
# and not followed by a digit or another ",d" (so "1,2345" and "1,2,000" are left alone).
_THOUSANDS = re.compile(r"(?<!\d)(?<!\d[,.])\d{1,3}(?:,\d{3})+(?!\d|,\d)")
_ARTICLES = frozenset({"the", "a", "an"})
_CURRENCY = str.maketrans("", "", "$%€£")
_TRAILING_PUNCT = ".,;:!?"


def _remove_thousands(s: str) -> str:
    return _THOUSANDS.sub(lambda m: m.group().replace(",", ""), s)


def normalize_lenient(s: str) -> str:
    """One answer (or list element) under the lenient rules.

    In order: trim and lowercase; drop a leading ``the``/``a``/``an`` when
    another word follows; remove ``$ % € £``; collapse whitespace; strip
    trailing ``.,;:!?``. (Thousands separators are removed before this, see
    :func:`lenient_match`.)
    """
    s = s.strip().lower()
    words = s.split()
    if len(words) > 1 and words[0] in _ARTICLES:
        s = " ".join(words[1:])
    s = " ".join(s.translate(_CURRENCY).split())
    return s.rstrip(_TRAILING_PUNCT).rstrip()


def _lenient_items(s: str) -> list[str]:
    return sorted(normalize_lenient(p) for p in s.split(","))


def lenient_match(model_answer: str | None, ground_truth: str) -> bool:
    """The book's quasi-exact match, with the two fixes of :data:`FIXES_NOTE`.

    Thousands separators are removed from both sides first. If the ground
    truth then contains a comma, both are split on ``,``, each element
    normalized (:func:`normalize_lenient`) and the sorted lists compared;
    otherwise the normalized whole strings are compared. No float parsing
    (``"17.0"`` is not ``"17"``), and ``;`` is no separator. A ``None`` answer
    never matches. Raises ``TypeError`` for a non-string answer.
    """
    if model_answer is None:
        _check_str("", ground_truth)
        return False
    answer = _remove_thousands(_check_str(model_answer, ground_truth))
    gold = _remove_thousands(ground_truth)
    if "," in gold:
        return _lenient_items(answer) == _lenient_items(gold)
    return normalize_lenient(answer) == normalize_lenient(gold)


def _partial_key(s: str) -> str:
    """Per-string lenient form: comma lists sorted and joined with ``,``."""
    s = _remove_thousands(s)
    if "," in s:
        return ",".join(_lenient_items(s))
    return normalize_lenient(s)


_WORD_SPLIT = re.compile(r"[\s,]+")


def partial_match(model_answer: str | None, ground_truth: str) -> bool:
    """The book's partial-match diagnostic. **Never counted as correct.**

    After lenient normalization of each side on its own (a string with a comma
    becomes its sorted elements joined by ``,``): true when either contains the
    other as a substring, or when at least 70 % of the ground truth's words
    (split on whitespace and commas) are words of the answer. It is loose by
    design (``"3"`` vs ``"33"``, ``"1000 km"`` vs ``"1000"``, ``"a, b, c"`` vs
    ``"a, b"`` all match) and is reported as a labelled diagnostic only. Unlike
    HelloAgents, an answer or ground truth that normalizes to ``""`` never
    matches (HelloAgents lets an empty ground truth be "contained" in anything).
    ``None`` never matches; a non-string answer raises ``TypeError``.
    """
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


# --------------------------------------------------------------------------- registry

SCORERS: dict[str, Callable[[str | None, str], bool]] = {
    "official": official_match,
    "lenient": lenient_match,
}


def get_scorer(name: str) -> Callable[[str | None, str], bool]:
    """The matcher registered as ``name``; ``ConfigError`` for an unknown name."""
    try:
        return SCORERS[name]
    except (KeyError, TypeError):
        raise ConfigError(
            f"unknown GAIA scorer {name!r}; choose official or lenient"
        ) from None
