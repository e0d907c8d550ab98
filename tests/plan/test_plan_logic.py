"""The planner's precedence rules in process: the request's words over the planner model,
the per-domain retrieval floor, and which sample limit a task gets.

In-process (no ``assay`` subprocess), so a mutation tool that switches a mutant on inside
pytest sees them fail (bench/mutation.py, area ``plan``). Expected values are worked out
from the request's words or from the unfloored ranking, never from the code's own output
for the same call.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from assay.errors import ConfigError, DatasetError
from assay.pipelines.plan import resume_plan, start_plan
from assay.plan.ask import Asker
from assay.plan.checkpoint import answer_schema, interpret
from assay.plan.children import match_children, step_key
from assay.plan.hub import _failure, resolve_hub, search_hub
from assay.plan.hub_layout import (
    _card_columns,
    _choose_config,
    _choose_split,
    _Config,
    _layout,
    _match,
    _value_type,
)
from assay.plan.intent import parse_rules
from assay.plan.intent_model import intent_schema, parse_with_model
from assay.plan.planner import PlanPaused, Settings, plan_request, resume_session
from assay.plan.report import radar_geometry
from assay.plan.retrieve import DOMAIN_FLOOR, retriever
from assay.plan.schema import Budget, Intent, Plan, PlanTask, is_plan_file, read_plan
from assay.plan.steps import resolve_task
from assay.plan.untrusted import check_models, check_task_ref, task_options
from assay.store.sqlite import Store
from assay.testing.fake_hub import FakeHub


def reply(**kw: Any) -> dict[str, Any]:
    return {"domains": [], "languages": [], "agent": False, "special_requests": [],
            "capabilities": [], "benchmarks": [], **kw}


# -- the request's words over the planner model -------------------------------------------

def test_an_agent_stated_in_words_is_kept_against_the_planner() -> None:
    # "tool calling" makes the rules say agent; the planner says text: the words win
    said = parse_with_model("tool calling", lambda _p, _s: reply(agent=False))
    assert said.intent.agent is True
    assert said.reasons["agent"] == "the request names tools or agents"
    # "text only" makes the rules say text; the planner says agent: the words win again
    text = parse_with_model("math word problems, text only", lambda _p, _s: reply(agent=True))
    assert text.intent.agent is False


@pytest.mark.parametrize("agent", [True, False])
def test_where_the_words_say_nothing_the_planner_judges_agent_or_text(agent: bool) -> None:
    got = parse_with_model("how good is it", lambda _p, _s: reply(agent=agent,
                                                                 domains=["math"]))
    assert parse_rules("how good is it").intent.agent is None
    assert got.intent.agent is agent and got.parser == "model+rules"
    assert got.reasons["agent"] == ("the planner judged it an agent" if agent
                                    else "the planner judged it text")
    assert got.intent.domains == ["math"] and got.domains_from == "planner"
    assert got.reasons["domains"] == "no domain word in the request; the planner chose math"


def test_a_named_benchmark_keeps_the_planners_domains_out() -> None:
    got = parse_with_model("run gsm8k", lambda _p, _s: reply(domains=["medical"]))
    assert got.intent.benchmarks == ["gsm8k"] and got.intent.domains == []
    assert "also suggested medical (not taken" in got.reasons["domains"]
    assert got.domains_from != "planner"


def test_the_planners_wishes_are_cleaned_and_never_repeated() -> None:
    long = "x" * 70
    got = parse_with_model("how good is it", lambda _p, _s: reply(
        special_requests=["  use   a judge ", "use a judge", "", long]))
    assert got.intent.special_requests == ["use a judge", "x" * 60]


def test_the_planners_quotas_and_limits_are_never_taken() -> None:
    # the schema has no budget; whatever extra keys a reply carries, the budget is the words'
    got = parse_with_model("at most 2 benchmarks, 30 samples each",
                           lambda _p, _s: reply(domains=["math"]))
    assert got.intent.budget == Budget(max_tasks=2, limit=30)
    assert got.intent.budget == parse_rules("at most 2 benchmarks, 30 samples each"
                                            ).intent.budget


# -- the per-domain retrieval floor -------------------------------------------------------

@pytest.mark.parametrize(("query", "domain", "dropped"), [("reasoning", "reasoning", 1),
                                                          ("tool use", "tool_use", 2),
                                                          ("write code", "code", 0)])
def test_a_domains_candidates_below_the_floor_of_its_best_are_left_out(
        query: str, domain: str, dropped: int) -> None:
    r = retriever()
    every = r.search(query, domain=domain, k=1000, floor=0.0)
    assert every, domain
    best = max(c.bm25 for c in every)
    # the floor keeps exactly those whose BM25 reaches 20% of the domain's best
    expected = sorted(c.name for c in every if c.bm25 >= DOMAIN_FLOOR * best)
    assert len(every) - len(expected) == dropped
    floored = r.search(query, domain=domain, k=1000)
    assert sorted(c.name for c in floored) == expected
    assert DOMAIN_FLOOR == 0.2
    for c in floored:
        assert c.score == pytest.approx(c.bm25 / best)
        assert f"in domain {domain}; BM25 {c.bm25:.2f} ({c.bm25 / best:.2f} of the best)" \
            in c.reason


def test_the_floor_is_only_for_domain_searches() -> None:
    r = retriever()
    whole = r.search("sentiment of movie reviews", k=1000)
    best = max(c.bm25 for c in whole)
    low = [c for c in whole if c.bm25 < DOMAIN_FLOOR * best]
    assert low, "the whole-request search keeps weak matches (no floor)"
    assert all(c.domain is None and not c.reason.startswith("in domain") for c in whole)
    assert [c.score for c in whole] == sorted((c.score for c in whole), reverse=True)
    assert len(r.search("sentiment of movie reviews", k=3)) == 3


def test_embeddings_mix_with_bm25_and_skip_the_floor() -> None:
    r = retriever()
    every = r.search("reasoning", domain="reasoning", k=1000, floor=0.0)
    best = max(c.bm25 for c in every)
    weakest = min(every, key=lambda c: c.bm25)
    assert weakest.bm25 < DOMAIN_FLOOR * best  # the floor would drop it
    mixed = r.search("reasoning", domain="reasoning", k=1000, embed={weakest.name: 0.9})
    got = next(c for c in mixed if c.name == weakest.name)
    assert got.score == pytest.approx((weakest.bm25 / best + 0.9) / 2)
    assert got.reason.endswith("; embedding cosine 0.90")


# -- which sample limit a task gets -------------------------------------------------------

def test_a_limit_stated_in_the_request_overrides_the_tasks_own() -> None:
    task = PlanTask(task="gsm8k", limit=500)
    why = resolve_task(task, Intent(budget=Budget(limit=25)))
    assert task.limit == 25 and why["limit"] == "25 samples, stated in the request"
    assert task.why["resolve.limit"] == why["limit"]
    zero = PlanTask(task="gsm8k", limit=500)
    resolve_task(zero, Intent(budget=Budget(limit=0)))
    assert zero.limit == 0  # zero is a stated limit too


def test_without_a_stated_limit_the_tasks_own_stays() -> None:
    task = PlanTask(task="gsm8k", limit=40)
    why = resolve_task(task, Intent())
    assert task.limit == 40 and "limit" not in why
    every = PlanTask(task="gsm8k")
    why = resolve_task(every, Intent())
    assert every.limit is None
    assert why["limit"] == "every sample (no limit stated; use --limit for a smoke run)"


def test_few_shot_is_added_only_when_asked_and_not_already_set() -> None:
    asked = Intent(special_requests=["few-shot prompting"])
    task = PlanTask(task="gsm8k")
    why = resolve_task(task, asked)
    assert task.options["fewshot"] == 5 and "few-shot" in why["fewshot"]
    mine = PlanTask(task="gsm8k", options={"fewshot": 2})
    resolve_task(mine, asked)
    assert mine.options["fewshot"] == 2
    plain = PlanTask(task="gsm8k")
    resolve_task(plain, Intent())
    assert "fewshot" not in plain.options


# -- a plan run, in process: which limit each child gets ------------------------------------

def qa_plan(folder: Path, limits: list[int | None]) -> Path:
    """A plan of qa tasks over local files of 5 questions, with these own limits, scored
    by exact_match (the plan's primary metric: the report calls out a task scored by
    another)."""
    tasks = []
    for i, limit in enumerate(limits):
        name = f"set{i}"
        (folder / f"{name}.jsonl").write_text("".join(
            json.dumps({"id": f"{name}-{j}", "question": f"{name} q{j}?", "answer": f"a{j}"}) + "\n"
            for j in range(5)))
        tasks.append({"task": "qa", "source": "builtin", "limit": limit,
                      "options": {"data": f"{name}.jsonl", "scorer": "exact_match"},
                      "metrics": [{"name": "exact_match", "role": "primary"}]})
    path = folder / "plan.yaml"
    path.write_text(json.dumps({"assay_plan": 1, "request": "small qa sets", "tasks": tasks}))
    return path


@pytest.mark.parametrize(("engine_limit", "expected"), [(None, [2, 5]), (3, [3, 3])])
def test_the_run_limit_overrides_each_tasks_own_and_a_task_without_one_runs_all(
        tmp_path: Path, fake_server: Any, engine_limit: int | None,
        expected: list[int]) -> None:
    server = fake_server(rules=[], default_reply=None)
    path = qa_plan(tmp_path, [2, None])
    lines: list[str] = []
    store = Store()
    try:
        done = start_plan(store, path, model="openai/fake",
                          engine={"base_url": server.base_url, "limit": engine_limit},
                          echo=lines.append)
        children = [store.get_run(c) for c in store.children(done.run_id)]
        assert [c["metrics"]["n_samples"] for c in children] == expected
        parent = store.get_run(done.run_id)
    finally:
        store.close()
    assert parent["status"] == "finished" and parent["kind"] == "plan"
    assert parent["dataset"]["plan_file"] == str(path.resolve())
    assert len(server.requests) == sum(expected)
    assert any(x.startswith("[1/2] qa") for x in lines)
    assert any(x.startswith("[2/2] qa") for x in lines)
    assert done.reports and all(p.is_file() for p in done.reports.values())
    summary = done.reports["json"].read_text(encoding="utf-8")
    assert summary.startswith('{\n  "') and json.loads(summary)["tasks"]
    assert [t["primary"] for t in done.summary["tasks"]] == ["exact_match", "exact_match"]
    if engine_limit is None:
        check_markdown(done.reports["markdown"].read_text(encoding="utf-8"), path)


def check_markdown(md: str, path: Path) -> None:
    """The plan report of two qa tasks (2 and 5 samples) that the echoing server never
    answers right: Wilson's 95% upper bound for 0 of n is z²/(n + z²), 0.658 and 0.434."""
    lines = md.splitlines()
    assert lines[0] == "# Evaluation plan report" and "> small qa sets" in lines
    for fact in ("| request | small qa sets |", "| model under test | openai/fake |",
                 "| judge | none |", "| planner | rules |", f"| plan file | {path.resolve()} |",
                 "| tasks | 2 planned, 2 finished, 0 not run |"):
        assert fact in lines, fact
    assert "- not on the chart (no capability tag): qa (task 1), qa (task 2)" in lines
    # the runs keep exact_match under its name: nothing stands for it
    assert not [line for line in lines if "stands for it" in line]
    assert "| capability | value (0-1) | tasks measured | not measured |" in lines
    i = lines.index("## Tasks")
    assert lines[i + 4] == ("| task | source | primary metric | value [95% CI] | errors | run "
                            "| status |")
    assert lines[i + 6].startswith("| qa (task 1) | builtin | exact_match "
                                   "| 0.000 [0.000, 0.658] (0/2) | 0/2 | ")
    assert lines[i + 7].startswith("| qa (task 2) | builtin | exact_match "
                                   "| 0.000 [0.000, 0.434] (0/5) | 0/5 | ")
    assert lines[i + 6].endswith(" | finished |")
    assert ("| task | samples | errors | no answer | wrong | partly right | right | unscored |"
            in lines)
    assert "| qa (task 1) | 2 | 0 | 0 | 2 | 0 | 0 | 0 |" in lines
    assert "| qa (task 2) | 5 | 0 | 0 | 5 | 0 | 0 | 0 |" in lines
    assert lines.count("| case | sample | score | input | output | target |") == 2
    assert "## Capabilities" in lines and "## Failure categories" in lines
    assert any(x.startswith("| worst | set0-0 | 0 | set0 q0? | set0 q0? ") and
               x.endswith(" | a0 |") for x in lines)
    assert "## Cases: qa (task 2)" in lines and "## The plan" in lines
    assert lines[lines.index("## The plan") + 1] == ""
    assert lines[-1] == "The plan has no trace (written by hand, or by an older assay)."
    assert md.endswith(".\n") and not md.endswith("\n\n")


