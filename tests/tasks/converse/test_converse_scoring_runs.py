"""``assay run converse`` end to end, continued: rescoring, the report, and eval_code
without bubblewrap (see :mod:`test_converse_runs` for the rest, :mod:`test_rejudge` for
judging a stored run again).

Every run goes through the real CLI in a subprocess, over real HTTP to the fake server that
plays the agent, the examiner and the judge (:mod:`convfakes`), into the real SQLite store of
the test's own ``ASSAY_HOME``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from convfakes import (
    ConverseServer,
    converse_args,
    run_cli,
    run_id_of,
    stop_after,
    stored,
    write_case,
)

XSS_SCRIPT = "<script>alert(1)</script>"
XSS_IMG = "<img src=x onerror=alert(1)>"


def statement_of(body: dict[str, Any]) -> str:
    """The scoring point a judge request asks about."""
    return body["messages"][1]["content"].rsplit("The statement:\n<<<\n", 1)[1].split(
        "\n>>>", 1)[0]


# -- 6. rescoring: no new model call, the same verdicts, another threshold ---------------


def test_rescoring_makes_no_model_call_and_a_lower_threshold_passes_a_partial_case(
        tmp_path: Path) -> None:
    case = write_case(tmp_path / "cases", "partial", max_rounds=2, points=[
        {"score_point": "alpha point", "weight": 3},
        {"score_point": "beta point", "weight": 2}])

    def judge(body: dict[str, Any]) -> str:
        hit = statement_of(body) == "alpha point"
        return json.dumps({"reason": f"{statement_of(body)}: {'seen' if hit else 'absent'}",
                           "is_hit": hit})

    with ConverseServer(examiner=stop_after(1), judge=judge) as srv:
        # the judge grades at scoring time: 'assay score' asks the same judge again and
        # gets its replies from the run's response cache (a --no-cache run would ask anew)
        out = run_cli(*converse_args(case, srv.base_url))
        assert out.returncode == 0, out.stderr
        before = srv.stats["requests"]
        assert len(srv.bodies("judge")) == 2
        again = run_cli("score", run_id_of(out.stdout), "-T", "threshold=0.5")
        assert srv.stats["requests"] == before, "rescoring called a model"  # of any role
        assert again.returncode == 0, again.stderr
    # nobody is called: no model under test, and the stored judge answers from the cache
    assert "no call to the model under test; 2 calls to judge openai/judge at " in again.stdout
    assert "(2 answered by the response cache)" in again.stdout
    original = stored(run_id_of(out.stdout))
    rescored = stored(run_id_of(again.stdout))
    assert rescored["run"]["parent_id"] == original["run"]["id"]
    (a,) = original["results"]
    (b,) = rescored["results"]
    assert a.score_value("score") == b.score_value("score") == pytest.approx(0.6)
    assert a.score_value("passed") == 0.0  # the default threshold is 1.0
    assert b.score_value("passed") == 1.0  # 0.6 >= 0.5
    rows_a = a.scores["score"]["metadata"]["points"]
    rows_b = b.scores["score"]["metadata"]["points"]
    assert [(p["point"], p["is_hit"], p["reason"]) for p in rows_a] == [
        ("alpha point", True, "alpha point: seen"), ("beta point", False, "beta point: absent")]
    assert rows_b == rows_a  # the very same verdicts, read from the store
    assert original["run"]["metrics"]["pass_rate"]["value"] == 0.0
    assert rescored["run"]["metrics"]["pass_rate"]["value"] == 1.0
    assert rescored["run"]["metrics"]["threshold"] == 0.5


# -- 7. the report: escaped, and each conversation drawn as a chat -----------------------


def test_the_report_escapes_agent_and_case_markup_and_draws_the_chat(
        tmp_path: Path, workspace: Path) -> None:
    description = f"[CASE-xss] Ask for a greeting. {XSS_SCRIPT} {XSS_IMG}"
    case = write_case(tmp_path / "cases", "xss", max_rounds=2, description=description,
                      points=[{"score_point": "The agent greeted", "weight": 1},
                              {"score_point": "The agent was brief", "weight": 1}])
    reply = f"Hello {XSS_SCRIPT} and {XSS_IMG}"

    def judge(body: dict[str, Any]) -> str:
        hit = statement_of(body) == "The agent greeted"
        return json.dumps({"reason": "it said Hello" if hit else "it rambled on",
                           "is_hit": hit})

    with ConverseServer(examiner=stop_after(1), agent=lambda body: reply, judge=judge) as srv:
        out = run_cli(*converse_args(case, srv.base_url))
        assert out.returncode == 0, out.stderr
    run_id = run_id_of(out.stdout)
    folder = workspace / "runs" / run_id
    html = (folder / "report.html").read_text(encoding="utf-8")
    md = (folder / "report.md").read_text(encoding="utf-8")
    assert "<script>alert(1)" not in html and "<img src=x" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "src=x onerror=alert(1)&gt;" in html
    # Markdown: a backslash before each tag's "<" (inert in a viewer), no entities
    assert "\\<script>alert(1)\\</script>" in md and "\\<img src=x onerror=alert(1)>" in md
    assert "&lt;" not in md and "&gt;" not in md
    # the chat: the examiner's message, the agent's reply, the examiner's close, in order
    start = html.index('<div class="chat">')
    first = html.index("[CASE-xss] more", start)
    answer = html.index("Hello &lt;script&gt;alert(1)&lt;/script&gt;", start)
    close = html.index("(task finished)", start)
    assert start < first < answer < close
    assert html.index('<div class="turn examiner">', start) < first
    assert first < html.index('<div class="turn agent">', start) < answer
    assert answer < html.index('<div class="turn examiner">', answer) < close
    # each point's verdict and reason, after the chat
    greeted = html.index("<td>The agent greeted</td>", close)
    assert html.index("<td>hit</td>", greeted) < html.index("<td>it said Hello</td>", greeted)
    brief = html.index("<td>The agent was brief</td>", close)
    assert html.index("<td>miss</td>", brief) < html.index("<td>it rambled on</td>", brief)
    # the same in Markdown
    md_first = md.index("> **examiner**: [CASE-xss] more")
    md_answer = md.index("> **agent**: Hello \\<script>alert(1)\\</script>")
    md_close = md.index("> **examiner**: (task finished)")
    assert md_first < md_answer < md_close
    assert "| The agent greeted | 1 | hit | it said Hello |" in md[md_close:]
    assert "| The agent was brief | 1 | miss | it rambled on |" in md[md_close:]


# -- 8. eval_code without bubblewrap ------------------------------------------------------


def test_require_sandbox_refuses_without_bubblewrap_and_weak_isolation_is_recorded(
        tmp_path: Path, workspace: Path) -> None:
    nobin = tmp_path / "nobin"  # a PATH with no bwrap (python is run by absolute path)
    nobin.mkdir()
    env = {"PATH": str(nobin)}
    case = write_case(tmp_path / "cases", "code", max_rounds=2, points=[
        {"score_point": "the agent replied", "weight": 1,
         "eval_code": "assert agent_replies and agent_replies[0] == 'reply 1'"}])
    with ConverseServer(examiner=stop_after(1)) as srv:
        refused = run_cli(*converse_args(case, srv.base_url, "--require-sandbox"), env=env)
        # without --allow-weak-sandbox, weak isolation is refused too
        by_default = run_cli(*converse_args(case, srv.base_url), env=env)
        assert srv.stats["requests"] == 0  # refused before any model call
        weak = run_cli(*converse_args(case, srv.base_url, "--allow-weak-sandbox"), env=env)
    for run in (refused, by_default):
        assert run.returncode == 2, (run.stdout, run.stderr)
        lines = [ln for ln in run.stderr.splitlines() if ln.strip()]
        assert len(lines) == 1 and "bubblewrap" in lines[0], run.stderr
        assert "Traceback" not in run.stderr
    assert "apt-get install bubblewrap" in by_default.stderr
    assert "--allow-weak-sandbox" in by_default.stderr
    assert "warning: --allow-weak-sandbox" in weak.stderr  # said on the console

    assert weak.returncode == 0, weak.stderr
    run_id = run_id_of(weak.stdout)
    data = stored(run_id)
    assert data["run"]["status"] == "finished"
    assert data["run"]["dataset"]["sandbox"]["isolation"] == "weak"
    assert "bwrap" in data["run"]["dataset"]["sandbox"]["reason"]
    assert data["run"]["metrics"]["eval_code_isolation"] == "weak"
    (r,) = data["results"]
    (point,) = r.scores["score"]["metadata"]["verdicts"]
    assert point["isolation"] == "weak" and point["is_hit"] is True
    md = (workspace / "runs" / run_id / "report.md").read_text(encoding="utf-8")
    assert "weak isolation" in md
    html = (workspace / "runs" / run_id / "report.html").read_text(encoding="utf-8")
    for text in (md, html):  # every report of the run is marked
        assert "Weak isolation</strong>" in text or "**Weak isolation**" in text
