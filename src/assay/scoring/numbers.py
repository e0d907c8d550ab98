"""Numbers in answers and targets: signs, thousands separators, fractions, percentages."""

from __future__ import annotations

import math
import re
from typing import Any

__all__ = ["extract_numbers", "is_plain_number", "parse_number"]


_NUMBER = re.compile(
    r"""
    (?P<sign>(?<![\w)\]}])[-+\u2212])?          # a sign, unless it is a binary operator
    (?:[$\u20ac\u00a3\u00a5\u20b9][ \t]?)?        # currency symbol
    (?:
        \\[dt]?frac\{(?P<fnum>\d+)\}\{(?P<fden>\d+)\}         # \frac{3}{4}
      | (?P<num>(?<!\d,)\d{1,3}(?:,\d{3})+(?!,?\d)(?:\.\d+)?  # 1,234,567.89: groups of 3
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

    Understands signs (also U+2212), thousands separators (``1,234,567``: every group
    after a comma is three digits, and the number does not start or end inside a longer
    run of comma-joined digits, so ``1,14,200`` is the three numbers 1, 14 and 200, never
    14,200),
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


def is_plain_number(value: Any) -> bool:
    """True for ints/floats and strings like ``42``, ``-3.5``, ``1,234``, ``1e-3``."""
    if isinstance(value, bool):
        return False
    if isinstance(value, (int, float)):
        return parse_number(value) is not None
    return isinstance(value, str) and _PLAIN_NUMBER.fullmatch(value.strip()) is not None
