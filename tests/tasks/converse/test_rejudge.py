"""``assay score RUN [--judge-model M]`` on a converse run: the judge grades at scoring time.

A run's outcome holds the conversation, the agent's transcript and its working folder; the
score judges. So a stored run is judged again by another judge with no call to the agent
or the examiner (the second fake server sees only the new judge), its eval_code points run
again from the stored folder alone (the real one is long gone), the same judge answers from
the response cache (zero requests), and a run stored before this change (verdicts in the
outcome) reports the same numbers and is scored again as it was.

Every run goes through the real CLI in a subprocess, over real HTTP to fake servers
(:mod:`convfakes`), into the real SQLite store of the test's own ``ASSAY_HOME``.
"""

from __future__ import annotations

import copy
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from convfakes import (
    WEAK_ARGS,
    ConverseServer,
    role_urls,
    run_cli,
    run_id_of,
    stop_after,
    stored,
    write_case,
)

from assay.core.types import SampleResult
from assay.tasks.converse.task import ConverseTask

BLOB = bytes(range(256))  # not UTF-8: stored as base64
POINTS = [
    {"score_point": "alpha point", "weight": 2},
    {"score_point": "beta point", "weight": 1},
    {"score_point": "gamma point", "weight": 1},
    {"score_point": "the agent wrote 42 to answer.txt", "weight": 1,
     "eval_code": 'assert Path("answer.txt").read_text() == "42", "no 42"'},
    {"score_point": "the data file is intact", "weight": 1,
     "eval_code": "assert Path('blob.bin').read_bytes() == bytes(range(256)), 'changed'"},
]


def statement_of(body: dict[str, Any]) -> str:
    """The scoring point a judge request asks about."""
    return body["messages"][1]["content"].rsplit("The statement:\n<<<\n", 1)[1].split(
        "\n>>>", 1)[0]


def judge_a(body: dict[str, Any]) -> str:
    """alpha: hit; beta: miss; gamma: never a verdict (invalid after its retry)."""
    point = statement_of(body)
    if point == "gamma point":
        return "Yes, I think so."
    return json.dumps({"reason": f"a: {point}", "is_hit": point == "alpha point"})


def judge_b(body: dict[str, Any]) -> str:
    """Disagrees with judge-a on beta (a hit) and answers gamma (a miss)."""
    point = statement_of(body)
    return json.dumps({"reason": f"b: {point}", "is_hit": point != "gamma point"})


def tool_agent(body: dict[str, Any]) -> Any:
    """Writes answer.txt with its file tool, then says so."""
    if not any(m["role"] == "tool" for m in body["messages"]):
        return {"tool_calls": [{"name": "write_file",
                                "arguments": {"path": "answer.txt", "content": "42"}}]}
    return "I wrote 42 to answer.txt"


def judge_server(judges: dict[str, Any]) -> ConverseServer:
    """A fake server that plays only the given judges (any other model is an error)."""
    srv = ConverseServer()
    srv.roles = dict(judges)
    return srv


def make_case(tmp_path: Path) -> Path:
    folder = tmp_path / "cases"
    folder.mkdir(parents=True)
    (folder / "blob.bin").write_bytes(BLOB)
    return write_case(folder, "rj", max_rounds=2, points=POINTS,
                      extra={"data_files": ["blob.bin"]})


def first_run(case: Path, srv: ConverseServer, *extra: str) -> str:
    """``run converse`` judged by ``openai/judge-a``; the run id."""
    out = run_cli("run", "converse", "--cases", str(case), "--model", "openai/agent",
                  "--examiner-model", "openai/examiner", "--judge-model", "openai/judge-a",
                  "--base-url", srv.base_url, *role_urls(srv.base_url), "-q", *WEAK_ARGS,
                  *extra)
    assert out.returncode == 0, out.stderr
    return run_id_of(out.stdout)


def score_cli(run_id: str, *extra: str) -> str:
    """``assay score RUN ...``; the new run's id."""
    out = run_cli("score", run_id, *extra)
    assert out.returncode == 0, out.stderr
    assert "no call to the model under test" in out.stdout
    return run_id_of(out.stdout)


def verdicts(run_id: str) -> list[tuple[str, bool | None, bool, str]]:
    (r,) = stored(run_id)["results"]
    assert r.error is None, r.error
    return [(p["point"], p["is_hit"], p["invalid"], p["reason"])
            for p in r.scores["score"]["metadata"]["points"]]


def the_result(run_id: str) -> SampleResult:
    (r,) = stored(run_id)["results"]
    return r


A_ROWS = [("alpha point", True, False, "a: alpha point"),
          ("beta point", False, False, "a: beta point")]