def test_a_plan_with_no_tasks_or_a_bad_metric_is_refused_before_any_run(
        tmp_path: Path) -> None:
    path = tmp_path / "plan.yaml"
    path.write_text(json.dumps({"assay_plan": 1, "request": "r", "tasks": []}))
    store = Store()
    try:
        with pytest.raises(ConfigError, match="the plan has no tasks; add one"):
            start_plan(store, path, model="openai/fake", engine={})
        path = qa_plan(tmp_path, [None])
        plan = json.loads(path.read_text())
        plan["tasks"][0]["metrics"] = [{"name": "bleu", "role": "primary"}]
        path.write_text(json.dumps(plan))
        with pytest.raises(ConfigError, match=r"task 1 \(qa\).*metric bleu is not computed"):
            start_plan(store, path, model="openai/fake", engine={})
        assert store.list_runs() == []
    finally:
        store.close()


# -- the checkpoints' answers, in process ---------------------------------------------------

def test_a_checkpoint_dialogue_drops_adds_goes_back_and_writes_what_was_approved(
        tmp_path: Path) -> None:
    answers = iter([
        "back",                      # plan: nothing to go back to yet
        "drop nosuch", "add gsm9k",  # plan: refused, each with what to do
        "drop 1",                    # plan: gsm8k goes
        "add gsm8k", "add gsm8k",    # plan: back again, then already there
        "approve",                   # plan -> resolution
        "back",                      # resolution -> the plan checkpoint again
        "drop gsm8k", "approve",     # plan: gsm8k goes again
        "add gsm8k",                 # resolution: added and resolved (the stated limit)
        "approve", "approve"])       # resolution, metrics
    lines: list[str] = []
    store = Store()
    try:
        out = plan_request(store, "run gsm8k and bfcl, 10 samples each",
                           Settings(output=str(tmp_path / "p.yaml"), hub=False),
                           prompt=lambda _p: next(answers, None), echo=lines.append)
    finally:
        store.close()
    said = [x for x in lines if not x.startswith("checkpoint ")]
    assert said == [
        "nothing to go back to: this is the first checkpoint's first plan",
        "not in the plan: nosuch; the tasks are gsm8k, bfcl",
        "unknown task 'gsm9k' (closest: gsm8k); see 'assay list tasks'",
        "dropped gsm8k", "added gsm8k", "gsm8k is already in the plan",
        "dropped gsm8k", "added gsm8k"]
    assert [x.split("\n", 1)[0] for x in lines if x.startswith("checkpoint ")][-3:] == [
        "checkpoint 2/3: resolution", "checkpoint 2/3: resolution", "checkpoint 3/3: metrics"]
    plan = read_plan(out)
    assert [t.task for t in plan.tasks] == ["bfcl", "gsm8k"]
    assert [t.limit for t in plan.tasks] == [10, 10]
    assert plan.tasks[1].why["selected"] == "added by the human"
    assert plan.tasks[1].why["resolve.limit"] == "10 samples, stated in the request"
    assert [m.name for m in plan.tasks[1].metrics if m.role == "primary"] == ["numeric_match"]


