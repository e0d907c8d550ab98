"""Metrics of a ``converse`` run, over stored results only.

The judging is read from the score's metadata, or the outcome's for an older run.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from statistics import mean, pvariance
from typing import Any

from assay.core.types import SampleResult
from assay.metrics.stats import bootstrap_interval, proportion
from assay.metrics.summary import clustered_rate, error_messages, score_summary

BOOTSTRAP_RESAMPLES = 2000


def _bootstrap_mean(values: list[float]) -> dict[str, Any]:
    ci = bootstrap_interval({"cases": values}, lambda m: m["cases"],
                            resamples=BOOTSTRAP_RESAMPLES) if len(values) > 1 else None
    return {"value": mean(values) if values else None, "n": len(values),
            "ci_low": ci[0] if ci else None, "ci_high": ci[1] if ci else None,
            "method": "bootstrap", "resamples": BOOTSTRAP_RESAMPLES}


def _meta(r: SampleResult) -> dict[str, Any]:
    return (r.outcome or {}).get("metadata") or {}


def _judging(score_meta: dict[str, Any], meta: dict[str, Any]) -> dict[str, Any]:
    """One result's verdicts, judge model and every role's usage: from the score's
    metadata, or the outcome's (``points``, ``usage["judge"]``) for an older run."""
    usage = dict(meta.get("usage") or {})
    if "verdicts" not in score_meta:
        return {"verdicts": meta.get("points") or [], "judge_model": meta.get("judge_model"),
                "usage": usage}
    usage.pop("judge", None)  # an old outcome scored again: the new judging counts
    if score_meta.get("judge_usage") is not None:
        usage["judge"] = score_meta["judge_usage"]
    return {"verdicts": score_meta.get("verdicts") or [],
            "judge_model": score_meta.get("judge_model"), "usage": usage}


def judge_of(r: SampleResult) -> str | None:
    """The judge model of one stored result."""
    score_meta = (r.scores.get("score") or {}).get("metadata") or {}
    return _judging(score_meta, _meta(r))["judge_model"]


def converse_metrics(results: list[SampleResult], options: dict[str, Any]) -> dict[str, Any]:
    summary = score_summary(results, "score")
    scored = [r for r in results if r.error is None and r.scores]
    per_case: dict[str, list[float]] = defaultdict(list)
    passed: dict[str, list[float]] = defaultdict(list)
    for r in scored:
        v = r.score_value("score")
        if v is not None:
            per_case[r.sample_id].append(float(v))
        p = r.score_value("passed")
        if p is not None:
            passed[r.sample_id].append(float(p))
    case_means = [mean(v) for v in per_case.values()]
    epochs = summary["epochs"]
    out: dict[str, Any] = {
        "score": _bootstrap_mean(case_means),
        "pass_rate": clustered_rate(scored, lambda r: r.score_value("passed")),
        "threshold": float(options.get("threshold", 1.0)),
        **{k: v for k, v in summary.items() if k != "score"},
    }
    if epochs > 1:
        full = [v for v in passed.values() if len(v) == epochs]
        out["pass_hat_k"] = {**proportion(sum(1 for v in full if all(x == 1.0 for x in v)),
                                          len(full)), "k": epochs}
        variances = [pvariance(v) for v in per_case.values() if len(v) > 1]
        out["score_variance_across_trials"] = mean(variances) if variances else None
        out["case_trials"] = [{"case": cid, "scores": v, "mean": mean(v),
                               "variance": pvariance(v) if len(v) > 1 else 0.0}
                              for cid, v in per_case.items()]
    points: dict[tuple[str, int], dict[str, Any]] = {}
    invalid_points = invalid_votes = invalid_replies = 0
    agreements: list[float] = []
    rounds: list[int] = []
    ended: Counter[str] = Counter()
    tokens: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    isolation: set[str] = set()
    same_model: set[str] = set()
    judges: set[str] = set()
    for r in scored:
        score = r.scores.get("score") or {}
        rows = (score.get("metadata") or {}).get("points") or []
        for i, row in enumerate(rows):
            slot = points.setdefault((r.sample_id, i), {
                "case": r.sample_id, "point": row["point"], "weight": row["weight"],
                "kind": row.get("kind"), "hits": 0, "valid": 0, "invalid": 0})
            if row.get("invalid"):
                slot["invalid"] += 1
                invalid_points += 1
            else:
                slot["valid"] += 1
                slot["hits"] += 1 if row.get("is_hit") else 0
            if row.get("agreement") is not None:
                agreements.append(float(row["agreement"]))
        meta = _meta(r)
        judged = _judging(score.get("metadata") or {}, meta)
        if judged["judge_model"]:
            judges.add(str(judged["judge_model"]))
        judges.update(str(j) for j in (score.get("metadata") or {}).get("judge_models") or [])
        for v in judged["verdicts"]:
            for vote in v.get("votes") or []:
                invalid_votes += 1 if vote.get("invalid") else 0
                # a vote that needed its retry had one refused reply; an invalid one two
                invalid_replies += int(vote.get("attempts") or 1) - (0 if vote.get("invalid")
                                                                     else 1)
            if v.get("isolation"):
                isolation.add(v["isolation"])
        conv = meta.get("conversation") or {}
        if conv:
            rounds.append(int(conv.get("rounds") or 0))
            ended[str(conv.get("ended_by"))] += 1
        for role, u in judged["usage"].items():
            tokens[role][0] += int(u.get("input_tokens") or 0)
            tokens[role][1] += int(u.get("output_tokens") or 0)
        agent = meta.get("agent_model")
        for role, model in (("examiner", meta.get("examiner_model")),
                            ("judge", judged["judge_model"])):
            if agent and model == agent:
                same_model.add(role)
    out.update(
        point_hit_rates=[{**p, "rate": p["hits"] / p["valid"] if p["valid"] else None}
                         for p in points.values()],
        invalid_verdicts=invalid_points, invalid_judge_votes=invalid_votes,
        invalid_judge_replies=invalid_replies,
        judge_agreement=mean(agreements) if agreements else None,
        rounds_mean=mean(rounds) if rounds else None, rounds_max=max(rounds) if rounds else None,
        ended_by=dict(sorted(ended.items())),
        tokens={role: {"input": v[0], "output": v[1]} for role, v in sorted(tokens.items())},
        eval_code_isolation="weak" if "weak" in isolation else "bwrap" if isolation else None,
        same_model_as_agent=sorted(same_model), judge_models=sorted(judges),
        top_errors=error_messages(results))
    return out
