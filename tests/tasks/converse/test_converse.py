"""``assay run converse``: rounds, the structured stop, strict judging, case-file errors.

Every run goes through the real CLI in a subprocess, against a real HTTP server that plays
the agent, the examiner and the judge (:mod:`convfakes`), into a real SQLite store.
"""

from __future__ import annotations

import json
from importlib import metadata

import pytest
from convfakes import (
    ConverseServer,
    converse_args,
    never_stop,
    run_cli,
    run_id_of,
    stop_after,
    stored,
    write_case,
)


@pytest.mark.parametrize("max_rounds", [50, 3])
def test_max_rounds_is_honoured_exactly_when_the_examiner_never_stops(tmp_path, max_rounds):
    case = write_case(tmp_path / "cases", "long", max_rounds=max_rounds)
    with ConverseServer(examiner=never_stop) as srv:
        out = run_cli(*converse_args(case, srv.base_url))
        assert out.returncode == 0, out.stderr
        assert len(srv.bodies("agent")) == max_rounds  # one request per agent turn
        # the last agent request holds the whole conversation: max_rounds examiner turns
        assert sum(1 for m in srv.bodies("agent")[-1]["messages"]
                   if m["role"] == "user") == max_rounds
        # the examiner is not asked again after the last allowed turn
        assert len(srv.bodies("examiner")) == max_rounds
    (r,) = stored(run_id_of(out.stdout))["results"]
    conv = r.outcome["metadata"]["conversation"]
    assert conv["rounds"] == max_rounds and conv["ended_by"] == "max_rounds"
    assert sum(1 for m in conv["chat"] if m["role"] == "agent") == max_rounds


def test_a_case_without_max_rounds_stops_at_15(tmp_path):
    case = write_case(tmp_path / "cases", "default")
    with ConverseServer(examiner=never_stop) as srv:
        out = run_cli(*converse_args(case, srv.base_url))
        assert out.returncode == 0, out.stderr
        assert len(srv.bodies("agent")) == 15


def test_the_examiner_ends_with_its_schema_field_not_a_word_in_its_text(tmp_path):
    case = write_case(tmp_path / "cases", "stop", max_rounds=10)

    def examiner(body):  # says the old stop word every turn, sets the flag after 4 replies
        done = sum(1 for m in body["messages"] if "Agent:" in str(m.get("content"))) >= 4
        return json.dumps({"message": "TASK_FINISHED, yes. [CASE-stop]" if not done else "bye",
                           "task_finished": done})

    with ConverseServer(examiner=examiner) as srv:
        out = run_cli(*converse_args(case, srv.base_url))
        assert out.returncode == 0, out.stderr
        assert len(srv.bodies("agent")) == 4
        # the examiner was asked for JSON matching its schema
        fmt = srv.bodies("examiner")[0]["response_format"]
        assert fmt["type"] == "json_schema"
        assert set(fmt["json_schema"]["schema"]["required"]) == {"message", "task_finished"}
    (r,) = stored(run_id_of(out.stdout))["results"]
    conv = r.outcome["metadata"]["conversation"]
    assert conv["ended_by"] == "examiner" and conv["rounds"] == 4
    assert conv["chat"][-1] == {"role": "examiner", "content": "bye", "final": True, "round": 4}


def test_an_examiner_that_never_answers_in_json_ends_the_conversation_counted(tmp_path):
    case = write_case(tmp_path / "cases", "bad", max_rounds=5)

    def examiner(body):
        agent_said = any("Agent:" in str(m.get("content")) for m in body["messages"])
        return "I think we are done here." if agent_said else json.dumps(
            {"message": "[CASE-bad] hi", "task_finished": False})

    with ConverseServer(examiner=examiner) as srv:
        out = run_cli(*converse_args(case, srv.base_url))
        assert out.returncode == 0, out.stderr
        assert len(srv.bodies("agent")) == 1
        assert len(srv.bodies("examiner")) == 3  # first turn, then one reply and one retry
    (r,) = stored(run_id_of(out.stdout))["results"]
    conv = r.outcome["metadata"]["conversation"]
    assert conv["ended_by"] == "examiner_invalid" and conv["examiner_invalid"] == 2
    assert all("not JSON" in why for why in conv["examiner_reasons"])


