"""MT-Bench score: FastChat's (``show_result.py``) pooled mean of 1-10 ratings over judged turns;
*invalid* verdicts counted, left out of means; intervals clustered by question."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from assay.metrics.registry import metric
from assay.metrics.stats import proportion, t_quantile
from assay.metrics.summary import error_messages, score_summary, usage_summary

if TYPE_CHECKING:
    from assay.core.types import SampleResult

SCALE = (1, 10)
#: the registry's name: the per-sample score, the run's metric and its headline
SCORE_NAME = "mtbench_score"


@metric(
    "mtbench_score", aliases=("mt_bench", "mt_bench_score"), category="judge",
    dimension="correctness", level="judge",
    description="MT-Bench score: the mean 1-10 rating an LLM judge (FastChat's single-answer "
                "grading prompts, reference-guided for math, reasoning and coding) gives "
                "each of a model's answers over 80 two-turn questions, pooled over both "
                "turns. Invalid verdicts (no rating after one retry) are left out of the "
                "mean and counted, never scored as 0.",
    usage="Run the mtbench task with a judge model (--judge-model, e.g. a strong API "
          "model; judging with the model under test is biased). Compare models with the "
          "same judge only. fn(ratings) takes the per-turn ratings, None for an invalid "
          "verdict, and returns their mean (None when none is valid).",
    reference="lm-sys/FastChat fastchat/llm_judge (show_result.py, single mode)")
def mtbench_score(ratings: Iterable[float | None]) -> float | None:
    """The mean of the valid (not ``None``) ratings; ``None`` when none is valid."""
    valid = [float(r) for r in ratings if r is not None]
    return sum(valid) / len(valid) if valid else None


def clustered_mean(groups: dict[str, list[float]], confidence: float = 0.95) -> dict[str, Any]:
    """The pooled mean of ``groups`` (question -> valid ratings) with a t interval for the
    ratio estimator: var = Σ (s_q - R·c_q)² / (n (n-1) c̄²), n-1 degrees of freedom, cut to
    the 1-10 scale; none below two questions."""
    kept = {k: v for k, v in groups.items() if v}
    n = len(kept)
    sums = [sum(v) for v in kept.values()]
    counts = [len(v) for v in kept.values()]
    total = sum(counts)
    value = mtbench_score(x for v in kept.values() for x in v)
    out: dict[str, Any] = {"value": value, "n": total, "questions": n, "ci_low": None,
                           "ci_high": None, "method": "t", "clustered_by": "question"}
    if n < 2 or value is None:
        return out
    c_bar = total / n
    ss = sum((s - value * c) ** 2 for s, c in zip(sums, counts, strict=True))
    se = math.sqrt(ss / (n * (n - 1) * c_bar * c_bar))
    half = t_quantile(0.5 + confidence / 2, n - 1) * se
    # the true mean lies on the 1-10 scale, so the interval is cut to it
    out["ci_low"], out["ci_high"] = max(SCALE[0], value - half), min(SCALE[1], value + half)
    return out


def _turns(r: SampleResult) -> list[dict[str, Any]]:
    score = r.scores.get(SCORE_NAME) or {}
    return list((score.get("metadata") or {}).get("turns") or [])


def _meta(r: SampleResult) -> dict[str, Any]:
    return (r.outcome or {}).get("metadata") or {}


def mtbench_metrics(results: list[SampleResult], options: dict[str, Any]) -> dict[str, Any]:
    """Metrics of an MT-Bench run from the stored scores; ``tokens`` are per role (the
    run's own token counts are the model's only)."""
    summary = score_summary(results, SCORE_NAME)
    scored = [r for r in results if r.error is None and r.scores]
    overall: dict[str, list[float]] = defaultdict(list)
    by_turn: dict[int, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    by_cat: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    by_cat_turn: dict[tuple[str, int], list[float]] = defaultdict(list)
    verdicts = invalid = invalid_votes = votes = retried = 0
    agreements: list[float] = []
    judges: set[str] = set()
    tokens: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    self_judged = False
    for r in scored:
        meta = (r.scores[SCORE_NAME].get("metadata") or {})
        cat = str(meta.get("category") or "?")
        by_cat.setdefault(cat, defaultdict(list))  # shown even when all are invalid
        for t in _turns(r):
            verdicts += 1
            votes += len(t.get("votes") or [])
            invalid_votes += int(t.get("invalid_votes") or 0)
            retried += int(t.get("retried_votes") or 0)
            if t.get("agreement") is not None:
                agreements.append(float(t["agreement"]))
            if t.get("invalid") or t.get("rating") is None:
                invalid += 1
                continue
            rating = float(t["rating"])
            overall[r.sample_id].append(rating)
            by_turn[int(t["turn"])][r.sample_id].append(rating)
            by_cat[cat][r.sample_id].append(rating)
            by_cat_turn[(cat, int(t["turn"]))].append(rating)
        om = _meta(r)  # the judge is in the score (a run judged in solve: in the outcome)
        usage = dict(om.get("usage") or {})
        if meta.get("judge_usage") is not None:
            usage["judge"] = meta["judge_usage"]
        for role, u in usage.items():
            tokens[role][0] += int(u.get("input_tokens") or 0)
            tokens[role][1] += int(u.get("output_tokens") or 0)
        judge_model = meta.get("judge_model") or om.get("judge_model")
        if judge_model:
            judges.add(str(judge_model))
            self_judged = self_judged or judge_model == om.get("agent_model")
        judges.update(str(j) for j in meta.get("judge_models") or [])
    categories = {}
    for cat in sorted(by_cat):
        entry = clustered_mean(by_cat[cat])
        entry["turn_1"] = mtbench_score(by_cat_turn.get((cat, 1), []))
        entry["turn_2"] = mtbench_score(by_cat_turn.get((cat, 2), []))
        categories[cat] = entry
    return {
        SCORE_NAME: clustered_mean(overall), "turn_1": clustered_mean(by_turn[1]),
        "turn_2": clustered_mean(by_turn[2]), "categories": categories, "scale": list(SCALE),
        **{k: v for k, v in summary.items() if k not in ("score", "score_errors_as_wrong")},
        "judged_turns": verdicts, "invalid_verdicts": invalid,
        "invalid_verdict_rate": proportion(invalid, verdicts),
        "judge_votes": votes, "invalid_judge_votes": invalid_votes, "judge_retries": retried,
        "judge_samples": int(options.get("judge_samples") or 1),
        "judge_agreement": sum(agreements) / len(agreements) if agreements else None,
        "judge_models": sorted(judges), "self_judged": self_judged,
        "tokens": {role: {"input": v[0], "output": v[1]} for role, v in sorted(tokens.items())},
        **usage_summary(results), "top_errors": error_messages(results),
    }
