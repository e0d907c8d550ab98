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
    """The value of a ``_NUMBER`` match; ``None`` for a zero denominator or overflow."""
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
    """All numbers in ``text`` as ``(value, matched_text)``, in order: signs (also U+2212;
    a ``-`` after a letter, digit or bracket is an operator), thousands separators (groups
    of three, so ``1,14,200`` is 1, 14 and 200), decimals, ``1.5e3``, ``45%`` (45),
    currency symbols, ``3/4`` and ``\\frac{3}{4}``."""
    if not _DIGIT.search(text):
        return []
    return [(value, m.group(0).strip()) for m in _NUMBER.finditer(text)
            if (value := _match_value(m)) is not None]


def parse_number(value: Any) -> float | None:
    """A finite int/float (not bool), or a string that is exactly one number in the forms
    :func:`extract_numbers` reads (``"-3/4"``, ``"45%"``, ``"$5"``), as a float; else None."""
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
