"""The tools an agent may call: each a schema, a one-line description and bounded output.

A tool is built per sample from a :class:`ToolContext` (its attachments, the search backend)
and closed when the sample ends, so no state crosses samples. A call never raises for the
tool's own failures: a :class:`ToolResult` with ``error=True`` goes back to the model and is
recorded in the transcript."""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from assay.core.types import ToolSpec
from assay.errors import ConfigError

#: characters a tool's result may hand back to the model (longer: head and tail, cut said)
MAX_OUTPUT = 8_000


@dataclass(slots=True)
class ToolResult:
    text: str
    error: bool = False


class Tool(Protocol):
    spec: ToolSpec

    async def call(self, arguments: dict[str, Any]) -> ToolResult:
        """Run the tool; its own failures are an ``error`` result, never raised."""
        ...

    async def aclose(self) -> None:
        """Release what the tool holds (a process, a server); never raises."""
        ...


@dataclass
class ToolContext:
    """What a sample's tools may reach: its attachments (read-only) and nothing else of the
    host; ``search``: the run's search backend (``search`` and ``fetch``)."""

    files: list[Path] = field(default_factory=list)
    search: Any = None
    allow_weak: bool | None = None


def bounded(text: str, limit: int = MAX_OUTPUT) -> str:
    """``text`` in at most about ``limit`` characters: its head and tail, the cut said."""
    if len(text) <= limit:
        return text
    head, tail = text[: limit * 3 // 4], text[-(limit // 4):]
    return f"{head}\n[... {len(text) - len(head) - len(tail)} characters cut ...]\n{tail}"


def error(text: str) -> ToolResult:
    return ToolResult(bounded(text), error=True)


#: characters a paged text (a file, a fetched page) hands back per call
PAGE = MAX_OUTPUT - 200


def check_offset(offset: Any) -> ToolResult | None:
    """``None`` when ``offset`` (characters to skip) is a whole number, 0 or more (or not
    given), else the error result that says so."""
    if offset is None or (isinstance(offset, int) and not isinstance(offset, bool)
                          and offset >= 0):
        return None
    return error(f"offset must be a whole number of characters, 0 or more, not {offset!r}")


def paged(text: str, offset: int | None, what: str) -> ToolResult:
    """:data:`PAGE` characters of ``text`` (``what`` names it) from ``offset``; a cut says
    where to read on."""
    offset = offset or 0
    if not text.strip():
        return ToolResult(f"{what} holds no text that could be extracted")
    if offset >= len(text):
        return error(f"offset {offset} is past the end of {what} ({len(text)} characters)")
    end = min(offset + PAGE, len(text))
    if offset == 0 and end == len(text):
        return ToolResult(bounded(text))
    more = f"read on with offset={end}" if end < len(text) else "the end"
    return ToolResult(bounded(f"{text[offset:end]}\n[characters {offset}-{end} of "
                              f"{len(text)}; {more}]"))


#: name -> "module:factory"; a factory takes a ToolContext and returns a Tool (its module,
#: and the libraries it reads files with, imported only when the tool is asked for)
BUILTIN: dict[str, str] = {
    "python": "assay.agents.code_tools:python_tool",
    "bash": "assay.agents.code_tools:bash_tool",
    "files": "assay.agents.files_tool:files_tool",
    "search": "assay.agents.search:search_tool",
    "fetch": "assay.agents.search:fetch_tool",
    "calculator": "assay.agents.calc:calculator_tool",
    "think": "assay.agents.calc:think_tool",
}


def check_tools(names: list[str]) -> list[str]:
    """``names`` if each is a built-in tool, else one line naming the ones there are."""
    unknown = [n for n in names if n not in BUILTIN]
    if unknown:
        raise ConfigError(f"unknown tool {unknown[0]!r}; the built-in tools are "
                          f"{', '.join(BUILTIN)}")
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ConfigError(f"tool {repeated[0]!r} is named twice; name each tool once")
    return names


def make_tool(name: str, ctx: ToolContext) -> Tool:
    module, _, factory = BUILTIN[check_tools([name])[0]].partition(":")
    return getattr(importlib.import_module(module), factory)(ctx)
