"""Answer extraction and scorers for the generic question/answer benchmark.

Everything here is pure and fast (no I/O, no network): scorers run once per
sample on the event loop. Regexes are compiled at import; ``math_verify`` is
imported lazily inside :func:`score_math` because it is slow to import.

Every scorer has the signature ``score_X(output, target, **opts) -> Score``:

* ``output`` is the raw model output (``<think>...</think>`` blocks are removed);
* ``target`` is a string, a number, or a list of acceptable answers (any match
  counts; :func:`score_f1` takes the maximum);
* unknown keyword options are ignored, so callers may pass the same options to
  every scorer;
* the returned :class:`~assay.core.types.Score` has ``name`` = the scorer name,
  ``answer`` = the extracted prediction (``None`` when nothing could be
  extracted) and ``metadata["extraction"]`` = how it was extracted.

A target a scorer cannot use (a non-numeric target for ``numeric``, a target
that is not one of the options for ``choice``, ...) raises ``ValueError`` with
a message saying what is wrong; the caller turns it into a user error.
"""

from __future__ import annotations

import logging
import math
import re
import string
import unicodedata
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from assay.core.types import Score
from assay.errors import ConfigError

__all__ = [
    "SCORERS",
    "extract_answer",
    "extract_numbers",
    "format_choices",
    "get_scorer",
    "infer_scorer",
    "normalize_text",
    "parse_number",
    "score_choice",
    "score_exact",
    "score_f1",
    "score_includes",
    "score_math",
    "score_normalized",
    "score_numeric",
    "squad_tokens",
    "strip_reasoning",
]

# --------------------------------------------------------------------------- extraction

_THINK_TAG = re.compile(r"<(/?)think>", re.IGNORECASE)

# "Answer:", "Final answer:", "**Final Answer:**", "ANSWER :" ... (colon forms win)
_MARKER_COLON = re.compile(
    r"(?<![^\W_])(?:final[ \t]+)?answer[ \t]*(?:\*\*|__)?[ \t]*:[ \t]*(?:\*\*|__)?",
    re.IGNORECASE,
)
# "The answer is 42", "final answer is: 42" (used only when no colon marker exists)
_MARKER_IS = re.compile(
    r"(?<![^\W_])(?:final[ \t]+)?answer[ \t]+is[ \t]*:?[ \t]*(?:\*\*|__)?",
    re.IGNORECASE,
)
_BOXED = re.compile(r"\\(?:boxed|fbox)[ \t]*\{")
_BRACE = re.compile(r"[{}]")

_OPEN_CLOSE = {"(": ")", "[": "]", "{": "}"}
_QUOTES = {'"': '"', "'": "'", "`": "`", "\u201c": "\u201d", "\u2018": "\u2019", "\u00ab": "\u00bb"}
_EMPHASIS = ("**", "__", "*", "_")


def strip_reasoning(output: str) -> str:
    """Remove ``<think>...</think>`` reasoning blocks from a model output.

    Complete blocks are removed; if a stray ``</think>`` remains (the opening tag
    was part of the prompt), only the text after the last one is kept; if an
    unclosed ``<think>`` remains (reasoning cut off), it and everything after it
    are dropped. Outputs without ``think`` tags are returned unchanged.
    """
    if "think>" not in output and "THINK>" not in output.upper():
        return output
    # One linear pass over the tags (a non-greedy regex would be quadratic on
    # outputs with many unclosed tags).
    pieces: list[str] = []
    pos = 0
    inside = False
    for m in _THINK_TAG.finditer(output):
        closing = bool(m.group(1))
        if not inside and not closing:
            pieces.append(output[pos : m.start()])
            inside = True
        elif inside and closing:
            pos = m.end()
            inside = False
        elif not inside and closing:  # stray </think>: keep only what follows it
            pieces.clear()
            pos = m.end()
    if not inside:
        pieces.append(output[pos:])
    return "".join(pieces)


def _unwrap_pair(s: str, open_ch: str, close_ch: str) -> str | None:
    """``s[1:-1]`` when ``s`` is wrapped in a matching bracket pair, else ``None``."""
    if len(s) < 2 or s[0] != open_ch or s[-1] != close_ch:
        return None
    if open_ch == close_ch:
        return s[1:-1]
    depth = 0
    for i, ch in enumerate(s):
        if ch == open_ch:
            depth += 1
        elif ch == close_ch:
            depth -= 1
            if depth == 0 and i != len(s) - 1:
                return None  # "(a) and (b)": the first bracket closes early
    return s[1:-1] if depth == 0 else None


