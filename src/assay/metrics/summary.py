"""Summaries shared by benchmarks. Errors are never wrong answers: the rate is over scored samples,
errors counted beside it; epochs are averaged per sample first (interval clustered by sample)."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable
from typing import Any

from assay.core.types import SampleResult
from assay.metrics.stats import mean_with_ci, proportion


def _by_sample(results: list[SampleResult],
               value: Callable[[SampleResult], float | None]) -> dict[str, list[float]]:
    per_sample: dict[str, list[float]] = defaultdict(list)
    for r in results:
        v = value(r)
        if v is not None:
            per_sample[r.sample_id].append(float(v))
    return per_sample


def per_sample_means(results: list[SampleResult],
                     value: Callable[[SampleResult], float | None]) -> list[float]:
    """``value`` averaged over each sample's epochs (``None`` values left out)."""
    return [sum(v) / len(v) for v in _by_sample(results, value).values()]


def clustered_rate(results: list[SampleResult],
                   value: Callable[[SampleResult], float | None]) -> dict[str, Any]:
    """The mean of ``value`` (``None``: left out) with a 95% interval over samples: Wilson
    when the per-sample means are all 0 or 1, else t; several epochs are marked
    ``clustered_by: "sample"``."""
    per_sample = _by_sample(results, value)
    means = [sum(v) / len(v) for v in per_sample.values()]
    repeated = any(len(v) > 1 for v in per_sample.values())
    if all(m in (0.0, 1.0) for m in means):
        out = proportion(int(sum(means)), len(means))
    else:
        out = mean_with_ci(means)
    if repeated:
        out["clustered_by"] = "sample"
        out["observations"] = sum(len(v) for v in per_sample.values())
    return out


def primary_name(results: list[SampleResult], default: str = "score") -> str:
    """The name of the primary (first) score the samples carry: the name its rate is stored,
    printed and headed under (``exact_match``, never a second word for it)."""
    return next((next(iter(r.scores)) for r in results if r.error is None and r.scores),
                default)


def score_summary(results: list[SampleResult], score_name: str | None = None) -> dict[str, Any]:
    """Rate of the primary (or named) score with a 95% interval, plus error counts."""
    scored = [r for r in results if r.error is None and r.scores]
    errors = [r for r in results if r.error is not None]
    values = [r.score_value(score_name) for r in scored]
    values = [float(v) for v in values if v is not None]
    epochs = len({r.epoch for r in results}) or 1
    headline = clustered_rate(scored, lambda r: r.score_value(score_name))
    n_total = len(results)
    return {"score": headline, "n_samples": n_total, "n_scored": len(scored),
            "n_errors": len(errors), "error_rate": proportion(len(errors), n_total),
            # errors counted as failures: the pessimistic number, beside the headline
            "score_errors_as_wrong": (sum(values) / n_total) if n_total else None,
            "epochs": epochs}


WHOLE_REPLY = "full"  # the extraction of a score that took the whole reply as its answer


def extracted(score: dict[str, Any]) -> bool:
    """Whether a stored score has an answer, not the whole reply taken as one."""
    meta = score.get("metadata") or {}
    return score.get("answer") is not None and meta.get("extraction") != WHOLE_REPLY


def extraction_rate(results: list[SampleResult], score_name: str | None = None) -> dict[str, Any]:
    """Share of scored samples whose answer was :func:`extracted`."""
    scored = [r for r in results if r.error is None and r.scores]
    count = sum(extracted(r.scores[score_name] if score_name else next(iter(r.scores.values())))
                for r in scored)
    return proportion(count, len(scored))


def usage_summary(results: list[SampleResult]) -> dict[str, Any]:
    """Mean latency (start to stored result), split into the model's time and its calls'
    waiting (for a connection slot or in the model's queue: the embedded model answers one
    call at a time), and token totals."""
    n = len(results)
    ok = [r for r in results if r.error is None]
    lat = [r.latency_s for r in ok]
    model = [r.model_s for r in ok if r.model_s is not None]
    wait = [r.wait_s for r in ok if r.wait_s is not None]
    tin = sum(r.input_tokens for r in results)
    tout = sum(r.output_tokens for r in results)
    return {"mean_latency_s": sum(lat) / len(lat) if lat else None,
            "mean_model_time_s": sum(model) / len(model) if model else None,
            "mean_wait_s": sum(wait) / len(wait) if wait else None,
            "input_tokens": tin, "output_tokens": tout,
            "mean_tokens_per_sample": (tin + tout) / n if n else None}


def agent_of(r: SampleResult) -> dict[str, Any] | None:
    """How a sample's tool loop went (``None``: the model ran without an agent)."""
    found = ((r.outcome or {}).get("metadata") or {}).get("agent")
    return found if isinstance(found, dict) else None


def agent_summary(results: list[SampleResult]) -> dict[str, Any]:
    """``{"agent": ...}`` for a run whose model ran with an agent (else ``{}``): steps and
    tool calls per sample (mean, 95% interval), tool errors, calls per tool, and why the
    samples' loops ended."""
    runs = [a for r in results if (a := agent_of(r)) is not None]
    if not runs:
        return {}
    tools: Counter[str] = Counter()
    for a in runs:
        tools.update(a.get("tools") or {})
    return {"agent": {
        "samples": len(runs),
        "steps_per_sample": mean_with_ci([float(a.get("steps", 0)) for a in runs]),
        "tool_calls_per_sample": mean_with_ci([float(a.get("tool_calls", 0)) for a in runs]),
        "tool_errors": sum(int(a.get("tool_errors", 0)) for a in runs),
        "calls_per_tool": dict(tools.most_common()),
        "ended": dict(Counter(str(a.get("ended")) for a in runs).most_common())}}


def error_messages(results: list[SampleResult], limit: int = 5) -> list[dict[str, Any]]:
    counts: dict[str, int] = defaultdict(int)
    for r in results:
        if r.error:
            counts[r.error[:200]] += 1
    top = sorted(counts.items(), key=lambda kv: -kv[1])[:limit]
    return [{"message": m, "count": c} for m, c in top]