BAD_VERDICTS = {
    "malformed": '{"reason": "fine", "is_hit": tru}',
    "truncated": '{"reason": "the agent said hello, so yes the statement',
    "yes_in_prose": "Yes. The agent clearly said hello, so the statement is true: yes.",
    "json_in_prose": 'Here is my verdict: {"reason": "ok", "is_hit": true}',
    "no_reason": '{"is_hit": true}',
    "is_hit_text": '{"reason": "ok", "is_hit": "yes, mostly"}',
    "array": '[{"reason": "ok", "is_hit": true}]',
}


def test_invalid_judge_replies_are_counted_and_never_scored_as_hits(tmp_path):
    folder = tmp_path / "cases"
    for name in BAD_VERDICTS:
        write_case(folder, name.replace("_", "-"), max_rounds=1, points=[
            {"score_point": "The agent said hello", "weight": 3},
            {"score_point": "The agent was polite", "weight": 1}])

    def judge(body):
        case = next(k for k in BAD_VERDICTS if f"[CASE-{k.replace('_', '-')}]" in
                    body["messages"][1]["content"])
        if "polite" in body["messages"][1]["content"]:
            return json.dumps({"reason": "it was not polite", "is_hit": False})
        return BAD_VERDICTS[case]

    with ConverseServer(examiner=never_stop, judge=judge) as srv:
        out = run_cli(*converse_args(folder, srv.base_url))
        assert out.returncode == 0, out.stderr
        # every bad verdict was asked again once, with the reason it was refused
        retries = [b for b in srv.bodies("judge") if len(b["messages"]) == 4]
        assert len(retries) == len(BAD_VERDICTS)
        assert all("not a valid verdict" in b["messages"][3]["content"] for b in retries)
    data = stored(run_id_of(out.stdout))
    assert len(data["results"]) == len(BAD_VERDICTS)
    for r in data["results"]:
        points = r.scores["score"]["metadata"]["points"]
        assert points[0]["invalid"] is True and points[0]["is_hit"] is None
        assert points[1]["invalid"] is False and points[1]["is_hit"] is False
        # the invalid point is left out: the score is the valid point's, 0 of 1
        assert r.score_value("score") == 0.0
        assert r.scores["score"]["metadata"]["invalid_points"] == 1
    metrics = data["run"]["metrics"]
    assert metrics["invalid_verdicts"] == len(BAD_VERDICTS)
    assert metrics["invalid_judge_votes"] == len(BAD_VERDICTS)
    assert metrics["invalid_judge_replies"] == 2 * len(BAD_VERDICTS)  # each, and its retry
    hello = [p for p in metrics["point_hit_rates"] if p["point"] == "The agent said hello"]
    assert all(p["hits"] == 0 and p["valid"] == 0 and p["invalid"] == 1 for p in hello)


def test_taskweaver_yes_no_and_a_fenced_verdict_are_read(tmp_path):
    folder = tmp_path / "cases"
    write_case(folder, "yes", max_rounds=1)
    write_case(folder, "fence", max_rounds=1)
    replies = {"yes": '{"reason": "said hello", "is_hit": "yes"}',
               "fence": '```json\n{"reason": "did not", "is_hit": false}\n```'}

    def judge(body):
        return next(v for k, v in replies.items() if f"[CASE-{k}]" in body["messages"][1]["content"])

    with ConverseServer(examiner=never_stop, judge=judge) as srv:
        out = run_cli(*converse_args(folder, srv.base_url))
        assert out.returncode == 0, out.stderr
    scores = {r.sample_id: r.score_value("score") for r in stored(run_id_of(out.stdout))["results"]}
    assert scores == {"yes": 1.0, "fence": 0.0}