def test_no_answer_pauses_the_session_and_resume_goes_on_from_there(tmp_path: Path) -> None:
    created: list[str] = []
    answers = iter(["drop bfcl", None])
    store = Store()
    try:
        with pytest.raises(PlanPaused, match="no answer at checkpoint 'plan'; nothing was "
                                             "approved. Continue with: assay plan --resume "):
            plan_request(store, "run gsm8k and bfcl", Settings(
                output=str(tmp_path / "p.yaml"), hub=False),
                prompt=lambda _p: next(answers), echo=lambda _x: None,
                on_created=created.append)
        assert not (tmp_path / "p.yaml").exists()
        lines: list[str] = []
        out = resume_session(store, created[0], prompt=lambda _p: "approve",
                             echo=lines.append)
    finally:
        store.close()
    # the drop made before the pause is kept; the session went on at the plan checkpoint
    assert [t.task for t in read_plan(out).tasks] == ["gsm8k"]
    assert lines[0].startswith("checkpoint 1/3: plan")


def editor(folder: Path, name: str, old: str, new: str) -> str:
    """An $EDITOR command that replaces ``old`` by ``new`` once in the file it is given."""
    script = folder / f"{name}.py"
    script.write_text("import sys, pathlib\np = pathlib.Path(sys.argv[1])\n"
                      f"p.write_text(p.read_text().replace({old!r}, {new!r}, 1))\n")
    return f"{sys.executable} {script}"