def _clean(s: str) -> str:
    """Strip whitespace, a trailing period, emphasis, and wrapping brackets or quotes."""
    prev = None
    s = s.strip()
    while s != prev:
        prev = s
        s = s.rstrip(".").strip()
        for mark in _EMPHASIS:
            n = len(mark)
            if len(s) > 2 * n and s.startswith(mark) and s.endswith(mark):
                s = s[n:-n].strip()
                break
        if s:
            close = _OPEN_CLOSE.get(s[0]) or _QUOTES.get(s[0])
            if close is not None:
                inner = _unwrap_pair(s, s[0], close)
                if inner is not None:
                    s = inner.strip()
    return s


def _last_boxed(text: str) -> str | None:
    """Content of the last balanced ``\\boxed{...}`` (or ``\\fbox{...}``), else ``None``."""
    starts = [m.end() for m in _BOXED.finditer(text)]
    if not starts:
        return None
    # match every "{" after the first \boxed with its "}" in one pass
    closing: dict[int, int] = {}
    stack: list[int] = []
    for m in _BRACE.finditer(text, starts[0] - 1):
        if m.group() == "{":
            stack.append(m.end())
        elif stack:
            closing[stack.pop()] = m.start()
    for start in reversed(starts):
        end = closing.get(start)
        if end is not None:
            content = text[start:end].strip()
            if content:
                return content
    return None


def _after_marker(text: str) -> str | None:
    """Text after the last answer marker, up to the end of its line (or the next line)."""
    matches = list(_MARKER_COLON.finditer(text))
    if not matches:
        matches = list(_MARKER_IS.finditer(text))
        if not matches:
            return None
    end = matches[-1].end()
    nl = text.find("\n", end)
    line = text[end:] if nl < 0 else text[end:nl]
    if not line.strip() and nl >= 0:
        # "Answer:\n42": take the next non-empty line
        for nxt in text[nl + 1 :].split("\n"):
            if nxt.strip():
                line = nxt
                break
    boxed = _last_boxed(line)
    if boxed is not None:
        line = boxed
    line = _clean(line)
    return line or None


def extract_answer(output: str) -> tuple[str | None, str]:
    """Extract the final answer from a model output.

    Returns ``(answer, method)``. Reasoning blocks are removed first
    (:func:`strip_reasoning`). Then, in order:

    * ``"marker"``: the text after the last ``Answer:`` / ``Final answer:`` /
      ``FINAL ANSWER:`` (case-insensitive, markdown bold allowed) up to the end
      of its line (the next non-empty line when the marker ends its line), with
      surrounding brackets, quotes, emphasis and a trailing period removed and a
      ``\\boxed{}`` inside unwrapped. ``The answer is X`` counts as a marker
      only when no colon marker is present;
    * ``"boxed"``: the content of the last balanced ``\\boxed{...}``;
    * ``"full"``: the whole output, stripped;
    * ``(None, "none")`` for an empty or whitespace-only output.
    """
    if not output or output.isspace():
        return None, "none"
    text = strip_reasoning(output)
    if not text.strip():
        return None, "none"
    if "nswer" in text or "NSWER" in text:
        ans = _after_marker(text)
        if ans is not None:
            return ans, "marker"
    if "\\" in text:
        boxed = _last_boxed(text)
        if boxed is not None:
            return boxed, "boxed"
    return text.strip(), "full"


# --------------------------------------------------------------------------- normalization


class _PunctuationTable(dict):
    """``str.translate`` table deleting Unicode punctuation (categories ``P*``), lazily filled."""

    def __missing__(self, cp: int) -> int | None:
        value = None if unicodedata.category(chr(cp))[0] == "P" else cp
        self[cp] = value
        return value


_PUNCT = _PunctuationTable({ord(c): None for c in string.punctuation
                            if unicodedata.category(c)[0] == "P"})
_ARTICLES = re.compile(r"\b(?:a|an|the)\b")


