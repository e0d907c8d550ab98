"""The reference's ``\\boxed{...}`` extraction (MATH, MATH-500): what its loader reads from a
solution and the scorers from a reply, in a module of its own so a scorer loads no data code."""

from __future__ import annotations

import re

__all__ = ["last_boxed"]


def last_boxed(text: str) -> str | None:
    """Content of the last ``\\boxed{...}`` (or ``\\fbox{...}``), braces balanced."""
    starts = [m.start() for m in re.finditer(r"\\(?:boxed|fbox)\s*\{", text)]
    if not starts:
        return None
    i = text.index("{", starts[-1])
    depth = 0
    for k in range(i, len(text)):
        if text[k] == "{":
            depth += 1
        elif text[k] == "}":
            depth -= 1
            if depth == 0:
                return text[i + 1:k].strip()
    return None
