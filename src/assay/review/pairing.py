"""Scores of two raters aligned item by item, the input of agreement statistics."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["PairedScores", "pair_scores", "score_number"]


@dataclass
class PairedScores:
    """Scores of two raters on the items both scored, aligned by problem, for one dimension."""

    dimension: str
    problem_ids: list[str] = field(default_factory=list)
    a: list[float] = field(default_factory=list)  # ints stay ints (human scores)
    b: list[float] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.problem_ids)


def score_number(v: Any) -> float | None:
    """A score as a number (ints stay ints); None for no score, booleans and non-numbers."""
    if v is None or isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def pair_scores(a: Mapping[str, Mapping[str, Any]], b: Mapping[str, Mapping[str, Any]],
                dimensions: Sequence[str]) -> dict[str, PairedScores]:
    """Per dimension, the scores of raters ``a`` and ``b`` (``{problem_id: {dim: score}}``)
    on the items both scored, in problem-id order."""
    out = {d: PairedScores(d) for d in dimensions}
    for pid in sorted(set(a) & set(b)):
        for d in dimensions:
            x, y = score_number(a[pid].get(d)), score_number(b[pid].get(d))
            if x is not None and y is not None:
                out[d].problem_ids.append(pid)
                out[d].a.append(x)
                out[d].b.append(y)
    return out
