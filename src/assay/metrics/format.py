"""Metric values and counts as text, for every layer that prints them."""

from __future__ import annotations

from typing import Any


def fmt_rate(value: dict[str, Any]) -> str:
    """``0.650 [0.433, 0.819] (13/20)`` for a rate entry."""
    if value.get("value") is None:
        return "n/a"
    s = f"{value['value']:.3f}"
    if value.get("ci_low") is not None:
        s += f" [{value['ci_low']:.3f}, {value['ci_high']:.3f}]"
    if "successes" in value:
        s += f" ({value['successes']}/{value['n']})"
    elif value.get("n") is not None:
        s += f" (n={value['n']})"
    return s


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``1 task``, ``2 tasks``: a count and its noun, agreeing (``plural`` when irregular)."""
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"
