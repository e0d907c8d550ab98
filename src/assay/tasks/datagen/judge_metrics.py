"""Metrics of a rubric judge's run: overall and per-dimension means with percentile
bootstrap intervals over problems (2,000 resamples, seed 0), pass (overall >= 3.5) and
excellent (>= 4.5) rates with Wilson intervals, score distributions, and the invalid
count and rate (an invalid verdict is counted apart, never turned into a number)."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Any

from assay.core.types import SampleResult
from assay.metrics.format import counted
from assay.metrics.stats import proportion
from assay.metrics.summary import error_messages, usage_summary
from assay.tasks.datagen.families import self_preference_warning
from assay.tasks.datagen.rubric import LEVELS

PASS_THRESHOLD = 3.5
EXCELLENT_THRESHOLD = 4.5
SCORE_NAME = "rubric"
BOOTSTRAP_RESAMPLES = 2000


def bootstrap_mean(values: Sequence[float], *, confidence: float = 0.95,
                   n_resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0) -> dict[str, Any]:
    """A seeded mean with a percentile-bootstrap interval, shaped like ``mean_with_ci``.

    Pass one value per cluster: resampling clusters keeps the interval honest."""
    import numpy as np  # heavy

    n = len(values)
    out: dict[str, Any] = {"value": float(sum(values) / n) if n else None, "n": n,
                           "ci_low": None, "ci_high": None, "method": "bootstrap-percentile",
                           "resamples": n_resamples}
    if n < 2:
        return out
    arr = np.asarray(values, dtype=float)
    rng = np.random.default_rng(seed)
    means = np.empty(n_resamples)
    chunk = max(1, 2_000_000 // n)
    for start in range(0, n_resamples, chunk):
        stop = min(n_resamples, start + chunk)
        means[start:stop] = arr[rng.integers(0, n, size=(stop - start, n))].mean(axis=1)
    alpha = (1 - confidence) / 2
    out["ci_low"] = float(np.quantile(means, alpha))
    out["ci_high"] = float(np.quantile(means, 1 - alpha))
    return out


def split_verdicts(results: list[SampleResult]
                   ) -> tuple[list[tuple[SampleResult, dict[str, int]]], list[SampleResult],
                              list[SampleResult]]:
    """(valid (result, scores) pairs, invalid results, errored results)."""
    valid, invalid, errors = [], [], []
    for r in results:
        if r.error is not None:
            errors.append(r)
            continue
        s = r.scores.get(SCORE_NAME)
        if s is None:
            continue
        meta = s.get("metadata") or {}
        if s.get("value") is None or meta.get("invalid") or not meta.get("scores"):
            invalid.append(r)
        else:
            # a jury's or several samples' verdict is a mean per dimension (may be a fraction)
            valid.append((r, {k: int(v) if float(v).is_integer() else float(v)
                              for k, v in meta["scores"].items()}))
    return valid, invalid, errors


def mean(xs: Sequence[float]) -> float:
    return sum(xs) / len(xs)


def judge_metrics(results: list[SampleResult], options: dict[str, Any] | None = None
                  ) -> dict[str, Any]:
    """Metrics of one judge's run (see the module docstring for the methods)."""
    options = options or {}
    valid, invalid, errors = split_verdicts(results)
    dims: list[str] = []
    for _, sc in valid:
        dims += [d for d in sc if d not in dims]
    # one unit per problem: epochs of a problem are averaged first (clustered)
    per_item: dict[str, list[dict[str, int]]] = defaultdict(list)
    for r, sc in valid:
        per_item[r.sample_id].append(sc)
    overall_items = [mean([mean(list(sc.values())) for sc in v]) for v in per_item.values()]
    n_items = len(overall_items)
    judged = len(valid) + len(invalid)
    m: dict[str, Any] = {
        "overall_mean": bootstrap_mean(overall_items),
        "pass_rate": proportion(sum(x >= PASS_THRESHOLD for x in overall_items), n_items),
        "excellent_rate": proportion(sum(x >= EXCELLENT_THRESHOLD for x in overall_items),
                                     n_items),
    }
    dimensions: dict[str, Any] = {}
    for d in dims:
        item_means = [mean([sc[d] for sc in v if d in sc]) for v in per_item.values()
                      if any(d in sc for sc in v)]
        all_scores = [sc[d] for _, sc in valid if d in sc]
        dist = Counter(all_scores)
        m[f"mean_{d}"] = bootstrap_mean(item_means)
        dimensions[d] = {
            "mean": m[f"mean_{d}"],
            "distribution": {str(k): dist.get(k, 0) for k in LEVELS},
            "at_least_4": proportion(sum(x >= 4 for x in item_means), len(item_means)),
            "at_most_2": proportion(sum(x <= 2 for x in item_means), len(item_means)),
        }
    pessimistic_pass = sum(x >= PASS_THRESHOLD for x in overall_items)
    invalid_items = {r.sample_id for r in invalid} - set(per_item)
    metas = [(r.scores.get(SCORE_NAME) or {}).get("metadata") or {} for r in results]
    judges = sorted({str(j) for meta in metas
                     for j in meta.get("judge_models") or [meta.get("judge_model")]} - {"None"})
    # several votes per problem (a jury, judge_samples): how far they agreed, on average
    agreements = [meta["agreement"] for meta in metas if meta.get("agreement") is not None]
    generator = options.get("generator_model") or next(
        (str(g) for r in results if (g := (r.metadata or {}).get("generator_model"))), None)
    invalid_keys = {(r.sample_id, r.epoch) for r in invalid}
    retried = [r for r in list(invalid) + [r for r, _ in valid]
               if (r.scores[SCORE_NAME].get("metadata") or {}).get("attempts", 1) > 1]
    m.update({
        "invalid_rate": proportion(len(invalid), judged),
        # invalid verdicts counted as failing: the pessimistic pass rate, beside the headline
        "pass_rate_invalid_as_fail": proportion(pessimistic_pass, n_items + len(invalid_items)),
        "n_samples": len(results),
        "n_valid": len(valid),
        "n_invalid": len(invalid),
        "n_errors": len(errors),
        "n_items": n_items,
        "retried": len(retried),
        "recovered_on_retry": sum((r.sample_id, r.epoch) not in invalid_keys for r in retried),
        "dimensions": dimensions,
        "dimension_names": dims,
        "thresholds": {"pass": PASS_THRESHOLD, "excellent": EXCELLENT_THRESHOLD},
        "ci_method": (f"means: percentile bootstrap over problems ({BOOTSTRAP_RESAMPLES} "
                      "resamples, seed 0); rates: Wilson"),
        "judge_models": judges,
        "judge_agreement": mean(agreements) if agreements else None,
        "generator_model": generator,
        "self_preference_warning": self_preference_warning(generator, judges),
        **usage_summary(results),
        "top_errors": error_messages(results),
    })
    return m


