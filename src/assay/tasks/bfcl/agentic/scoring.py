"""An agentic entry's verdict from its stored raw replies (see :mod:`.answer`)."""

from __future__ import annotations

from typing import Any

from assay.core.types import Sample, Score
from assay.tasks.bfcl.agentic.answer import check_agentic

__all__ = ["score_agentic"]


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else str(value)


def score_agentic(sample: Sample, raw: Any, mode: str) -> list[Score]:
    """``bfcl``: 1.0 when the official agentic checks pass; the metadata keeps the error
    type, message, the answer step read and the raw replies (``[[step, ...]]``)."""
    verdict = check_agentic(raw, list(sample.target or []), mode)
    valid = bool(verdict.get("valid"))
    error_type = None if valid else verdict.get("error_type")
    message = verdict.get("error_message")
    if isinstance(message, list):
        message = " ".join(str(m) for m in message)
    return [Score(
        "bfcl", 1.0 if valid else 0.0, _text(verdict.get("answer")),
        "correct" if valid else f"{error_type}: {message}",
        {"error_type": error_type, "category": sample.metadata["category"], "mode": mode,
         "details": verdict.get("details"), "raw": raw},
    )]