def normalize_text(text: str) -> str:
    """Normalize text for comparison.

    Unicode NFKC, case folding (a stronger lowercase), removal of all Unicode
    punctuation (categories ``P*``; symbols such as ``$`` or ``+`` are kept),
    whitespace collapsed to single spaces, stripped. Articles are *not* removed
    (that is SQuAD's normalization, see :func:`squad_tokens`).
    """
    if text.isascii():
        text = text.lower()
    else:
        text = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())
    return " ".join(text.translate(_PUNCT).split())


def squad_tokens(text: str) -> list[str]:
    """Tokens for SQuAD-style F1: :func:`normalize_text`, then English articles removed.

    The articles ``a``, ``an`` and ``the`` are dropped as whole words, as in the
    official SQuAD evaluation script; tokens are split on whitespace.
    """
    return _ARTICLES.sub(" ", normalize_text(text)).split()


# --------------------------------------------------------------------------- numbers

_NUMBER = re.compile(
    r"""
    (?P<sign>(?<![\w)\]}])[-+\u2212])?          # a sign, unless it is a binary operator
    (?:[$\u20ac\u00a3\u00a5\u20b9][ \t]?)?        # currency symbol
    (?:
        \\[dt]?frac\{(?P<fnum>\d+)\}\{(?P<fden>\d+)\}         # \frac{3}{4}
      | (?P<num>\d{1,3}(?:,\d{3})+(?!\d)(?:\.\d+)?             # 1,234,567.89
               |\d+(?:\.\d+)?|\.\d+)
        (?P<exp>[eE][-+]?\d+)?                                # 1.5e3
        (?:/(?P<den>\d+(?:\.\d+)?)(?!\d|\.\d))?               # 3/4
    )
    (?P<pct>[ \t]?\\?%)?                                      # 45%, 45\%
    """,
    re.VERBOSE,
)
_PLAIN_NUMBER = re.compile(r"[-+\u2212]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?"
                           r"|[-+\u2212]?\.\d+(?:[eE][-+]?\d+)?")
_DIGIT = re.compile(r"\d")


def _match_value(m: re.Match[str]) -> float | None:
    """The value of one ``_NUMBER`` match, or ``None`` (zero denominator, overflow)."""
    if m.group("fnum") is not None:
        num, den = float(m.group("fnum")), float(m.group("fden"))
    else:
        num = float(m.group("num").replace(",", "") + (m.group("exp") or ""))
        den = float(m.group("den")) if m.group("den") is not None else 1.0
    if den == 0.0:
        return None
    value = num / den
    if m.group("sign") in ("-", "\u2212"):
        value = -value
    return value if math.isfinite(value) else None


def extract_numbers(text: str) -> list[tuple[float, str]]:
    """All numbers in ``text`` as ``(value, matched_text)``, in order of appearance.

    Understands signs (also U+2212), thousands separators (``1,234,567``),
    decimals, scientific notation (``1.5e3``), percentages (``45%`` is 45),
    currency symbols (``$``, ``€``, ``£``, ``¥``, ``₹``), fractions (``3/4``,
    ``\\frac{3}{4}``). A ``-`` right after a letter, digit or closing bracket is
    read as an operator, not a sign.
    """
    if not _DIGIT.search(text):
        return []
    out = []
    for m in _NUMBER.finditer(text):
        value = _match_value(m)
        if value is not None:
            out.append((value, m.group(0).strip()))
    return out