def test_judge_samples_take_the_majority_and_report_agreement(tmp_path):
    case = write_case(tmp_path / "cases", "vote", max_rounds=1, points=[
        {"score_point": "point A", "weight": 1}, {"score_point": "point B", "weight": 1}])

    def judge(body):  # point A: 2 of 3 votes hit; point B: 1 valid hit, 1 miss, 1 invalid
        seed = body.get("seed", 0)
        if "point A" in body["messages"][1]["content"]:
            return json.dumps({"reason": f"vote {seed}", "is_hit": seed != 2})
        if seed == 2:
            return "maybe"
        return json.dumps({"reason": f"vote {seed}", "is_hit": seed == 0})

    with ConverseServer(examiner=never_stop, judge=judge) as srv:
        out = run_cli(*converse_args(case, srv.base_url, "--judge-samples", "3"))
        assert out.returncode == 0, out.stderr
        seeds = sorted({b.get("seed") for b in srv.bodies("judge")})
        assert seeds == [0, 1, 2]
    data = stored(run_id_of(out.stdout))
    (r,) = data["results"]
    a, b = r.scores["score"]["metadata"]["verdicts"]
    assert (a["is_hit"], a["hits"], a["misses"], a["agreement"]) == (True, 2, 1, 2 / 3)
    assert b["invalid"] is True and "tie" in b["reason"]  # 1 hit, 1 miss: no majority
    assert r.score_value("score") == 1.0  # only point A is judged
    assert data["run"]["metrics"]["invalid_judge_votes"] == 1


def test_case_file_errors_are_one_line_with_file_and_line(tmp_path):
    cases = {
        "unknown": ("version: 1\ntask_description: x\nscoring_points:\n  - score_point: p\n"
                    "    weight: 1\n    eval_cod: assert True\n", 6, "unknown key 'eval_cod'"),
        "weight": ("version: 1\ntask_description: x\nscoring_points:\n  - score_point: p\n"
                   "    weight: -2\n", 5, "weight must be a positive"),
        "nan": ("task_description: x\nscoring_points:\n  - score_point: p\n"
                "    weight: .nan\n", 4, "weight must be a positive"),
        "missing": ("task_description: x\nscoring_points:\n  - score_point: p\n"
                    "data_files:\n  - data.csv\n  - nothere.csv\n", 6, "nothere.csv does not "
                    "exist"),
        "top": ("task_description: x\nscoring_points:\n  - score_point: p\ncolour: red\n", 4,
                "unknown key 'colour'"),
        "pre": ("task_description: x\nscoring_points:\n  - score_point: p\npre_command:\n"
                "  - rm -rf /\n", 4, "pre_command is refused"),
        "dep": ("task_description: x\nscoring_points:\n  - score_point: p\ndependencies:\n"
                "  - pandas=>1\n", 5, "is not a requirement"),
        "code": ("task_description: x\nscoring_points:\n  - score_point: p\n    eval_code: "
                 "'return ('\n", 4, "does not compile"),
        "rounds": ("task_description: x\nscoring_points:\n  - score_point: p\nmax_rounds: 0\n",
                   4, "max_rounds"),
        "dup": ("task_description: x\ntask_description: y\nscoring_points: []\n", 2,
                "given twice"),
    }
    for name, (text, line, words) in cases.items():
        folder = tmp_path / name
        folder.mkdir()
        (folder / "data.csv").write_text("a,b\n1,2\n")
        path = folder / f"{name}.yaml"
        path.write_text(text)
        out = run_cli("run", "converse", "--cases", str(path), "--model", "openai/agent",
                      "--base-url", "http://127.0.0.1:9/v1")
        assert out.returncode == 2, (name, out.stdout, out.stderr)
        lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
        assert len(lines) == 1, (name, out.stderr)
        assert f"{path}:{line}:" in lines[0], (name, lines[0])
        assert words in lines[0], (name, lines[0])
        assert "Traceback" not in out.stderr