def plan_with_answers(tmp_path: Path, answers: list[str]) -> tuple[Path, list[str]]:
    lines: list[str] = []
    left = iter(answers)
    store = Store()
    try:
        out = plan_request(store, "run gsm8k and bfcl", Settings(
            output=str(tmp_path / "p.yaml"), hub=False), prompt=lambda _p: next(left, None),
            echo=lines.append)
    finally:
        store.close()
    return out, [x for x in lines if not x.startswith("checkpoint ")]


def test_an_edit_is_taken_only_when_the_edited_plan_is_valid(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.delenv("EDITOR", raising=False)
    out, said = plan_with_answers(tmp_path, ["edit", "approve", "approve", "approve"])
    assert said == ["no editor: set $EDITOR (or edit the plan file after it is written)"]
    monkeypatch.setenv("EDITOR", editor(tmp_path, "typo", "options: {}",
                                        "options: {fewshots: 3}"))
    out, said = plan_with_answers(tmp_path, ["edit", "approve", "approve", "approve"])
    assert len(said) == 1 and "fewshots" in said[0]
    assert said[0].endswith("; the plan is unchanged")
    assert read_plan(out).tasks[0].options == {}
    monkeypatch.setenv("EDITOR", editor(tmp_path, "good", "\n  limit: null", "\n  limit: 7"))
    out, said = plan_with_answers(tmp_path, ["approve", "edit", "approve", "approve"])
    assert said == ["plan edited: 2 tasks", "edited"]
    assert [t.limit for t in read_plan(out).tasks] == [7, None]
    monkeypatch.setenv("EDITOR", f"{sys.executable} -c 'raise SystemExit(3)'")
    out, said = plan_with_answers(tmp_path, ["edit", "approve", "approve", "approve"])
    assert len(said) == 1 and said[0].startswith("the editor failed (")
    assert said[0].endswith("); the plan is unchanged")


# -- the planner model's calls --------------------------------------------------------------

def test_the_planner_is_asked_once_for_json_and_every_call_is_kept(fake_server: Any) -> None:
    server = fake_server(script=['{"a": 1}', "not json", "[1, 2]"])
    asker = Asker("openai/planner", base_url=server.base_url, max_tokens=50)
    schema = {"type": "object"}
    try:
        assert asker("first?", schema) == {"a": 1}
        assert asker("second?", schema) is None
        assert asker("third?", schema) is None
    finally:
        asker.close()
    body = server.requests[0]
    assert body["messages"] == [{"role": "user", "content": "first?"}]
    assert body["temperature"] == 0 and body["max_tokens"] == 50
    assert body["response_format"]["json_schema"]["schema"] == schema
    assert [c["reply"] for c in asker.calls] == ['{"a": 1}', "not json", "[1, 2]"]
    assert [c["prompt"] for c in asker.calls] == ["first?", "second?", "third?"]
    assert all(c["model"] == "openai/planner" and c["seconds"] >= 0 for c in asker.calls)
    assert asker._subject is None and asker._loop is None


def test_a_planner_that_refuses_the_call_is_recorded_not_raised(fake_server: Any) -> None:
    server = fake_server(default_reply="{}", require_api_key="sk-right")
    asker = Asker("openai/planner", base_url=server.base_url)
    try:
        assert asker("q?", {"type": "object"}) is None
    finally:
        asker.close()
    (call,) = asker.calls
    assert call["reply"] is None and "401" in call["error"]


# -- what a plan file may name --------------------------------------------------------------

def test_option_paths_are_made_absolute_and_errors_name_the_nested_option(
        tmp_path: Path) -> None:
    (tmp_path / "d.jsonl").write_text("{}\n")
    got = task_options({"data": "d.jsonl", "split": "test", "n": 3,
                        "extra": {"files": ["d.jsonl", "plain words"]}}, tmp_path, "plan p")
    assert got == {"data": str(tmp_path / "d.jsonl"), "split": "test", "n": 3,
                   "extra": {"files": [str(tmp_path / "d.jsonl"), "plain words"]}}
    with pytest.raises(ConfigError) as e:
        task_options({"extra": {"agents": ["x", "python/evil:make"]}}, tmp_path, "plan p")
    assert str(e.value) == ("plan p: option extra.agents[1]: a plan file may not name a "
                            "Python agent ('python/evil:make' would import and run code); "
                            "give it on the command line")


@pytest.mark.parametrize("role", ["model", "judge", "planner"])
def test_a_plan_may_not_name_a_python_agent_in_any_role(role: str) -> None:
    models = Plan(request="r", models={role: "python/mod:Agent"}).models
    with pytest.raises(ConfigError) as e:
        check_models(models, model_given=False, where="p.yaml")
    assert str(e.value) == (f"p.yaml: models.{role}: a plan file may not name a Python agent "
                            "('python/mod:Agent' would import and run code); give it on the "
                            "command line with --model")
    if role == "model":  # the command line's --model replaces the plan's
        check_models(models, model_given=True, where="p.yaml")


def test_a_task_that_names_a_file_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"^p.yaml: task 'evil.py' names a file; a plan"):
        check_task_ref("evil.py", "p.yaml")
    check_task_ref("gsm8k", "p.yaml")


