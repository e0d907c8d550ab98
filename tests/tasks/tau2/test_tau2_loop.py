"""τ²-bench runs through the real CLI against a real HTTP server (the fake OpenAI server)
that plays a scripted agent and user: the official runner drives them, the official
evaluator scores the stored simulation, into the real SQLite store of the test's own home.

1. A gold replay (:mod:`replay`) earns reward 1.0 on airline, retail and telecom tasks (and
   on 8 of mock's 9: its update_task_with_history_and_env_assertions gold actions leave its
   assertion unmet, which the official evaluator says too); in telecom the user simulator's
   own tool calls change the user's device, which the task's assertions read.
2. The official limits end a simulation with their termination reasons: the step limit, and
   the error limit for an agent that calls a tool the domain has not.
3. ``assay score RUN`` scores the stored simulations again with no call to the agent or user;
   ``--judge-model`` brings the judge for NL assertions, and only the judge is asked.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from replay import AGENT, USER, GoldReplay

from assay.core import workers
from assay.store import Store
from assay.tasks.tau2 import worker
from assay.testing.fake_server import FakeServer


def cli(*args: str, base_url: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": base_url}
    return subprocess.run([sys.executable, "-m", "assay", *args], capture_output=True,
                          text=True, timeout=900, env=env)


def tasks_of(root: Path, domain: str, split: str) -> list[dict[str, Any]]:
    return workers.run_bounded(worker.kind_for(root), worker.load_tasks, worker.setup(root), domain,
                               split, timeout=300)


def results(run_id: str) -> list[Any]:
    store = Store()
    try:
        return sorted(store.results(run_id), key=lambda r: (r.epoch, r.sample_id))
    finally:
        store.close()


def run_tau2(root: Path, srv: FakeServer, domain: str, *extra: str) -> str:
    """A run, one sample at a time and uncached (a replay is a script: tasks with the same
    scenario send the same first requests)."""
    done = cli("run", "tau2", "--domain", domain, "--tau2-dir", str(root), "--model",
               f"openai/{AGENT}", "--user-model", f"openai/{USER}", "--max-connections", "1",
               "--no-cache", "-q", *extra, base_url=srv.base_url)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.split()[1]


@pytest.fixture
def server() -> Iterator[FakeServer]:
    srv = FakeServer()
    srv.start()
    try:
        yield srv
    finally:
        srv.stop()


@pytest.mark.parametrize(("domain", "split", "limit", "successes"), [
    ("mock", "base", 9, 8), ("airline", "base", 3, 3), ("retail", "base", 3, 3),
    ("telecom", "small", 3, 3)])
def test_a_gold_replay_earns_the_full_reward(tau2_root: Path, server: FakeServer, domain: str,
                                             split: str, limit: int, successes: int) -> None:
    tasks = tasks_of(tau2_root, domain, split)
    if domain == "telecom":  # tasks where the user must act on the phone
        tasks = [t for t in tasks if any(a.get("requestor") == "user" for a in
                                         t["evaluation_criteria"]["actions"] or [])]
    tasks = tasks[:limit]
    server.responder = GoldReplay(tasks)
    run_id = run_tau2(tau2_root, server, domain, "--split", split, "--sample-ids",
                      ",".join(t["id"] for t in tasks))
    rows = results(run_id)
    assert [r.error for r in rows] == [None] * limit
    assert sum(r.score_value("success") for r in rows) == successes
    for r in rows:
        meta = r.scores["reward"]["metadata"]
        assert meta["user_model"] == f"openai/{USER}"
        assert meta["termination_reason"] == "user_stop"
        assert r.outcome["role_usage"]["user"]["calls"] >= 1
    if domain == "telecom":  # the user's own tools ran on the user's device
        for r in rows:
            sim = r.outcome["metadata"]["simulation"]
            user_calls = [c for m in sim["messages"] if m["role"] == "user"
                          for c in m.get("tool_calls") or []]
            user_results = [m for m in sim["messages"]
                            if m["role"] == "tool" and m.get("requestor") == "user"]
            assert user_calls and len(user_results) == len(user_calls)
            info = r.scores["reward"]["metadata"]["reward_info"]
            assert info["env_assertions"] and all(a["met"] for a in info["env_assertions"])


def test_the_official_limits_end_a_simulation_with_their_reasons(
        tau2_root: Path, server: FakeServer) -> None:
    def looping(body: dict[str, Any]) -> dict[str, Any]:
        if body["model"] == USER:
            return {"content": "Please go on."}
        return {"tool_calls": [{"name": "get_users", "arguments": {}}]}

    server.responder = looping
    steps = run_tau2(tau2_root, server, "mock", "--limit", "1", "--max-steps", "6")

    def erring(body: dict[str, Any]) -> dict[str, Any]:
        if body["model"] == USER:
            return {"content": "Please go on."}
        return {"tool_calls": [{"name": "no_such_tool", "arguments": {"x": 1}}]}

    server.responder = erring
    errors = run_tau2(tau2_root, server, "mock", "--limit", "1", "--max-errors", "3")
    for run_id, reason in ((steps, "max_steps"), (errors, "too_many_errors")):
        (r,) = results(run_id)
        assert r.error is None and r.score_value("reward") == 0.0
        assert r.scores["reward"]["metadata"]["termination_reason"] == reason
        assert reason in r.scores["reward"]["explanation"]
    (r,) = results(errors)
    tool_replies = [m for m in r.outcome["metadata"]["simulation"]["messages"]
                    if m["role"] == "tool"]
    assert tool_replies and all(m["error"] for m in tool_replies)
    assert "no_such_tool" in tool_replies[0]["content"]  # the official error text


def test_score_again_asks_neither_the_agent_nor_the_user(tau2_root: Path,
                                                         server: FakeServer) -> None:
    tasks = tasks_of(tau2_root, "mock", "base")[:3]
    server.responder = GoldReplay(tasks)
    run_id = run_tau2(tau2_root, server, "mock", "--limit", "3")
    asked = len(server.requests)
    again = cli("score", run_id, base_url=server.base_url)
    assert again.returncode == 0, again.stderr[-2000:]
    assert len(server.requests) == asked
    first = [r.score_value("reward") for r in results(run_id)]
    assert first == [r.score_value("reward") for r in results(again.stdout.split()[1])]

    def judge(body: dict[str, Any]) -> dict[str, Any]:
        assert body["model"] == "judge-model"
        return {"content": json.dumps({"results": [{
            "expectedOutcome": "the task was created", "reasoning": "it was",
            "metExpectation": True}]})}

    server.responder = judge
    judged = cli("score", run_id, "--judge-model", "openai/judge-model", "-T",
                 f"judge_base_url={server.base_url}", base_url=server.base_url)
    assert judged.returncode == 0, judged.stderr[-2000:]
    assert {b["model"] for b in server.requests[asked:]} == {"judge-model"}
    rescored = results(judged.stdout.split()[1])
    with_nl = [t["id"] for t in tasks if (t.get("evaluation_criteria") or {}).get(
        "nl_assertions")]
    assert with_nl and len(server.requests) - asked == len(with_nl)  # one call per task
    for r in rescored:
        meta = r.scores["reward"]["metadata"]
        checks = meta["reward_info"]["nl_assertions"]
        if r.sample_id in with_nl:
            assert checks == [{"nl_assertion": "the task was created", "met": True,
                               "justification": "it was"}]
            assert meta["judge_model"] == "openai/judge-model"
        else:
            assert not checks
        assert r.score_value("reward") == first[rescored.index(r)]


def test_official_results_files_score_as_the_run_did(tau2_root: Path, server: FakeServer,
                                                     workspace: Path, tmp_path: Path) -> None:
    """The run's export (``tau2_results.json``, the official format) scored by ``assay tau2
    score`` with the official evaluator gives the stored rewards; a file that is not one
    is one line."""
    tasks = tasks_of(tau2_root, "mock", "base")
    server.responder = GoldReplay(tasks)
    run_id = run_tau2(tau2_root, server, "mock")
    exported = workspace / "runs" / run_id / "tau2_results.json"
    verdicts = tmp_path / "verdicts.jsonl"
    scored = cli("tau2", "score", "--results", str(exported), "--tau2-dir", str(tau2_root),
                 "--output", str(verdicts), base_url=server.base_url)
    assert scored.returncode == 0, scored.stderr[-2000:]
    assert scored.stdout.startswith("9 simulations · mean reward 0.889 · success 8/9")
    rows = [json.loads(line) for line in verdicts.read_text().splitlines()]
    stored = {r.sample_id: r.score_value("reward") for r in results(run_id)}
    assert {r["task_id"]: r["reward"] for r in rows} == stored
    assert all(r["termination_reason"] == "user_stop" for r in rows)
    bad = tmp_path / "bad.json"
    bad.write_text('{"info": {}, "tasks": []', encoding="utf-8")
    refused = cli("tau2", "score", "--results", str(bad), "--tau2-dir", str(tau2_root),
                  base_url=server.base_url)
    assert refused.returncode != 0
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1 and "is not a τ²-bench results file" in lines[0], refused.stderr


def test_on_ray_the_same_trials_earn_the_same_rewards(tau2_root: Path,
                                                      server: FakeServer) -> None:
    """``--executor ray``: the trials run in the cluster's actors (each with its worker
    process) and earn what they earn in this process."""
    tasks = tasks_of(tau2_root, "mock", "base")
    server.responder = GoldReplay(tasks)
    local = run_tau2(tau2_root, server, "mock")
    server.responder = GoldReplay(tasks)
    on_ray = run_tau2(tau2_root, server, "mock", "--executor", "ray", "--workers", "1")
    rewards = [{r.sample_id: r.score_value("reward") for r in results(run_id)}
               for run_id in (local, on_ray)]
    assert rewards[0] == rewards[1] and sum(rewards[1].values()) == 8


AGENT_MODULE = '''
import json, os
from assay.core.types import Message, ToolCall

class Agent:
    """Records what it is given; calls one tool, then says it is done."""
    def __init__(self):
        self.turns = 0

    def generate(self, messages, tools=None, **params):
        self.turns += 1
        with open(os.environ["TAU2_AGENT_LOG"], "a") as f:
            f.write(json.dumps({"system": messages[0].content, "roles": [m.role for m in messages],
                                "tools": [t.name for t in tools or []]}) + "\\n")
        if self.turns == 1:
            return Message("assistant", None, [ToolCall("get_users", {}, "call_1")])
        return Message("assistant", "Done.")

def make():
    return Agent()
'''


def test_a_python_agent_gets_the_policy_and_the_domain_tools(
        tau2_root: Path, server: FakeServer, tmp_path: Path) -> None:
    (tmp_path / "tau2_agent.py").write_text(AGENT_MODULE, encoding="utf-8")
    log = tmp_path / "log.jsonl"
    server.responder = lambda body: {"content": "###STOP###" if body["messages"][-1][
        "content"] == "Done." else "I need to create a task."}
    env = {**os.environ, "OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": server.base_url,
           "TAU2_AGENT_LOG": str(log), "PYTHONPATH": os.pathsep.join(
               [str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, "-m", "assay", "run", "tau2", "--domain", "mock", "--tau2-dir",
         str(tau2_root), "--model", "python/tau2_agent:make", "--user-model",
         f"openai/{USER}", "--limit", "1", "--epochs", "2", "--no-cache", "-q"],
        capture_output=True,
        text=True, timeout=600, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    policy = (tau2_root / "tau2/data/tau2/domains/mock/policy.md").read_text()
    assert len(calls) == 4  # two trials, a fresh agent each: a tool call, then the stop
    assert all(policy.strip()[:200] in c["system"] for c in calls)
    assert all({"create_task", "get_users"} <= set(c["tools"]) for c in calls)
    assert calls[1]["roles"][-2:] == ["assistant", "tool"]  # the tool's result came back
    for r in results(done.stdout.split()[1]):
        assert r.error is None, r.error
        assert r.scores["reward"]["metadata"]["termination_reason"] == "user_stop"
