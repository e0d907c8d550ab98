"""Driving the agent through an agentic entry: a memory question (after its scenario's
prerequisite chain, :mod:`.memory`; the backend in a simulator worker, so a timeout stops
it) or a web-search question (the official ``WebSearchAPI``, live, in this process).
The outcome's ``agentic`` holds the raw replies in the official result-file form
(``[[step, ...]]``), all the scorer reads.
"""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from assay.core.redact import MASK
from assay.core.types import Outcome, Sample
from assay.errors import ConfigError
from assay.tasks.bfcl.agentic.backends import (
    ensure_project_root,
    memory_config,
    new_instance,
    serpapi_key,
)
from assay.tasks.bfcl.agentic.memory import MemoryChains
from assay.tasks.bfcl.agentic.prompts import add_memory_instruction
from assay.tasks.bfcl.categories import MEMORY
from assay.tasks.bfcl.multiturn import worker
from assay.tasks.bfcl.multiturn.executor import execute_calls
from assay.tasks.bfcl.multiturn.loop import converse
from assay.tasks.bfcl.multiturn.sim import involved_methods
from assay.tasks.bfcl.prompts import add_language_hints

__all__ = ["memory_chains", "solve_agentic"]

#: where a run keeps its memory chains (in the samples' shared ``ctx.run_state``)
CHAINS_KEY = "bfcl.memory_chains"


def memory_chains(agent: Any) -> MemoryChains:
    """The run's memory prerequisite chains, shared by its samples (``run_state``; an agent
    outside the engine gets chains of its own)."""
    state = getattr(agent, "run_state", None)
    if state is None:
        return MemoryChains()
    return state.setdefault(CHAINS_KEY, MemoryChains())



#: the backend methods the run itself calls (never the model: they start with ``_``)
MEMORY_HOOKS = frozenset({"_dump_core_memory_to_context", "_flush_memory_to_local_file"})


def open_memory_backend(spec: dict[str, Any], cls: str, config: dict[str, Any]) -> None:
    """In a simulator worker: a fresh memory backend loaded from its snapshot (``config``)."""
    worker.prepare(spec)
    instance = new_instance(cls, config)
    worker.STATE["backend"] = instance
    worker.STATE["methods"] = involved_methods({"backend": instance})


def memory_hook(name: str) -> Any:
    """In a simulator worker: one of :data:`MEMORY_HOOKS` on the session's backend."""
    if name not in MEMORY_HOOKS:
        raise ValueError(f"not a memory backend hook: {name!r}")
    return getattr(worker.STATE["backend"], name)()


async def _run_memory_entry(entry: dict[str, Any], questions: list[list[dict[str, Any]]],
                            category: str, scenario: str, folder: Any, agent: Any,
                            functions: list[dict[str, Any]], *, mode: str,
                            params: dict[str, Any], flush: bool) -> tuple[Any, Any]:
    """One memory conversation on a fresh backend (in a simulator worker) loaded from the
    snapshots in ``folder``; a prerequisite (``flush``) writes its snapshot afterwards."""
    cls = entry["involved_classes"][0]
    ensure_project_root()  # set here, passed on: the worker imports bfcl_eval.utils
    async with worker.session() as sims:
        await sims.acall(open_memory_backend, worker.setup(("BFCL_PROJECT_ROOT",)), cls,
                         memory_config(folder, scenario, entry["id"]))
        core = await sims.acall(memory_hook, "_dump_core_memory_to_context")
        questions = add_memory_instruction(questions, category, scenario, core)

        async def execute(calls: list[str]) -> list[str]:
            return await sims.acall(worker.run_calls, calls)

        conv = await converse(agent, questions, functions, execute, mode=mode, params=params)
        if flush:
            await sims.acall(memory_hook, "_flush_memory_to_local_file")
    return conv, questions