# -- the plan report's radar ------------------------------------------------------------------

def test_the_radar_puts_axis_i_clockwise_from_the_top() -> None:
    axes = [{"capability": "math", "value": 1.0}, {"capability": "code", "value": 0.5},
            {"capability": "a very long capability name", "value": None},
            {"capability": "tools", "value": 0.0}]
    g = radar_geometry(axes)
    # canvas 720 x 440: centre (360, 220), radius 220 - 50 = 170; four axes: up, right,
    # down, left
    assert (g["width"], g["height"], g["cx"], g["cy"]) == (720, 440, 360.0, 220.0)
    assert g["spokes"] == [(360.0, 50.0), (530.0, 220.0), (360.0, 390.0), (190.0, 220.0)]
    assert g["rings"][0] == "360.0,177.5 402.5,220.0 360.0,262.5 317.5,220.0"  # r = 42.5
    assert len(g["rings"]) == 4 and g["rings"][3] == " ".join(f"{x},{y}" for x, y in g["spokes"])
    # the unmeasured axis has no dot; the others sit at radius x value
    assert g["dots"] == [(360.0, 50.0), (445.0, 220.0), (360.0, 220.0)]
    assert g["polygon"] == "360.0,50.0 445.0,220.0 360.0,220.0"
    # labels 14 beyond the rim, 4 lower for the baseline, anchored away from the centre
    assert [(lab["x"], lab["y"], lab["anchor"]) for lab in g["labels"]] == [
        (360.0, 40.0, "middle"), (544.0, 224.0, "start"), (360.0, 408.0, "middle"),
        (176.0, 224.0, "end")]
    assert [lab["text"] for lab in g["labels"]] == [
        "math (1.00)", "code (0.50)", "a very long capabil… (not measured)", "tools (0.00)"]


