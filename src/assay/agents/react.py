"""The reference agent as a model spec, usable wherever one is::

    agent/react?model=openai/gpt-4o-mini&tools=python,files,search&max_steps=20

(``assay run gaia --agent react --tools python,files --model M`` writes the same). The subject
is the model *with this agent*: a fresh agent and fresh tools per sample, the loop of
:mod:`assay.agents.loop` run by the task's ``solve`` through the sample's call context, so
every step is cached, retried and counted like any call. Query keys: ``model`` (required),
``tools`` (comma-separated built-ins), ``mcp`` (a server's command, repeatable),
``search_corpus`` (a folder), ``max_steps``, ``max_tokens``, ``time_limit``, ``max_repeats``,
``tool_format`` (``native`` or ``text``: the loop's text format, for a server without tool
calls)."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, urlencode

from assay.agents.loop import LoopLimits, LoopResult, tool_loop
from assay.agents.mcp import McpServer, check_mcp
from assay.agents.search import backend_from, check_search
from assay.agents.tools import Tool, ToolContext, check_tools, make_tool
from assay.core.redact import redact_value
from assay.core.types import Message, Outcome, Reply, Sample, ToolSpec
from assay.errors import ConfigError, ModelSpecError
from assay.models.base import get_subject
from assay.models.registry import ModelCapabilities, Provider

AGENTS = ("react",)
_KEYS = {"model", "tools", "mcp", "search_corpus", "max_steps", "max_tokens", "time_limit",
         "max_repeats", "tool_format"}
#: how tool calls are written: the model's native calls, or the loop's text format
TOOL_FORMATS = ("native", "text")
REACT_SYSTEM = ("Work step by step. Use the tools to read files, compute and look things "
                "up; check a result before you rely on it.")


@dataclass(frozen=True)
class AgentSpec:
    """What ``agent/<name>?...`` names: the agent, its model, tools and limits."""

    name: str
    model: str
    tools: tuple[str, ...] = ()
    mcp: tuple[str, ...] = ()
    search_corpus: str | None = None
    limits: LoopLimits = field(default_factory=LoopLimits)
    #: ``None``: native calls where the model has them, else the text format
    tool_format: str | None = None

    def spec(self) -> str:
        """The model spec that names this agent (what runs store and resume rebuild)."""
        query: list[tuple[str, str]] = [("model", self.model)]
        if self.tools:
            query.append(("tools", ",".join(self.tools)))
        query += [("mcp", c) for c in self.mcp]
        if self.search_corpus:
            query.append(("search_corpus", self.search_corpus))
        if self.tool_format:
            query.append(("tool_format", self.tool_format))
        default = LoopLimits()
        for key, name in (("max_steps", "max_steps"), ("max_tokens", "max_tokens"),
                          ("time_limit", "time_limit_s"), ("max_repeats", "max_repeats")):
            value = getattr(self.limits, name)
            if value != getattr(default, name):
                query.append((key, f"{value:g}" if isinstance(value, float) else str(value)))
        return f"agent/{self.name}?" + urlencode(query, quote_via=quote, safe="/:,")

    def label(self) -> str:
        """``openai/x with the react agent (tools: python, files)``."""
        tools = [*self.tools, *(f"mcp:{c.split()[0]}" for c in self.mcp)]
        return (f"{self.model} with the {self.name} agent (tools: "
                f"{', '.join(tools) or 'none'}; at most {self.limits.max_steps} steps)")


def _number(query: dict[str, list[str]], key: str, kind: type, spec: str) -> Any:
    raw = query.get(key)
    if not raw:
        return None
    try:
        value = kind(raw[-1])
    except ValueError:
        raise ModelSpecError(f"{spec}: {key}={raw[-1]!r} is not a number") from None
    if value <= 0:
        raise ModelSpecError(f"{spec}: {key} must be above 0, got {raw[-1]}")
    return value


def parse_agent(rest: str) -> AgentSpec:
    """``react?model=M&tools=a,b`` (the part after ``agent/``) as an :class:`AgentSpec`; a
    malformed one is one line saying what to write."""
    spec = f"agent/{rest}"
    name, _, raw = rest.partition("?")
    if name not in AGENTS:
        raise ModelSpecError(f"{spec}: unknown agent {name!r}; the agents are "
                             f"{', '.join(AGENTS)} (agent/react?model=M&tools=python,files)")
    query = parse_qs(raw, keep_blank_values=True)
    unknown = sorted(set(query) - _KEYS)
    if unknown:
        raise ModelSpecError(f"{spec}: unknown key {unknown[0]!r}; the keys are "
                             f"{', '.join(sorted(_KEYS))}")
    model = (query.get("model") or [""])[-1].strip()
    if not model:
        raise ModelSpecError(f"{spec}: name the model the agent drives: "
                             f"agent/{name}?model=openai/gpt-4o-mini&tools=python,files")
    if model.startswith("agent/"):
        raise ModelSpecError(f"{spec}: an agent drives a model, not another agent")
    tools = tuple(t.strip() for t in ",".join(query.get("tools") or []).split(",") if t.strip())
    try:
        check_tools(list(tools))
    except ConfigError as e:
        raise ModelSpecError(f"{spec}: {e}") from None
    corpus = (query.get("search_corpus") or [None])[-1]
    if corpus is not None and "search" not in tools and "fetch" not in tools:
        raise ModelSpecError(f"{spec}: search_corpus is for the search and fetch tools; add "
                             "tools=search")
    tool_format = (query.get("tool_format") or [None])[-1]
    if tool_format is not None and tool_format not in TOOL_FORMATS:
        raise ModelSpecError(f"{spec}: tool_format must be native or text, not {tool_format!r}")
    default = LoopLimits()
    limits = LoopLimits(
        max_steps=_number(query, "max_steps", int, spec) or default.max_steps,
        max_tokens=_number(query, "max_tokens", int, spec),
        time_limit_s=_number(query, "time_limit", float, spec),
        max_repeats=_number(query, "max_repeats", int, spec) or default.max_repeats)
    return AgentSpec(name, model, tools, tuple(c for c in query.get("mcp") or [] if c.strip()),
                     corpus, limits, tool_format)


def agent_spec(model: str, agent: str, tools: list[str], *, mcp: list[str] | None = None,
               search_corpus: str | None = None) -> str:
    """The spec ``--agent NAME --tools a,b --mcp CMD --search-corpus DIR --model M`` write."""
    corpus = str(Path(search_corpus).expanduser().resolve()) if search_corpus else None
    made = AgentSpec(agent, model, tuple(tools), tuple(mcp or ()), corpus).spec()
    return parse_agent(made.removeprefix("agent/")).spec()  # checked as a typed one would be


class AgentSession:
    """What a sample's call context calls: the inner model's session, and the agent."""

    def __init__(self, model: Any, subject: AgentSubject) -> None:
        self.model, self.tool_agent = model, subject
        self.model_id = subject.model_id
        self.cacheable = getattr(model, "cacheable", False)
        self.text_only = getattr(model, "text_only", False)

    async def generate(self, messages: list[Message], *, tools: list[ToolSpec] | None = None,
                       **params: Any) -> Reply:
        return await self.model.generate(messages, tools=tools, **params)


class AgentSubject:
    """The model under test with this agent; its identity names both."""

    def __init__(self, spec: AgentSpec, inner: Any) -> None:
        self.spec, self.inner = spec, inner
        #: the spec as stored (an MCP command's credentials masked): names the cache's rows
        self.model_id = redact_value("model", spec.spec())
        self.capabilities: ModelCapabilities = inner.capabilities
        self._search: Any = None

    def session(self) -> AgentSession:
        return AgentSession(self.inner.session(), self)

    def describe(self) -> dict[str, Any]:
        inner = self.inner.describe()
        return {"model": self.model_id, "agent": {
            "name": self.spec.name, "tools": list(self.spec.tools), "mcp": list(self.spec.mcp),
            "search_corpus": self.spec.search_corpus, "tool_format": self.spec.tool_format,
            "limits": {"max_steps": self.spec.limits.max_steps,
                       "max_tokens": self.spec.limits.max_tokens,
                       "time_limit_s": self.spec.limits.time_limit_s,
                       "max_repeats": self.spec.limits.max_repeats},
            "label": self.spec.label()}, "inner": inner,
            **({"base_url": inner["base_url"]} if inner.get("base_url") else {})}

    async def preflight(self) -> None:
        """Before any sample: the model answers, the search backend exists, and every MCP
        server starts and lists its tools (else one line saying what to fix)."""
        check = getattr(getattr(self.inner, "model", None), "preflight", None)
        if check is not None:
            await check()
        self.search()
        if self.spec.mcp:
            await check_mcp(list(self.spec.mcp), taken=self.spec.tools)

    def search(self) -> Any:
        """The run's search backend (built once, shared by its samples)."""
        if self._search is None and ("search" in self.spec.tools or "fetch" in self.spec.tools):
            self._search = backend_from(self.spec.search_corpus)
            check_search(self.spec.tools, self._search)
        return self._search

    async def aclose(self) -> None:
        await self.inner.aclose()


