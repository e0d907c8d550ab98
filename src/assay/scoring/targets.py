"""What every question/answer scorer does with targets and empty answers."""

from __future__ import annotations

from typing import Any

from assay.core.types import Score

__all__ = ["nothing_extracted", "short_repr", "target_list", "target_text"]


def target_list(target: Any) -> list[Any]:
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


def short_repr(s: str | None, limit: int = 60) -> str:
    if s is None:
        return "None"
    if len(s) > limit:
        s = s[: limit - 3] + "..."
    return repr(s)


def nothing_extracted(name: str, method: str, **meta: Any) -> Score:
    return Score(name, 0.0, None, "nothing extracted from the output",
                 {"extraction": method, **meta})


def target_text(t: Any) -> str:
    return t if isinstance(t, str) else str(t)