def parse_number(value: Any) -> float | None:
    """``value`` as a float if it is a number or a string that is one number, else ``None``.

    Accepts ints and floats (not bools, not NaN/inf) and strings that consist of
    exactly one number in the forms :func:`extract_numbers` understands
    (``"1,234"``, ``"-3/4"``, ``"45%"``, ``"$5"``, ``"1.5e3"``).
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        try:
            f = float(value)
        except OverflowError:
            return None
        return f if math.isfinite(f) else None
    if not isinstance(value, str):
        return None
    s = value.strip()
    m = _NUMBER.fullmatch(s)
    return _match_value(m) if m else None


def _is_plain_number(value: Any) -> bool:
    """True for ints/floats and strings like ``42``, ``-3.5``, ``1,234``, ``1e-3``."""
    if isinstance(value, bool):
        return False
    if isinstance(value, (int, float)):
        return parse_number(value) is not None
    return isinstance(value, str) and _PLAIN_NUMBER.fullmatch(value.strip()) is not None


# --------------------------------------------------------------------------- helpers


def _targets(target: Any) -> list[Any]:
    """``target`` as a non-empty list of acceptable answers."""
    if target is None:
        raise ValueError("the sample has no target answer")
    if isinstance(target, (list, tuple)):
        if not target:
            raise ValueError("the target is an empty list of acceptable answers")
        if any(t is None for t in target):
            raise ValueError("the target list contains a null answer")
        return list(target)
    return [target]


def _short(s: str | None, limit: int = 60) -> str:
    """``repr`` of ``s`` cut to ``limit`` characters, for explanations."""
    if s is None:
        return "None"
    if len(s) > limit:
        s = s[: limit - 3] + "..."
    return repr(s)


def _nothing(name: str, method: str, **meta: Any) -> Score:
    return Score(name, 0.0, None, "nothing extracted from the output",
                 {"extraction": method, **meta})


def _target_str(t: Any) -> str:
    return t if isinstance(t, str) else str(t)


# --------------------------------------------------------------------------- scorers


def score_exact(output: str, target: Any, **opts: Any) -> Score:
    """Exact match: the extracted answer equals ``str(target)``, both only ``.strip()``-ed.

    Returns ``Score("exact", 1.0 | 0.0, answer, explanation, {"extraction": method})``.
    """
    answer, method = extract_answer(output)
    if answer is None:
        return _nothing("exact", method)
    pred = answer.strip()
    golds = [_target_str(t).strip() for t in _targets(target)]
    for g in golds:
        if pred == g:
            return Score("exact", 1.0, answer, f"exact match {_short(g)}", {"extraction": method})
    return Score("exact", 0.0, answer, f"{_short(pred)} != {_short(golds[0])}",
                 {"extraction": method})


def score_normalized(output: str, target: Any, **opts: Any) -> Score:
    """Match after :func:`normalize_text` (NFKC, casefold, no punctuation, collapsed spaces).

    Articles are not removed (use ``f1`` for SQuAD normalization). Returns
    ``Score("normalized", 1.0 | 0.0, answer, explanation, {"extraction": method})``.
    """
    answer, method = extract_answer(output)
    if answer is None:
        return _nothing("normalized", method)
    pred = normalize_text(answer)
    golds = [normalize_text(_target_str(t)) for t in _targets(target)]
    for g in golds:
        if pred == g:
            return Score("normalized", 1.0, answer, f"normalized match {_short(g)}",
                         {"extraction": method})
    return Score("normalized", 0.0, answer, f"{_short(pred)} != {_short(golds[0])}",
                 {"extraction": method})


def score_includes(output: str, target: Any, **opts: Any) -> Score:
    """Whether the normalized target appears as whole words in the normalized answer.

    For chatty models that answer in a sentence ("The capital of France is
    Paris."). More lenient than ``normalized``: say so when reporting it.
    """
    answer, method = extract_answer(output)
    if answer is None:
        return _nothing("includes", method)
    pred = f" {normalize_text(answer)} "
    golds = [normalize_text(_target_str(t)) for t in _targets(target)]
    for g in golds:
        if g and f" {g} " in pred:
            return Score("includes", 1.0, answer, f"contains {_short(g)}", {"extraction": method})
    return Score("includes", 0.0, answer, f"{_short(golds[0])} not in {_short(pred.strip())}",
                 {"extraction": method})


def score_numeric(output: str, target: Any, *, tolerance: float | None = None,
                  abs_tol: float = 1e-9, rel_tol: float = 1e-6, **opts: Any) -> Score:
    """Numeric match of the last number in the extracted answer against the target.

    The prediction is the last number (see :func:`extract_numbers`) in the
    extracted answer; when that has none, the last number in the whole output
    (``metadata["extraction"] == "last_number"``). Correct when
    ``|pred - target| <= max(abs_tol, rel_tol * |target|)``; ``tolerance``
    overrides ``abs_tol``. Raises ``ValueError`` when a target is not a number.

    Returns ``Score("numeric", 1.0 | 0.0, matched_number_text, explanation,
    {"extraction": method, "predicted": float | None, "target": float | list[float]})``.
    """
    values = []
    for t in _targets(target):
        v = parse_number(t)
        if v is None:
            raise ValueError(
                f"the numeric scorer needs a numeric target, got {_short(_target_str(t))}; "
                "use another scorer (e.g. normalized) for this benchmark"
            )
        values.append(v)
    if tolerance is not None:
        abs_tol = float(tolerance)
    meta_target: float | list[float] = values if isinstance(target, (list, tuple)) else values[0]

    answer, method = extract_answer(output)
    nums = extract_numbers(answer) if answer is not None else []
    if not nums and answer is not None and method != "full":
        nums = extract_numbers(strip_reasoning(output))
        method = "last_number"
    if not nums:
        return Score("numeric", 0.0, None,
                     "nothing extracted from the output (no number found)",
                     {"extraction": method if answer is not None else "none",
                      "predicted": None, "target": meta_target})
    pred, text = nums[-1]
    meta = {"extraction": method, "predicted": pred, "target": meta_target}
    for v in values:
        if abs(pred - v) <= max(abs_tol, rel_tol * abs(v)):
            return Score("numeric", 1.0, text, f"{pred:g} == {v:g}", meta)
    return Score("numeric", 0.0, text, f"{pred:g} != {values[0]:g}", meta)


def _f1(pred: list[str], gold: list[str]) -> float:
    if not pred or not gold:
        return float(pred == gold)
    common = Counter(pred) & Counter(gold)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision = same / len(pred)
    recall = same / len(gold)
    return 2 * precision * recall / (precision + recall)


def score_f1(output: str, target: Any, **opts: Any) -> Score:
    """SQuAD-style token F1 between the extracted answer and the target.

    Tokens come from :func:`squad_tokens`: the ``normalized`` normalization plus
    removal of the English articles a/an/the, as in the SQuAD evaluation script.
    Two empty token lists score 1.0; one empty list scores 0.0. For a list
    target the best F1 is taken. Returns ``Score("f1", value in [0, 1], answer,
    explanation, {"extraction": method})``.
    """
    answer, method = extract_answer(output)
    if answer is None:
        return _nothing("f1", method)
    pred = squad_tokens(answer)
    best, best_gold = -1.0, ""
    for t in _targets(target):
        gold = _target_str(t)
        v = _f1(pred, squad_tokens(gold))
        if v > best:
            best, best_gold = v, gold
    return Score("f1", best, answer, f"F1 {best:.3f} against {_short(best_gold)}",
                 {"extraction": method})


_LETTERS = string.ascii_uppercase
_CHOICE_WHOLE = re.compile(r"[(\[]?([A-Za-z])[)\].:]?")
_CHOICE_KEYWORD = re.compile(
    r"(?:answer|option|choice)[ \t]*(?:is|:)?[ \t]*(?:\*\*)?[ \t]*[(\[]?([A-Z])(?![\w])",
    re.IGNORECASE,
)
_CHOICE_LEADING = re.compile(r"[(\[]?([A-Z])[)\].:](?:\s|$)")
_CHOICE_BRACKETED = re.compile(r"[(\[]([A-Za-z])[)\]]")
_CHOICE_STANDALONE = re.compile(r"(?<![\w'\u2019])([A-Z])(?![\w'\u2019])")


def _letter_index(letter: str, n: int) -> int | None:
    i = ord(letter.upper()) - 65
    return i if 0 <= i < n else None


def _choice_target_index(t: Any, choices: Sequence[str]) -> int:
    """The 0-based index a target names: a letter, an int index, or a choice text."""
    n = len(choices)
    if isinstance(t, bool):
        raise ValueError(f"choice target must be a letter, index or choice text, got {t!r}")
    if isinstance(t, int):
        if 0 <= t < n:
            return t
        raise ValueError(f"choice target index {t} is out of range for {n} choices")
    s = _target_str(t).strip()
    m = _CHOICE_WHOLE.fullmatch(s)
    if m and m.group(1).isupper() and (i := _letter_index(m.group(1), n)) is not None:
        return i
    norm = normalize_text(s)
    for i, c in enumerate(choices):
        if normalize_text(c) == norm:
            return i
    if m and (i := _letter_index(m.group(1), n)) is not None:
        return i
    if s.isdigit() and int(s) < n:
        return int(s)
    raise ValueError(
        f"choice target {_short(s)} is not a letter A-{_LETTERS[n - 1]}, a 0-based index "
        "or the text of one of the choices"
    )


def _predict_choice(answer: str, choices: Sequence[str]) -> tuple[int | None, str]:
    """``(index, how)`` predicted by an extracted answer."""
    n = len(choices)
    s = _clean(answer)
    m = _CHOICE_WHOLE.fullmatch(s)
    if m and (i := _letter_index(m.group(1), n)) is not None:
        return i, "letter"
    for m in reversed(list(_CHOICE_KEYWORD.finditer(s))):
        if m.group(1).isupper() and (i := _letter_index(m.group(1), n)) is not None:
            return i, "letter"
    m = _CHOICE_LEADING.match(s)
    if m and (i := _letter_index(m.group(1), n)) is not None:
        return i, "letter"
    for m in reversed(list(_CHOICE_BRACKETED.finditer(s))):
        if (i := _letter_index(m.group(1), n)) is not None:
            return i, "letter"
    norm = normalize_text(s)
    if norm:
        for i, c in enumerate(choices):
            if normalize_text(c) == norm:
                return i, "text"
    for m in reversed(list(_CHOICE_STANDALONE.finditer(s))):
        if (i := _letter_index(m.group(1), n)) is not None:
            return i, "letter"
    return None, "none"


def score_choice(output: str, target: Any, *, choices: Sequence[str] | None = None,
                 **opts: Any) -> Score:
    """Multiple choice: the predicted option index equals the target's.

    ``choices`` (required) are the option texts, lettered A, B, ... The target
    is a letter (``"B"``), a 0-based int index, or a choice text (a list of
    these: any counts). The prediction, from the extracted answer, is in order:
    the answer being a letter (``B``, ``(B)``, ``B.``, ``B)``); a letter after
    ``answer``/``option``/``choice`` (``The answer is B``); a leading ``B)`` /
    ``B.``; a bracketed ``(B)``; the answer equal to a choice text (normalized);
    the last standalone capital letter in range.

    Returns ``Score("choice", 1.0 | 0.0, predicted_letter | None, explanation,
    {"extraction": method, "predicted_index": int | None, "target_index": int |
    list[int], "match": "letter" | "text" | "none"})``. Raises ``ValueError``
    without choices, with more than 26, or for a target naming no option.
    """
    if not choices:
        raise ValueError("the choice scorer needs the sample's `choices`")
    n = len(choices)
    if n > len(_LETTERS):
        raise ValueError(f"at most {len(_LETTERS)} choices are supported, got {n}")
    indices = [_choice_target_index(t, choices) for t in _targets(target)]
    meta_target: int | list[int] = indices if isinstance(target, (list, tuple)) else indices[0]

    answer, method = extract_answer(output)
    if answer is None:
        return _nothing("choice", method, predicted_index=None, target_index=meta_target,
                        match="none")
    idx, how = _predict_choice(answer, choices)
    meta = {"extraction": method, "predicted_index": idx, "target_index": meta_target,
            "match": how}
    gold = _LETTERS[indices[0]]
    if idx is None:
        return Score("choice", 0.0, None,
                     f"nothing extracted from the output (no option A-{_LETTERS[n - 1]} found)",
                     meta)
    letter = _LETTERS[idx]
    if idx in indices:
        return Score("choice", 1.0, letter, f"{letter} is correct", meta)
    return Score("choice", 0.0, letter, f"{letter} != {gold}", meta)


# --------------------------------------------------------------------------- math

_MATH: dict[str, Any] = {}


class _NoTimeoutWarning(logging.Filter):
    """Drops math-verify's one-off warning that its signal timeout is disabled."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Timeout is disabled")


