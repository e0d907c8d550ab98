"""Extraction of the final answer from a model output, for the question/answer scorers."""

from __future__ import annotations

import re

__all__ = ["clean_answer", "extract_answer", "strip_reasoning"]

_THINK_TAG = re.compile(r"<(/?)think>", re.IGNORECASE)

# "Answer:", "Final answer:", "**Final Answer:**", "ANSWER :" ... (colon forms win)
_MARKER_COLON = re.compile(
    r"(?<![^\W_])(?:final[ \t]+)?answer[ \t]*(?:\*\*|__)?[ \t]*:[ \t]*(?:\*\*|__)?",
    re.IGNORECASE)
# "The answer is 42", "final answer is: 42" (used only when no colon marker exists)
_MARKER_IS = re.compile(r"(?<![^\W_])(?:final[ \t]+)?answer[ \t]+is[ \t]*:?[ \t]*(?:\*\*|__)?",
                        re.IGNORECASE)
_BOXED = re.compile(r"\\(?:boxed|fbox)[ \t]*\{")
_BRACE = re.compile(r"[{}]")

_OPEN_CLOSE = {"(": ")", "[": "]", "{": "}"}
_QUOTES = {'"': '"', "'": "'", "`": "`", "\u201c": "\u201d", "\u2018": "\u2019", "\u00ab": "\u00bb"}
_EMPHASIS = ("**", "__", "*", "_")


def strip_reasoning(output: str) -> str:
    """Remove ``<think>...</think>`` blocks; after a stray ``</think>`` (the opening tag was
    in the prompt) keep only what follows, from an unclosed ``<think>`` (cut off) drop all."""
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


def clean_answer(s: str) -> str:
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
    line = clean_answer(line)
    return line or None


def extract_answer(output: str) -> tuple[str | None, str]:
    """``(answer, method)`` of an output, reasoning removed: ``marker`` (after the last
    ``Answer:``/``Final answer:``, else ``The answer is``, to the end of its line or the
    next, cleaned, a ``\\boxed{}`` unwrapped), ``boxed`` (the last), ``full``, or ``none``."""
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
