"""A fake memory-using model for the fake OpenAI server (a ``responder``).

In a prerequisite conversation (no answer-format prompt in the system message) it stores
one note at the first turn of each prerequisite, then acknowledges every turn in text:

- kv: ``core_memory_add(key='note_<k>', value=<marker>)`` (the first 7; the core memory
  holds 7), ``archival_memory_add`` after that;
- rec_sum: ``memory_append(text='[<marker>]')``.

The marker is ``<scenario>-<k>``, ``k`` the prerequisite's place in the chain. For a
question it first reads the memory (kv: ``core_memory_retrieve_all()``; rec_sum:
``memory_retrieve()``), then answers in the official answer format: the entry's first
accepted answer when the memory it read holds the markers of *every* prerequisite of the
scenario, else ``I do not know``. So a question is right only when it started from the
snapshot of the whole chain.
"""

from __future__ import annotations

import re
from typing import Any

from assay.tasks.bfcl.agentic.data import load_agentic
from assay.tasks.bfcl.agentic.prompts import AGENTIC_FORMAT_PROMPT
from assay.tasks.bfcl.data import locate

RESULTS_PREFIX = "[{'role': 'tool'"
CORE_SIZE = 7


def is_results(message: dict[str, Any]) -> bool:
    """A message carrying tool results (FC ``tool``; prompt: the results repr as user)."""
    return message["role"] == "tool" or (
        message["role"] == "user" and str(message["content"]).startswith(RESULTS_PREFIX))


def queries(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The user turns of a conversation (not tool results)."""
    return [m for m in messages if m["role"] == "user" and not is_results(m)]


class MemoryModel:
    """See the module docstring. ``mode``: ``fc`` or ``prompt``."""

    def __init__(self, category: str, mode: str) -> None:
        data = load_agentic(locate(), category)
        self.category = category
        self.backend = category.removeprefix("memory_")
        self.mode = mode
        #: first user message of a prerequisite -> (scenario, place in the chain)
        self.prereq: dict[str, tuple[str, int]] = {}
        for scenario, chain in data.prereqs.items():
            for k, e in enumerate(chain):
                self.prereq[e["question"][0][0]["content"]] = (scenario, k)
        self.chain_length = {s: len(c) for s, c in data.prereqs.items()}
        #: question text -> (scenario, accepted answers)
        self.question = {e["question"][0][-1]["content"]: (e["scenario"],
                                                           data.ground_truth[e["id"]])
                         for e in data.entries}

    def _call(self, name: str, **args: Any) -> Any:
        if self.mode == "fc":
            return {"tool_calls": [{"name": name, "arguments": args}]}
        return f"[{name}({', '.join(f'{k}={v!r}' for k, v in args.items())})]"

    def _store(self, scenario: str, k: int) -> Any:
        marker = f"{scenario}-{k}"
        if self.backend == "rec_sum":
            return self._call("memory_append", text=f"[{marker}]")
        if k < CORE_SIZE:
            return self._call("core_memory_add", key=f"note_{k}", value=marker)
        return self._call("archival_memory_add", key=f"note_{k}", value=marker)

    def _read(self) -> Any:
        return self._call("memory_retrieve" if self.backend == "rec_sum"
                          else "core_memory_retrieve_all")

    def __call__(self, body: dict[str, Any]) -> Any:
        messages = body["messages"]
        turns = queries(messages)
        system = messages[0]["content"] if messages[0]["role"] == "system" else ""
        answered = is_results(messages[-1])
        if AGENTIC_FORMAT_PROMPT.strip() not in system:  # a prerequisite conversation
            scenario, k = self.prereq[turns[0]["content"]]
            if len(turns) == 1 and not answered:
                return self._store(scenario, k)
            return "Noted, thank you."
        scenario, answers = self.question[turns[-1]["content"]]
        if not answered:
            return self._read()
        seen = str(messages[-1]["content"])
        want = [f"{scenario}-{k}" for k in range(min(self.chain_length[scenario],
                                                     CORE_SIZE if self.backend == "kv"
                                                     else 99))]
        if all(re.search(rf"\b{re.escape(w)}\b", seen) for w in want):
            return f"{{'answer': '{answers[0]}', 'context': 'from my memory'}}"
        return "{'answer': 'I do not know', 'context': 'I do not know'}"
