"""Run inside a τ²-bench worker (imported there by name): trajectories of a domain's tasks,
built with the official environment (every tool response is the official tools' own), from
the gold actions and from perturbations of them, each with the official
``evaluate_simulation``'s verdict on the in-memory objects (the oracle).

Kinds: ``gold``; ``dropped_write`` (the last write action left out); ``wrong_argument`` (the
first action's first argument changed); ``extra_write`` (the first write done twice);
``reordered_pair`` (the first two actions swapped); ``missing_message`` (the final message
without what must be communicated); ``premature_stop`` (the agent stops, ``###STOP###``,
after half the actions); ``max_steps`` (the gold trajectory ended by the step limit).
"""

from __future__ import annotations

import copy
from typing import Any

from assay.tasks.tau2 import worker

KINDS = ("gold", "dropped_write", "wrong_argument", "extra_write", "reordered_pair",
         "missing_message", "premature_stop", "max_steps")
#: the parts of an official verdict compared
COMPARED = ("reward", "reward_breakdown", "db_check", "env_assertions", "action_checks",
            "communicate_checks", "nl_assertions", "reward_basis", "info")


def _changed(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 1
    if isinstance(value, str):
        return value + "X"
    if isinstance(value, list):
        return value[:-1] if value else ["X"]
    if isinstance(value, dict):
        return {**value, "X": "X"}
    return "X"


def _variants(actions: list[Any], is_write: Any) -> dict[str, list[Any] | None]:
    """Each kind's action list (``None``: the kind cannot apply to this task)."""
    writes = [i for i, a in enumerate(actions) if is_write(a)]
    out: dict[str, list[Any] | None] = {"gold": actions}
    out["dropped_write"] = ([a for i, a in enumerate(actions) if i != writes[-1]]
                            if writes else None)
    first = next((i for i, a in enumerate(actions) if a.arguments), None)
    if first is None:
        out["wrong_argument"] = None
    else:
        changed = copy.deepcopy(actions)
        key = next(iter(changed[first].arguments))
        changed[first].arguments[key] = _changed(changed[first].arguments[key])
        out["wrong_argument"] = changed
    out["extra_write"] = [*actions, copy.deepcopy(actions[writes[0]])] if writes else None
    out["reordered_pair"] = ([actions[1], actions[0], *actions[2:]]
                             if len(actions) >= 2 else None)
    return out


def build(spec: dict[str, Any], domain: str, split: str, part: int = 0,
          parts: int = 1) -> list[dict[str, Any]]:
    """Every ``parts``-th task's (from the ``part``-th) trajectories of every kind that applies, each with the oracle's verdict:
    ``{"task", "kind", "simulation", "official"}`` (dicts, as stored; ``official`` is ``{"error": ...}`` where
    the official evaluator raises)."""
    run = worker._load(spec)
    from tau2.data_model.message import (  # the official package, in the worker
        AssistantMessage,
        ToolCall,
        UserMessage,
    )
    from tau2.data_model.simulation import SimulationRun, TerminationReason
    from tau2.environment.toolkit import ToolType
    from tau2.evaluator.evaluator import EvaluationType, evaluate_simulation
    from tau2.orchestrator.orchestrator import DEFAULT_FIRST_AGENT_MESSAGE
    from tau2.registry import registry

    make = registry.get_env_constructor(domain)
    out = []
    for task in run.load_tasks(domain, split)[part::parts]:
        actions = list((task.evaluation_criteria.actions if task.evaluation_criteria else None)
                       or [])
        probe = make()

        def is_write(a: Any, probe: Any = probe) -> bool:
            kit = probe.user_tools if a.requestor == "user" else probe.tools
            return kit is not None and kit.has_tool(a.name) and \
                kit.tool_type(a.name) == ToolType.WRITE

        info = (task.evaluation_criteria.communicate_info if task.evaluation_criteria
                else None) or []
        variants = _variants(actions, is_write)
        variants["missing_message"] = actions if info else None
        variants["premature_stop"] = actions[: len(actions) // 2] if actions else None
        variants["max_steps"] = actions
        for kind in KINDS:
            chosen = variants.get(kind)
            if chosen is None:
                continue
            state = task.initial_state
            env = make()
            history = copy.deepcopy(state.message_history) if state and \
                state.message_history else []
            env.set_state(initialization_data=state.initialization_data if state else None,
                          initialization_actions=state.initialization_actions if state
                          else None, message_history=history)
            messages = history or [copy.deepcopy(DEFAULT_FIRST_AGENT_MESSAGE),
                                   UserMessage(role="user", content="I need help.")]
            for n, a in enumerate(chosen):
                call = ToolCall(id=f"call_{n}", name=a.name, arguments=copy.deepcopy(
                    a.arguments), requestor=a.requestor)
                messages.append(UserMessage(role="user", tool_calls=[call])
                                if a.requestor == "user" else
                                AssistantMessage(role="assistant", tool_calls=[call]))
                messages.append(env.get_response(call))
            if kind == "premature_stop":
                messages.append(AssistantMessage(role="assistant", content="###STOP###"))
                ended = TerminationReason.AGENT_STOP
            else:
                said = "" if kind == "missing_message" else " ".join(str(i) for i in info)
                messages.append(AssistantMessage(role="assistant", content=f"Done. {said}"))
                messages.append(UserMessage(role="user", content="###STOP###"))
                ended = (TerminationReason.MAX_STEPS if kind == "max_steps"
                         else TerminationReason.USER_STOP)
            for i, m in enumerate(messages):
                m.turn_idx = i
            sim = SimulationRun(id=f"{task.id}-{kind}", task_id=task.id, start_time="",
                                end_time="", duration=0.0, termination_reason=ended,
                                messages=messages)
            try:
                official: dict[str, Any] = evaluate_simulation(
                    simulation=sim, task=task, solo_mode=False,
                    evaluation_type=EvaluationType.ALL, domain=domain).model_dump(mode="json")
            except Exception as e:  # noqa: BLE001 - the oracle's own error is a verdict too
                official = {"error": f"{type(e).__name__}: {e}"}
            out.append({"task": task.model_dump(mode="json"), "kind": kind,
                        "simulation": sim.model_dump(mode="json"), "official": official})
    return out
