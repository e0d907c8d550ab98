"""Shared pieces of the ``converse`` tests: one fake server playing three models.

Requests are routed by the model name they carry: ``openai/agent``, ``openai/examiner``
and ``openai/judge``. Each role's behaviour is a function of the request body. A case's
task description carries a marker (``[CASE-<id>]``); the examiner repeats it in every
message, so every request of a conversation can be attributed to its case.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from assay.sandbox import bwrap_problem
from assay.store.sqlite import Store
from assay.testing import FakeServer

MARK = re.compile(r"\[CASE-([A-Za-z0-9_-]+)\]")
ROLES = ("--model", "openai/agent", "--examiner-model", "openai/examiner",
         "--judge-model", "openai/judge")
#: where bubblewrap cannot run, the tests about converse (not about the sandbox) run its
#: eval_code points with weak isolation rather than be refused; with bwrap, nothing changes
WEAK = bwrap_problem() is not None
WEAK_ARGS = ("--allow-weak-sandbox",) if WEAK else ()


def marker(body: dict[str, Any]) -> str | None:
    """The case a request belongs to (from the marker in any of its messages)."""
    for m in body.get("messages") or []:
        found = MARK.search(str(m.get("content") or ""))
        if found:
            return found.group(1)
    return None


def agent_turns(body: dict[str, Any]) -> int:
    """How many user turns the agent has seen in this request."""
    return sum(1 for m in body["messages"] if m["role"] == "user")


def never_stop(body: dict[str, Any]) -> str:
    """An examiner that never ends the conversation (and repeats the case marker)."""
    return json.dumps({"message": f"[CASE-{marker(body)}] go on", "task_finished": False})


def stop_after(n: int) -> Callable[[dict[str, Any]], str]:
    """An examiner that ends the conversation once the agent has replied ``n`` times."""
    def examiner(body: dict[str, Any]) -> str:
        replies = sum(1 for m in body["messages"] if str(m.get("content", "")).startswith(
            "Agent:") or "\n\nAgent:" in str(m.get("content", "")))
        return json.dumps({"message": "" if replies >= n else f"[CASE-{marker(body)}] more",
                           "task_finished": replies >= n})
    return examiner


def hit(body: dict[str, Any]) -> str:
    return json.dumps({"reason": "the conversation shows it", "is_hit": True})


def echo_agent(body: dict[str, Any]) -> str:
    return f"reply {agent_turns(body)}"


class ConverseServer(FakeServer):
    """The fake server with an agent, an examiner and a judge."""

    def __init__(self, *, agent: Callable[[dict[str, Any]], Any] = echo_agent,
                 examiner: Callable[[dict[str, Any]], Any] = never_stop,
                 judge: Callable[[dict[str, Any]], Any] = hit, **kwargs: Any) -> None:
        self.roles = {"agent": agent, "examiner": examiner, "judge": judge}
        super().__init__(responder=self._route, **kwargs)

    def _route(self, body: dict[str, Any]) -> Any:
        return self.roles[body["model"]](body)

    def bodies(self, role: str) -> list[dict[str, Any]]:
        """The requests one role received, in arrival order."""
        with self._lock:
            return [b for b in self.requests if b.get("model") == role]


def write_case(folder: Path, name: str, *, points: list[dict[str, Any]] | None = None,
               max_rounds: int | None = None, extra: dict[str, Any] | None = None,
               description: str | None = None) -> Path:
    """A case file whose task description carries the case's marker."""
    case: dict[str, Any] = {
        "version": 1,
        "task_description": description or f"[CASE-{name}] Ask the agent to say hello.",
        "scoring_points": points or [{"score_point": "The agent said hello", "weight": 1}],
    }
    if max_rounds is not None:
        case["max_rounds"] = max_rounds
    case.update(extra or {})
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(case, sort_keys=False), encoding="utf-8")
    return path


def run_cli(*args: str, env: dict[str, str] | None = None,
            timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """``python -m assay ARGS`` (an API key set, so the OpenAI client starts)."""
    full_env = {**os.environ, "OPENAI_API_KEY": "sk-test", **(env or {})}
    return subprocess.run([sys.executable, "-m", "assay", *args], capture_output=True,
                          text=True, timeout=timeout, env=full_env)


def converse_args(cases: Path, base_url: str, *extra: str) -> list[str]:
    """``run converse`` with the three fake models, all served at ``base_url`` (each
    role's endpoint given: a role never falls back to the agent's)."""
    return ["run", "converse", "--cases", str(cases), *ROLES, "--base-url", base_url,
            *role_urls(base_url), "-q", *extra]


def role_urls(base_url: str) -> list[str]:
    """The examiner and the judge at ``base_url``."""
    return ["-T", f"examiner_base_url={base_url}", "-T", f"judge_base_url={base_url}"]


def stored(run_id: str) -> dict[str, Any]:
    """The run record and its results, read back from the real store."""
    store = Store()
    try:
        return {"run": store.get_run(run_id), "results": store.results(run_id)}
    finally:
        store.close()


def run_id_of(stdout: str) -> str:
    """The run id printed by ``assay run``."""
    return stdout.split()[1]
