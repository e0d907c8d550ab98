"""Plans that know the field (issue 25): every catalogue entry declares what it measures and
how standard it is; ``assay list tasks --capability X`` lists them canonical first; a
request that names a capability gets the field's canonical set for it, trimmed to a stated
budget with a note; the plan records the prior beside the BM25 score and says, per task,
why it was chosen; a planner model may suggest only catalogue names.

Plans are made by the real planner (offline, no Hub), the CLI runs in a subprocess.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from assay.plan.intent import parse_rules
from assay.plan.intent_model import parse_with_model
from assay.plan.planner import Settings, plan_request
from assay.plan.report import chosen_line
from assay.plan.schema import read_plan
from assay.sandbox import allow_weak_isolation
from assay.store.sqlite import Store
from assay.tasks.capabilities import CAPABILITIES, STANDINGS, Measure, capabilities_in
from assay.tasks.gallery.entry import GalleryEntry, all_entries
from assay.tasks.registry import catalogue, plannable_tasks
from tests.plan import quality

REPO = Path(__file__).resolve().parents[2]


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "assay", *args], capture_output=True,
                          text=True, timeout=120, cwd=REPO,
                          env=dict(os.environ, COLUMNS="200", NO_COLOR="1"))


def plan(request: str, folder: Path, **settings: Any) -> Any:
    """The plan made as the field was measured: code tasks run (quality.without_bwrap)."""
    store = Store()
    try:
        with allow_weak_isolation(quality.without_bwrap()):
            path = plan_request(store, request, Settings(model="openai/fake", hub=False,
                                                         output=str(folder / "plan.yaml"),
                                                         **settings),
                                prompt=lambda _t: None, echo=lambda _t: None, yes=True)
    finally:
        store.close()
    return read_plan(path)


# -- the declarations ---------------------------------------------------------------------
def test_every_catalogue_entry_declares_what_it_measures_with_a_reason() -> None:
    entries = all_entries()
    assert len(entries) >= 47
    for e in entries.values():
        assert e.measures, e.name
        for m in e.measures:
            assert m.capability in CAPABILITIES and m.standing in STANDINGS
            assert 15 <= len(m.why) and "\n" not in m.why, (e.name, m.why)
    for name, listed in plannable_tasks().items():  # converse: a built-in a plan may hold
        assert listed.info.measures, name
    # every capability has a task but those said to have none yet; data quality and your
    # own data are measured by built-ins (the datagen pipeline, qa); the field's two code
    # benchmarks are canonical
    measured = {m.capability for e in entries.values() for m in e.measures}
    measured |= {m.capability for listed in catalogue().values() for m in listed.info.measures}
    assert set(CAPABILITIES) - measured == {
        c for c, cap in CAPABILITIES.items() if "no gallery task yet" in cap.describe} == {
        "safety", "truthfulness", "hard_reasoning", "long_context", "multilingual"}
    canon = {e.name for e in entries.values() for m in e.measures
             if m.capability == "code" and m.standing == "canonical"}
    assert canon == {"humaneval", "mbpp"}


def test_a_declaration_with_an_unknown_capability_or_no_reason_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown capability 'codee'; choose from knowledge"):
        Measure(capability="codee", standing="canonical", why="a reason long enough")
    with pytest.raises(ValueError, match="say in one line why"):
        Measure(capability="code", standing="canonical", why="short")
    base = all_entries()["gsm8k"].model_dump(exclude_none=True)
    with pytest.raises(ValueError, match="a catalogue entry gives measures"):
        GalleryEntry.model_validate({**base, "measures": []}, context={"catalogue": True})


def test_list_tasks_by_capability_lists_the_canonical_ones_first() -> None:
    p = cli("list", "tasks", "--capability", "code")
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0].startswith("code: writing programs")
    names = [line.split()[0] for line in lines[1:]]
    standings = [line.split()[1] for line in lines[1:]]
    assert names[:2] == ["humaneval", "mbpp"] and "basic_skills_coding" in names
    assert standings == sorted(standings, key=STANDINGS.index)
    p = cli("list", "tasks", "--capability", "agent", "--json")
    rows = json.loads(p.stdout)
    assert [r["standing"] for r in rows] == sorted((r["standing"] for r in rows),
                                                   key=STANDINGS.index)
    assert {"name": "tau2_bench", "standing": "canonical"}.items() <= next(
        r for r in rows if r["name"] == "tau2_bench").items()
    assert next(r for r in rows if r["name"] == "tau2_bench")["status"] == "ready"
    p = cli("list", "tasks", "--capability", "nlii")
    assert p.returncode != 0
    assert "unknown capability 'nlii' (did you mean 'nli'?)" in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1


# -- the planner --------------------------------------------------------------------------
def test_the_vocabulary_reads_capabilities_not_benchmark_names() -> None:
    assert capabilities_in("does one sentence follow from another? entailment")[0] == ["nli"]
    assert capabilities_in("写代码的能力")[0] == ["code"]
    assert capabilities_in("in the context of our product")[0] == []


def test_a_capability_gets_the_fields_canonical_set_with_the_prior_recorded(
        tmp_path: Path) -> None:
    made = plan("how good is it at writing Python programs", tmp_path)
    assert made.intent.capabilities == ["code"]
    assert {t.task for t in made.tasks} == {"humaneval", "mbpp"}  # not the niche quiz set
    select = next(s for s in made.trace if s["step"] == "select")
    reason = next(c["reason"] for c in select["candidates"] if c["name"] == "humaneval")
    assert reason.startswith("prior canonical for code (") and "BM25 " in reason
    for t in made.tasks:
        assert t.capabilities == ["code"]
        line = chosen_line(t.model_dump())
        assert line.startswith("prior: canonical for code: ") and "; words: BM25 " in line
        assert line.endswith("; model: no planner model (rules)")


def test_a_stated_limit_or_a_cheap_run_trims_the_canonical_set_and_says_so(
        tmp_path: Path) -> None:
    made = plan("python code generation, at most 1 benchmark", tmp_path / "a")
    assert len(made.tasks) == 1
    assert any(n.startswith("left out for the plan's limit of 1 task: ") and "(code)" in n
               for n in made.notes), made.notes
    cheap = plan("a cheap check of commonsense and code generation", tmp_path / "b")
    caps = [t.capabilities[0] for t in cheap.tasks]
    assert sorted(caps) == ["code", "commonsense"]  # one each
    assert any(n.startswith("a cheap run: code gets ") for n in cheap.notes), cheap.notes


def test_a_capability_no_task_measures_is_said(tmp_path: Path) -> None:
    made = plan("check how often it refuses harmful requests (safety)", tmp_path)
    assert "safety" in made.intent.capabilities
    assert any(n.startswith("no catalogue task measures safety") for n in made.notes)


def test_a_planner_models_suggestions_are_catalogue_names_the_prior_ranks() -> None:
    reply = {"domains": [], "languages": [], "agent": False, "special_requests": [],
             "capabilities": [], "benchmarks": ["humaneval", "not_a_benchmark"]}
    said = parse_with_model("how would my model do for our developers", lambda _p, _s: reply)
    assert said.suggested == ["humaneval"]  # an unknown name is dropped
    assert said.intent.benchmarks == []  # a suggestion is never a named benchmark
    assert said.intent.capabilities == ["code"]  # it brings the capability it measures
    # the request's own words win over the model's capabilities
    worded = parse_with_model("python code generation", lambda _p, _s: {
        **reply, "capabilities": ["medical"]})
    assert worded.intent.capabilities == ["code"]
    assert "not taken: the request names its own" in worded.reasons["capabilities"]


def test_an_older_plan_without_reasons_still_gets_a_line(tmp_path: Path) -> None:
    made = plan("reading comprehension", tmp_path)
    assert made.tasks and all(chosen_line(t.model_dump()).startswith("prior: ")
                          for t in made.tasks)
    bare = made.tasks[0].model_copy(update={"why": {}})
    assert chosen_line(bare.model_dump()) == "added by hand (the plan records no reason)"


def test_phrases_are_read_leftmost_longest_and_english_inside_chinese_counts() -> None:
    # 常识推理 is commonsense; its 推理 is not also a reasoning request
    assert capabilities_in("评估模型的阅读理解和常识推理能力")[0] == ["reading", "commonsense"]
    assert capabilities_in("数学推理")[0] == ["math"]
    assert capabilities_in("评测agent能力")[0] == ["agent"]  # ASCII word edges, not \w
    assert capabilities_in("用大语言模型做评测")[0] == []  # 语言模型 is not language modelling


@pytest.mark.parametrize(("request_text", "budget"), [
    ("最多4个基准", {"max_tasks": 4}),
    ("总共不超过五个任务，不要从Hugging Face下载数据", {"max_tasks": 5, "hub": 0}),
    ("每个数据集跑100条", {"limit": 100}),
    ("每个基准二十道题", {"limit": 20}),
    ("三个任务以内", {"max_tasks": 3}),
])
def test_a_budget_stated_in_chinese_is_taken(request_text: str,
                                             budget: dict[str, int]) -> None:
    got = parse_rules(request_text).intent.budget.model_dump(exclude_none=True)
    assert got == budget


def test_a_benchmark_named_as_a_style_is_named() -> None:
    assert parse_rules("Jeopardy-style trivia and MMLU-like exams").intent.benchmarks == [
        "jeopardy", "mmlu"]
    assert parse_rules("math-style puzzles, in jeopardy of failing").intent.benchmarks == []


def test_a_request_the_planner_cannot_read_gets_a_plan_that_says_so(tmp_path: Path) -> None:
    made = plan("please check it", tmp_path)
    assert not made.tasks
    assert any("names no benchmark and no capability the planner knows" in n
               and "assay list tasks --capability" in n for n in made.notes), made.notes
