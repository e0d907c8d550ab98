"""The planner with the Hub on (a fake Hub): gaps filled from the Hub as unverified generic
QA, quotas of 0 honoured exactly (no request at all), failures noted, plans that run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from assay.pipelines.plan import start_plan
from assay.plan.planner import Settings, plan_request
from assay.plan.schema import read_plan
from assay.plan.steps import available
from assay.store.sqlite import Store
from assay.testing.fake_hub import FakeHub, jsonl_bytes
from tests.patching import patch_everywhere

SHA = "0123456789abcdef0123456789abcdef01234567"
ROWS = [{"question": f"小明有{i}个苹果, 又买了2个, 一共几个?", "answer": str(i + 2)}
        for i in range(6)]


def add_chinese_math(hub: FakeHub) -> None:
    hub.add_dataset("org/chinese-math-problems", files={"test.jsonl": jsonl_bytes(ROWS),
                                                        "train.jsonl": jsonl_bytes(ROWS[:2])},
                    sha=SHA, downloads=5000, tags=["math", "chinese"],
                    description="Chinese grade-school math word problems")


def make(request: str, folder: Path, **settings: Any) -> Any:
    store = Store()
    try:
        path = plan_request(store, request, Settings(output=str(folder / "p.yaml"), **settings),
                            prompt=lambda _t: None, echo=lambda _t: None, yes=True)
    finally:
        store.close()
    return read_plan(path)


def test_a_language_gap_is_filled_from_the_hub_as_unverified_qa_that_runs(
        hub: FakeHub, tmp_path: Path, fake_server: Any, workspace: Path) -> None:
    add_chinese_math(hub)
    plan = make("how good is my model at grade-school math, in Chinese too?", tmp_path)
    labels = [t.label for t in plan.tasks]
    assert labels == ["gsm8k", "hub:org/chinese-math-problems"]
    task = plan.tasks[1]
    assert task.source == "hub" and task.task == "qa"
    assert task.hub.split == "test" and task.hub.revision == SHA
    assert task.options == {"question_key": "question", "answer_key": "answer",
                            "scorer": "numeric"}
    assert task.primary == "numeric_match"
    assert "unverified" in task.why["selected"]
    assert any("no Chinese benchmark" in n for n in plan.notes)
    assert hub.requests_of("search"), "the Hub was searched"
    select = next(s for s in plan.trace if s["step"] == "select")
    found = select["hub"]["found"]
    assert found[0]["id"] == "org/chinese-math-problems" and found[0]["verified"] is False
    assert 0 < found[0]["score"] <= 1 and found[0]["reason"]

    # the Hub task runs as qa on the fetched split, next to the gallery task
    server = fake_server(rules=[], default_reply="Answer: 3")
    plan.tasks = plan.tasks[1:]
    only_hub = tmp_path / "hub_only.yaml"
    from assay.plan.schema import write_plan

    write_plan(plan, only_hub)
    store = Store()
    try:
        done = start_plan(store, only_hub, model="openai/fake",
                          engine={"base_url": server.base_url, "limit": None},
                          echo=lambda _t: None)
        child = store.get_run(done.children[0])
    finally:
        store.close()
    assert child["task"] == "qa" and child["metrics"]["n_samples"] == 6
    # "Answer: 3" is right for the row whose answer is 3 (i = 1) only
    assert child["spec"]["task_options"]["scorer"] == "numeric_match"
    assert child["metrics"]["numeric_match"]["successes"] == 1
    row = next(t for t in done.summary["tasks"] if t["label"].startswith("hub:"))
    assert row["verified"] is False
    assert "hub (unverified)" in done.reports["markdown"].read_text()


def test_a_hub_quota_of_zero_sends_no_request(hub: FakeHub, tmp_path: Path) -> None:
    add_chinese_math(hub)
    plan = make("grade-school math in Chinese too, 0 datasets from the hub", tmp_path)
    assert [t.label for t in plan.tasks] == ["gsm8k"]
    assert plan.intent.budget.hub == 0
    assert hub.requests == [], "a quota of 0 must not even search"


def test_a_gallery_quota_of_zero_takes_no_gallery_task(hub: FakeHub, tmp_path: Path) -> None:
    plan = make("reading comprehension and commonsense, 0 from the gallery, 0 from the hub",
                tmp_path)
    assert plan.tasks == [] and hub.requests == []
    named = make("run BoolQ, plus reading comprehension, 0 from the gallery, no hub", tmp_path)
    assert [t.task for t in named.tasks] == ["boolq"]  # named benchmarks are always honoured


def test_without_a_stated_quota_the_hub_is_only_asked_when_the_gallery_has_a_gap(
        hub: FakeHub, tmp_path: Path) -> None:
    add_chinese_math(hub)
    plan = make("grade-school math", tmp_path)
    assert [t.label for t in plan.tasks] == ["gsm8k"]
    assert hub.requests == []


def test_a_hub_that_fails_is_a_note_and_the_gallery_plan_stands(hub: FakeHub,
                                                                tmp_path: Path) -> None:
    hub.fail["search"] = 500
    plan = make("grade-school math in Chinese too", tmp_path)
    assert [t.label for t in plan.tasks] == ["gsm8k"]
    assert any(n.startswith("the Hub search failed:") for n in plan.notes)


def test_offline_the_hub_is_never_asked(tmp_path: Path) -> None:
    # the autouse workspace fixture sets HF_HUB_OFFLINE=1
    plan = make("grade-school math in Chinese too", tmp_path)
    select = next(s for s in plan.trace if s["step"] == "select")
    assert select["hub"]["quota"] == 0 and "offline" in select["reasons"]["hub"]
    assert any("no Chinese benchmark" in n for n in plan.notes)


def test_a_named_benchmark_whose_data_is_not_here_is_kept_and_says_so(tmp_path: Path) -> None:
    plan = make("run GAIA and GSM8K", tmp_path)
    assert [t.task for t in plan.tasks] == ["gaia", "gsm8k"]
    assert plan.tasks[0].why["resolve.available"].startswith("NOT AVAILABLE: GAIA is not in "
                                                             "the local Hugging Face cache")
    # retrieved (not named), GAIA is passed over for a task that can run here
    agent = make("general assistant tasks with web browsing", tmp_path)
    assert "gaia" not in [t.task for t in agent.tasks] and agent.tasks
    select = next(s for s in agent.trace if s["step"] == "select")
    assert any(x["name"] == "gaia" for x in select["skipped"])


def test_a_hub_dataset_that_cannot_be_resolved_is_dropped_with_a_note(
        hub: FakeHub, tmp_path: Path) -> None:
    add_chinese_math(hub)
    hub.fail["info"] = 500
    plan = make("grade-school math in Chinese too", tmp_path)
    assert [t.label for t in plan.tasks] == ["gsm8k"]
    assert any(n.startswith("hub:org/chinese-math-problems dropped:") and "500" in n
               for n in plan.notes)


def test_code_benchmarks_need_the_sandbox(monkeypatch: Any, tmp_path: Path) -> None:
    from assay import sandbox

    patch_everywhere(monkeypatch, sandbox, "bwrap_problem",
                        lambda: "bwrap is not installed (apt-get install bubblewrap)")
    plan = make("Compare on HumanEval, and Python coding in general", tmp_path)
    humaneval = next(t for t in plan.tasks if t.task == "humaneval")  # named: kept, flagged
    assert humaneval.why["resolve.available"] == (
        "NOT AVAILABLE: humaneval runs model-written code only inside the bubblewrap "
        "sandbox, and bwrap is not installed (apt-get install bubblewrap)")
    assert "mbpp" not in [t.task for t in plan.tasks]  # retrieved: passed over
    with sandbox.allow_weak_isolation():  # --allow-weak-sandbox: planned, and said so
        assert available("mbpp") == (True, "data from PyPI; tests run with weak isolation, "
                                     "as bwrap is not installed (apt-get install bubblewrap)")


def test_a_named_benchmark_the_gallery_lacks_is_looked_for_on_the_hub(
        hub: FakeHub, tmp_path: Path) -> None:
    rows = [{"question": f"Is claim {i} true?", "answer": "no"} for i in range(4)]
    hub.add_dataset("org/truthfulqa-gen", files={"validation.jsonl": jsonl_bytes(rows)},
                    sha=SHA, downloads=900, tags=["truthfulness"])
    plan = make("evaluate on TruthfulQA and GSM8K", tmp_path)
    assert [t.label for t in plan.tasks] == ["gsm8k", "hub:org/truthfulqa-gen"]
    assert plan.tasks[1].hub.split == "validation"
    assert plan.tasks[1].primary == "normalized_match"  # short text answers
    searched = [r.query.get("search") for r in hub.requests_of("search")]
    assert searched and searched[0] == ["TruthfulQA"]
    select = next(s for s in plan.trace if s["step"] == "select")
    assert "a named benchmark it does not hold" in select["reasons"]["hub"]
