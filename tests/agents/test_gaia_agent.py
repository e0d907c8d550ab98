"""GAIA as an agent benchmark (issue 36): a scripted model (the fake OpenAI-compatible
server) solves the 10 fixture tasks (xlsx, pdf, csv, docx, json, pptx attachments) through
the reference agent's ``files`` and ``python`` tools, over the real CLI, the real sandbox and
the real store. Its final answer is the last tool result, so a tool that reads nothing right
fails the task; nothing in the script knows an answer."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

from assay.testing.fake_server import FakeServer
from tests.fixtures.gaia_agent.solutions import SOLUTIONS

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "fixtures" / "gaia_agent" / "data"
QUESTIONS = {json.loads(line)["Question"]: json.loads(line)["task_id"] for line in
             (DATA / "2023" / "validation" / "metadata.jsonl").read_text().splitlines()}


def scripted(body: dict[str, Any]) -> Any:
    """The next step of the sample's script; after the last, the last result as the answer
    (a tool that fails or returns nothing: the scripted agent gives up)."""
    messages = body["messages"]
    question = next(m["content"] for m in messages if m["role"] == "user")
    task_id = next(t for q, t in QUESTIONS.items() if q in question)
    results = [m for m in messages if m["role"] == "tool"]
    if any(m["content"].startswith("error:") or len(m["content"].strip()) < 100
           and (not m["content"].strip() or "no text" in m["content"]) for m in results):
        return "A tool failed me.\nFINAL ANSWER: unknown"  # as an agent would give up
    steps = SOLUTIONS[task_id]
    if len(results) < len(steps):
        return {"tool_calls": [steps[len(results)]]}
    last = results[-1]["content"].strip()
    return f"I have it.\nFINAL ANSWER: {last}"


def run_gaia(home: Path, base_url: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "assay", "run", "gaia", "--data-dir", str(DATA), "--model",
         "openai/script", "--base-url", base_url, "-q", *extra], capture_output=True,
        text=True, timeout=600, cwd=home.parent,
        env=dict(os.environ, ASSAY_HOME=str(home), OPENAI_API_KEY="k", COLUMNS="80"))


def test_the_scripted_agent_solves_the_ten_fixture_tasks_through_the_tools(
        tmp_path: Path) -> None:
    home = tmp_path / "home"
    with FakeServer(responder=scripted) as server:
        p = run_gaia(home, server.base_url, "--agent", "react", "--tools", "files,python")
        requests = list(server.requests)
    assert p.returncode == 0, p.stdout + p.stderr
    con = sqlite3.connect(home / "assay.db")
    (model, metrics), = con.execute("SELECT model, metrics FROM runs").fetchall()
    rows = con.execute("SELECT sample_id, scores, outcome, error FROM samples").fetchall()
    con.close()
    metrics, model = json.loads(metrics), json.loads(model)
    assert len(rows) == 10 and all(err is None for *_, err in rows), rows
    wrong = {sid: json.loads(s)["gaia"]["explanation"] for sid, s, _, _ in rows
             if json.loads(s)["gaia"]["value"] != 1.0}
    assert wrong == {}  # 10 of 10
    assert metrics["exact_match_rate"]["value"] == 1.0
    # the run is the model with this agent, and says so
    assert model["agent"]["tools"] == ["files", "python"]
    assert "with the react agent" in model["agent"]["label"]
    # every step went through the model: one call per tool call, and one for the answer
    steps = sum(len(s) for s in SOLUTIONS.values())
    assert len(requests) == steps + 10
    agent = metrics["agent"]
    assert agent["tool_errors"] == 0 and agent["ended"] == {"answer": 10}
    assert agent["calls_per_tool"] == {
        "python": sum(c["name"] == "python" for s in SOLUTIONS.values() for c in s),
        "files": sum(c["name"] == "files" for s in SOLUTIONS.values() for c in s)}
    assert agent["tool_calls_per_sample"]["value"] == steps / 10
    assert agent["tool_calls_minus_annotator_steps"]["n"] == 10
    # each sample's outcome: its own tool calls and why it ended
    for _, _, outcome, _ in rows:
        loop = json.loads(outcome)["metadata"]["agent"]
        assert loop["ended"] == "answer" and loop["steps"] == loop["tool_calls"] + 1
    report = next((home / "runs").iterdir()) / "report.md"
    text = report.read_text()
    assert "**With an agent**" in text and "## Agent" in text
    assert "tool-less" not in text


def test_without_an_agent_gaia_says_it_ran_without_tools(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with FakeServer(default_reply="FINAL ANSWER: 3") as server:
        p = run_gaia(home, server.base_url, "--limit", "2")
        requests = list(server.requests)
    assert p.returncode == 0, p.stdout + p.stderr
    assert all("tools" not in body for body in requests)  # asked once, no tools offered
    report = next((home / "runs").iterdir()) / "report.md"
    assert "## No tools (GAIA's tool-less mode)" in report.read_text()
