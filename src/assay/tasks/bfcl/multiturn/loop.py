"""The multi-turn conversation loop, as the official harness drives a model
(``base_handler.inference_multi_turn_FC`` / ``_prompting``).

Calls run by the safe executor in a worker (:mod:`.worker`); a turn ends on a reply with no call
or past ``MAXIMUM_STEP_LIMIT`` (at most 21 steps, force quit). Raw replies are kept re-scorable.
"""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from assay.core.types import Message, Outcome, ToolCall
from assay.tasks.bfcl.decode_error import DecodeError
from assay.tasks.bfcl.multiturn import worker
from assay.tasks.bfcl.multiturn.decode import decode_execute, is_empty_execute_response
from assay.tasks.bfcl.prompts import (
    add_language_hints,
    fc_result,
    prompt_messages,
    system_prompt,
    tool_specs,
)

__all__ = ["MAXIMUM_STEP_LIMIT", "MORE_FUNCTIONS_FC", "MORE_FUNCTIONS_PROMPT", "Conversation",
           "converse", "run_entry"]

MAXIMUM_STEP_LIMIT = 20
MORE_FUNCTIONS_FC = "I have updated some more functions you can choose from. What about now?"
MORE_FUNCTIONS_PROMPT = "{functions}\n" + MORE_FUNCTIONS_FC


def is_long_context(category: str) -> bool:
    """The official flag: from the category name alone."""
    return "long_context" in category or "composite" in category


def _raw_fc(message: Message) -> Any:
    """An FC reply in the official result form: ``[{name: json_args}]``, else its text."""
    return fc_result(message.tool_calls) if message.tool_calls else message.content or ""


@dataclass
class Conversation:
    """What a conversation left: the messages, each turn's raw replies in the official
    result-file form, a readable per-turn log (calls and results) and the force-quit flag."""

    messages: list[Message] = field(default_factory=list)
    turns: list[list[Any]] = field(default_factory=list)
    log: list[dict[str, Any]] = field(default_factory=list)
    force_quit: bool = False

    @property
    def last_text(self) -> str:
        """The final assistant message's text ("" when the last message is not one)."""
        m = self.messages[-1] if self.messages else None
        return (m.content or "") if m is not None and m.role == "assistant" else ""

    def outcome(self, mode: str, key: str, **extra: Any) -> Outcome:
        """The sample's outcome, the raw replies under ``key`` (what the scorer reads)."""
        return Outcome(transcript=self.messages, output=self.last_text,
                       metadata={"mode": mode, key: self.turns, "turn_log": self.log,
                                 "force_quit": self.force_quit, **extra})


#: runs one step's decoded calls, in order, and returns their result strings
Executor = Callable[[list[str]], Awaitable[list[str]]]


async def converse(agent: Any, questions: list[list[dict[str, Any]]],
                   functions: list[dict[str, Any]], execute: Executor, *, mode: str,
                   params: dict[str, Any],
                   holdout: dict[str, list[dict[str, Any]]] | None = None) -> Conversation:
    """Drive ``agent`` through ``questions``; ``holdout`` (turn index -> docs) adds withheld
    functions at their turn (``miss_func``). Multi-turn, memory prereqs and agentic use this."""
    tools = tool_specs(functions, underscore_to_dot=True) if mode == "fc" else None
    conv = Conversation()
    messages = conv.messages
    for turn_idx, question in enumerate(questions):
        turn = [dict(m) for m in question]
        if holdout and str(turn_idx) in holdout:
            docs = copy.deepcopy(holdout[str(turn_idx)])  # no language hint, as officially
            functions = functions + docs
            if mode == "fc":
                tools = tool_specs(functions, underscore_to_dot=True)
                turn = [{"role": "user", "content": MORE_FUNCTIONS_FC}]
            else:  # the system prompt is not rebuilt; the docs go in the message
                turn = [{"role": "user", "content": MORE_FUNCTIONS_PROMPT.format(
                    functions=str(docs))}]
        if mode == "prompt" and turn_idx == 0:
            turn = prompt_messages(turn, functions) if turn else [
                {"role": "system", "content": system_prompt(functions)}]
        messages.extend(Message(m["role"], m["content"]) for m in turn)
        steps: list[Any] = []
        turn_log: dict[str, Any] = {"turn": turn_idx, "query": turn, "steps": []}
        count = 0
        while True:
            reply = await agent.generate(list(messages), tools=tools, **(
                {"tool_choice": "auto"} if mode == "fc" else {}), **params)
            message = reply.message
            if mode == "fc" and message.tool_calls:
                message = _with_ids(message, turn_idx, count)
            messages.append(message)
            raw = _raw_fc(message) if mode == "fc" else (message.content or "")
            steps.append(raw)
            step: dict[str, Any] = {"reply": raw}
            turn_log["steps"].append(step)
            try:
                decoded = decode_execute(raw, mode)
            except DecodeError as e:
                step["decode_error"] = str(e)
                break
            step["calls"] = decoded
            if is_empty_execute_response(decoded):
                break
            results = await execute(decoded)
            step["results"] = results
            if mode == "fc":
                ids = [c.id for c in message.tool_calls or []]
                messages.extend(Message("tool", r, tool_call_id=i)
                                for r, i in zip(results, ids, strict=False))
            else:
                messages.append(Message("user", repr([
                    {"role": "tool", "name": c, "content": r}
                    for r, c in zip(results, decoded, strict=True)])))
            count += 1
            if count > MAXIMUM_STEP_LIMIT:
                conv.force_quit = True
                turn_log["force_quit"] = (f"Model has been forced to quit after "
                                          f"{MAXIMUM_STEP_LIMIT} steps.")
                break
        conv.turns.append(steps)
        conv.log.append(turn_log)
        if conv.force_quit:
            break
    return conv


async def run_entry(meta: dict[str, Any], agent: Any, *, mode: str,
                    params: dict[str, Any]) -> Outcome:
    """Drive ``agent`` through one multi-turn entry (``meta``: the sample's metadata)."""
    async with worker.session() as sims:  # the entry's instances live in the worker
        opened = False

        async def execute(calls: list[str]) -> list[str]:
            nonlocal opened
            if not opened:  # at the first step, as officially (the worker starts meanwhile)
                await sims.acall(worker.open_entry, worker.setup(), meta["involved_classes"],
                                 meta["initial_config"], is_long_context(meta["category"]))
                opened = True
            return await sims.acall(worker.run_calls, calls)

        conv = await converse(agent, meta["questions"],
                              add_language_hints(meta["functions"], "python"), execute,
                              mode=mode, params=params,
                              holdout=meta.get("missed_function") or {})
    return conv.outcome(mode, "multi_turn")


def _with_ids(message: Message, turn: int, step: int) -> Message:
    """Tool calls without ids (the embedded model, some servers) get stable ones, so each
    result can name the call it answers."""
    if all(c.id for c in message.tool_calls or []):
        return message
    calls = [c if c.id else ToolCall(c.name, c.arguments, f"call_{turn}_{step}_{i}")
             for i, c in enumerate(message.tool_calls or [])]
    return Message(message.role, message.content, calls, message.tool_call_id)
