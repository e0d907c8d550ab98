"""What the sample page shows beyond the stored columns: generation settings, the call
log as a timeline (an SVG drawn with attributes: the CSP forbids inline styles), each text
once, and code highlighted with Pygments' classes (``/static/highlight.css``)."""

from __future__ import annotations

import ast
import re
import textwrap
from collections.abc import Iterator
from typing import Any

from markupsafe import Markup, escape
from pygments import format as format_tokens
from pygments.formatters import HtmlFormatter
from pygments.lexer import Lexer
from pygments.lexers import PythonLexer, get_lexer_by_name
from pygments.util import ClassNotFound

__all__ = ["CSS_CLASS", "FENCE", "code_html", "generation_settings", "is_python",
           "page_extras", "same_text", "stylesheet", "text_html", "timeline"]

CSS_CLASS = "hl"  # of highlighted blocks: the stylesheet's rules are scoped under it
# fences start a line (backticks mid-sentence are none); each run of blanks matches one
# way only, so 100,000 spaces after a fence cost linear time, not quadratic
FENCE = re.compile(r"^[ \t]*```[ \t]*(?:([\w+#.-]+)[ \t]*)?\n(.*?)(?:^[ \t]*```[^\n]*$|\Z)",
                   re.DOTALL | re.MULTILINE)
_CODE_WORDS = re.compile(r"^[ \t]*(def|class|import|from|return|assert|for|while|if)\b", re.M)
_MAX_HIGHLIGHT = 100_000  # characters; longer text is shown plain
_STRETCH = 2_000  # characters lexed at once: some lexers take the square of it in time
_FORMATTER = HtmlFormatter(cssclass=CSS_CLASS)
_BAR_W, _ROW_H = 720, 18


def stylesheet() -> str:
    return _FORMATTER.get_style_defs(f".{CSS_CLASS}") + "\n"


def is_python(text: str) -> bool:
    """Whether ``text`` parses as Python and has a statement a program has. Nesting too
    deep for the parser raises its RecursionError or MemoryError."""
    if not text or len(text) > _MAX_HIGHLIGHT or not _CODE_WORDS.search(text):
        return False
    try:
        ast.parse(textwrap.dedent(text))  # a function's body alone (HumanEval's target)
    except (SyntaxError, ValueError):
        return False
    return True


def _plain(text: str, why: str) -> Markup:
    return Markup(f'<pre class="text">{escape(text)}</pre><p class="muted">shown plain: '
                  f'{escape(why)}</p>')


def code_html(code: str, language: str = "python") -> Markup:
    """``code`` highlighted (Pygments escapes every character of it)."""
    whole = {"stripnl": False, "ensurenl": False}  # _tokens trims the text, then cuts it
    try:
        lexer = (PythonLexer(**whole) if language == "python"
                 else get_lexer_by_name(language, **whole))
    except ClassNotFound:
        lexer = get_lexer_by_name("text", **whole)
    return Markup(format_tokens(_tokens(code, lexer), _FORMATTER))


def _tokens(code: str, lexer: Lexer) -> Iterator[tuple[Any, str]]:
    """``code``'s tokens, lexed a stretch of whole lines at a time: lexers whose time grows as
    the square of their input stay linear (a string across a cut is coloured as code after it)."""
    code = code.strip("\n") + "\n"
    at = 0
    while at < len(code):
        end = at + _STRETCH
        if end < len(code):
            end = code.rfind("\n", at, end) + 1 or end
        yield from lexer.get_tokens(code[at:end])
        at = end


def text_html(text: str) -> Markup | None:
    """``text`` with fenced blocks highlighted, or whole if a Python program; None with no code."""
    if not text or len(text) > _MAX_HIGHLIGHT:
        return None
    if "```" not in text:
        try:
            return code_html(text) if is_python(text) else None
        except (RecursionError, MemoryError):  # the parser's own limits on nesting
            return _plain(text, "nested too deeply to read as Python")
    parts: list[str] = []
    at = 0
    for m in FENCE.finditer(text):
        if m.start() > at:
            parts.append(f'<pre class="text">{escape(text[at:m.start()].strip(chr(10)))}</pre>')
        parts.append(str(code_html(m.group(2), (m.group(1) or "python").lower())))
        at = m.end()
    if text[at:].strip():
        parts.append(f'<pre class="text">{escape(text[at:].strip(chr(10)))}</pre>')
    return Markup("".join(parts))


def _norm(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.strip().splitlines())


def same_text(shown: str, other: str) -> bool:
    """Whether ``other`` is ``shown`` (trailing spaces aside) or the one fenced block it holds."""
    if not shown or not other:
        return False
    a, b = _norm(shown), _norm(other)
    if a == b:
        return True
    blocks = FENCE.findall(shown)
    return len(blocks) == 1 and _norm(blocks[0][1]) == b