def test_another_judge_rejudges_a_stored_run_and_the_same_judge_answers_from_the_cache(
        tmp_path: Path) -> None:
    case = make_case(tmp_path)
    srv_a = ConverseServer(agent=tool_agent, examiner=stop_after(1))
    srv_a.roles["judge-a"] = judge_a
    with srv_a:
        run_id = first_run(case, srv_a)
        after_run = list(srv_a.requests)
        assert {b["model"] for b in after_run} == {"agent", "examiner", "judge-a"}
        original = the_result(run_id)
        rows = verdicts(run_id)
        assert rows[:2] == A_ROWS
        assert rows[2][1:3] == (None, True)  # gamma: invalid, never scored
        assert [r[1] for r in rows[3:]] == [True, True], rows
        assert original.score_value("score") == pytest.approx(4 / 5)
        meta = original.scores["score"]["metadata"]
        assert meta["judge_model"] == "openai/judge-a"
        assert meta["judge_usage"]["calls"] == 4  # alpha, beta, gamma and its retry
        # the solve stored what scoring needs, and no verdict
        outcome = original.outcome["metadata"]
        assert "points" not in outcome and "judge_model" not in outcome
        kept = {f["path"]: f for f in outcome["workdir"]["files"]}
        assert kept["answer.txt"]["text"] == "42" and "base64" in kept["blob.bin"]

        # (b) judge-b, on a server of its own: only judge-b is asked, and beta flips
        with judge_server({"judge-b": judge_b}) as srv_b:
            rejudged = score_cli(run_id, "--judge-model", "openai/judge-b", "-T",
                                 f"judge_base_url={srv_b.base_url}")
            asked = list(srv_b.requests)
        assert srv_a.requests == after_run  # nothing went to the first server
        # (a) judge requests only, each with judge-b: no agent, no examiner
        assert [b["model"] for b in asked] == ["judge-b"] * 3
        assert sorted(statement_of(b) for b in asked) == ["alpha point", "beta point",
                                                          "gamma point"]
        assert verdicts(rejudged)[:3] == [
            ("alpha point", True, False, "b: alpha point"),
            ("beta point", True, False, "b: beta point"),
            ("gamma point", False, False, "b: gamma point")]
        again = the_result(rejudged)
        # eval_code ran again, in the sandbox, from the stored working folder alone
        code = again.scores["score"]["metadata"]["verdicts"][3:]
        assert [(v["kind"], v["is_hit"]) for v in code] == [("code", True), ("code", True)]
        assert all(v.get("isolation") and not v.get("stored_verdict") for v in code)
        assert again.score_value("score") == pytest.approx(5 / 6)
        assert again.score_value("passed") == 0.0
        assert again.scores["score"]["metadata"]["judge_model"] == "openai/judge-b"
        metrics = stored(rejudged)["run"]["metrics"]
        assert metrics["judge_models"] == ["openai/judge-b"]
        # the re-scoring paid for judge-b's calls alone (self-hosted here: $0), as counted
        paid = stored(rejudged)["run"]["stats"]["cost"]
        assert list(paid["roles"]) == ["judge"] and paid["usd"] == 0.0
        assert paid["roles"]["judge"]["input_tokens"] == sum(
            u["prompt_tokens"] for u in srv_b.usages)
        assert metrics["invalid_judge_votes"] == 0
        assert stored(run_id)["run"]["metrics"]["invalid_judge_votes"] == 1

        # (c) the original judge again: every reply from the run's cache
        same = score_cli(run_id)
        assert srv_a.requests == after_run, "the same judge was asked again"
        assert verdicts(same) == rows
        assert the_result(same).scores["score"]["metadata"]["judge_usage"]["cache_hits"] == 4


def test_the_same_judge_with_votes_and_a_seed_answers_from_the_cache(tmp_path: Path) -> None:
    """Three votes per point are seeded from the run's seed: the same seeds again."""
    case = write_case(tmp_path / "cases", "seeded", max_rounds=1, points=POINTS[:2])
    srv = ConverseServer(examiner=stop_after(1))
    srv.roles["judge-a"] = lambda body: json.dumps(
        {"reason": f"seed {body.get('seed')}", "is_hit": body.get("seed") != 9})
    with srv:
        run_id = first_run(case, srv, "--seed", "7", "--judge-samples", "3")
        before = list(srv.requests)
        assert sorted({b.get("seed") for b in before if b["model"] == "judge-a"}) == [7, 8, 9]
        again = score_cli(run_id)
        assert srv.requests == before, "the same judge was asked again"
    assert verdicts(again) == verdicts(run_id)


# -- a run stored before scoring judged ----------------------------------------------------


def old_style(r: SampleResult) -> SampleResult:
    """The result as the previous code stored it: every verdict, the judge's model and its
    usage in the outcome's metadata, no working folder; the score's rows alone."""
    old = copy.deepcopy(r)
    score_meta = old.scores["score"]["metadata"]
    meta = old.outcome["metadata"]
    meta["points"] = score_meta.pop("verdicts")
    meta["judge_model"] = score_meta.pop("judge_model")
    meta["usage"]["judge"] = score_meta.pop("judge_usage")
    meta.pop("workdir")
    return old


