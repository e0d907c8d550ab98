"""A scripted agent and user for the fake server that replay a τ²-bench task's gold actions
(agent's and user's, in order), tell the user what the task says must be communicated, then
stop: the official evaluator gives such a trial reward 1.0."""

from __future__ import annotations

from typing import Any

AGENT = "agent-model"
USER = "user-model"
STOP = "###STOP###"


class GoldReplay:
    """The fake server's responder for a run of ``tasks`` in order, one at a time (``--workers
    1``; scenarios repeat across tasks, so order names the task). Each new trial takes the
    next task, checked against the scenario the user simulator's system prompt quotes."""

    def __init__(self, tasks: list[dict[str, Any]]) -> None:
        self.tasks = list(tasks)
        self.task: dict[str, Any] | None = None
        self.next = 0
        self.said_all = False

    def _actions(self) -> list[dict[str, Any]]:
        return ((self.task or {}).get("evaluation_criteria") or {}).get("actions") or []

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        if self.task is None:  # a new trial: the next task (the agent may speak first)
            self.task, self.next, self.said_all = self.tasks.pop(0), 0, False
        if body["model"] == USER:
            system = body["messages"][0]["content"]
            assert _squeeze(_scenario_key(self.task)) in _squeeze(system), self.task["id"]
            return self._user()
        return self._agent()

    def _take(self, requestor: str) -> dict[str, Any] | None:
        actions = self._actions()
        if self.next < len(actions) and actions[self.next]["requestor"] == requestor:
            a = actions[self.next]
            self.next += 1
            return {"tool_calls": [{"name": a["name"], "arguments": a["arguments"]}]}
        return None

    def _agent(self) -> dict[str, Any]:
        call = self._take("assistant")
        if call is not None:
            return call
        if self.next < len(self._actions()):
            return {"content": "Please do the next step on your phone."}
        info = ((self.task or {}).get("evaluation_criteria") or {}).get("communicate_info") or []
        self.said_all = True
        return {"content": "All done. " + " ".join(str(i) for i in info)}

    def _user(self) -> dict[str, Any]:
        call = self._take("user")
        if call is not None:
            return call
        if self.said_all:
            self.task = None
            return {"content": STOP}
        return {"content": "Hello, I need help with my request."}


def _squeeze(text: str) -> str:
    return "".join(text.split())


def _scenario_key(task: dict[str, Any]) -> str:
    """A piece of the scenario that the official user prompt quotes verbatim."""
    scenario = task.get("user_scenario") or {}
    instructions = scenario.get("instructions") or {}
    if isinstance(instructions, dict):
        for key in ("task_instructions", "reason_for_call", "known_info"):
            if instructions.get(key):
                return str(instructions[key])[:120]
    return str(instructions)[:120]
