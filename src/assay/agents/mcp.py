"""Tools from Model Context Protocol servers: each ``--mcp "COMMAND ARGS"`` a server process
spoken to over stdio with the ``mcp`` package's client, each of its tools a :class:`Tool`.

A server is started per sample and stopped when the sample ends (its client in a task of its
own: see :class:`McpServer`). :func:`check_mcp` starts each server once before a run, so a bad
command is one line before any sample runs."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shlex
import signal
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay.agents.tools import ToolResult, bounded, error
from assay.core.types import ToolSpec
from assay.errors import ConfigError

#: seconds a server has to answer ``initialize`` and ``tools/list``
START_TIMEOUT_S = 30.0
#: seconds one tool call may take before it is an error result
CALL_TIMEOUT_S = 300.0


def parse_mcp(command: str) -> list[str]:
    """``command`` split as a shell would (no expansion); an empty one is a ConfigError."""
    try:
        argv = shlex.split(command)
    except ValueError as e:
        raise ConfigError(f"--mcp {command!r} cannot be parsed: {e}") from None
    if not argv:
        raise ConfigError("--mcp needs a command that starts an MCP server over stdio, "
                          "e.g. --mcp \"npx -y @modelcontextprotocol/server-everything\"")
    return argv


class McpServer:
    """One MCP server process: ``await start()``, then :meth:`tools`, then ``await aclose()``
    (or ``async with McpServer(cmd) as server:``). ``prefix``: its tools are named
    ``{prefix}_{name}``, for two servers (or a server and a built-in tool) with one name.

    The ``mcp`` client's anyio task groups must be exited in the task that entered them, so
    the client lives in a task of its own, started by :meth:`start` and cancelled by
    :meth:`aclose`: start, calls and close may come from any tasks of the one event loop.
    The process gets the client's default environment (``PATH``, ``HOME``, ...), not the
    run's secrets; ``env KEY=VALUE COMMAND`` gives it more."""

    def __init__(self, command: str, *, prefix: str | None = None,
                 timeout_s: float = START_TIMEOUT_S,
                 call_timeout_s: float = CALL_TIMEOUT_S) -> None:
        self.command, self.argv, self.prefix = command, parse_mcp(command), prefix
        self.timeout_s, self.call_timeout_s = timeout_s, call_timeout_s
        self._task: asyncio.Task[None] | None = None
        self._session: Any = None
        self._listed: list[Any] = []
        self._stderr: Any = None
        self._tail = ""  # the server's last stderr line, once closed

    async def start(self) -> None:
        """Launch the server, initialize the session and list its tools; a failure is one
        ConfigError line naming the command and the cause (the server's last stderr line)."""
        try:
            from mcp.types import REQUEST_TIMEOUT  # optional
        except ImportError:
            raise ConfigError("--mcp needs the mcp package", hint="pip install mcp") from None
        if self._task is not None:
            raise RuntimeError(f"MCP server {self.command!r} is already started")
        self._stderr = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._task = asyncio.create_task(self._serve(ready), name=f"mcp {self.command}")
        try:
            await ready
        except BaseException as e:
            await self.aclose()
            if not isinstance(e, Exception):
                raise
            cause = (f"no answer within {self.timeout_s:g} s"
                     if getattr(e, "code", None) == REQUEST_TIMEOUT else _one_line(e))
            tail = f" (its stderr: {self._tail[:300]})" if self._tail else ""
            raise ConfigError(f"MCP server {self.command!r} did not start: {cause}{tail}",
                              hint="check that the command starts an MCP server over stdio"
                              ) from None

    async def _serve(self, ready: asyncio.Future[None]) -> None:
        """The client's task: connect, set ``ready`` (or its error), hold until cancelled."""
        from mcp import ClientSession, StdioServerParameters, stdio_client  # optional

        # $NAME in the command is read from the environment now: a secret given so is never
        # in the run's stored spec (``env GITHUB_TOKEN=$GITHUB_TOKEN npx ...``)
        argv = [os.path.expandvars(a) for a in self.argv]
        params = StdioServerParameters(command=argv[0], args=argv[1:])
        try:
            async with stdio_client(params, errlog=self._stderr) as (read, write), \
                    ClientSession(read, write, read_timeout_seconds=self.timeout_s) as session:
                await session.initialize()
                self._listed = await _all_tools(session)
                self._session = session
                ready.set_result(None)
                await asyncio.Event().wait()  # until aclose cancels this task
        except Exception as e:
            while len(getattr(e, "exceptions", ())) == 1:  # anyio's task groups wrap it
                e = e.exceptions[0]
            if not ready.done():
                ready.set_exception(e)
        finally:
            self._session = None

    def tools(self) -> list[McpTool]:
        """One tool per tool the server listed at start."""
        return [McpTool(ToolSpec(name=f"{self.prefix}_{t.name}" if self.prefix else t.name,
                                 description=t.description or t.title or "",
                                 parameters=t.input_schema or {"type": "object"}),
                        self, t.name) for t in self._listed]

    async def call(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        """Call the server's tool ``name``: its text, or an error result (never raised)."""
        if self._session is None:
            return error(f"the MCP server {self.command!r} is not running")
        try:
            result = await self._session.call_tool(name, arguments,
                                                   read_timeout_seconds=self.call_timeout_s)
        except Exception as e:
            return error(f"MCP tool {name!r} failed: {_one_line(e)}")
        text = "\n".join(_text(part) for part in result.content)
        if not text and result.structured_content is not None:
            text = json.dumps(result.structured_content)
        if result.is_error:
            return error(" ".join(text.split()) or f"MCP tool {name!r} failed")
        return ToolResult(bounded(text))

    async def aclose(self) -> None:
        """Stop the server (the client closes its stdin, then signals its process group) and
        kill any process still writing to its stderr; never raises."""
        task, self._task, self._session = self._task, None, None
        if task is not None:
            task.cancel()
            await asyncio.wait({task})
        if self._stderr is not None and not self._stderr.closed:
            for pid in _holding(self._stderr):
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            self._stderr.seek(0)
            lines = [line.strip() for line in self._stderr.read().splitlines()]
            self._tail = next((line for line in reversed(lines) if line), "")
            self._stderr.close()

    async def __aenter__(self) -> McpServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


@dataclass
class McpTool:
    """A server's tool; the server, not the tool, holds the process."""

    spec: ToolSpec
    server: McpServer
    remote: str

    async def call(self, arguments: dict[str, Any]) -> ToolResult:
        return await self.server.call(self.remote, arguments)

    async def aclose(self) -> None:
        """Nothing: :meth:`McpServer.aclose` stops the process."""


async def check_mcp(servers: Iterable[str | McpServer], *, taken: Iterable[str] = ()) -> None:
    """Start each server (a command, or an unstarted :class:`McpServer` with its prefix) once,
    list its tools and stop it: a ConfigError line before the run if one does not start or a
    tool name repeats (another server's or one of ``taken``, the built-in tools' names)."""
    seen = {name: "a built-in tool" for name in taken}
    for server in servers:
        server = McpServer(server) if isinstance(server, str) else server
        try:
            await server.start()
            names = [tool.spec.name for tool in server.tools()]
        finally:
            await server.aclose()
        for name in names:
            if name in seen:
                raise ConfigError(f"MCP server {server.command!r} offers a tool {name!r} as "
                                  f"{seen[name]} does", hint=(
                                      "leave the built-in tool out of --tools"
                                      if seen[name] == "a built-in tool" else
                                      "give the servers with one tool name one at a time"))
            seen[name] = f"MCP server {server.command!r}"


async def _all_tools(session: Any) -> list[Any]:
    """Every page of the server's ``tools/list``."""
    from mcp.types import PaginatedRequestParams  # optional

    listed = await session.list_tools()
    tools = list(listed.tools)
    while listed.next_cursor:
        listed = await session.list_tools(params=PaginatedRequestParams(cursor=listed.next_cursor))
        tools += listed.tools
    return tools


def _text(part: Any) -> str:
    """A content part as text: text as is, anything else described in a line."""
    kind = getattr(part, "type", type(part).__name__)
    if kind == "text":
        return part.text
    resource = getattr(part, "resource", None)
    if resource is not None and getattr(resource, "text", None) is not None:
        return resource.text
    what = getattr(resource or part, "uri", None) or getattr(part, "mime_type", None) or ""
    return f"[{kind} content{': ' + str(what) if what else ''}]"


def _one_line(e: BaseException) -> str:
    if isinstance(e, OSError) and e.strerror:
        return f"{e.strerror}: {e.filename}" if e.filename else e.strerror
    kind = "" if type(e).__module__.startswith("mcp.") else f"{type(e).__name__}: "
    return " ".join(f"{kind}{e}".split()) or type(e).__name__


def _holding(file: Any) -> list[int]:
    """The processes (Linux: from ``/proc``) whose stderr is ``file``, the server's stderr."""
    key = os.fstat(file.fileno())
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        with contextlib.suppress(OSError):
            st = os.stat(proc / "fd" / "2")
            if (st.st_dev, st.st_ino) == (key.st_dev, key.st_ino):
                found.append(int(proc.name))
    return found
