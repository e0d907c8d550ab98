"""A plan report that does not contradict itself (issue 24, point 7's report items).

Real plan runs (``start_plan``) over real HTTP against the fake OpenAI-compatible server,
read back from the real store: a primary metric the task does not compute is said to be
so, not shown as if computed; a "best" case scores better than the worst end of the
scale; the plan embedded in the report names the model the run used.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from assay.core.types import SampleResult
from assay.engine.finalize import metric_facts
from assay.errors import ConfigError
from assay.pipelines.plan import start_plan
from assay.plan.report import pick_cases
from assay.plan.schema import PlanTask
from assay.plan.steps import computable
from assay.store.sqlite import Store
from assay.testing import Rule


def write_plan(folder: Path, tasks: list[dict[str, Any]], models: dict[str, Any]) -> Path:
    path = folder / "plan.yaml"
    path.write_text(json.dumps({"assay_plan": 1, "request": "tool calling and sums",
                                "models": models, "tasks": tasks}), encoding="utf-8")
    return path


def run_plan(path: Path, base_url: str, limit: int) -> Any:
    store = Store()
    try:
        return start_plan(store, path, model="openai/fake",
                          engine={"base_url": base_url, "limit": limit},
                          echo=lambda _x: None)
    finally:
        store.close()


def sums(folder: Path) -> dict[str, Any]:
    rows = [{"id": f"s{i}", "question": f"What is {i} + {i}?", "answer": str(2 * i)}
            for i in range(4)]
    (folder / "sums.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return {"task": "qa", "source": "builtin", "capabilities": ["math"],
            "options": {"data": "sums.jsonl", "scorer": "exact"},
            "metrics": [{"name": "exact_match", "role": "primary"}]}


def test_a_metric_a_native_task_does_not_compute_is_refused_at_plan_time(
        tmp_path: Path) -> None:
    # bfcl's verdict is its official checker's; a plan naming exact_match for it is refused
    # before anything runs, with the metric it does compute
    bfcl = {"task": "bfcl", "source": "gallery", "capabilities": ["tool_use"],
            "metrics": [{"name": "exact_match", "role": "primary"}]}
    with pytest.raises(ConfigError) as e:
        run_plan(write_plan(tmp_path, [bfcl], {"model": "local"}), "http://127.0.0.1:9", 1)
    assert "task 1 (bfcl): task bfcl: metric exact_match is not computed by this task; " \
           "choose from bfcl_accuracy" in str(e.value)
    assert "\n" not in str(e.value)
    for name, metric in (("gaia", "gaia_exact_match"), ("tau2_bench", "tau2_pass_hat_1")):
        task = {"task": name, "source": "gallery", "metrics": [{"name": "exact_match",
                                                                 "role": "primary"}]}
        assert computable(PlanTask.model_validate(task))[0] == metric


def test_a_native_tasks_own_verdict_is_its_primary_metric_in_the_report(
        fake_server: Any, tmp_path: Path) -> None:
    bfcl = {"task": "bfcl", "source": "gallery", "capabilities": ["tool_use"],
            "metrics": [{"name": "bfcl_accuracy", "role": "primary"}],
            "why": {"selected": "canonical set for tool_use", "prior": "canonical for "
                    "tool_use: the function-calling leaderboard", "words": "BM25 3.10, 1.00 "
                    "of the best", "model": "no planner model (rules)"}}
    call = {"name": "calculate_triangle_area", "arguments": {"base": 10, "height": 5}}
    server = fake_server(rules=[Rule("triangle", {"tool_calls": [call]})],
                         default_reply="I cannot call functions.")
    done = run_plan(write_plan(tmp_path, [sums(tmp_path), bfcl], {"model": "local"}),
                    server.base_url, limit=3)
    qa, tool = done.summary["tasks"]
    # the entry's reported_as name is where the run keeps it: read, and computed
    assert (tool["metric_key"], tool["primary_computed"]) == ("accuracy", True)
    assert tool["value"]["value"] == pytest.approx(1 / 3)
    assert qa["primary_computed"] is True  # qa's exact_match: its exact_match verdicts
    md = done.reports["markdown"].read_text(encoding="utf-8")
    assert "Plan problems" not in md and done.summary["problems"] == []
    row = next(line for line in md.splitlines() if line.startswith("| bfcl |"))
    assert "| bfcl_accuracy (the run's accuracy) |" in row
    # why each task is in the plan, one line each (a hand-written task says so)
    why = md.split("## Why these tasks", 1)[1].split("\n## ", 1)[0]
    assert ("| bfcl | prior: canonical for tool_use: the function-calling leaderboard; "
            "words: BM25 3.10, 1.00 of the best; model: no planner model (rules) |") in why
    assert "| qa | added by hand (the plan records no reason) |" in why
    assert "bfcl: the run has no" not in md
    # the one right entry is the best case, shown by its decoded call (it has no text); the
    # worst cases are the two wrong ones, never the right one
    assert [c["sample_id"] for c in tool["cases"]["best"]] == ["simple_python_0"]
    assert "simple_python_0" not in [c["sample_id"] for c in tool["cases"]["worst"]]
    best = next(line for line in md.splitlines() if line.startswith("| best | simple_python_0"))
    assert '| [{"calculate_triangle_area": {"base": 10, "height": 5}}] |' in best


def test_the_best_case_scores_above_the_worst_end_of_the_scale(
        fake_server: Any, tmp_path: Path) -> None:
    # every answer wrong: worst cases, and no "best" case with score 0
    server = fake_server(rules=[], default_reply="Answer: 99")
    done = run_plan(write_plan(tmp_path, [sums(tmp_path)], {"model": "local"}),
                    server.base_url, limit=4)
    cases = done.summary["tasks"][0]["cases"]
    assert [c["score"] for c in cases["worst"]] == [0.0, 0.0] and cases["best"] == []
    md = done.reports["markdown"].read_text(encoding="utf-8")
    assert "| worst |" in md and "| best |" not in md


def result(sample_id: str, metric: str, value: float) -> SampleResult:
    """A stored sample result scored ``value`` by ``metric``."""
    return SampleResult(run_id="r", sample_id=sample_id, epoch=0, input="q", target="t",
                        output="o", prediction="o", scores={metric: {"value": value}},
                        error=None, latency_s=0.1, input_tokens=1, output_tokens=1)


def test_the_best_cases_are_picked_by_their_real_score() -> None:
    results = [result(s, "exact_match", v) for s, v in (
        ("a", 0.0), ("b", 0.0), ("c", 0.0), ("d", 1.0), ("e", 0.0))]
    got = pick_cases(results, "exact_match", "exact_match", n=2)
    assert [c["sample_id"] for c in got["worst"]] == ["a", "b"]
    assert [c["sample_id"] for c in got["best"]] == ["d"]  # never c or e, which scored 0
    # a metric where lower is better: the best case is below the scale's worst end (1)
    scored = [result(s, "repetition_rate", v)
              for s, v in (("x", 1.0), ("y", 1.0), ("z", 1.0), ("w", 0.25))]
    got = pick_cases(scored, "repetition_rate", "repetition_rate", n=2,
                     facts=metric_facts(["repetition_rate"]))  # as the run stored them
    assert [c["sample_id"] for c in got["best"]] == ["w"]


def test_the_embedded_plan_names_the_model_the_run_used(
        fake_server: Any, tmp_path: Path) -> None:
    server = fake_server(rules=[], default_reply="Answer: 0")
    done = run_plan(write_plan(tmp_path, [sums(tmp_path)], {"model": "local"}),
                    server.base_url, limit=2)
    md = done.reports["markdown"].read_text(encoding="utf-8")
    html = done.reports["html"].read_text(encoding="utf-8")
    plan = md[md.index("## The plan"):md.index("## How the plan was made")]
    assert "model: openai/fake" in plan and "model: local" not in plan
    assert ("# as this run used it (changed from the plan file: model local -> "
            "openai/fake; limit -> 2 samples per task (--limit))") in plan
    shown = html[html.index("<h2>The plan</h2>"):]
    assert "model: openai/fake" in shown and "model: local" not in shown
    assert "| model under test | openai/fake |" in md


def test_a_primary_the_run_did_not_score_by_is_said_plainly(
        fake_server: Any, tmp_path: Path) -> None:
    task = sums(tmp_path)
    del task["options"]["scorer"]  # without one, the plan's primary names qa's scorer
    server = fake_server(rules=[], default_reply="Answer: 0")
    done = run_plan(write_plan(tmp_path, [task], {"model": "local"}), server.base_url, limit=2)
    (qa,) = done.summary["tasks"]
    assert (qa["primary_computed"], qa["scored_by"]) == (True, None)
    # a scorer option that contradicts the primary: the run scores by it, and says so
    task["options"]["scorer"] = "numeric"
    done = run_plan(write_plan(tmp_path, [task], {"model": "local"}), server.base_url, limit=2)
    (qa,) = done.summary["tasks"]
    assert (qa["primary_computed"], qa["scored_by"]) == (False, "numeric_match")
    md = done.reports["markdown"].read_text(encoding="utf-8")
    assert ("- **qa: the plan's primary metric is exact_match, but the run scored its samples "
            "by numeric_match; the value shown is numeric_match, not exact_match. "
            "Fix the plan: set the task's scorer option to exact_match, or make numeric_match "
            "its primary.**") in md
    row = next(line for line in md.splitlines() if line.startswith("| qa |"))
    assert "| exact_match: NOT what the run scored (shown: its numeric_match) |" in row