def _math_verify() -> dict[str, Any]:
    """Import math_verify once; return parse/verify and the kwargs that disable signals."""
    if not _MATH:
        import inspect

        try:
            from math_verify import parse, verify
        except ImportError as e:  # pragma: no cover - math-verify is a dependency
            raise ConfigError(
                "the math scorer needs math-verify: pip install 'math-verify[antlr4_13_2]'"
            ) from e
        for name in ("math_verify.parser", "math_verify.grader", "math_verify.utils"):
            logging.getLogger(name).addFilter(_NoTimeoutWarning())
        p_params = inspect.signature(parse).parameters
        v_params = inspect.signature(verify).parameters
        _MATH.update(
            parse=parse,
            verify=verify,
            parse_kw={"parsing_timeout": None} if "parsing_timeout" in p_params else {},
            verify_kw={"timeout_seconds": None} if "timeout_seconds" in v_params else {},
        )
    return _MATH


def score_math(output: str, target: Any, **opts: Any) -> Score:
    """Mathematical equivalence with math-verify.

    The gold is ``parse(target)`` (wrapped in ``$...$`` unless it contains
    ``$`` or ``\\boxed``), the prediction ``parse(output)`` on the output with
    reasoning blocks removed (math-verify finds boxed / LaTeX / plain answers
    itself); correct when ``verify(gold, pred)``. Signal-based timeouts are
    disabled so this works in worker threads. Errors inside math-verify give
    0.0 with the error in the explanation.

    Returns ``Score("math", 1.0 | 0.0, extracted_text | None, explanation,
    {"extraction": "math_verify" | "none"})``.
    """
    targets = [_target_str(t).strip() for t in _targets(target)]
    mv = _math_verify()
    parse, verify = mv["parse"], mv["verify"]
    text = strip_reasoning(output) if output else ""
    if not text.strip():
        return _nothing("math", "none")
    try:
        pred = parse(text, **mv["parse_kw"])
    except Exception as e:  # math-verify can raise on odd LaTeX
        return Score("math", 0.0, None, f"math-verify failed on the output: {e}"[:200],
                     {"extraction": "none", "error": type(e).__name__})
    if not pred:
        return _nothing("math", "none")
    answer = next((p for p in pred if isinstance(p, str)), None) or str(pred[0])
    meta: dict[str, Any] = {"extraction": "math_verify"}
    try:
        for t in targets:
            gold_text = t if ("$" in t or "\\boxed" in t) else f"${t}$"
            gold = parse(gold_text, **mv["parse_kw"])
            if not gold:
                continue
            if verify(gold, pred, **mv["verify_kw"]):
                return Score("math", 1.0, answer, f"{_short(answer)} is equivalent to {_short(t)}",
                             meta)
    except Exception as e:
        meta["error"] = type(e).__name__
        return Score("math", 0.0, answer, f"math-verify failed: {e}"[:200], meta)
    return Score("math", 0.0, answer, f"{_short(answer)} is not equivalent to {_short(targets[0])}",
                 meta)


