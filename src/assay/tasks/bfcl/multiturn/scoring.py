"""A multi-turn entry's verdict: the stored raw replies decoded as the official runner does,
then our checker (:mod:`.checker`). The check executes the calls again, so it runs in a
worker (:mod:`.worker`) with a deadline (:data:`CHECK_TIMEOUT_S`; no official entry takes a
second): past it the sample is a scoring error, never a hang."""

from __future__ import annotations

from typing import Any

from assay.core.types import Sample, Score
from assay.tasks.bfcl.multiturn import worker
from assay.tasks.bfcl.multiturn.decode import decode_trajectory

__all__ = ["CHECK_TIMEOUT_S", "score_multi_turn"]

#: seconds the checker may spend executing one entry's calls
CHECK_TIMEOUT_S = 60.0


def score_multi_turn(sample: Sample, raw_turns: Any, mode: str, *,
                     check_timeout: float | None = None) -> list[Score]:
    """``bfcl``: 1.0 when the official multi-turn checks pass; the metadata keeps the error
    type, per-turn verdicts, first failing turn, state difference and raw replies. Raises
    :class:`~.worker.SimulatorTimeout` past ``check_timeout`` seconds."""
    meta = sample.metadata
    entry = {"id": sample.id, "involved_classes": meta["involved_classes"],
             "initial_config": meta["initial_config"]}
    decoded = decode_trajectory(raw_turns, mode)
    limit = check_timeout or CHECK_TIMEOUT_S
    try:
        verdict = worker.run_bounded(worker.check, worker.setup(), decoded, entry,
                                     sample.target, meta["category"], timeout=limit)
    except worker.SimulatorTimeout as e:
        raise worker.SimulatorTimeout(
            f"{sample.id}: executing its calls to check them ran past {limit:g}s (e.g. a "
            f"logarithm with a huge precision); -T check_timeout=SECONDS waits longer"
        ) from e
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
