"""Metrics of the ``qa`` benchmark, and the hint a run's report gives when its scorer
looks too strict for the replies."""

from __future__ import annotations

from typing import Any

from assay.core.types import SampleResult
from assay.metrics.summary import (
    error_messages,
    extraction_rate,
    primary_name,
    score_summary,
    usage_summary,
)
from assay.scoring import canonical_scorer

#: the scorers whose wrong answers are checked for the target (``includes`` would take
#: a reply that states the target in a sentence)
HINTED_SCORERS = frozenset({"exact_match", "normalized_match"})

#: the share of wrong answers containing the target from which ``--scorer includes`` is hinted
HINT_SHARE = 0.2


def wrong_containing_target(results: list[SampleResult]) -> dict[str, int] | None:
    """``{"count", "wrong"}``: of the wrong scored answers, how many contain the target as
    whole words; ``None`` when the run's scorer stores no such flag."""
    wrong = count = 0
    flagged = False
    for r in results:
        if r.error is not None or not r.scores:
            continue
        score = next(iter(r.scores.values()))
        if score.get("value") != 0.0:
            continue
        wrong += 1
        flag = (score.get("metadata") or {}).get("target_in_reply")
        flagged = flagged or flag is not None
        count += bool(flag)
    return {"count": count, "wrong": wrong} if flagged else None


def includes_hint(metrics: dict[str, Any]) -> str | None:
    """One line for the report when at least :data:`HINT_SHARE` of the wrong answers (and
    at least one) contain the target: the scorer is likely stricter than the replies."""
    found = metrics.get("wrong_containing_target")
    if not isinstance(found, dict) or not found.get("count"):
        return None
    count, wrong = int(found["count"]), int(found["wrong"])
    if count < HINT_SHARE * wrong:
        return None
    return (f"{count} of {wrong} wrong answers contain the target; try --scorer includes "
            f"(assay score RUN --scorer includes re-scores this run without model calls)")


def qa_metrics(results: list[SampleResult], scorer: str | None = None) -> dict[str, Any]:
    """The scorer's rate under its metric name (``exact_match``: Wilson 95%), errors apart,
    extraction rate, latency, tokens, and how many wrong answers contain the target."""
    summary = score_summary(results)
    name = primary_name(results, canonical_scorer(scorer) if scorer else "score")
    out = {name: summary.pop("score"), **summary, "extraction_rate": extraction_rate(results)}
    found = wrong_containing_target(results)
    if found is not None:
        out["wrong_containing_target"] = found
    return {**out, **usage_summary(results), "top_errors": error_messages(results)}
