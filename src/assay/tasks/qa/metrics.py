"""Metrics of the ``qa`` benchmark."""

from __future__ import annotations

from typing import Any

from assay.core.types import SampleResult
from assay.metrics.summary import error_messages, extraction_rate, score_summary, usage_summary


def qa_metrics(results: list[SampleResult]) -> dict[str, Any]:
    """Accuracy with a 95% Wilson interval, errors apart, extraction rate, latency, tokens."""
    summary = score_summary(results)
    return {
        "accuracy": summary["score"],
        **{k: v for k, v in summary.items() if k != "score"},
        "extraction_rate": extraction_rate(results),
        **usage_summary(results),
        "top_errors": error_messages(results),
    }