def _num(value: Any) -> str:
    return f"{value:,}" if isinstance(value, int) else ""


def timeline(outcome: Any) -> dict[str, Any] | None:
    """The stored call log as table rows and SVG bars; None when the sample has none."""
    log = outcome.get("call_log") if isinstance(outcome, dict) else None
    calls = log.get("calls") if isinstance(log, dict) else None
    if not isinstance(calls, list) or not calls:
        return None
    calls = [c for c in calls if isinstance(c, dict)]
    end = max((float(c.get("start_s") or 0) + float(c.get("duration_s") or 0) for c in calls),
              default=0.0) or 1.0
    scale = _BAR_W / end
    rows, bars = [], []
    for i, c in enumerate(calls):
        start, dur = float(c.get("start_s") or 0), float(c.get("duration_s") or 0)
        wait = min(float(c.get("wait_s") or 0), dur)
        state = ("failed" if c.get("failed") else "cached" if c.get("cached")
                 else "retried" if c.get("retries") else "ok")
        rows.append({"n": i + 1, "role": str(c.get("role") or "subject"),
                     "start": f"{start:.3f}", "duration": f"{dur:.3f}", "wait": f"{wait:.3f}",
                     "input_tokens": _num(c.get("input_tokens")),
                     "output_tokens": _num(c.get("output_tokens")),
                     "cached": "yes" if c.get("cached") else "no",
                     "retries": c.get("retries") or 0, "state": state,
                     "errors": [str(e) for e in c.get("errors") or []],
                     "params": ", ".join(f"{k}={v}" for k, v in (c.get("params") or {}).items())})
        y = i * _ROW_H + 2
        x = round(start * scale, 1)
        bars.append({"x": x, "y": y, "w": max(round(dur * scale, 1), 2.0), "state": state,
                     "wait_w": round(wait * scale, 1),
                     "title": f"call {i + 1}: {start:.3f}s + {dur:.3f}s"})
    return {"rows": rows, "bars": bars, "width": _BAR_W + 10, "axis_x": _BAR_W,
            "axis_y": len(calls) * _ROW_H + 16, "height": len(calls) * _ROW_H + 20,
            "end": f"{end:.3f}",
            "dropped": log.get("dropped") or 0}


def generation_settings(run: dict[str, Any], outcome: Any) -> list[tuple[str, str]]:
    """The parameters the sample's first call was sent with, else the run's own."""
    log = outcome.get("call_log") if isinstance(outcome, dict) else None
    calls = log.get("calls") if isinstance(log, dict) else None
    sent = next((c["params"] for c in calls or [] if isinstance(c, dict)
                 and isinstance(c.get("params"), dict)), None)
    spec = run.get("spec") if isinstance(run.get("spec"), dict) else {}
    settings: dict[str, Any] = dict(spec.get("params") or {}) if sent is None else dict(sent)
    if spec.get("seed") is not None and "seed" not in settings:
        settings["seed"] = spec["seed"]
    return [(str(k), str(v)) for k, v in settings.items()]


def _failing_test(entry: Any) -> dict[str, Any] | None:
    meta = entry.get("metadata") if isinstance(entry, dict) else None
    source = meta.get("failing_test") if isinstance(meta, dict) else None
    if not isinstance(source, str) or not source.strip():
        return None
    return {"source": source, "line": meta.get("failing_test_line"),
            "html": code_html(source)}


def page_extras(view: dict[str, Any], row: dict[str, Any], run: dict[str, Any]
                ) -> dict[str, Any]:
    """What :func:`sample_view` leaves to the page: settings, timeline, highlighted code,
    texts repeating the output (shown once) and each score's ``failing_test``."""
    output, prediction = view["output"], view["prediction"]
    prediction_dup = same_text(output, prediction)
    stored = row.get("scores") if isinstance(row.get("scores"), dict) else {}
    for score in view["scores"]:
        answer = score.get("answer") or ""
        # the text above it repeats: the output's, else the answer's (the page says which)
        score["answer_dup"] = answer and ("output" if same_text(output, answer) else
                                          "answer" if same_text(prediction, answer) else "")
        score["answer_html"] = None if score["answer_dup"] else text_html(answer)
        score["failing_test"] = _failing_test(stored.get(score["name"]))
    for block in (view["input"], view["target"]):
        if block is not None and "text" in block:
            block["html"] = text_html(block["text"])
    outcome = row.get("outcome")
    return {"timeline": timeline(outcome), "generation": generation_settings(run, outcome),
            "metadata_html": {k: text_html(v) for k, v in view["metadata"]},
            "output_html": text_html(output), "prediction_dup": prediction_dup,
            "prediction_html": None if prediction_dup else text_html(prediction)}
