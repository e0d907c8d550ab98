"""A small MCP server over stdio for the MCP tool tests: ``add`` and ``lookup``.

``python tests/agents/mcp_server.py [PID_FILE]``: with ``PID_FILE``, it writes its process id
there first, so a test can check that closing the client leaves no process behind."""

from __future__ import annotations

import os
import sys

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

TABLE = {"apple": "a red fruit", "carrot": "an orange root"}

server = MCPServer("assay-test")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def lookup(key: str) -> str:
    """The meaning of ``key`` in a small table."""
    if key not in TABLE:
        raise ToolError(f"no entry for {key!r}")  # its message reaches the client
    return TABLE[key]


if __name__ == "__main__":
    if len(sys.argv) > 1:
        with open(sys.argv[1], "w") as f:
            f.write(str(os.getpid()))
    server.run("stdio")