async def solve_memory(sample: Sample, agent: Any, *, mode: str,
                       params: dict[str, Any]) -> Outcome:
    """A memory question: its scenario's chain (run here or reused within the run, its
    questions from the sample), then the question."""
    meta = sample.metadata
    category, scenario = meta["category"], meta["scenario"]
    functions = add_language_hints(meta["functions"], "python")
    if "prereq_questions" not in meta:
        raise ConfigError(f"{sample.id}: the sample has no prerequisite questions (a "
                          "memory sample stored before they travelled with it); run it again")
    chain_entries = [{"id": pid, "question": question,
                      "involved_classes": meta["involved_classes"]}
                     for pid, question in zip(meta["prereq_ids"], meta["prereq_questions"],
                                              strict=True)]

    async def run_chain(folder: Any) -> list[dict[str, Any]]:
        done = []
        for entry in chain_entries:  # in order: each starts from the one before
            conv, _ = await _run_memory_entry(entry, entry["question"], category, scenario,
                                              folder, agent, functions, mode=mode,
                                              params=params, flush=True)
            done.append({"id": entry["id"], "result": conv.turns, "turn_log": conv.log,
                         "force_quit": conv.force_quit})
        return done

    key = (category, scenario, getattr(agent, "model_id", ""), getattr(agent, "epoch", 0),
           mode)
    chain, ran_here = await memory_chains(agent).chain(key, scenario, category, run_chain)
    conv, _ = await _run_memory_entry(
        {"id": sample.id, "involved_classes": meta["involved_classes"]}, meta["questions"],
        category, scenario, chain.folder, agent, functions, mode=mode, params=params,
        flush=False)
    memory: dict[str, Any] = {
        "scenario": scenario, "prereq_ids": [e["id"] for e in chain_entries],
        "chain": "ran here" if ran_here else "reused",
        "snapshot_sha256": chain.snapshot_sha256}
    if ran_here:
        memory["snapshot"] = chain.snapshot
        memory["prereqs"] = chain.prereqs
    return conv.outcome(mode, "agentic", memory=memory)


class _MaskingStream:
    """A text stream that writes through to ``inner`` with ``secret`` masked."""

    def __init__(self, inner: Any, secret: str) -> None:
        self._inner = inner
        self._secret = secret

    def write(self, text: str) -> int:
        return self._inner.write(text.replace(self._secret, MASK))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


_stdout_lock = threading.Lock()
_stdout_users = 0
_stdout_saved: Any = None


@contextmanager
def _masked_stdout(secret: str) -> Iterator[None]:
    """While any web-search call runs, ``sys.stdout`` masks the key: the official
    ``search_engine_query`` prints SerpAPI's error text, which may hold it."""
    global _stdout_users, _stdout_saved
    with _stdout_lock:
        if _stdout_users == 0:
            _stdout_saved = sys.stdout
            sys.stdout = _MaskingStream(_stdout_saved, secret)
        _stdout_users += 1
    try:
        yield
    finally:
        with _stdout_lock:
            _stdout_users -= 1
            if _stdout_users == 0:
                sys.stdout = _stdout_saved
                _stdout_saved = None


async def solve_web_search(sample: Sample, agent: Any, *, mode: str,
                           params: dict[str, Any]) -> Outcome:
    """A web-search question on the official ``WebSearchAPI``: its calls block on the
    network, so they run in a thread; the key is masked should a result echo it."""
    key = serpapi_key()
    if not key:
        raise ConfigError("web_search needs a SerpAPI key: set SERPAPI_API_KEY")
    meta = sample.metadata
    cls = meta["involved_classes"][0]
    instance = new_instance(cls, meta["initial_config"][cls])
    methods = involved_methods({cls: instance})

    async def run(calls: list[str]) -> list[str]:
        with _masked_stdout(key):
            results = await asyncio.to_thread(execute_calls, calls, methods)
        return [r.replace(key, MASK) for r in results]

    functions = add_language_hints(meta["functions"], "python")
    conv = await converse(agent, meta["questions"], functions, run, mode=mode, params=params)
    return conv.outcome(mode, "agentic")


async def solve_agentic(sample: Sample, agent: Any, *, mode: str,
                        params: dict[str, Any]) -> Outcome:
    if sample.metadata["category"] in MEMORY:
        return await solve_memory(sample, agent, mode=mode, params=params)
    return await solve_web_search(sample, agent, mode=mode, params=params)
