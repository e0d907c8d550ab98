"""What a review is: the rubric, the statuses, one review and one audit event, and the
rules a submission must follow (:func:`normalize_reviewer`, :func:`normalize_scores`,
:func:`normalize_status`)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from typing import Any

from assay.errors import AssayError

__all__ = ["DECIDED", "DIMENSIONS", "MAX_COMMENT", "MAX_REVIEWER", "STATUSES", "Review",
           "ReviewError", "ReviewEvent", "iso_time", "normalize_reviewer", "normalize_scores",
           "normalize_status"]

DIMENSIONS: tuple[str, ...] = ("correctness", "clarity", "difficulty_match", "completeness")
"""The four rubric dimensions, in the book's names and order."""

STATUSES: tuple[str, ...] = ("approved", "rejected", "needs_revision", "pending")
"""Review statuses; ``pending`` is a saved draft with no decision yet."""

DECIDED: tuple[str, ...] = ("approved", "rejected", "needs_revision")
"""Statuses that count an item as reviewed."""

MAX_COMMENT = 20_000
MAX_REVIEWER = 64


class ReviewError(AssayError):
    """A review is malformed: unknown status, a score outside 1-5, no reviewer name."""


def iso_time(ts: float | None) -> str | None:
    """Epoch seconds as an ISO-8601 UTC time to the second; None stays None."""
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, tz=timezone.utc).isoformat(timespec="seconds")


@dataclass
class Review:
    """One reviewer's current verdict on one problem."""

    dataset_id: str
    problem_id: str
    reviewer: str
    scores: dict[str, int | None]
    status: str
    comment: str
    created_at: float
    updated_at: float
    version: int

    @property
    def total_score(self) -> float | None:
        """Mean of the scores given (the book's ``total_score``); None when none is given."""
        values = [v for v in self.scores.values() if v is not None]
        return round(sum(values) / len(values), 4) if values else None

    @property
    def decided(self) -> bool:
        """Whether this counts as reviewed (approved, rejected or needs_revision)."""
        return self.status in DECIDED

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form, with ISO-8601 UTC times beside the epoch seconds."""
        out = asdict(self)
        out["total_score"] = self.total_score
        out["created_at_iso"] = iso_time(self.created_at)
        out["updated_at_iso"] = iso_time(self.updated_at)
        return out


@dataclass
class ReviewEvent:
    """One submission as it was made: a row of the append-only audit trail."""

    seq: int
    dataset_id: str
    problem_id: str
    reviewer: str
    scores: dict[str, int | None]
    status: str
    comment: str
    at: float
    version: int

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form, with the ISO-8601 UTC time beside the epoch seconds."""
        out = asdict(self)
        out["at_iso"] = iso_time(self.at)
        return out


def normalize_reviewer(name: Any) -> str:
    """A reviewer id: stripped, 1-64 printable characters; raises :class:`ReviewError`."""
    text = str(name or "").strip()
    if not text:
        raise ReviewError("a review needs a reviewer name (--reviewer NAME)")
    if len(text) > MAX_REVIEWER or not text.isprintable():
        raise ReviewError(f"reviewer name must be 1-{MAX_REVIEWER} printable characters")
    return text


def normalize_scores(scores: Mapping[str, Any] | None,
                     dimensions: Sequence[str] | None = None) -> dict[str, int | None]:
    """Scores as ``{dim: 1..5 or None}``; with ``dimensions`` every one is present, no other."""
    if scores is not None and not isinstance(scores, Mapping):
        raise ReviewError("scores must be an object of dimension -> 1..5 or null")
    given = dict(scores or {})
    if dimensions is not None:
        unknown = set(given) - set(dimensions)
        if unknown:
            raise ReviewError(f"unknown score dimension(s) {sorted(unknown)}; "
                              f"expected {list(dimensions)}")
    keys = list(dimensions) if dimensions is not None else list(given)
    out: dict[str, int | None] = {}
    for k in keys:
        if not isinstance(k, str) or not k:
            raise ReviewError("score dimensions must be non-empty names")
        v = given.get(k)
        if v is None or v == "":
            out[k] = None
            continue
        if isinstance(v, bool):
            raise ReviewError(f"score {k!r} must be an integer 1-5, got {v!r}")
        try:
            f = float(v)
        except (TypeError, ValueError):
            raise ReviewError(f"score {k!r} must be an integer 1-5, got {v!r}") from None
        if not math.isfinite(f) or not f.is_integer() or not 1 <= f <= 5:
            raise ReviewError(f"score {k!r} must be an integer 1-5, got {v!r}")
        out[k] = int(f)
    return out


def normalize_status(status: Any) -> str:
    """A review status (``pending`` when empty), lowercased; raises :class:`ReviewError`."""
    text = str(status or "pending").strip().lower()
    if text not in STATUSES:
        raise ReviewError(f"status must be one of {', '.join(STATUSES)}; got {status!r}")
    return text