# -- the schemas the planner model answers under ----------------------------------------------

def valid(schema: dict[str, Any], reply: Any) -> bool:
    return jsonschema.Draft202012Validator(schema).is_valid(reply)


def test_the_intent_schema_admits_only_known_words_and_at_most_three_wishes() -> None:
    schema = intent_schema()
    ok = reply(domains=["math", "code"], languages=["en", "zh"], agent=True,
               special_requests=["a", "b", "c"])
    assert valid(schema, ok)
    for bad in (reply(domains=["astrology"]), reply(languages=["klingon"]),
                reply(agent="yes"), reply(special_requests=["a", "b", "c", "d"]),
                reply(special_requests=["x" * 61]), reply(domains="math"),
                reply(capabilities=["astrology"]), reply(benchmarks=["not_in_the_catalogue"]),
                reply(benchmarks=["mmlu"] * 5),
                {**ok, "budget": {"limit": 3}},
                {k: v for k, v in ok.items() if k != "special_requests"},
                {k: v for k, v in ok.items() if k != "agent"}):
        assert not valid(schema, bad), bad


def test_the_answer_schema_and_the_models_reading_of_an_answer() -> None:
    schema = answer_schema()
    assert valid(schema, {"action": "drop", "targets": ["gsm8k"]})
    assert valid(schema, {"action": "unclear", "targets": []})
    for bad in ({"action": "delete", "targets": []}, {"action": "drop"},
                {"action": "drop", "targets": ["a"] * 5}, {"action": 1, "targets": []},
                {"action": "drop", "targets": ["x" * 61]},
                {"action": "drop", "targets": [], "why": "x"}):
        assert not valid(schema, bad), bad
    asked: list[tuple[str, Any]] = []

    def ask(prompt: str, schema: Any) -> Any:
        asked.append((prompt, schema))
        return {"action": "drop", "targets": [" gsm8k "]}

    action, calls = interpret("get rid of the gsm8k one", ask=ask, tasks=["gsm8k", "bfcl"])
    assert action is not None and action.targets == ["gsm8k"] and action.by == "model"
    prompt, given = asked[0]
    assert given == schema
    assert prompt.startswith("A user reviews an evaluation plan whose tasks are: gsm8k, bfcl. "
                             "Their answer: 'get rid of the gsm8k one'\nWhich action does ")
    assert prompt.endswith("back (undo the last step), or unclear.\nJSON:")
    assert calls == [{"step": "checkpoint", "prompt": prompt, "accepted": True,
                      "reply": {"action": "drop", "targets": [" gsm8k "]}}]
    # the rules read "approve" themselves: the model is not asked
    action, calls = interpret("approve", ask=ask, tasks=["gsm8k"])
    assert action is not None and action.action == "approve" and calls == [] and len(asked) == 1


# -- reading a Hub repository's layout --------------------------------------------------------

FILES = ["README.md", "data/train-00000-of-00001.parquet", "data/test-00000.parquet",
         "data/.hidden.jsonl", "extra/notes.txt", "sub/dir/deep.jsonl.gz",
         "en/validation.jsonl", "en/train.jsonl", "fr/test.csv"]


@pytest.mark.parametrize(("patterns", "expected"), [
    ("data/*.parquet", ["data/train-00000-of-00001.parquet", "data/test-00000.parquet"]),
    ("./data/test-*", ["data/test-00000.parquet"]),
    ("**/*.jsonl.gz", ["sub/dir/deep.jsonl.gz"]),
    ("sub/**", ["sub/dir/deep.jsonl.gz"]),
    ("*.jsonl", []),                       # * stays within one folder
    (["en/t?ain.jsonl", "fr/*"], ["en/train.jsonl", "fr/test.csv"]),
    ("data/.hidden.jsonl", []),            # a hidden file is never data
    ("extra/*", []),                       # nor a .txt
])
def test_data_files_patterns_are_globs_within_or_across_folders(patterns: Any,
                                                                expected: list[str]) -> None:
    assert _match(patterns, FILES) == expected


