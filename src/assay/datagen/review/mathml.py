"""LaTeX in review text rendered as MathML on the server, with no script or external asset.

``$...$``, ``$$...$$``, ``\\(...\\)`` and ``\\[...\\]`` spans are converted with
``latex2mathml`` and the result is rebuilt keeping only MathML elements and layout
attributes; everything else is HTML-escaped.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from functools import lru_cache

from markupsafe import Markup, escape

__all__ = ["render_math", "tex_to_mathml"]

_MATH_RE = re.compile(
    r"\$\$(?P<d1>.+?)\$\$"
    r"|\\\[(?P<d2>.+?)\\\]"
    r"|\\\((?P<i1>.+?)\\\)"
    r"|(?<![\\$])\$(?P<i2>(?:\\.|[^$\\])+?)\$",
    re.S,
)
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
    """Re-serialize converter output keeping only MathML elements and layout attributes.

    The converter copies ``\\text{...}`` verbatim and turns ``\\href`` into an
    attribute, so its output is parsed and rebuilt here: any non-MathML element
    rejects the span (it is then shown as raw text), other attributes are dropped,
    and text is escaped on the way out.
    """
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
        from latex2mathml.converter import convert
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
    """HTML for text with ``$...$``, ``$$...$$``, ``\\(...\\)`` and ``\\[...\\]`` as MathML.

    Everything outside math is HTML-escaped; a span the converter rejects is
    shown escaped, as typed, in a ``<code class="tex">``.
    """
    if not text:
        return Markup("")
    out: list[str] = []
    pos = 0
    for m in _MATH_RE.finditer(text):
        out.append(_text(text[pos:m.start()]))
        display = m.group("d1") is not None or m.group("d2") is not None
        tex = next(g for g in (m.group("d1"), m.group("d2"), m.group("i1"), m.group("i2"))
                   if g is not None)
        html = tex_to_mathml(tex, display)
        if html is None:
            out.append(f'<code class="tex" title="LaTeX not rendered">{escape(m.group(0))}</code>')
        else:
            out.append(html)
        pos = m.end()
    out.append(_text(text[pos:]))
    return Markup("".join(out))
