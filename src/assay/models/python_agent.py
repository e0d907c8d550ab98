"""Python agents (``python/<module>:<name>``): a **factory** (called per sample), an **agent
function** ``(async) def agent(prompt) -> str``, or an **agent object** (``run``, ``reply``,
``async generate``, ``invoke``, or callable) deep-copied per sample unless ``shared``. Sync
methods run on a worker thread."""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import importlib
import inspect
import sys
import time
from pathlib import Path
from typing import Any, Literal

from assay.core.types import Message, Reply, ToolSpec, Usage, content_text
from assay.errors import ModelCallError, ModelSpecError
from assay.models.registry import ModelCapabilities, Provider

#: the stored spec of an agent object given in code (it cannot be rebuilt from the store)
OBJECT_MARK = "<object>"
AGENT_METHODS = ("run", "generate", "invoke", "reply")
Kind = Literal["factory", "function", "object", "virtual_user"]
#: prompt in, text out (a ``generate`` agent gets native tools: PythonAgent.capabilities)
CAPABILITIES = ModelCapabilities(native_tools=False)


def load_target(target: str) -> Any:
    """Import ``module:attr`` (the current folder is importable, like ``python -m``)."""
    module_name, sep, attr = target.partition(":")
    if module_name == OBJECT_MARK:
        raise ModelSpecError(
            f"this run evaluated a Python agent object ({attr}) given in code, which cannot be "
            "rebuilt from the store; resume it from Python with the same agent "
            "(evaluate(agent, resume=RUN_ID)), or evaluate python/<module>:<factory> to make "
            "runs resumable from the command line")
    if not sep or not module_name or not attr:
        raise ModelSpecError(
            f"python agent spec must look like python/<module>:<factory>, got 'python/{target}'")
    cwd = str(Path.cwd())
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise ModelSpecError(f"cannot import agent module {module_name!r}: {e} (the current "
                             "folder and PYTHONPATH are searched)") from e
    except Exception as e:  # a syntax error or a crash at import time in the user's module
        raise ModelSpecError(f"agent module {module_name!r} failed to import: "
                             f"{type(e).__name__}: {e}") from e
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ModelSpecError(f"module {module_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    return obj


def conversation_text(messages: list[Message]) -> str:
    """The prompt a text-only agent sees: a single user turn as is (after the system
    message and a blank line), a longer dialogue as a role-labelled transcript."""
    system = [m.content or "" for m in messages if m.role == "system"]
    rest = [m for m in messages if m.role != "system"]
    if len(rest) == 1 and rest[0].role == "user":
        return "\n\n".join([*system, rest[0].content or ""])
    return "\n\n".join([*system, *(f"{m.role}: {m.content or ''}" for m in rest)])


def _is_async(fn: Any) -> bool:
    return inspect.iscoroutinefunction(fn) or (
        callable(fn) and not inspect.isroutine(fn)
        and inspect.iscoroutinefunction(type(fn).__call__))


def _required(fn: Any) -> list[inspect.Parameter] | None:
    """The parameters ``fn`` cannot be called without; None when it cannot be inspected."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    return [p for p in sig.parameters.values() if p.default is p.empty
            and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


def _has_agent_method(obj: Any) -> bool:
    return not isinstance(obj, type) and any(
        callable(getattr(obj, m, None)) for m in AGENT_METHODS)


def agent_kind(obj: Any) -> Kind:
    """``factory`` (a callable of no arguments), agent ``function``, agent ``object`` or
    ``virtual_user``; raises :class:`ModelSpecError` for anything else."""
    if isinstance(obj, type):
        # a TaskWeaver-style VirtualUser subclass: built per conversation with its case
        return "virtual_user" if callable(getattr(obj, "get_reply_from_agent", None)) \
            else "factory"
    if _has_agent_method(obj):
        return "object"
    if not callable(obj):
        raise ModelSpecError(
            f"{type(obj).__name__} object is not an agent: give a factory, an agent function "
            "(prompt) -> str, or an object with run(prompt), generate(messages) or "
            "invoke(messages)")
    required = _required(obj)
    if required is not None and not required:  # callable with no arguments: a factory
        if inspect.iscoroutinefunction(obj):
            raise ModelSpecError(
                f"{_name_of(obj)} is an async function without a prompt argument; an agent "
                "function is 'async def agent(prompt) -> str', a factory a plain function "
                "returning an agent")
        return "factory"
    plain = inspect.isfunction(obj) or inspect.isbuiltin(obj)
    return "function" if plain else "object"


def _name_of(obj: Any) -> str:
    return getattr(obj, "__qualname__", None) or type(obj).__name__


def display_name(obj: Any) -> str:
    """A readable name for a user's agent or LLM: its ``name`` or ``model``, else its type."""
    for attr in ("name", "model"):
        value = getattr(obj, attr, None)
        if isinstance(value, str) and value and not isinstance(obj, type):
            return value
    if isinstance(obj, type) or inspect.isroutine(obj):
        return getattr(obj, "__name__", None) or _name_of(obj)
    return type(obj).__name__


def importable_name(obj: Any) -> str | None:
    """``module:qualname`` when ``obj`` (a class or function) can be imported again as is."""
    module = getattr(obj, "__module__", None)
    qualname = getattr(obj, "__qualname__", None)
    if not (isinstance(obj, type) or inspect.isfunction(obj)):
        return None
    if not module or not qualname or module == "__main__" or "<" in qualname:
        return None
    found: Any = sys.modules.get(module)
    for part in qualname.split("."):
        found = getattr(found, part, None)
    return f"{module}:{qualname}" if found is obj else None


def agent_spec(agent: Any) -> str:
    """The spec stored with a run: ``python/<module>:<name>`` when importable (resumable
    from the command line), else ``python/<object>:<module>.<type>`` (resume from Python)."""
    if isinstance(agent, str):
        return agent
    name = importable_name(agent)
    if name is not None:
        return f"python/{name}"
    named = agent if isinstance(agent, type) or inspect.isroutine(agent) else type(agent)
    return f"python/{OBJECT_MARK}:{named.__module__}.{named.__qualname__}"


class PythonAgent:
    cacheable = False  # user code changes between runs; a cache would serve stale answers

    def __init__(self, agent: Any, model_id: str) -> None:
        self.model_id = model_id
        self.text_only = True  # prompt in, text out: tools are described in the prompt
        self._style = "prompt"
        #: the user's object (a conversation task hands it its working folder)
        self.target = agent
        run = getattr(agent, "run", None)
        generate = getattr(agent, "generate", None)
        invoke = getattr(agent, "invoke", None)
        reply = getattr(agent, "reply", None)
        if callable(reply) and not callable(run):
            self._call, self._style = reply, "reply"
        elif callable(run):
            self._call = run
        elif callable(generate):
            self._call, self._style, self.text_only = generate, "model", False
        elif callable(invoke):
            self._call, self._style = invoke, "wire"
        elif callable(agent):
            self._call = agent
        else:
            raise ModelCallError(
                f"{model_id} gave a {type(agent).__name__}, which is not an agent: it needs "
                "run(prompt), reply(message), generate(messages), invoke(messages) or to be "
                "callable",
                transient=False)
        self._is_async = _is_async(self._call)

    @property
    def capabilities(self) -> ModelCapabilities:
        """The provider's, with native tools when the agent takes them (``generate``)."""
        if self.text_only == (not CAPABILITIES.native_tools):
            return CAPABILITIES
        return dataclasses.replace(CAPABILITIES, native_tools=not self.text_only)

    def _arguments(self, messages: list[Message], tools: list[ToolSpec] | None,
                   response_schema: dict[str, Any] | None,
                   params: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
        if self._style == "model":
            return (messages,), {"tools": tools, "response_schema": response_schema, **params}
        if self._style == "wire":
            return ([{"role": m.role, "content": m.content or ""} for m in messages],), {}
        if self._style == "reply":  # the agent keeps its own history: the newest message
            last = next((m for m in reversed(messages) if m.role == "user"), None)
            return ((last.content or "") if last else "",), {}
        return (conversation_text(messages),), {}

    async def generate(self, messages: list[Message], *, tools: list[ToolSpec] | None = None,
                       response_schema: dict[str, Any] | None = None, **params: Any) -> Reply:
        """Run the agent; its exceptions become call errors."""
        args, kwargs = self._arguments(messages, tools, response_schema, params)
        spent = 0.0

        def timed_call() -> Any:  # timed on the worker thread: the thread pool's queue
            nonlocal spent        # is waiting, not the agent's time
            t = time.perf_counter()
            try:
                return self._call(*args, **kwargs)
            finally:
                spent = time.perf_counter() - t

        start = time.perf_counter()
        try:
            if self._is_async:
                out = await self._call(*args, **kwargs)
                spent = time.perf_counter() - start
            else:
                out = await asyncio.to_thread(timed_call)
                if inspect.isawaitable(out):
                    t = time.perf_counter()
                    out = await out
                    spent += time.perf_counter() - t
        except ModelCallError:
            raise
        except Exception as e:
            raise ModelCallError(f"agent raised {type(e).__name__}: {e}", transient=False) from e
        if isinstance(out, Reply):
            return out
        if isinstance(out, Message):
            return Reply(out, Usage(), spent)
        text = "" if out is None else out if isinstance(out, str) else content_text(out)
        return Reply(Message("assistant", text), Usage(), spent)


class VirtualUserSlot:
    """A TaskWeaver VirtualUser-style class (``get_reply_from_agent``), built when its
    conversation starts (:meth:`start_case`)."""

    def __init__(self, cls: type) -> None:
        self.cls = cls
        self.instance: Any = None

    def start_case(self, *, task_description: str, app_dir: str | None,
                   config_var: dict[str, Any] | None, workdir: Path) -> None:
        """Build the user's object with the arguments its ``__init__`` takes."""
        offered: dict[str, Any] = {"task_description": task_description, "app_dir": app_dir,
                                   "config_var": config_var, "workdir": str(workdir)}
        try:
            params = inspect.signature(self.cls).parameters
        except (TypeError, ValueError):
            params = {}
        takes_any = any(p.kind is p.VAR_KEYWORD for p in params.values())
        kwargs = {k: v for k, v in offered.items() if takes_any or k in params}
        try:
            self.instance = self.cls(**kwargs)
        except Exception as e:
            raise ModelCallError(f"{self.cls.__name__}({', '.join(kwargs)}) raised "
                                 f"{type(e).__name__}: {e}", transient=False) from e

    def reply(self, message: str) -> str:
        if self.instance is None:
            raise RuntimeError(f"{self.cls.__name__} is a TaskWeaver-style VirtualUser: it "
                               "runs only in a conversation task (assay run converse)")
        return self.instance.get_reply_from_agent(message)


class PythonAgentSubject:
    capabilities = CAPABILITIES

    def __init__(self, target: Any, model_id: str | None = None, *,
                 shared: bool = False) -> None:
        self.kind = agent_kind(target)
        self.model_id = model_id or f"python/{display_name(target)}"
        self.shared = shared and self.kind == "object"
        self._target = target
        if self.kind == "virtual_user":
            pass  # built per conversation, with the case's task description and app_dir
        elif self.kind == "factory":
            required = _required(target)
            if required:
                names = ", ".join(p.name for p in required)
                raise ModelSpecError(
                    f"{self.model_id} needs arguments ({names}); give a factory that takes "
                    "none, e.g. a function returning the configured agent")
        elif self.kind == "object" and not shared:
            self._copy(target)

    @classmethod
    def from_spec(cls, target: str) -> PythonAgentSubject:
        obj = load_target(target)
        try:
            return cls(obj, f"python/{target}")
        except ModelSpecError as e:
            if f"python/{target}" in str(e):
                raise
            raise ModelSpecError(f"python/{target}: {e}") from e

    def _copy(self, obj: Any) -> Any:
        try:
            return copy.deepcopy(obj)
        except Exception as e:
            raise ModelSpecError(
                f"the agent {display_name(obj)} cannot be copied for each sample "
                f"({type(e).__name__}: {e}); pass a factory instead (a function with no "
                "arguments that builds a fresh agent), so every sample gets its own") from e

    def session(self) -> PythonAgent:
        if self.kind == "virtual_user":
            return PythonAgent(VirtualUserSlot(self._target), self.model_id)
        if self.kind == "factory":
            try:
                agent = self._target()
            except Exception as e:
                raise ModelCallError(f"agent factory {self.model_id} raised "
                                     f"{type(e).__name__}: {e}", transient=False) from e
        elif self.kind == "object" and not self.shared:
            try:
                agent = copy.deepcopy(self._target)
            except Exception as e:
                raise ModelCallError(f"copying the agent {self.model_id} failed: "
                                     f"{type(e).__name__}: {e}", transient=False) from e
        else:
            agent = self._target
        return PythonAgent(agent, self.model_id)

    def describe(self) -> dict[str, Any]:
        return {"model": self.model_id}

    async def aclose(self) -> None:
        """Nothing to release."""


def python_subject(agent: Any, *, shared: bool = False) -> PythonAgentSubject:
    name = importable_name(agent) if not isinstance(agent, str) else None
    return PythonAgentSubject(agent, f"python/{name}" if name else None, shared=shared)


def _build(name: str, **options: Any) -> PythonAgentSubject:
    return PythonAgentSubject.from_spec(name)


PROVIDER = Provider(
    build=_build, capabilities=CAPABILITIES,
    forms=(("python/<module>:<factory>", "a Python agent with run(prompt) -> str"),))