def test_splits_come_from_the_cards_configs_else_its_info_else_the_file_names() -> None:
    card = {"configs": [
        {"config_name": "a", "data_files": [{"split": "test", "path": "data/test-*"}]},
        {"config_name": "b", "data_files": {"train": "en/train.jsonl",
                                            "validation": ["en/validation.jsonl"]},
         "default": True},
        {"config_name": "c", "data_files": "fr/*"},
        {"config_name": "d", "data_dir": "en/"}, "not a config"]}
    configs, source = _layout(card, FILES)
    assert source == "the card's configs"
    assert [(c.name, c.splits, c.default) for c in configs] == [
        ("a", {"test": ["data/test-00000.parquet"]}, False),
        ("b", {"train": ["en/train.jsonl"], "validation": ["en/validation.jsonl"]}, True),
        ("c", {"train": ["fr/test.csv"]}, False),
        ("d", {"train": ["en/train.jsonl"], "validation": ["en/validation.jsonl"]}, False)]
    chosen, why = _choose_config(configs, source)
    assert chosen.name == "b" and why == "'b' is the default config (available: a, b, c, d)"
    info = {"dataset_info": [
        {"config_name": "en", "splits": [{"name": "train"}, {"name": "validation"}]},
        {"config_name": "fr", "splits": ["test"]}]}
    configs, source = _layout(info, FILES)
    assert source == "the card's dataset_info"
    assert [(c.name, c.splits) for c in configs] == [
        ("en", {"train": ["en/train.jsonl"], "validation": ["en/validation.jsonl"]}),
        ("fr", {"test": ["fr/test.csv"]})]
    assert _choose_config(configs, source)[1] == \
        "no default config: took the first, 'en' (available: en, fr)"
    configs, source = _layout({}, ["train.jsonl", "misc.jsonl", "dev.jsonl"])
    assert source == "the file names" and configs[0].name is None
    assert configs[0].splits == {"train": ["train.jsonl"], "validation": ["dev.jsonl"]}
    assert _choose_config(configs, source)[1] == \
        "no configs in the card: one default config, splits from the file names"
    only = _layout({}, ["a.jsonl", "b.jsonl"])[0]
    assert only[0].splits == {"train": ["a.jsonl", "b.jsonl"]}  # no split named: train
    assert _layout({}, ["README.md"])[0] == []


@pytest.mark.parametrize(("splits", "chosen", "why"), [
    ({"train": ["t"], "test": ["x"], "validation": ["v"]}, "test",
     "'test' preferred (test > validation > train; available: train, test, validation)"),
    ({"train": ["t"], "validation": ["v"]}, "validation",
     "'validation' preferred (test > validation > train; available: train, validation)"),
    ({"extra": ["e"], "more": ["m"], "test": []}, "extra",
     "no test, validation or train split: took the first, 'extra' (available: extra, more)"),
    ({"test": []}, "", "no split has data files"),
])
def test_the_split_taken_is_test_then_validation_then_train(splits: dict[str, list[str]],
                                                            chosen: str, why: str) -> None:
    assert _choose_split(_Config("c", splits)) == (chosen, why)


def test_column_types_from_the_card_and_from_a_row() -> None:
    card = {"dataset_info": {"features": [
        {"name": "question", "dtype": "string"},
        {"name": "choices", "sequence": "string"},
        {"name": "label", "dtype": {"class_label": {"names": ["a", "b"]}}},
        {"name": "meta", "struct": [{"name": "tags", "list": "string"}]},
        {"name": "flat", "struct": [{"name": "x", "dtype": "int64"}]},
        {"name": "odd"}]}}
    assert _card_columns(card, None) == {
        "question": ("string", False), "choices": ("list", True),
        "label": ("class_label", False), "meta": ("struct", True),
        "flat": ("struct", False), "odd": ("unknown", False)}
    mapped = {"dataset_info": [{"config_name": "x", "features": {"q": "string",
                                                                 "opts": {"list": "string"}}}]}
    assert _card_columns(mapped, "x") == {"q": ("string", False), "opts": ("list", True)}
    assert [_value_type(v) for v in (["a"], {"k": [1]}, {"k": 1}, 3, None, "s")] == [
        ("list", True), ("struct", True), ("struct", False), ("int", False),
        ("null", False), ("str", False)]


# -- the Hub's failures, one line each ----------------------------------------------------

def test_a_gated_or_refused_hub_call_says_what_to_do(hub: FakeHub) -> None:
    hub.fail["info"] = 403
    with pytest.raises(DatasetError) as e:
        resolve_hub("someone/math-qa")
    assert str(e.value) == ("dataset someone/math-qa is gated: request access at "
                            "https://huggingface.co/datasets/someone/math-qa, then set HF_TOKEN")
    hub.fail.clear()
    hub.fail["search"] = 401
    with pytest.raises(DatasetError) as e:
        search_hub("math", limit=3)
    assert str(e.value).startswith("the Hugging Face Hub refused to ")
    assert str(e.value).endswith(" (HTTP 401); check HF_TOKEN")


def test_an_unexpected_hub_failure_names_its_kind() -> None:
    err = _failure(ValueError("boom"), "search datasets")
    assert str(err) == ("could not search datasets on the Hugging Face Hub (ValueError); "
                        "try again later")


# -- resuming a plan run, its children, and what counts as a plan file ---------------------

