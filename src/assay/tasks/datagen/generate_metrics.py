"""Metrics and report sections of a generation run, read from its stored results.

Call failures are errors, counted apart from the valid rate.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from assay.core.types import SampleResult
from assay.metrics.format import counted
from assay.metrics.stats import mean_with_ci, proportion
from assay.metrics.summary import clustered_rate
from assay.tasks.datagen.generate_outputs import generated_problem, generation_failures
from assay.tasks.datagen.generate_parse import normalize_text, reason_code


def generate_metrics(results: list[SampleResult]) -> dict[str, Any]:
    """Valid rate (Wilson), failures and reasons, topics, answer range, attempts."""
    done = [r for r in results if r.error is None and "valid" in r.scores]
    valid = [r for r in done if r.score_value("valid") == 1.0]
    failed = [r for r in done if r.score_value("valid") != 1.0]
    meta = [r.scores["valid"].get("metadata") or {} for r in done]
    attempts = [int(m.get("attempts") or 0) for m in meta]
    first_try = sum(1 for r, a in zip(done, attempts, strict=True)
                    if a == 1 and r.score_value("valid") == 1.0)
    final_reasons: Counter[str] = Counter()
    for r in failed:
        fails = generation_failures(r)
        for reason in (fails[-1].get("reasons", []) if fails else []):
            final_reasons[reason_code(reason)] += 1
    retry_reasons: Counter[str] = Counter()
    for r in done:
        for f in generation_failures(r):
            for reason in f.get("reasons", []):
                retry_reasons[reason_code(reason)] += 1
    valid_set = {id(r) for r in valid}
    problems = [generated_problem(r) or {} for r in valid]
    answers = [int(p["answer"]) for p in problems if str(p.get("answer", "")).isdigit()]
    hist = [0] * 10
    for a in answers:
        hist[min(9, a // 100)] += 1
    seen: set[str] = set()
    duplicates = 0
    for p in problems:
        key = normalize_text(str(p.get("problem", "")))
        duplicates += key in seen
        seen.add(key)
    return {
        # clustered by sample: with --epochs, a sample's attempts are not independent
        "valid_rate": clustered_rate(done, lambda r: 1.0 if id(r) in valid_set else 0.0),
        "first_attempt_valid_rate": proportion(first_try, len(done)),
        "n_samples": len(results), "n_valid": len(valid), "n_failed": len(failed),
        "n_errors": len(results) - len(done),
        "failure_reasons": dict(final_reasons.most_common()),
        "retry_reasons": dict(retry_reasons.most_common()),
        "mean_attempts": mean_with_ci([float(a) for a in attempts]),
        "topics": dict(Counter(p.get("topic") or "unknown" for p in problems).most_common()),
        "requested_topics": dict(Counter(
            m.get("topic") or "unknown" for m in meta).most_common()),
        "answer_range": {
            "min": min(answers) if answers else None,
            "max": max(answers) if answers else None,
            "histogram": [{"bin": f"{100 * i}-{100 * i + 99}", "count": c}
                          for i, c in enumerate(hist)],
        },
        "duplicate_problems": duplicates,
    }


def generate_report_extra(metrics: dict[str, Any]) -> dict[str, Any]:
    """Topic distribution, answer histogram and failure reasons."""
    sections = []
    n_valid = metrics.get("n_valid") or 0
    if metrics.get("topics"):
        sections.append({"title": "Topics of valid problems", "headers": ["topic", "count"],
                         "rows": [[t, c] for t, c in metrics["topics"].items()],
                         "bars": [(t, c / n_valid) for t, c in metrics["topics"].items()]
                         if n_valid else []})
    hist = (metrics.get("answer_range") or {}).get("histogram") or []
    if n_valid and hist:
        sections.append({"title": "Answer range", "headers": ["answers", "count"],
                         "rows": [[h["bin"], h["count"]] for h in hist],
                         "bars": [(h["bin"], h["count"] / n_valid) for h in hist]})
    if metrics.get("failure_reasons") or metrics.get("retry_reasons"):
        codes = sorted(set(metrics.get("failure_reasons", {}))
                       | set(metrics.get("retry_reasons", {})))
        sections.append({
            "title": "Generation failures", "headers": ["reason", "final", "any attempt"],
            "rows": [[c, metrics.get("failure_reasons", {}).get(c, 0),
                      metrics.get("retry_reasons", {}).get(c, 0)] for c in codes],
            "note": "final: generations that never validated (recorded as failures, not "
                    "written as problems); any attempt: every rejected reply, retries "
                    "included."})
    recs = []
    if metrics.get("n_failed"):
        recs.append(f"{counted(metrics['n_failed'], 'generation')} failed validation after all "
                    "attempts; they are excluded from the problem set.")
    return {"sections": sections, "recommendations": recs}
