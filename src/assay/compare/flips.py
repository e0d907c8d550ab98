"""Both outputs and the target of every sample that flipped between two runs (the first
stored epoch of each), read from the store; tool calls stand in for an empty reply."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from assay.scoring import target_letters

if TYPE_CHECKING:
    from assay.core.types import SampleResult
    from assay.store.sqlite import Store

__all__ = ["attach_outputs", "as_text"]


def as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def _output(r: SampleResult) -> str:
    if r.error is not None and not r.output:
        return f"(error) {r.error}"
    if r.output:
        return r.output
    calls = (r.outcome or {}).get("tool_calls")
    if calls:
        return as_text(calls)
    return r.prediction or ""


def _first_epochs(store: Store, run_id: str, ids: set[str]) -> dict[str, SampleResult]:
    out: dict[str, SampleResult] = {}
    if not ids:
        return out
    for r in store.iter_results(run_id, transcripts=False, keys=[(s, 0) for s in ids]):
        out.setdefault(r.sample_id, r)
    if len(out) < len(ids):  # epochs numbered otherwise: the first one stored
        for r in store.iter_results(run_id, transcripts=False):
            if r.sample_id in ids:
                out.setdefault(r.sample_id, r)
    return out


def attach_outputs(store: Store, result: dict[str, Any],
                   flips: dict[str, list[dict[str, Any]]] | None = None) -> None:
    """Give every flip of a :func:`~assay.compare.runs.compare_runs` result (or of
    ``flips``, a page of them) its ``target``, ``a_output`` and ``b_output``, in place."""
    flips = result["flips"] if flips is None else flips
    ids = {f["sample_id"] for kind in ("fixed", "broken") for f in flips[kind]}
    a = _first_epochs(store, result["a"]["id"], ids)
    b = _first_epochs(store, result["b"]["id"], ids)
    for kind in ("fixed", "broken"):
        for f in flips[kind]:
            ra, rb = a.get(f["sample_id"]), b.get(f["sample_id"])
            r = ra if ra is not None else rb
            choices = (r.metadata or {}).get("choices") if r is not None else None
            # a multiple-choice target as the letter the outputs answer with
            f["target"] = ((target_letters(r.target, choices) if r is not None else None)
                           or as_text(r.target if r is not None else None))
            f["a_output"] = _output(ra) if ra is not None else ""
            f["b_output"] = _output(rb) if rb is not None else ""
