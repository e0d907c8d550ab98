"""A multi-turn entry's verdict: the stored raw replies decoded as the official runner decodes
them, then our checker (the official rules; see :mod:`.checker`)."""

from __future__ import annotations

from typing import Any

from assay.benchmarks.bfcl.multiturn.decode import decode_trajectory
from assay.core.types import Sample, Score

__all__ = ["score_multi_turn"]


def score_multi_turn(sample: Sample, raw_turns: Any, mode: str) -> list[Score]:
    """``bfcl``: 1.0 when the official multi-turn checks pass. Its metadata keeps the error
    type, the per-turn verdicts, the first failing turn, any state difference and the raw
    replies in the official result-file form (what an export writes)."""
    from assay.benchmarks.bfcl.multiturn.checker import check_entry

    meta = sample.metadata
    entry = {"id": sample.id, "involved_classes": meta["involved_classes"],
             "initial_config": meta["initial_config"]}
    decoded = decode_trajectory(raw_turns, mode)
    verdict = check_entry(decoded, entry, sample.target, meta["category"])
    valid = bool(verdict.get("valid"))
    error_type = None if valid else verdict.get("error_type")
    message = verdict.get("error_message")
    if isinstance(message, list):
        message = " ".join(str(m) for m in message)
    turns = [t.get("valid") for t in verdict.get("turns") or []]
    return [Score(
        "bfcl", 1.0 if valid else 0.0,
        f"{sum(1 for t in turns if t)}/{len(sample.target)} turns passed",
        "correct" if valid else f"{error_type}: {message}" if message else str(error_type),
        {"error_type": error_type, "category": meta["category"], "mode": mode,
         "turn_verdicts": turns, "first_failing_turn": verdict.get("first_failing_turn"),
         "state_diff": verdict.get("state_diff"), "details": verdict.get("details"),
         "raw": raw_turns},
    )]
