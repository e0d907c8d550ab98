"""The one tool loop (issue 36) over the real CLI, a real fake OpenAI-compatible server and
the real store: the reason each sample ended (an answer, the step limit, a repeated call),
every call and result in the transcript, the text format for a server without tool calls,
an unknown tool and bad arguments as tool errors, and a malformed agent spec or an unknown
tool as one line before any run."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from assay.testing.fake_server import FakeServer


def run_qa(home: Path, base_url: str, model: str, *extra: str, n: int = 2
           ) -> subprocess.CompletedProcess[str]:
    data = home.parent / "q.jsonl"
    data.write_text("".join(json.dumps({"id": f"q{i}", "question": f"What is {i} + {i}?",
                                        "answer": str(2 * i)}) + "\n" for i in range(n)))
    return subprocess.run(
        [sys.executable, "-m", "assay", "run", "qa", "--data", str(data), "--model", model,
         "--base-url", base_url, "-q", *extra], capture_output=True, text=True, timeout=300,
        cwd=home.parent, env=dict(os.environ, ASSAY_HOME=str(home), OPENAI_API_KEY="k",
                                  COLUMNS="80"))


def samples(home: Path) -> dict[str, dict[str, Any]]:
    con = sqlite3.connect(home / "assay.db")
    rows = con.execute("SELECT sample_id, transcript, outcome, error, output FROM samples"
                       ).fetchall()
    con.close()
    return {sid: {"transcript": json.loads(t), "agent": json.loads(o)["metadata"]["agent"],
                  "calls": json.loads(o).get("tool_calls"), "error": e, "output": out}
            for sid, t, o, e, out in rows}


def tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in body["messages"] if m["role"] == "tool"]


def test_a_calculator_answer_and_every_call_and_result_in_the_transcript(tmp_path: Path) -> None:
    def reply(body: dict[str, Any]) -> Any:
        done = tool_results(body)
        if not done:  # each question asks for the sum: the model calls the calculator
            i = body["messages"][-1]["content"].split("What is ")[1].split(" ")[0]
            return {"tool_calls": [{"name": "calculator", "arguments": {"expression": f"{i}+{i}"}}]}
        return f"Answer: {done[-1]['content'].strip()}"

    home = tmp_path / "home"
    with FakeServer(responder=reply) as server:
        p = run_qa(home, server.base_url, "agent/react?model=openai/m&tools=calculator,think")
        offered = [sorted(t["function"]["name"] for t in b.get("tools") or [])
                   for b in server.requests]
    assert p.returncode == 0, p.stdout + p.stderr
    assert "1.000" in p.stdout  # 2 of 2 right
    assert offered == [["calculator", "think"]] * 4  # the tools on every step, natively
    for s in samples(home).values():
        roles = [m["role"] for m in s["transcript"]]
        assert roles == ["system", "user", "assistant", "tool", "assistant"], roles
        call, result = s["transcript"][2]["tool_calls"][0], s["transcript"][3]
        assert call["name"] == "calculator" and result["tool_call_id"] == call["id"]
        assert s["agent"] == {"ended": "answer", "steps": 2, "tool_calls": 1,
                              "tools": {"calculator": 1}, "tool_errors": 0}


def test_the_step_and_repeat_limits_end_samples_with_their_reasons(tmp_path: Path) -> None:
    def reply(body: dict[str, Any]) -> Any:
        n = len(tool_results(body))
        if "q0" in json.dumps(body["messages"]) or "0 + 0" in body["messages"][1]["content"]:
            return {"tool_calls": [{"name": "think", "arguments": {"thought": "again"}}]}
        return {"tool_calls": [{"name": "think", "arguments": {"thought": f"step {n}"}}]}

    home = tmp_path / "home"
    with FakeServer(responder=reply) as server:
        p = run_qa(home, server.base_url,
                   "agent/react?model=openai/m&tools=think&max_steps=5&max_repeats=3")
    assert p.returncode == 0, p.stdout + p.stderr
    got = samples(home)
    # q0 calls think with the same thought each time: ended at the third, not run
    assert got["q0"]["agent"]["ended"] == "repeated_call"
    assert got["q0"]["agent"]["steps"] == 3 and got["q0"]["agent"]["tools"] == {"think": 2}
    # q1 thinks something new each time: the step limit ends it after 5 model calls
    assert got["q1"]["agent"]["ended"] == "max_steps" and got["q1"]["agent"]["steps"] == 5
    # neither is an error: a sample the agent did not finish is wrong, and says why
    assert got["q0"]["error"] is None and got["q1"]["error"] is None
    metrics = json.loads(sqlite3.connect(home / "assay.db").execute(
        "SELECT metrics FROM runs").fetchone()[0])
    assert metrics["agent"]["ended"] == {"repeated_call": 1, "max_steps": 1}


def test_the_text_format_and_tool_errors_go_back_to_the_model(tmp_path: Path) -> None:
    def reply(body: dict[str, Any]) -> Any:
        assert "tools" not in body  # the text format: tools described in the system message
        assert "<tool_call>" in body["messages"][0]["content"]
        results = [m["content"] for m in body["messages"] if m["role"] == "user"
                   and m["content"].startswith("<tool_result")]
        if not results:
            return ('<tool_call>{"name": "nosuch", "arguments": {}}</tool_call>\n'
                    '<tool_call>{"name": "calculator", "arguments": {"expression": "2+"}}'
                    '</tool_call>\n<tool_call>not json</tool_call>')
        if len(results) == 3:
            return '<tool_call>{"name": "calculator", "arguments": {"expression": "1+1"}}</tool_call>'
        return "Answer: " + results[-1].split("\n")[1]

    home = tmp_path / "home"
    with FakeServer(responder=reply) as server:
        p = run_qa(home, server.base_url,
                   "agent/react?model=openai/m&tools=calculator&tool_format=text", n=1)
    assert p.returncode == 0, p.stdout + p.stderr
    (s,) = samples(home).values()
    results = [m["content"] for m in s["transcript"] if m["role"] == "user"][1:]
    assert results[0].startswith('<tool_result name="?">\nerror: tool call 3 is not JSON')
    assert "error: no tool 'nosuch'; the tools are calculator" in results[1]
    assert '<tool_result name="calculator">\nerror:' in results[2]
    assert s["agent"]["tool_errors"] == 3 and s["agent"]["ended"] == "answer"
    assert s["output"] == "Answer: 2"


def test_a_bad_agent_or_tool_is_one_line_before_any_run(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with FakeServer(default_reply="Answer: 0") as server:
        for model, extra, said in (
                ("agent/react?model=openai/m&tools=shell", (), "unknown tool 'shell'"),
                ("agent/react?tools=python", (), "name the model the agent drives"),
                ("agent/planner?model=openai/m", (), "unknown agent 'planner'"),
                ("agent/react?model=openai/m&max_steps=0", (), "max_steps must be above 0"),
                ("openai/m", ("--tools", "python"), "--tools is for an agent: add --agent"),
                ("openai/m", ("--agent", "react", "--tools", "search"),
                 "the search tool needs --search-corpus DIR")):
            p = run_qa(home, server.base_url, model, *extra)
            assert p.returncode == 2, (model, p.stdout, p.stderr)
            lines = p.stderr.strip().splitlines()
            assert len(lines) == 1 and said in lines[0], (model, p.stderr)
        assert server.requests == []
    assert not (home / "assay.db").exists() or sqlite3.connect(home / "assay.db").execute(
        "SELECT COUNT(*) FROM runs").fetchone() == (0,)


def test_an_mcp_servers_tools_are_offered_called_and_the_server_stopped(
        tmp_path: Path) -> None:
    server_py = Path(__file__).resolve().parent / "mcp_server.py"
    pid_file = tmp_path / "mcp.pid"

    def reply(body: dict[str, Any]) -> Any:
        done = tool_results(body)
        if not done:
            return {"tool_calls": [{"name": "add", "arguments": {"a": 2, "b": 3}},
                                   {"name": "lookup", "arguments": {"key": "zzz"}}]}
        return f"Answer: {done[0]['content'].strip()}"

    home = tmp_path / "home"
    secret = "ghp_" + "0123456789abcdef" * 2
    os.environ["ASSAY_TEST_PID_DIR"] = str(tmp_path)
    try:  # $NAME read when the server starts; a literal credential masked in the store
        with FakeServer(responder=reply) as server:
            p = run_qa(home, server.base_url, "openai/m", "--agent", "react", "--tools",
                       "think", "--mcp", f"env GITHUB_TOKEN={secret} {sys.executable} "
                       f"{server_py} $ASSAY_TEST_PID_DIR/mcp.pid", n=1)
            offered = sorted(t["function"]["name"] for t in server.requests[0]["tools"])
    finally:
        del os.environ["ASSAY_TEST_PID_DIR"]
    assert p.returncode == 0, p.stdout + p.stderr
    stored = (home / "assay.db").read_bytes()
    assert secret.encode() not in stored and b"$ASSAY_TEST_PID_DIR" in stored
    assert offered == ["add", "lookup", "think"]
    (s,) = samples(home).values()
    results = [m["content"] for m in s["transcript"] if m["role"] == "tool"]
    assert results[0] == "5"
    assert results[1].startswith("error:") and "no entry for 'zzz'" in results[1]
    assert s["agent"]["tool_errors"] == 1 and s["output"] == "Answer: 5"
    pid = int(pid_file.read_text())
    for _ in range(1200):  # stopped when the sample ended; reaped within 60 s on a busy box
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        raise AssertionError(f"the MCP server (pid {pid}) is still running after the run")


def test_an_mcp_server_that_does_not_start_is_one_line_before_the_run(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with FakeServer(default_reply="Answer: 0") as server:
        p = run_qa(home, server.base_url, "openai/m", "--agent", "react", "--mcp",
                   f"{sys.executable} -c 'raise SystemExit(3)'", n=1)
        asked = list(server.requests)
    assert p.returncode == 2, p.stdout + p.stderr
    lines = p.stderr.strip().splitlines()
    assert "did not start" in lines[0] and "MCP server" in lines[0], p.stderr
    assert asked == [] or all("tools" not in b for b in asked)  # no sample ran
    assert not (home / "assay.db").exists() or sqlite3.connect(home / "assay.db").execute(
        "SELECT COUNT(*) FROM samples").fetchone() == (0,)
