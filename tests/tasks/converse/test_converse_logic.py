"""The conversation logic in process: the judge's majority, the loop's stop rules, the
metrics over stored results, and eval_code's hit rule.

These run in the pytest process (no ``assay`` subprocess), so a mutation tool that
switches a mutant on inside it can see them fail (bench/mutation.py, area ``converse``).
Model calls go over real HTTP to the fake OpenAI-compatible server; expected values are
worked out by hand in each test.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from convfakes import WEAK, ConverseServer, marker, never_stop, stop_after, write_case

import assay
from assay.core.types import SampleResult
from assay.errors import ConfigError
from assay.models.openai_model import OpenAIModel
from assay.store.sqlite import Store
from assay.tasks.converse.cases import Case, load_case, load_cases, unmet_dependencies
from assay.tasks.converse.evalcode import run_eval_code
from assay.tasks.converse.examiner import examiner_messages, parse_examiner
from assay.tasks.converse.judge import majority, parse_verdict, transcript_text
from assay.tasks.converse.loop import (
    MAX_STEPS,
    READ_LIMIT,
    SNAPSHOT_TEXT,
    WRITE_LIMIT,
    Workspace,
    converse,
)
from assay.tasks.converse.metrics import converse_metrics
from assay.tasks.converse.report import converse_report
from assay.tasks.converse.scoring import case_scores
from assay.tasks.converse.task import ConverseTask


def vote(is_hit: bool | None, reason: str = "r") -> dict[str, Any]:
    if is_hit is None:
        return {"is_hit": None, "reason": "not JSON", "invalid": True, "attempts": 2}
    return {"is_hit": is_hit, "reason": reason, "invalid": False, "attempts": 1}


# -- the judge's majority -----------------------------------------------------------------

def test_agreement_is_over_the_valid_votes_only() -> None:
    # 2 hits, 1 miss, 2 invalid: the majority is a hit, agreed by 2 of the 3 valid votes
    # (2/5 if the invalid votes were counted)
    got = majority([vote(True, "yes A"), vote(None), vote(False, "no"), vote(True, "yes B"),
                    vote(None)])
    assert got["is_hit"] is True and got["invalid"] is False
    assert got["valid_votes"] == 3 and got["hits"] == 2 and got["misses"] == 1
    assert got["agreement"] == pytest.approx(2 / 3)
    assert got["reason"] == "yes A"  # the first vote on the winning side
    assert got["kind"] == "llm" and len(got["votes"]) == 5


def test_a_unanimous_miss_has_full_agreement_and_a_miss_reason() -> None:
    got = majority([vote(None), vote(False, "absent"), vote(False, "not there")])
    assert got["is_hit"] is False and got["agreement"] == 1.0
    assert got["hits"] == 0 and got["misses"] == 2 and got["reason"] == "absent"


def test_a_tie_and_no_valid_vote_are_invalid_and_say_why() -> None:
    tie = majority([vote(True, "a"), vote(False, "b"), vote(None)])
    assert tie["invalid"] is True and tie["is_hit"] is None
    assert tie["reason"] == "invalid: a tie (1 hit, 1 miss) (a; b; not JSON)"
    none = majority([vote(None), vote(None)])
    assert none["invalid"] is True and none["valid_votes"] == 0 and none["agreement"] is None
    assert none["reason"] == "invalid: no valid verdict (not JSON; not JSON)"


@pytest.mark.parametrize(("text", "hit"), [
    ('{"reason": "ok", "is_hit": true}', True),
    ('{"reason": "no", "is_hit": "No"}', False),
    ('```json\n{"reason": "ok", "is_hit": "yes"}\n```', True),
    ('{"reason": "  ", "is_hit": true}', None),
    ('{"reason": "ok", "is_hit": 1}', None),
    ('yes, the statement holds', None),
    ('{"reason": "ok", "is_hit": true, "score": 3}', None),
])
def test_only_a_whole_verdict_object_is_read(text: str, hit: bool | None) -> None:
    verdict, why = parse_verdict(text)
    assert (verdict.is_hit if verdict else None) is hit
    assert (why is None) == (verdict is not None)
    if text.startswith('{"reason": "  "'):
        assert why == "an empty reason"


def test_a_long_transcript_keeps_the_first_and_the_last_messages() -> None:
    chat = [{"role": "examiner" if i % 2 == 0 else "agent", "content": f"m{i:02d} " + "x" * 90}
            for i in range(20)]
    whole = transcript_text(chat, 100_000)
    assert whole.startswith("[EXAMINER]: m00 ") and whole.count("\n\n") == 19
    short = transcript_text(chat, 600)
    assert len(short) <= 600
    parts = short.split("\n\n")
    assert parts[0].startswith("[EXAMINER]: m00") and parts[-1].startswith("[AGENT]: m19")
    # each message is 10 + 4 + 90 characters; 600 - 150 (head, a quarter) - 80 leaves room
    # for 3 of the last ones with their separators: 19 - 3 = 16 are left out
    assert parts[1] == "[... 16 message(s) left out ...]" and len(parts) == 5
    assert transcript_text([{"role": "agent", "content": "y" * 50}], 20) == "y" * 20


# -- the examiner ---------------------------------------------------------------------------

def test_an_examiner_reply_needs_its_fields_and_a_message_unless_finished() -> None:
    turn, _ = parse_examiner('{"message": "", "task_finished": true}')
    assert turn is not None and turn.task_finished is True
    turn, why = parse_examiner('{"message": " ", "task_finished": false}')
    assert turn is None and why == "an empty message without task_finished"
    assert parse_examiner('{"message": "hi"}')[0] is None
    assert parse_examiner('{"message": "hi", "task_finished": "true"}')[0] is None


def test_the_examiner_sees_its_window_as_assistant_and_the_agent_as_user() -> None:
    chat = [{"role": "examiner" if i % 2 == 0 else "agent", "content": f"m{i}"}
            for i in range(30)]
    msgs = examiner_messages("  Ask for a poem. ", chat, rounds=15, max_rounds=20)
    assert msgs[0].role == "system" and "<<<\nAsk for a poem.\n>>>" in msgs[0].content
    # 24 of 30 shown, so 6 left out; the window opens on m6, an examiner message
    assert msgs[1].role == "user" and "(6 earlier messages" in msgs[1].content
    assert json.loads(msgs[2].content) == {"message": "m6", "task_finished": False}
    assert msgs[3].content == "Agent: m7"
    assert msgs[-1].content == ("Agent: m29\n\n(The agent has replied 15 time(s); the "
                                "conversation may last 20.)")
    assert len(msgs) == 2 + 24


def test_a_small_context_shows_fewer_messages_and_clips_them() -> None:
    chat = [{"role": "agent" if i % 2 else "examiner", "content": str(i) * 1000}
            for i in range(10)]
    msgs = examiner_messages("t", chat, rounds=0, max_rounds=5, limit_chars=1200)
    # clip = max(200, 1200 // 4) = 300 characters; each message costs 300 + 40, so three
    # fit in 1,200 (1,020) and a fourth does not (1,360): 7 are left out
    assert "(7 earlier messages" in msgs[1].content
    assert msgs[1].content.endswith("Agent: " + "7" * 300 + " [... 700 chars]")
    assert len(msgs) == 4 and "replied" not in msgs[-1].content


# -- the loop, over HTTP --------------------------------------------------------------------

def finished_at_once(_body: dict[str, Any]) -> str:
    return json.dumps({"message": "[CASE-c] write me a haiku", "task_finished": True})


def run_loop(srv: ConverseServer, max_rounds: int, **kw: Any) -> Any:
    agent = OpenAIModel("agent", base_url=srv.base_url)
    examiner = OpenAIModel("examiner", base_url=srv.base_url)
    conv, messages = asyncio.run(converse(
        task_description="[CASE-c] Ask for a haiku.", max_rounds=max_rounds, agent=agent,
        examiner=examiner, workspace=None, **kw))
    return conv, messages


def test_task_finished_on_the_examiners_first_reply_still_gets_one_agent_turn() -> None:
    with ConverseServer(examiner=finished_at_once) as srv:
        conv, messages = run_loop(srv, 5)
        assert len(srv.bodies("agent")) == 1 and len(srv.bodies("examiner")) == 2
    assert conv.rounds == 1 and conv.ended_by == "examiner"
    assert [m["role"] for m in conv.chat] == ["examiner", "agent", "examiner"]
    assert conv.chat[0]["content"] == "[CASE-c] write me a haiku"
    assert conv.chat[1] == {"role": "agent", "content": "reply 1", "round": 1}
    assert conv.chat[2]["final"] is True and conv.chat[2]["round"] == 1
    assert [m.role for m in messages] == ["system", "user", "assistant"]


@pytest.mark.parametrize("max_rounds", [1, 3])
def test_an_examiner_that_never_stops_gets_exactly_max_rounds(max_rounds: int) -> None:
    with ConverseServer(examiner=never_stop) as srv:
        conv, _ = run_loop(srv, max_rounds)
        assert len(srv.bodies("agent")) == max_rounds
        assert len(srv.bodies("examiner")) == max_rounds
    assert conv.rounds == max_rounds and conv.ended_by == "max_rounds"
    assert [m["round"] for m in conv.chat] == [r for r in range(1, max_rounds + 1)
                                               for _ in (0, 1)]


def test_two_invalid_examiner_replies_end_the_conversation_counted() -> None:
    with ConverseServer(examiner=lambda _b: "sure, let's go") as srv:
        conv, _ = run_loop(srv, 5)
        assert srv.bodies("agent") == []
    assert conv.ended_by == "examiner_invalid" and conv.rounds == 0
    assert conv.examiner_invalid == 2 and len(conv.examiner_reasons) == 2


def test_an_empty_closing_message_is_recorded_as_task_finished() -> None:
    def examiner(body: dict[str, Any]) -> str:
        done = any("Agent:" in str(m.get("content")) for m in body["messages"])
        return json.dumps({"message": "" if done else "[CASE-c] go", "task_finished": done})

    with ConverseServer(examiner=examiner) as srv:
        conv, _ = run_loop(srv, 5)
    assert conv.rounds == 1 and conv.chat[-1]["content"] == "(task finished)"


# -- a case's score and the run's metrics ---------------------------------------------------

CASE = Case(task_description="t", scoring_points=[
    {"score_point": "a", "weight": 2}, {"score_point": "b", "weight": 1},
    {"score_point": "c", "weight": 3}])


def test_invalid_points_leave_the_score_and_the_threshold_is_inclusive() -> None:
    verdicts = [{"is_hit": True, "kind": "llm"}, {"is_hit": False, "kind": "llm"},
                {"invalid": True, "is_hit": None, "kind": "llm"}]
    score, passed = case_scores(CASE, verdicts, {"rounds": 2}, 2 / 3, {})
    assert score.value == pytest.approx(2 / 3)  # 2 of the 3 judged weight, c left out
    assert score.metadata["weight_judged"] == 3 and score.metadata["invalid_points"] == 1
    assert passed.value == 1.0
    assert case_scores(CASE, verdicts, {}, 0.7, {})[1].value == 0.0
    none = case_scores(CASE, [{"invalid": True}] * 3, {}, 0.5, {})
    assert none[0].value is None and none[1].value is None
    with pytest.raises(ValueError, match="2 verdicts for 3 scoring points"):
        case_scores(CASE, verdicts[:2], {}, 0.5, {})


def result(case: str, epoch: int, score: float, passed: float,
           points: list[dict[str, Any]] | None = None) -> SampleResult:
    meta = {"points": points or []}
    return SampleResult(run_id="r", sample_id=case, epoch=epoch, input="", target=None,
                        output="", prediction=None,
                        scores={"score": {"value": score, "metadata": meta},
                                "passed": {"value": passed}},
                        error=None, latency_s=0.0, input_tokens=0, output_tokens=0)


def test_pass_hat_k_counts_only_cases_with_every_epoch() -> None:
    results = [result("a", e, 1.0, 1.0) for e in range(3)]           # passes all 3
    results += [result("b", 0, 1.0, 1.0), result("b", 1, 1.0, 1.0)]  # epoch 2 missing
    results += [result("c", e, s, p) for e, s, p in [(0, 1.0, 1.0), (1, 0.5, 0.0),
                                                     (2, 1.0, 1.0)]]  # fails one trial
    m = converse_metrics(results, {"threshold": 1.0})
    assert m["epochs"] == 3
    # a passes every trial; c does not; b (2 of 3 trials) is not counted: 1 of 2
    assert m["pass_hat_k"]["successes"] == 1 and m["pass_hat_k"]["n"] == 2
    assert m["pass_hat_k"]["k"] == 3 and m["pass_hat_k"]["value"] == 0.5
    # the case means: a 1, b 1, c 2.5/3; their mean
    assert m["score"]["value"] == pytest.approx((1 + 1 + 2.5 / 3) / 3)
    # variances: a 0, b 0, c pvariance(1, .5, 1) = 1/18
    assert m["score_variance_across_trials"] == pytest.approx((0 + 0 + 1 / 18) / 3)
    trials = {t["case"]: t for t in m["case_trials"]}
    assert trials["c"]["scores"] == [1.0, 0.5, 1.0]
    assert trials["c"]["variance"] == pytest.approx(1 / 18)


def test_point_hit_rates_count_valid_verdicts_and_agreement_is_their_mean() -> None:
    def rows(hit: bool | None, agreement: float | None) -> list[dict[str, Any]]:
        return [{"point": "p", "weight": 1.0, "kind": "llm", "is_hit": hit,
                 "invalid": hit is None, "agreement": agreement}]

    results = [result("a", 0, 1.0, 1.0, rows(True, 1.0)),
               result("a", 1, 0.0, 0.0, rows(False, 0.5)),
               result("a", 2, 0.0, 0.0, rows(None, None))]
    m = converse_metrics(results, {})
    (rate,) = m["point_hit_rates"]
    assert (rate["hits"], rate["valid"], rate["invalid"], rate["rate"]) == (1, 2, 1, 0.5)
    assert m["invalid_verdicts"] == 1 and m["judge_agreement"] == pytest.approx(0.75)
    assert m["threshold"] == 1.0 and "pass_hat_k" in m


# -- eval_code ------------------------------------------------------------------------------

@pytest.mark.parametrize(("code", "hit", "reason"), [
    ("return 0", False, "eval_code returned 0"),
    ("return ''", False, "eval_code returned ''"),
    ("return False", False, "eval_code returned False"),
    ("assert 'haiku' in last_agent_reply, 'no haiku'", False, "assertion failed: no haiku"),
    ("pass", True, "exit status 0"),
    ("return 1", True, "exit status 0"),
    ("return 'haiku' in last_agent_reply.lower()", True, "exit status 0"),
    ("return (", False, None),
])
def test_eval_code_is_a_hit_only_for_none_or_a_true_value(code: str, hit: bool,
                                                          reason: str | None) -> None:
    chat = [{"role": "examiner", "content": "a poem?"}, {"role": "agent", "content": "A Haiku"}]
    got = asyncio.run(run_eval_code(code, chat, None, allow_weak=True))
    assert got["is_hit"] is hit and got["kind"] == "code" and got["invalid"] is False
    if reason is None:
        assert got["reason"].startswith("eval_code does not compile: ")
    else:
        assert got["reason"] == reason


# -- a whole run, in process ----------------------------------------------------------------

def test_a_run_in_process_scores_cases_and_reports_its_metrics(tmp_path: Path) -> None:
    """Two cases, two epochs. Case a: the examiner never stops (2 rounds); hello (weight
    2) hit, poem (1) missed, eval_code (1) hit: 3/4. Case b: the examiner stops after
    the first reply; hello hit: 1/1."""
    write_case(tmp_path, "a", max_rounds=2, points=[
        {"score_point": "The agent said hello", "weight": 2},
        {"score_point": "The agent wrote a poem", "weight": 1},
        {"score_point": "second reply", "weight": 1,
         "eval_code": "return last_agent_reply == 'reply 2'"}])
    write_case(tmp_path, "b", max_rounds=5)
    stop_b = stop_after(1)

    def examiner(body: dict[str, Any]) -> str:
        return stop_b(body) if marker(body) == "b" else never_stop(body)

    def judge(body: dict[str, Any]) -> str:
        statement = body["messages"][1]["content"].rsplit("<<<", 1)[1]
        return json.dumps({"reason": "seen", "is_hit": "hello" in statement})

    with ConverseServer(examiner=examiner, judge=judge) as srv:
        got = assay.evaluate("converse", "openai/agent", cases=str(tmp_path),
                             examiner_model="openai/examiner", judge_model=["openai/judge"],
                             base_url=srv.base_url, examiner_base_url=srv.base_url,
                             judge_base_url=srv.base_url, epochs=2, quiet=True, seed=7,
                             allow_weak_sandbox=WEAK)
        judged = srv.bodies("judge")
        asked = srv.bodies("examiner")
        agent_bodies = srv.bodies("agent")
    # what each role is sent: the examiner 0.7 (a remote model) and 400 tokens with the
    # run's seed; the agent 512 tokens; the judge greedy, 400 tokens
    assert all(b["temperature"] == 0.7 and b["max_tokens"] == 400 and b["seed"] == 7
               for b in asked)
    assert all(b["max_tokens"] == 512 for b in agent_bodies)
    assert all(b["temperature"] == 0.0 and b["max_tokens"] == 400 for b in judged)
    store = Store()
    try:
        run = store.get_run(got.run_id)
        results = store.results(got.run_id)
    finally:
        store.close()
    assert run["dataset"]["source"] == str(tmp_path.resolve())
    assert run["dataset"]["cases"] == 2 and len(run["dataset"]["content_hash"]) == 64
    a0 = next(r for r in results if r.sample_id == "a" and r.epoch == 0)
    assert a0.output == "reply 2"  # the agent's last reply
    meta = a0.outcome["metadata"]
    assert meta["agent_model"] == "openai/agent" and meta["examiner_model"] == "openai/examiner"
    assert a0.metadata["max_rounds"] == 2
    rows = a0.scores["score"]["metadata"]["points"]
    assert [(r["point"], r["is_hit"], r["reason"]) for r in rows] == [
        ("The agent said hello", True, "seen"), ("The agent wrote a poem", False, "seen"),
        ("second reply", True, "exit status 0")]
    assert a0.scores["score"]["metadata"]["ended_by"] == "max_rounds"
    assert a0.scores["score"]["metadata"]["judge_model"] == "openai/judge"
    m = got.metrics
    assert m["score"]["ci_low"] <= m["score"]["value"] <= m["score"]["ci_high"]
    assert m["score"]["ci_low"] == 0.75 and m["score"]["ci_high"] == 1.0  # two case means
    assert got.status == "finished"
    assert m["score"]["value"] == pytest.approx((0.75 + 1.0) / 2)
    assert m["pass_rate"]["value"] == 0.5 and m["threshold"] == 1.0
    assert m["pass_hat_k"]["successes"] == 1 and m["pass_hat_k"]["n"] == 2
    assert m["score_variance_across_trials"] == 0.0
    assert m["rounds_mean"] == 1.5 and m["rounds_max"] == 2
    assert m["ended_by"] == {"examiner": 2, "max_rounds": 2}
    assert m["judge_models"] == ["openai/judge"] and m["invalid_verdicts"] == 0
    assert set(m["tokens"]) == {"agent", "examiner", "judge"}
    assert m["eval_code_isolation"] in ("bwrap", "weak")
    rates = {(p["case"], p["point"]): p["rate"] for p in m["point_hit_rates"]}
    assert rates == {("a", "The agent said hello"): 1.0, ("a", "The agent wrote a poem"): 0.0,
                     ("a", "second reply"): 1.0, ("b", "The agent said hello"): 1.0}
    # three LLM points per epoch judged (eval_code needs no judge), in the judge's prompt
    assert len(judged) >= 3 and all("<<<" in b["messages"][1]["content"] for b in judged)
    html = got.reports["html"].read_text(encoding="utf-8")
    assert "The agent wrote a poem" in html and "reply 2" in html


# -- the agent's working folder and its tool steps ------------------------------------------

def test_the_file_tools_stay_in_the_folder_and_report_problems_as_text(tmp_path: Path) -> None:
    ws = Workspace(tmp_path)
    assert ws.call("write_file", {"path": "d/n.txt", "content": "héllo"}) == \
        "wrote 5 characters to d/n.txt"
    assert (tmp_path / "d" / "n.txt").read_text(encoding="utf-8") == "héllo"
    assert ws.call("read_file", {"path": "d/n.txt"}) == "héllo"
    ws.call("write_file", {"path": "a.txt", "content": ""})
    assert json.loads(ws.call("list_files", {})) == ["a.txt", "d/n.txt"]
    assert ws.call("read_file", {"path": "none.txt"}) == "error: no file none.txt"
    assert ws.call("read_file", {"path": "../x"}) == "error: ../x is outside the working folder"
    assert ws.call("read_file", {"path": " "}) == \
        "error: give a file path relative to the working folder"
    assert ws.call("write_file", {"path": "b.txt", "content": 3}) == \
        "error: content must be a string"
    big = "x" * (WRITE_LIMIT + 1)
    assert ws.call("write_file", {"path": "b.txt", "content": big}) == \
        f"error: content over {WRITE_LIMIT} bytes"
    assert not (tmp_path / "b.txt").exists()
    assert ws.call("delete", {}) == "error: unknown tool delete"
    (tmp_path / "big.bin").write_bytes(b"\xff" * (READ_LIMIT + 10))
    assert len(ws.call("read_file", {"path": "big.bin"})) == READ_LIMIT


def test_the_snapshot_keeps_sizes_hashes_and_small_texts(tmp_path: Path) -> None:
    (tmp_path / "t.txt").write_text("abc", encoding="utf-8")
    (tmp_path / "b.bin").write_bytes(b"\xff\xfe")
    (tmp_path / "big.txt").write_text("y" * (SNAPSHOT_TEXT + 1), encoding="utf-8")
    snap = {s["path"]: s for s in Workspace(tmp_path).snapshot()}
    assert snap["t.txt"] == {"path": "t.txt", "bytes": 3, "text": "abc",
                             "sha256": hashlib.sha256(b"abc").hexdigest()}
    assert "text" not in snap["b.bin"] and snap["b.bin"]["bytes"] == 2
    assert "text" not in snap["big.txt"] and snap["big.txt"]["bytes"] == SNAPSHOT_TEXT + 1


def tool_agent(body: dict[str, Any]) -> Any:
    steps = sum(1 for m in body["messages"] if m["role"] == "tool")
    if steps == 0:
        return {"tool_calls": [{"name": "write_file",
                                "arguments": {"path": "out.txt", "content": "42"}}]}
    if steps == 1:
        return {"tool_calls": [{"name": "read_file", "arguments": {"path": "out.txt"}}]}
    return "done: 42"


def test_an_agent_uses_the_file_tools_within_a_turn(tmp_path: Path) -> None:
    with ConverseServer(agent=tool_agent, examiner=finished_at_once) as srv:
        agent = OpenAIModel("agent", base_url=srv.base_url)
        examiner = OpenAIModel("examiner", base_url=srv.base_url)
        conv, messages = asyncio.run(converse(
            task_description="[CASE-c] t", max_rounds=3, agent=agent, examiner=examiner,
            workspace=Workspace(tmp_path), verbose=True))
        bodies = srv.bodies("agent")
    assert len(bodies) == 3 and all(b["tool_choice"] == "auto" for b in bodies)
    assert bodies[0]["messages"][0]["content"].endswith("paths are relative to it.")
    assert (tmp_path / "out.txt").read_text() == "42"
    assert conv.tool_calls == 2 and conv.repeat_stops == 0 and conv.step_limit_turns == 0
    agent_entry = conv.chat[1]
    assert agent_entry["tools"] == [
        '[tool write_file(path="out.txt", content="42") -> wrote 2 characters to out.txt]',
        '[tool read_file(path="out.txt") -> 42]']
    # verbose: the examiner and the judge see the tool activity before the reply
    assert agent_entry["content"] == "\n".join([*agent_entry["tools"], "done: 42"])
    assert [m.role for m in messages].count("tool") == 2


def test_without_a_workspace_the_agent_gets_no_tools(tmp_path: Path) -> None:
    with ConverseServer(agent=tool_agent, examiner=finished_at_once) as srv:
        conv, _ = run_loop(srv, 3, agent_system_prompt="Be brief.")
        body = srv.bodies("agent")[0]
    assert "tools" not in body and "tool_choice" not in body
    assert body["messages"][0] == {"role": "system", "content": "Be brief."}
    assert conv.tool_calls == 0 and conv.chat[1]["content"] == ""


# -- case files -------------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "message"), [
    ("- a list\n", "x.yaml:1: a case file is a mapping with task_description and scoring_points"),
    ("task_description: t\nscoring_points:\n- score_point: p\npre_command: rm -rf /\n",
     "x.yaml:4: pre_command is refused"),
    ("task_description: t\nscoring_points:\n- score_point: p\n  wieght: 2\n",
     "x.yaml:4: scoring_points.0: unknown key 'wieght' (did you mean 'weight'? known keys: "
     "score_point, weight, eval_code)"),
    ("task_description: t\nmax_round: 3\nscoring_points:\n- score_point: p\n",
     "x.yaml:2: unknown key 'max_round' (did you mean 'max_rounds'? known keys: version, id, "
     "task_description,"),
    ("task_description: t\nscoring_points:\n- score_point: p\n- score_point: q\n"
     "  eval_code: 'return ('\n", "x.yaml:5: scoring_points.1.eval_code does not compile ("),
    ("task_description: t\nscoring_points:\n- score_point: p\ndata_files: [gone.csv]\n",
     "x.yaml:4: data_files: gone.csv does not exist (paths are relative to the case file)"),
    ("task_description: t\nscoring_points:\n- score_point: p\ndependencies: ['pandas>>1']\n",
     "x.yaml:4: dependencies.0: 'pandas>>1' is not a requirement (e.g. 'pandas>=1.5')"),
])
def test_a_bad_case_file_is_one_line_with_its_file_and_line(tmp_path: Path, text: str,
                                                            message: str) -> None:
    path = tmp_path / "x.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as e:
        load_case(path)
    assert str(e.value).startswith(f"{tmp_path}/{message}") and "\n" not in str(e.value)


def test_case_ids_come_from_the_layout_and_must_be_unique(tmp_path: Path) -> None:
    body = "task_description: t\nscoring_points:\n- score_point: p\n"
    (tmp_path / "tw" / "alpha").mkdir(parents=True)
    (tmp_path / "tw" / "alpha" / "alpha.yaml").write_text(body)  # TaskWeaver's layout
    (tmp_path / "tw" / "beta.yaml").write_text(body)
    ids = [cid for _, cid, _ in load_cases(tmp_path / "tw")]
    assert ids == ["alpha", "beta"]
    (tmp_path / "tw" / "gamma.yaml").write_text(body + "id: beta\n")
    with pytest.raises(ConfigError, match="case id 'beta' is also used by .*/tw/beta.yaml;"):
        load_cases(tmp_path / "tw")
    with pytest.raises(ConfigError, match="no such file or folder"):
        load_cases(tmp_path / "none")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match="the folder holds no .yaml case files"):
        load_cases(tmp_path / "empty")


def test_unmet_dependencies_say_what_is_installed() -> None:
    case = Case(task_description="t", scoring_points=[{"score_point": "p"}],
                dependencies=["pytest>=1", "pytest<1", "no-such-package-xyz"])
    got = unmet_dependencies(case)
    assert got[0].startswith("pytest<1 (installed ") and len(got) == 2
    assert got[1] == "no-such-package-xyz (not installed)"


def test_the_report_lists_cases_lowest_first_and_draws_each_chat(tmp_path: Path) -> None:
    write_case(tmp_path, "a", max_rounds=1, points=[
        {"score_point": "The agent said hello", "weight": 1},
        {"score_point": "The agent wrote a poem", "weight": 3}])
    write_case(tmp_path, "b", max_rounds=1, points=[
        {"score_point": "The agent said goodbye", "weight": 1}])

    def judge(body: dict[str, Any]) -> Any:
        statement = body["messages"][1]["content"].rsplit("<<<", 1)[1]
        if "poem" in statement:
            return "no idea"  # never a verdict: invalid after the retry
        return json.dumps({"reason": "it greeted", "is_hit": "goodbye" not in statement})

    with ConverseServer(examiner=never_stop, judge=judge) as srv:
        got = assay.evaluate("converse", "openai/agent", cases=str(tmp_path),
                             examiner_model="openai/examiner", judge_model=["openai/judge"],
                             base_url=srv.base_url, examiner_base_url=srv.base_url,
                             judge_base_url=srv.base_url, quiet=True)
    store = Store()
    try:
        results = store.results(got.run_id)
    finally:
        store.close()
    m = got.metrics
    assert m["invalid_verdicts"] == 1 and m["invalid_judge_votes"] == 1
    assert m["invalid_judge_replies"] == 2  # the reply and its retry
    assert "pass_hat_k" not in m and "case_trials" not in m  # one epoch
    assert m["tokens"]["judge"]["input"] > 0 and m["tokens"]["agent"]["output"] > 0
    report = converse_report(m, results)
    cases, points, *chats = report["sections"]
    assert cases["title"] == "Cases, lowest score first"
    assert cases["headers"] == ["case", "epoch", "score", "passed", "rounds", "ended by",
                                "invalid verdicts", "error"]
    assert cases["rows"][1] == ["a", 0, "1.000", "1.000", "1", "max_rounds", 1, ""]
    assert [row[0] for row in cases["rows"]] == ["b", "a"]  # b scored 0: first
    assert points["title"] == "Scoring points" and points["note"].startswith("Hit rate over")
    assert points["headers"] == ["case", "point", "weight", "judge", "hit rate", "valid",
                                 "invalid"]
    assert chats[1]["headers"] == ["scoring point", "weight", "verdict", "reason"]
    assert chats[1]["chat"][1] == {"role": "agent", "text": "reply 1", "tools": []}
    worse = converse_report({**m, "eval_code_isolation": "weak", "invalid_verdicts": 0,
                             "same_model_as_agent": ["judge"]}, results)
    assert worse["recommendations"] == [
        "eval_code ran with weak isolation (no bubblewrap, --allow-weak-sandbox): install it "
        "(apt-get install bubblewrap).",
        "The judge is the agent under test: give another with --judge-model."]
    assert sorted(points["rows"]) == [
        ["a", "The agent said hello", "1", "llm", "1.000", 1, 0],
        ["a", "The agent wrote a poem", "3", "llm", "—", 0, 1],
        ["b", "The agent said goodbye", "1", "llm", "0.000", 1, 0]]
    assert [c["title"] for c in chats] == ["Case b", "Case a"]
    assert chats[1]["note"] == ("score 1.000 · 1 round · ended by max_rounds · judged by "
                                "openai/judge")
    assert [c["role"] for c in chats[1]["chat"]] == ["examiner", "agent"]
    assert chats[1]["rows"][1][:3] == ["The agent wrote a poem", "3", "invalid"]
    assert chats[0]["rows"] == [["The agent said goodbye", "1", "miss", "it greeted"]]
    a = next(r for r in results if r.sample_id == "a")
    (vote,) = a.scores["score"]["metadata"]["verdicts"][1]["votes"]
    # the refused reply and its refused retry, each with why
    assert vote["invalid"] is True and vote["attempts"] == 2 and vote["raw"] == "no idea"
    first, second = vote["reason"].split("; ")  # the same refusal, twice
    assert first == second and first
    assert report["recommendations"] == [
        "1 verdict came back invalid: use a stronger judge or --judge-samples."]


@pytest.mark.parametrize(("code", "reason"), [
    ("import sys\nsys.exit(3)", "exit status 3"),
    ("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)",
     "killed by signal 9 (a resource limit)"),
    ("print('first')\nprint('the last line')\nraise SystemExit(2)", "the last line"),
])
def test_a_failing_snippet_says_why(code: str, reason: str) -> None:
    got = asyncio.run(run_eval_code(code, [{"role": "agent", "content": "é"}], None,
                                    allow_weak=True))
    assert got["is_hit"] is False and got["reason"] == reason
    assert got["timed_out"] is False and got["isolation"] in ("bwrap", "weak")
    if reason == "the last line":
        assert got["output"] == "first\nthe last line\n"


def test_the_snippet_sees_the_conversation_as_written() -> None:
    chat = [{"role": "examiner", "content": "naïve?"}, {"role": "agent", "content": "oui ✓"}]
    code = ("assert [m.role for m in chat_history] == ['examiner', 'agent']\n"
            "assert messages[1]['content'] == 'oui ✓' and last_agent_reply == 'oui ✓'\n"
            "assert type(chat_history[1]).__name__ == 'AgentMessage'\n"
            "assert chat_history[0].type == 'ai'")
    assert asyncio.run(run_eval_code(code, chat, None, allow_weak=True))["is_hit"] is True


def test_the_transcript_limit_is_inclusive() -> None:
    chat = [{"role": "agent", "content": "x" * 10}, {"role": "agent", "content": "y" * 10}]
    whole = transcript_text(chat, 1000)
    assert len(whole) == 2 * 19 + 2
    assert transcript_text(chat, len(whole)) == whole  # exactly at the limit: all of it
    cut = transcript_text(chat, len(whole) - 1)
    assert cut != whole
    # head: a quarter of 39 = 9 characters; the last message (19) + 2 + 9 + 80 > 39
    assert cut == "[AGENT]: \\n\\n[... 1 message(s) left out ...]".replace("\\n", "\n")


def test_the_examiner_window_fits_the_limit_exactly() -> None:
    chat = [{"role": "agent", "content": "a" * 160}, {"role": "agent", "content": "b" * 160}]
    # each message costs min(160, clip 200) + 40 = 200; a limit of 400 holds both
    assert "earlier messages" not in examiner_messages("t", chat, 0, 3, limit_chars=400)[1].content
    assert "(1 earlier messages" in examiner_messages("t", chat, 0, 3, limit_chars=399)[1].content


def test_a_verdict_row_keeps_reason_and_agreement_and_all_invalid_keeps_the_rows() -> None:
    verdicts = [{"is_hit": True, "kind": "llm", "reason": "r" * 1200, "agreement": 0.5},
                {"is_hit": False, "kind": "code", "reason": None},
                {"invalid": True, "kind": "llm", "reason": "no verdict"}]
    score, _ = case_scores(CASE, verdicts, {"rounds": 3, "ended_by": "examiner"}, 1.0,
                           {"judge_model": "j"})
    rows = score.metadata["points"]
    assert rows[0]["reason"] == "r" * 1000 and rows[0]["agreement"] == 0.5
    assert rows[1]["reason"] == "" and rows[1]["kind"] == "code"
    assert rows[2] == {"point": "c", "weight": 3, "kind": "llm", "is_hit": None,
                       "invalid": True, "reason": "no verdict", "agreement": None}
    assert score.metadata["ended_by"] == "examiner" and score.metadata["rounds"] == 3
    assert score.metadata["weight_total"] == 6 and score.metadata["judge_model"] == "j"
    assert score.explanation == "2/3 of the weight hit; 1 invalid verdict left out"
    none = case_scores(CASE, [{"invalid": True}] * 3, {"ended_by": "max_rounds"}, 0.5, {})
    assert none[0].explanation == none[1].explanation == "every verdict is invalid"
    assert none[0].metadata["invalid_points"] == 3 and none[0].metadata["ended_by"] == \
        "max_rounds"


def varying_agent(body: dict[str, Any]) -> Any:
    steps = sum(1 for m in body["messages"] if m["role"] == "tool")
    return {"content": f"step {steps}",
            "tool_calls": [{"name": "read_file", "arguments": {"path": f"f{steps}.txt"}}]}


def repeating_agent(body: dict[str, Any]) -> Any:
    return {"content": "again", "tool_calls": [{"name": "list_files", "arguments": {}}]}


def test_a_turn_ends_at_the_step_limit_or_on_an_exact_repeat(tmp_path: Path) -> None:
    for agent_fn, ended in ((varying_agent, "limit"), (repeating_agent, "repeat")):
        with ConverseServer(agent=agent_fn, examiner=finished_at_once) as srv:
            agent = OpenAIModel("agent", base_url=srv.base_url)
            examiner = OpenAIModel("examiner", base_url=srv.base_url)
            conv, _ = asyncio.run(converse(
                task_description="[CASE-c] t", max_rounds=1, agent=agent, examiner=examiner,
                workspace=Workspace(tmp_path)))
            calls = len(srv.bodies("agent"))
        if ended == "limit":
            assert calls == MAX_STEPS and conv.tool_calls == MAX_STEPS
            assert conv.step_limit_turns == 1 and conv.repeat_stops == 0
            # the turn's last message is a tool result: the agent said nothing after it
            assert conv.chat[1]["content"] == ""
            assert len(conv.chat[1]["tools"]) == MAX_STEPS
        else:
            assert calls == 2 and conv.tool_calls == 1 and conv.repeat_stops == 1
            assert conv.step_limit_turns == 0 and conv.chat[1]["content"] == "again"
            assert conv.chat[1]["tools"][-1] == "[the same tool call again: turn ended]"


def test_data_files_land_by_name_and_yaml_data_is_not_a_case(tmp_path: Path) -> None:
    body = "task_description: t\nscoring_points:\n- score_point: p\n"
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.csv").write_text("1\n")
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "x.csv").write_text("2\n")
    (tmp_path / "cfg").mkdir()
    (tmp_path / "cfg" / "settings.yaml").write_text("not: a case\n")
    (tmp_path / "same.yml").write_text(body + "data_files: [a/x.csv, b/x.csv]\n")
    with pytest.raises(ConfigError) as e:
        load_cases(tmp_path / "same.yml")
    assert str(e.value) == (f"{tmp_path}/same.yml:4: data_files: b/x.csv and a/x.csv have the "
                            "same file name 'x.csv'; data files are copied into the agent's "
                            "folder by name")
    (tmp_path / "same.yml").write_text(body + "data_files: [a/x.csv, cfg]\n")
    # cfg/settings.yaml is a case's data (inside a data folder), not a broken case file
    loaded = load_cases(tmp_path)
    assert [(cid, c.data_files) for c, cid, _ in loaded] == [("same", ["a/x.csv", "cfg"])]


def test_the_transcripts_tail_takes_messages_that_fit_exactly() -> None:
    lines = ["a" * 91, "x" * 91, "b" * 64, "c" * 59]  # 100, 100, 73 and 68 with "[AGENT]: "
    chat = [{"role": "agent", "content": c} for c in lines]
    # limit 300: the head is 75 characters, +80 for the note = 155; the last message costs
    # 68 + 2 (225) and the one before it 73 + 2: exactly 300, still in; the next is not
    got = transcript_text(chat, 300)
    assert got.split("\n\n") == ["[AGENT]: " + "a" * 66, "[... 1 message(s) left out ...]",
                                 "[AGENT]: " + "b" * 64, "[AGENT]: " + "c" * 59]


def test_the_metrics_read_thresholds_judges_isolation_and_same_model_roles() -> None:
    def one(case: str, epoch: int, isolation: str | None, judges: list[str],
            score: float = 1.0) -> SampleResult:
        r = result(case, epoch, score, 1.0)
        r.scores["score"]["metadata"].update(
            verdicts=[{"votes": [], "isolation": isolation}], judge_model=judges[0],
            judge_models=judges, judge_usage={"input_tokens": 5, "output_tokens": 2})
        r.outcome = {"metadata": {"agent_model": "m", "examiner_model": "m",
                                  "usage": {"agent": {"input_tokens": 3, "output_tokens": 1}},
                                  "conversation": {"rounds": 2, "ended_by": "examiner"}}}
        return r

    results = [one("a", 0, "bwrap", ["j1", "j2"]), one("a", 1, "weak", ["j1"], 0.5),
               one("b", 0, None, ["m"])]  # b: one trial of two
    m = converse_metrics(results, {"threshold": 0.5})
    assert m["threshold"] == 0.5
    assert m["eval_code_isolation"] == "weak"  # any weak run makes the whole weak
    assert m["judge_models"] == ["j1", "j2", "m"]
    assert m["same_model_as_agent"] == ["examiner", "judge"]
    assert m["tokens"] == {"agent": {"input": 9, "output": 3},
                           "judge": {"input": 15, "output": 6}}
    # only a case with several trials has a variance (a: 1 and 0.5, 0.0625); b's single
    # trial is left out (not counted as 0)
    assert m["score_variance_across_trials"] == 0.0625
    assert m["ended_by"] == {"examiner": 3} and m["rounds_mean"] == 2
    assert converse_metrics([one("a", 0, "bwrap", ["j"])], {})["eval_code_isolation"] == \
        "bwrap"


def test_the_examiners_context_limit_reaches_its_window() -> None:
    with ConverseServer(agent=lambda _b: "z" * 500, examiner=never_stop) as srv:
        agent = OpenAIModel("agent", base_url=srv.base_url)
        examiner = OpenAIModel("examiner", base_url=srv.base_url)
        asyncio.run(converse(task_description="[CASE-c] t", max_rounds=2, agent=agent,
                             examiner=examiner, workspace=None, examiner_context_chars=280))
        second = srv.bodies("examiner")[1]
    # clip max(200, 280 // 4) = 200; the agent's reply costs 200 + 40, the examiner's first
    # message 14 + 40 more (294 > 280): only the reply is shown
    first_user = second["messages"][1]["content"]
    assert "(1 earlier messages of this conversation are not shown.)" in first_user
    assert first_user.endswith("Agent: " + "z" * 200 + " [... 300 chars]\n\n(The agent has "
                               "replied 1 time(s); the conversation may last 2.)")


def test_the_roles_warn_when_the_agent_examines_or_judges_itself(capsys: Any) -> None:
    task = ConverseTask(examiner_model="openai/m", judge_model=["openai/m"])
    roles = task.roles("openai/m")
    err = capsys.readouterr().err.splitlines()
    assert err == [
        "warning: the examiner model is the agent under test (openai/m); give another "
        "with --examiner-model",
        "warning: the judge model is the agent under test (openai/m); give another with "
        "--judge-model",
        "warning: the examiner and the judge are the same model (openai/m)"]
    assert roles["examiner"].model == "openai/m" and roles["judge"].model == "openai/m"
    assert ConverseTask().generation_params() == {"max_tokens": 512}
    assert ConverseTask(max_tokens=99).generation_params() == {"max_tokens": 99}