def fmt_interval(rate: dict[str, Any] | None, spec: str = ".2f") -> str:
    """A value with its interval, ``n/a`` without one (``spec``: the number format)."""
    if not rate or rate.get("value") is None:
        return "n/a"
    s = f"{rate['value']:{spec}}"
    if rate.get("ci_low") is not None:
        s += f" [{rate['ci_low']:{spec}}, {rate['ci_high']:{spec}}]"
    return s


def judge_report_extra(metrics: dict[str, Any]) -> dict[str, Any]:
    if not metrics:
        return {}
    rows = []
    for d, info in (metrics.get("dimensions") or {}).items():
        dist = info["distribution"]
        rows.append([d, fmt_interval(info["mean"]), *[dist[str(k)] for k in LEVELS],
                     fmt_interval(info["at_least_4"]), fmt_interval(info["at_most_2"])])
    sections = [{
        "title": "Rubric scores per dimension",
        "headers": ["dimension", "mean [95% CI]", "1", "2", "3", "4", "5", ">= 4", "<= 2"],
        "rows": rows,
        "bars": [(d, (info["mean"]["value"] - 1) / 4) for d, info in
                 (metrics.get("dimensions") or {}).items() if info["mean"]["value"] is not None],
        "note": (f"{metrics['ci_method']}. Invalid verdicts ({metrics['n_invalid']}) are "
                 "excluded from every mean and rate and counted apart; they never become a "
                 "score."),
    }]
    recs = []
    if metrics.get("self_preference_warning"):
        recs.append(metrics["self_preference_warning"])
    inv = metrics.get("invalid_rate") or {}
    if inv.get("value"):
        recs.append(f"{counted(metrics['n_invalid'], 'verdict')} stayed invalid after a retry "
                    f"({inv['value']:.0%}); use a stronger judge or constrained decoding.")
    if len(metrics.get("judge_models") or []) < 2:
        recs.append("A single judge: consider a jury of judges from different families "
                    "(jury_summary) and report inter-judge agreement.")
    return {"sections": sections, "recommendations": recs}