def tool_agent(ctx: Any) -> AgentSubject | None:
    """The agent a sample's call context drives, if its model is one (``None``: a model)."""
    return getattr(getattr(ctx, "agent", None), "tool_agent", None)


async def run_agent(agent: AgentSubject, sample: Sample, ctx: Any, messages: list[Message],
                    **params: Any) -> Outcome:
    """One sample with ``agent``: fresh tools (and MCP servers) for it, the loop, every tool
    closed at the end; the outcome's metadata says how the loop ended."""
    tool_ctx = ToolContext(files=[Path(f) for f in sample.files or []], search=agent.search(),
                           allow_weak=None)
    tools: list[Tool] = [make_tool(name, tool_ctx) for name in agent.spec.tools]
    servers = [McpServer(command) for command in agent.spec.mcp]
    native = (agent.spec.tool_format != "text" and agent.capabilities.native_tools
              and not getattr(ctx, "text_only", False))
    if messages and messages[0].role == "system":
        messages = [Message("system", f"{messages[0].content}\n\n{REACT_SYSTEM}"), *messages[1:]]
    else:
        messages = [Message("system", REACT_SYSTEM), *messages]
    try:
        for server in servers:
            await server.start()
            tools += server.tools()
        done: LoopResult = await tool_loop(ctx, messages, tools, limits=agent.spec.limits,
                                           native=native, **params)
    finally:
        for tool in [*tools, *servers]:
            with contextlib.suppress(Exception):
                await tool.aclose()
    return Outcome(transcript=done.transcript, output=done.output, tool_calls=done.calls,
                   metadata={"agent": done.summary()})


def build(name: str, **options: Any) -> AgentSubject:
    """The ``agent`` provider's ``build``: the inner model built with the same options."""
    spec = parse_agent(name)
    return AgentSubject(spec, get_subject(spec.model, **{k: v for k, v in options.items()
                                                         if v is not None}))


PROVIDER = Provider(build=build, capabilities=ModelCapabilities(),
                    forms=(("agent/react?model=<spec>&tools=<a,b>",
                            "the reference tool-using agent driving a model"),))