# --------------------------------------------------------------------------- registry

SCORERS: dict[str, Callable[..., Score]] = {
    "exact": score_exact,
    "normalized": score_normalized,
    "includes": score_includes,
    "numeric": score_numeric,
    "f1": score_f1,
    "choice": score_choice,
    "math": score_math,
}


def get_scorer(name: str) -> Callable[..., Score]:
    """The scorer registered as ``name``; raises ``ConfigError`` for an unknown name."""
    try:
        return SCORERS[name]
    except (KeyError, TypeError):
        raise ConfigError(
            f"unknown scorer {name!r}; choose one of: {', '.join(SCORERS)}"
        ) from None


def infer_scorer(target: Any, choices: Sequence[str] | None = None) -> str:
    """A default scorer name for a sample.

    ``"choice"`` when ``choices`` is non-empty; ``"numeric"`` when the target
    (or every item of a non-empty list target) is a plain number: an int/float,
    or a string like ``42``, ``-3.5``, ``1,234`` or ``1e-3``; else
    ``"normalized"``.
    """
    if choices:
        return "choice"
    items = target if isinstance(target, (list, tuple)) else [target]
    if items and all(_is_plain_number(t) for t in items):
        return "numeric"
    return "normalized"


def format_choices(question: str, choices: Sequence[str]) -> str:
    """The question, a blank line, ``A. choice`` lines, a blank line and the instruction.

    The last line is ``Answer with the letter of the correct option.``. Raises
    ``ValueError`` for more than 26 choices.
    """
    if len(choices) > len(_LETTERS):
        raise ValueError(f"at most {len(_LETTERS)} choices are supported, got {len(choices)}")
    lines = "\n".join(f"{_LETTERS[i]}. {c}" for i, c in enumerate(choices))
    return f"{question.rstrip()}\n\n{lines}\n\nAnswer with the letter of the correct option."
