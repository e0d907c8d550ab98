"""``python/<module>:<factory>``: evaluate a Python agent.

The factory is called once per sample, so agent state (memory, scratchpads)
never leaks between samples. What it returns may be:

- an object with ``run(prompt) -> str`` (HelloAgents ``SimpleAgent`` style),
  sync or async; sync ones run on a worker thread so they never block the loop;
- an async callable ``async (prompt) -> str``, or a plain callable.

The target may also be an ``async def agent(prompt) -> str`` itself, which is
then called directly for every sample (it holds no state to reset).

The agent receives the text of the conversation (the last user message for a
single-turn sample) and returns text.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import sys
import time
from pathlib import Path
from typing import Any

from assay.core.types import Message, Reply, ToolSpec, Usage, content_text
from assay.errors import ModelCallError, ModelSpecError


def load_factory(target: str) -> Any:
    """Import ``module:attr`` (the current directory is importable, like ``python -m``)."""
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        raise ModelSpecError(
            f"python agent spec must look like python/<module>:<factory>, got 'python/{target}'"
        )
    cwd = str(Path.cwd())
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise ModelSpecError(f"cannot import agent module {module_name!r}: {e}") from e
    except Exception as e:  # a syntax error or a crash at import time in the user's module
        raise ModelSpecError(f"agent module {module_name!r} failed to import: "
                             f"{type(e).__name__}: {e}") from e
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ModelSpecError(f"module {module_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise ModelSpecError(f"python/{target} is not callable; it must build an agent")
    return obj


def conversation_text(messages: list[Message]) -> str:
    """The prompt a text-only agent sees.

    A single user turn is passed as is, after the system message when there is
    one (separated by a blank line); a longer dialogue is passed as a
    role-labelled transcript.
    """
    system = [m.content or "" for m in messages if m.role == "system"]
    rest = [m for m in messages if m.role != "system"]
    if len(rest) == 1 and rest[0].role == "user":
        return "\n\n".join([*system, rest[0].content or ""])
    lines = [f"{m.role}: {m.content or ''}" for m in rest]
    return "\n\n".join([*system, *lines])


class PythonAgent:
    """One agent instance, adapted to the model protocol."""

    cacheable = False  # user code changes between runs; a cache would serve stale answers
    text_only = True  # prompt in, text out: tools are described in the prompt, not sent

    def __init__(self, agent: Any, model_id: str) -> None:
        self.model_id = model_id
        run = getattr(agent, "run", None)
        self._call = run if callable(run) else agent
        self._is_async = inspect.iscoroutinefunction(self._call) or (
            callable(self._call) and inspect.iscoroutinefunction(type(self._call).__call__)
        )

    async def generate(
        self,
        messages: list[Message],
        *,
        tools: list[ToolSpec] | None = None,
        response_schema: dict[str, Any] | None = None,
        **params: Any,
    ) -> Reply:
        """Run the agent on the conversation text; its exceptions become call errors."""
        prompt = conversation_text(messages)
        spent = 0.0

        def timed_call() -> Any:  # timed on the worker thread: the thread pool's queue
            nonlocal spent        # is waiting, not the agent's time
            t = time.perf_counter()
            try:
                return self._call(prompt)
            finally:
                spent = time.perf_counter() - t

        start = time.perf_counter()
        try:
            if self._is_async:
                out = await self._call(prompt)
                spent = time.perf_counter() - start
            else:
                out = await asyncio.to_thread(timed_call)
                if inspect.isawaitable(out):
                    t = time.perf_counter()
                    out = await out
                    spent += time.perf_counter() - t
        except Exception as e:
            raise ModelCallError(
                f"agent raised {type(e).__name__}: {e}", transient=False
            ) from e
        text = "" if out is None else out if isinstance(out, str) else content_text(out)
        return Reply(Message("assistant", text), Usage(), spent)


class PythonAgentSubject:
    """Subject whose ``session()`` builds a fresh agent with the user's factory."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.model_id = f"python/{target}"
        self._factory = load_factory(target)

    def session(self) -> PythonAgent:
        """A new agent for one sample (an async function target is used as the agent)."""
        if inspect.iscoroutinefunction(self._factory):
            return PythonAgent(self._factory, self.model_id)
        try:
            agent = self._factory()
        except Exception as e:
            raise ModelCallError(
                f"agent factory {self.model_id} raised {type(e).__name__}: {e}", transient=False
            ) from e
        return PythonAgent(agent, self.model_id)

    def describe(self) -> dict[str, Any]:
        """Identity recorded with the run."""
        return {"model": self.model_id}

    async def aclose(self) -> None:
        """Nothing to release."""
