"""A scripted agent and user for the fake server that replay a τ²-bench task's gold actions
(agent's and user's, in order), tell the user what the task says must be communicated, then
stop: the official evaluator gives such a trial reward 1.0."""

from __future__ import annotations

import re
from typing import Any

AGENT = "agent-model"
USER = "user-model"
STOP = "###STOP###"


class Trial:
    """One trial's place in its task's gold actions."""

    def __init__(self, task: dict[str, Any]) -> None:
        self.task = task
        self.next = 0
        self.said_all = False


class GoldReplay:
    """The fake server's responder for a run of ``tasks`` in order, one sample at a time
    (``--max-connections 1``; scenarios repeat across tasks, so order names the task). The
    user's first words carry the trial's number, so every later request of that trial (the
    agent's and the user's conversations both hold them) finds its trial, even a retried
    one; each new trial's task is checked against the scenario the user's prompt quotes."""

    def __init__(self, tasks: list[dict[str, Any]]) -> None:
        self.tasks = list(tasks)
        self.trials: list[Trial] = []

    def _trial_of(self, body: dict[str, Any]) -> Trial | None:
        for m in body["messages"]:
            found = re.search(r"\[trial (\d+)\]", str(m.get("content") or ""))
            if found:
                return self.trials[int(found.group(1))]
        return None

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        trial = self._trial_of(body)
        if body["model"] == USER:
            if trial is None:  # a new trial: the next task
                trial = Trial(self.tasks.pop(0))
                self.trials.append(trial)
                system = body["messages"][0]["content"]
                assert _squeeze(_scenario_key(trial.task)) in _squeeze(system), trial.task["id"]
                return {"content": f"Hello, I need help. [trial {len(self.trials) - 1}]"}
            return self._user(trial)
        if trial is None:  # the agent speaks first (a task's history ends with the user)
            trial = Trial(self.tasks.pop(0))
            self.trials.append(trial)
        return self._agent(trial)

    @staticmethod
    def _take(trial: Trial, requestor: str) -> dict[str, Any] | None:
        actions = (trial.task.get("evaluation_criteria") or {}).get("actions") or []
        if trial.next < len(actions) and actions[trial.next].get("requestor", "assistant") == requestor:
            a = actions[trial.next]
            trial.next += 1
            return {"tool_calls": [{"name": a["name"], "arguments": a["arguments"]}]}
        return None

    def _agent(self, trial: Trial) -> dict[str, Any]:
        call = self._take(trial, "assistant")
        if call is not None:
            return call
        if trial.next < len((trial.task.get("evaluation_criteria") or {}).get("actions") or []):
            return {"content": "Please do the next step on your phone."}
        info = (trial.task.get("evaluation_criteria") or {}).get("communicate_info") or []
        trial.said_all = True
        return {"content": "All done. " + " ".join(str(i) for i in info)}

    def _user(self, trial: Trial) -> dict[str, Any]:
        call = self._take(trial, "user")
        if call is not None:
            return call
        if trial.said_all:
            return {"content": STOP}
        return {"content": "Please go on."}


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