def test_a_plan_run_resumes_only_with_the_plan_it_started_with(tmp_path: Path,
                                                               fake_server: Any) -> None:
    server = fake_server(rules=[], default_reply=None)
    path = qa_plan(tmp_path, [2, 1])
    store = Store()
    try:
        done = start_plan(store, path, model="openai/fake",
                          engine={"base_url": server.base_url}, echo=lambda _x: None)
        plan = read_plan(path)
        children = match_children(store, done.run_id, plan.model_dump()["tasks"])
        assert [c["id"] for c in children] == store.children(done.run_id)
        assert [step_key(i) for i in range(2)] == ["task 1", "task 2"]
        again = resume_plan(store, done.run_id, path=path, echo=lambda _x: None)
        assert again.run_id == done.run_id and again.children == done.children
        assert len(server.requests) == 3  # nothing ran twice
        text = json.loads(path.read_text())
        text["tasks"][0]["limit"] = 1
        path.write_text(json.dumps(text))
        with pytest.raises(ConfigError) as e:
            resume_plan(store, done.run_id, path=path)
        assert str(e.value) == (f"{path} has changed since plan run {done.run_id} started; "
                                "resume runs the plan it started with, so start a new run "
                                "for the edited plan")
    finally:
        store.close()


@pytest.mark.parametrize(("name", "text", "expected"), [
    ("p.yaml", "assay_plan: 1\ntasks: []\n", True),
    ("p.yml", "assay_plan: 1\n", True),
    ("p.yaml", "tasks: []\n", False),
    ("p.yaml", "assay_plan: 1\nkey: [unclosed\n", True),  # broken, but meant as a plan
    ("p.yaml", "a: [unclosed\n", False),
    ("p.json", "assay_plan: 1\n", False),
])
def test_a_plan_file_is_yaml_with_the_assay_plan_key(tmp_path: Path, name: str, text: str,
                                                     expected: bool) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    assert is_plan_file(path) is expected
    assert is_plan_file(tmp_path / "missing.yaml") is False


def test_a_hub_dataset_added_at_a_checkpoint_is_resolved_later_or_dropped_with_a_note(
        tmp_path: Path) -> None:
    answers = iter(["add hub:someone/data", "add hub:someone/data", "drop someone/data",
                    "approve", "approve", "approve"])
    lines: list[str] = []
    store = Store()
    try:
        out = plan_request(store, "run gsm8k", Settings(output=str(tmp_path / "p.yaml"),
                                                        hub=False),
                           prompt=lambda _p: next(answers, None), echo=lines.append)
    finally:
        store.close()
    assert [x for x in lines if not x.startswith("checkpoint ")] == [
        "added hub:someone/data", "added hub:someone/data", "dropped hub:someone/data"]
    plan = read_plan(out)
    assert [t.task for t in plan.tasks] == ["gsm8k"]
    # the one left could not be read (the Hub is off in tests): dropped, and the plan says why
    assert plan.notes == ["hub:someone/data dropped: the Hugging Face Hub is switched off "
                          "(HF_HUB_OFFLINE is set), so assay cannot read dataset someone/data; "
                          "unset HF_HUB_OFFLINE to use the Hub, or plan from the gallery only "
                          "(assay list tasks)"]


def test_each_checkpoint_answer_is_traced_and_the_last_view_shows_limits_and_metrics(
        tmp_path: Path) -> None:
    answers = iter(["blah", "drop 1", "approve", "approve", "approve"])
    lines: list[str] = []
    store = Store()
    try:
        out = plan_request(store, "run gsm8k and bfcl, 10 samples each", Settings(
            output=str(tmp_path / "p.yaml"), hub=False), prompt=lambda _p: next(answers),
            echo=lines.append)
    finally:
        store.close()
    assert lines[-1].splitlines()[-2:] == [
        "  1. bfcl (gallery) limit=10 options={} primary=bfcl_accuracy",
        "     why: named in the request (always honoured)"]
    steps = [(t["checkpoint"], a["answer"], a["action"], a["result"])
             for t in read_plan(out).trace if t["step"] == "checkpoint" for a in t["answers"]]
    approve = {"action": "approve", "targets": [], "by": "rules"}
    assert steps == [
        ("plan", "blah", None, "not understood; asked again"),
        ("plan", "drop 1", {"action": "drop", "targets": ["1"], "by": "rules"},
         "dropped gsm8k"),
        ("plan", "approve", approve, "approved"), ("resolution", "approve", approve, "approved"),
        ("metrics", "approve", approve, "approved")]


def test_yes_approves_every_checkpoint_in_the_trace(tmp_path: Path) -> None:
    store = Store()
    try:
        out = plan_request(store, "run gsm8k", Settings(output=str(tmp_path / "p.yaml"),
                                                        hub=False),
                           prompt=lambda _p: None, echo=lambda _x: None, yes=True)
    finally:
        store.close()
    steps = [(t["checkpoint"], t["answers"]) for t in read_plan(out).trace
             if t["step"] == "checkpoint"]
    assert steps == [(c, [{"answer": "--yes", "action": "approve"}])
                     for c in ("plan", "resolution", "metrics")]