def test_dependencies_use_real_version_specifiers(tmp_path):
    installed = metadata.version("pydantic")
    folder = tmp_path / "cases"
    write_case(folder, "eq-met", max_rounds=1, extra={"dependencies": [f"pydantic=={installed}"]})
    write_case(folder, "eq-unmet", max_rounds=1, extra={"dependencies": ["pydantic==0.0.1"]})
    write_case(folder, "absent", max_rounds=1, extra={"dependencies": ["surely-not-installed-pkg"]})
    write_case(folder, "range", max_rounds=1, extra={"dependencies": ["pydantic>=2,<99"]})
    with ConverseServer(examiner=never_stop) as srv:
        out = run_cli(*converse_args(folder, srv.base_url))
        assert out.returncode == 0, out.stderr
        ran = {b["messages"][1]["content"].split("]")[0].removeprefix("[CASE-")
               for b in srv.bodies("agent")}
    assert ran == {"eq-met", "range"}  # an unmet case sends nothing
    errors = {r.sample_id: r.error for r in stored(run_id_of(out.stdout))["results"]}
    assert errors["eq-met"] is None and errors["range"] is None
    assert "pydantic==0.0.1 (installed " in errors["eq-unmet"]
    assert "surely-not-installed-pkg (not installed)" in errors["absent"]


def test_a_same_model_examiner_or_judge_is_warned_about(tmp_path):
    case = write_case(tmp_path / "cases", "same", max_rounds=1)
    with ConverseServer(examiner=stop_after(1)) as srv:
        out = run_cli("run", "converse", "--cases", str(case), "--model", "openai/examiner",
                      "--examiner-model", "openai/examiner", "--judge-model", "openai/judge",
                      "--base-url", srv.base_url, "-q")
    assert "warning: the examiner model is the agent under test" in out.stderr


def test_tool_steps_end_on_an_exact_repeat_and_at_the_step_limit(tmp_path):
    from assay.tasks.converse.loop import MAX_STEPS

    folder = tmp_path / "cases"
    (folder / "data").mkdir(parents=True)
    (folder / "data" / "a.txt").write_text("alpha")
    for name in ("repeat", "vary"):
        write_case(folder, name, max_rounds=1, extra={"data_files": ["data/a.txt"]})

    def agent(body):
        steps = sum(1 for m in body["messages"] if m["role"] == "tool")
        if "[CASE-repeat]" in body["messages"][1]["content"]:
            return {"tool_calls": [{"name": "list_files", "arguments": {}}]}
        return {"tool_calls": [{"name": "read_file", "arguments": {"path": f"f{steps}.txt"}}]}

    with ConverseServer(agent=agent, examiner=never_stop) as srv:
        out = run_cli(*converse_args(folder, srv.base_url))
        assert out.returncode == 0, out.stderr
        bodies = srv.bodies("agent")
        assert all(b["tools"] and b["tool_choice"] == "auto" for b in bodies)
        per_case = {k: sum(1 for b in bodies if f"[CASE-{k}]" in b["messages"][1]["content"])
                    for k in ("repeat", "vary")}
    assert per_case == {"repeat": 2, "vary": MAX_STEPS}
    convs = {r.sample_id: r.outcome["metadata"]["conversation"]
             for r in stored(run_id_of(out.stdout))["results"]}
    assert convs["repeat"]["repeat_stops"] == 1 and convs["repeat"]["tool_calls"] == 1
    assert convs["vary"]["step_limit_turns"] == 1
    assert convs["vary"]["tool_calls"] == MAX_STEPS


def test_a_raw_line_break_inside_a_json_string_is_read_and_truncation_is_not():
    from assay.tasks.converse.examiner import parse_examiner
    from assay.tasks.converse.judge import parse_verdict

    turn, why = parse_examiner('{"message": "line one\nline two", "task_finished": false}')
    assert why is None and turn.message == "line one\nline two"
    verdict, why = parse_verdict('{"reason": "it said\nhello", "is_hit": true}')
    assert why is None and verdict.is_hit is True
    assert parse_examiner('{"message": "line one\nline')[0] is None
    assert parse_verdict('{"reason": "it said\nhello", "is_hit": tr')[0] is None