def store_old_style(run_id: str, workspace: Path) -> None:
    """Rewrite the stored run as the previous code would have stored it."""
    (r,) = stored(run_id)["results"]
    old = old_style(r)
    with sqlite3.connect(workspace / "assay.db") as db:
        n = db.execute("UPDATE samples SET scores = ?, outcome = ? WHERE run_id = ?",
                       (json.dumps(old.scores), json.dumps(old.outcome), run_id)).rowcount
    assert n == 1


def test_a_run_stored_before_scoring_judged_reports_and_rescores_the_same(
        tmp_path: Path, workspace: Path) -> None:
    case = make_case(tmp_path)
    srv_a = ConverseServer(agent=tool_agent, examiner=stop_after(1))
    srv_a.roles["judge-a"] = judge_a
    with srv_a:
        run_id = first_run(case, srv_a)
        data = stored(run_id)
        options = data["run"]["spec"]["task_options"]
        new = data["results"]
        old = [old_style(r) for r in new]
        assert "verdicts" not in old[0].scores["score"]["metadata"]
        # the same metrics and report from where the old run kept its judging
        metrics = ConverseTask.metrics(new, options)
        assert ConverseTask.metrics(old, options) == metrics
        assert metrics["invalid_judge_votes"] == 1 and metrics["invalid_judge_replies"] == 2
        assert metrics["tokens"]["judge"]["input"] > 0
        assert metrics["eval_code_isolation"] in ("bwrap", "weak")
        assert metrics["judge_models"] == ["openai/judge-a"]
        assert ConverseTask.report_extra(metrics, old) == ConverseTask.report_extra(metrics, new)

        # the stored run made old-style: scored again as it was, with no request
        store_old_style(run_id, workspace)
        before = list(srv_a.requests)
        rows = verdicts(run_id)
        same = score_cli(run_id)
        assert srv_a.requests == before
        assert verdicts(same) == rows
        code = the_result(same).scores["score"]["metadata"]["verdicts"][3:]
        assert all(v["stored_verdict"] for v in code)  # its folder was never stored
        assert stored(same)["run"]["metrics"]["point_hit_rates"] == metrics["point_hit_rates"]

        # and judged again by judge-b: beta flips, the code verdicts are kept
        with judge_server({"judge-b": judge_b}) as srv_b:
            rejudged = score_cli(run_id, "--judge-model", "openai/judge-b", "-T",
                                 f"judge_base_url={srv_b.base_url}")
            assert [b["model"] for b in srv_b.requests] == ["judge-b"] * 3
        assert srv_a.requests == before
        assert [r[:2] for r in verdicts(rejudged)] == [
            ("alpha point", True), ("beta point", True), ("gamma point", False),
            (POINTS[3]["score_point"], True), (POINTS[4]["score_point"], True)]


def test_a_jury_of_two_judges_votes_on_every_point(tmp_path: Path) -> None:
    """``--judge-model`` repeated: both judges grade every LLM point (roles ``judge`` and
    ``judge_2``); the pooled majority decides, a split is invalid, agreement is kept."""
    case = make_case(tmp_path)
    srv = ConverseServer(agent=tool_agent, examiner=stop_after(1))
    srv.roles.update({"judge-a": judge_a, "judge-b": judge_b})
    with srv:
        run_id = first_run(case, srv, "--judge-model", "openai/judge-b")
        judged = [b["model"] for b in srv.requests if b["model"].startswith("judge")]
    # alpha, beta, gamma by each judge, and judge-a's retry on gamma
    assert sorted(judged) == ["judge-a"] * 4 + ["judge-b"] * 3
    r = the_result(run_id)
    meta = r.scores["score"]["metadata"]
    assert meta["judge_models"] == ["openai/judge-a", "openai/judge-b"]
    alpha, beta, gamma = meta["verdicts"][:3]
    assert (alpha["is_hit"], alpha["agreement"]) == (True, 1.0)
    assert beta["invalid"] and beta["reason"].startswith("invalid: a tie (1 hit, 1 miss)")
    assert (gamma["is_hit"], gamma["valid_votes"]) == (False, 1)  # judge-a's vote invalid
    assert [v["judge"] for v in alpha["votes"]] == ["openai/judge-a", "openai/judge-b"]
    # alpha (2) hit, gamma (1) missed, beta left out; both eval_code points hit
    assert r.score_value("score") == pytest.approx(4 / 5)
    assert stored(run_id)["run"]["metrics"]["judge_models"] == ["openai/judge-a",
                                                               "openai/judge-b"]
