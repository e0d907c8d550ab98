"""LaTeX in review text as MathML rendered on the server (no script, no external asset):
``latex2mathml`` output rebuilt with MathML elements and layout attributes only."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from functools import lru_cache

from markupsafe import Markup, escape

__all__ = ["math_spans", "render_math", "tex_to_mathml"]

#: (opening, closing, group name) of the bracketed forms, in the order they are tried
_BRACKETS = (("$$", "$$", "d1"), ("\\[", "\\]", "d2"), ("\\(", "\\)", "i1"))
_MATHML_NS = "http://www.w3.org/1998/Math/MathML"
_MATHML_TAGS = frozenset(
    "math mrow mi mn mo ms mtext mspace mfrac msqrt mroot mstyle merror mpadded mphantom"
    " menclose msub msup msubsup munder mover munderover mmultiscripts mprescripts none"
    " mtable mtr mtd mlabeledtr semantics annotation mfenced".split())
_MATHML_ATTRS = frozenset(
    "display mathvariant stretchy fence form minsize maxsize linethickness accent accentunder"
    " width height depth displaystyle scriptlevel lspace rspace separator separators"
    " movablelimits largeop symmetric notation columnalign rowalign columnspacing rowspacing"
    " columnlines rowlines frame open close".split())
_SAFE_VALUE = re.compile(r"^[\w .%#+-]*$")


def _safe_mathml(xml: str) -> str | None:
    """The converter's output rebuilt: it copies ``\\text{...}`` verbatim and turns
    ``\\href`` into an attribute, so a non-MathML element rejects the span, other attributes are
    dropped, and text is escaped."""
    try:
        root = ET.fromstring(xml)
    except ET.ParseError:
        return None
    for el in root.iter():
        ns, _, local = str(el.tag).rpartition("}")
        if ns.lstrip("{") != _MATHML_NS or local not in _MATHML_TAGS:
            return None
        el.tag = local
        for k in list(el.attrib):
            if k not in _MATHML_ATTRS or not _SAFE_VALUE.match(el.attrib[k]):
                del el.attrib[k]
    return ET.tostring(root, encoding="unicode")


@lru_cache(maxsize=8192)
def tex_to_mathml(tex: str, display: bool = False) -> str | None:
    """One LaTeX span as safe MathML markup, or None when it cannot be converted."""
    try:
        from latex2mathml.converter import convert  # heavy
    except ImportError:  # the dependency is missing: show the raw LaTeX
        return None
    try:
        xml = convert(tex.strip(), display="block" if display else "inline")
    except Exception:  # noqa: BLE001 - any converter failure falls back to the raw text
        return None
    return _safe_mathml(xml)


def _text(segment: str) -> str:
    return str(escape(segment.replace("\\$", "$")))


def render_math(text: str | None) -> Markup:
    """HTML for text with ``$...$``, ``$$...$$``, ``\\(...\\)`` and ``\\[...\\]`` as
    MathML; the rest escaped, and a span the converter rejects shown as typed in ``code.tex``."""
    if not text:
        return Markup("")
    out: list[str] = []
    pos = 0
    for start, end, kind, tex in math_spans(text):
        out.append(_text(text[pos:start]))
        html = tex_to_mathml(tex, kind in ("d1", "d2"))
        if html is None:
            out.append(f'<code class="tex" title="LaTeX not rendered">'
                       f'{escape(text[start:end])}</code>')
        else:
            out.append(html)
        pos = end
    out.append(_text(text[pos:]))
    return Markup("".join(out))


def _inline_end(text: str, i: int) -> int:
    """The index of the ``$`` that closes the span opened at ``i`` (unescaped, not empty), or -1."""
    j, n = i + 1, len(text)
    while j < n:
        c = text[j]
        if c == "\\":
            if j + 1 >= n:
                return -1
            j += 2
        elif c == "$":
            return j if j > i + 1 else -1
        else:
            j += 1
    return -1


def math_spans(text: str) -> Iterator[tuple[int, int, str, str]]:
    """``(start, end, kind, tex)`` of each math span, left to right, in linear time.

    The spans of ``\\$\\$(.+?)\\$\\$ | \\\\\\[(.+?)\\\\\\] | \\\\\\((.+?)\\\\\\) |
    (?<![\\\\$])\\$((?:\\\\.|[^$\\\\])+?)\\$`` (DOTALL), which is quadratic on openers with no
    closer: here a form whose closer is missing is never searched for again. ``kind``:
    ``d1``/``d2`` (display), ``i1``/``i2``."""
    n = len(text)
    dead: set[str] = set()  # forms with no closer left in the text
    i = 0
    while i < n:
        c = text[i]
        if c not in "$\\":
            i += 1
            continue
        found = None
        for opening, closing, kind in _BRACKETS:
            if kind in dead or not text.startswith(opening, i):
                continue
            close = text.find(closing, i + len(opening) + 1)
            if close < 0:
                dead.add(kind)
                continue
            found = (i, close + len(closing), kind, text[i + len(opening):close])
            break
        if found is None and c == "$" and "i2" not in dead and (i == 0 or text[i - 1] not in "\\$"):
            close = _inline_end(text, i)
            if close < 0:
                # every later "$" lay inside an escape of this scan, so it follows a backslash
                # and cannot open a span either (unless this one was "$$" with no content)
                if not text.startswith("$$", i):
                    dead.add("i2")
            else:
                found = (i, close + 1, "i2", text[i + 1:close])
        if found is None:
            i += 1
            continue
        yield found
        i = found[1]
