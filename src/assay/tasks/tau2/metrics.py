"""τ²-bench's metrics, over stored results only: mean reward and success rate (intervals
clustered by task), pass^k for every k up to the epochs (the official estimator, a bootstrap
interval over tasks), failures by reward component and by termination reason, each role's
tokens, and the user simulator every score was earned with."""

from __future__ import annotations

from collections import Counter, defaultdict
from math import comb
from typing import Any

from assay.core.types import SampleResult
from assay.metrics.registry import task_metric
from assay.metrics.stats import bootstrap_interval
from assay.metrics.summary import clustered_rate, error_messages, score_summary, usage_summary

task_metric("tau2_pass_hat_1", "tau2", aliases=("tau2", "tau2_pass_1"), category="agent",
            description="τ²-bench pass^1: the share of tasks whose episode earns the full reward "
                        "(final database state and required actions), averaged over trials; "
                        "pass^k = C(c, k) / C(n, k) per task for c successes in n trials.",
            usage="assay run tau2 --domain airline --model M --user-model U --epochs 4 "
                  "(pass^k for every k up to the epochs).",
            reference="sierra-research/tau2-bench")

#: the official success test: the reward is 1 within 1e-6
TOLERANCE = 1e-6


def is_success(reward: float) -> bool:
    """The official ``is_successful``: the reward is 1 within :data:`TOLERANCE`."""
    return abs(float(reward) - 1.0) <= TOLERANCE
BOOTSTRAP_RESAMPLES = 2000


def pass_hat_k(n: int, c: int, k: int) -> float:
    """The official estimator: C(c, k) / C(n, k) for ``c`` successes in ``n`` trials."""
    return comb(c, k) / comb(n, k)


def _score_meta(r: SampleResult) -> dict[str, Any]:
    return ((r.scores or {}).get("reward") or {}).get("metadata") or {}


def pass_hat(successes: dict[str, list[bool]], k: int) -> dict[str, Any]:
    """pass^k over the tasks with at least ``k`` trials, with a bootstrap interval over
    tasks (a task's trials are one cluster)."""
    per_task = {t: pass_hat_k(len(v), sum(v), k) for t, v in successes.items() if len(v) >= k}
    values = list(per_task.values())
    ci = bootstrap_interval({"tasks": values}, lambda m: m["tasks"],
                            resamples=BOOTSTRAP_RESAMPLES) if len(values) > 1 else None
    return {"value": sum(values) / len(values) if values else None, "k": k, "n": len(values),
            "ci_low": ci[0] if ci else None, "ci_high": ci[1] if ci else None,
            "method": "bootstrap", "clustered_by": "task"}


def tau2_metrics(results: list[SampleResult], options: dict[str, Any]) -> dict[str, Any]:
    scored = [r for r in results if r.error is None and r.scores]
    summary = score_summary(results, "reward")
    successes: dict[str, list[bool]] = defaultdict(list)
    components: Counter[str] = Counter()
    checked: Counter[str] = Counter()
    ended: Counter[str] = Counter()
    users: set[str] = set()
    judges: set[str] = set()
    for r in scored:
        reward = r.score_value("reward")
        if reward is None:
            continue
        successes[r.sample_id].append(is_success(reward))
        meta = _score_meta(r)
        info = meta.get("reward_info") or {}
        for name, value in (info.get("reward_breakdown") or {}).items():
            checked[name] += 1
            components[name] += 1 if float(value) < 1.0 - TOLERANCE else 0
        ended[str(meta.get("termination_reason"))] += 1
        if meta.get("user_model"):
            users.add(str(meta["user_model"]))
        if meta.get("judge_model"):
            judges.add(str(meta["judge_model"]))
    epochs = max((len(v) for v in successes.values()), default=0)
    tokens: dict[str, dict[str, int]] = defaultdict(lambda: {"input": 0, "output": 0})
    for r in results:
        tokens["agent"]["input"] += r.input_tokens
        tokens["agent"]["output"] += r.output_tokens
        for role, used in ((r.outcome or {}).get("role_usage") or {}).items():
            tokens[role]["input"] += int(used.get("input_tokens") or 0)
            tokens[role]["output"] += int(used.get("output_tokens") or 0)
    return {
        "reward": {**summary.pop("score"), "clustered_by": "task"},
        "success_rate": clustered_rate(scored, lambda r: r.score_value("success")),
        **{f"pass^{k}": pass_hat(successes, k) for k in range(1, epochs + 1)},
        "failed_components": {name: {"failed": components[name], "checked": checked[name]}
                              for name in sorted(checked)},
        "termination_reasons": dict(sorted(ended.items())),
        "domain": options.get("domain"),
        "user_models": sorted(users), "judge_models": sorted(judges),
        "tokens_by_role": dict(sorted(tokens.items())),
        **summary,
        **usage_summary(results),
        "top_errors": error_messages(results),
    }
