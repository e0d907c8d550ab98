"""MCP servers' tools against a real server over stdio (``mcp_server.py``): listing, calls,
error results, start-up failures as one line, and no process left after ``aclose``."""

from __future__ import annotations

import asyncio
import os
import shlex
import signal
import sys
import time
from pathlib import Path

import pytest

from assay.agents.mcp import McpServer, _text, check_mcp, parse_mcp
from assay.agents.tools import ToolResult
from assay.errors import ConfigError

pytestmark = pytest.mark.slow

SERVER = Path(__file__).resolve().parent / "mcp_server.py"
GOOD = shlex.join([sys.executable, str(SERVER)])


def _python(code: str) -> str:
    return shlex.join([sys.executable, "-c", code])


async def _gone(pid: int, deadline_s: float = 30.0) -> bool:
    """Whether process ``pid`` ends before the deadline (a zombie that init has not reaped
    yet is ended too)."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        try:
            os.kill(pid, 0)
            if Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] == "Z":
                return True
        except (ProcessLookupError, FileNotFoundError):
            return True
        await asyncio.sleep(0.05)
    return False


async def _start_with_pid(tmp_path: Path) -> tuple[McpServer, int]:
    pid_file = tmp_path / "pid"
    server = McpServer(shlex.join([sys.executable, str(SERVER), str(pid_file)]))
    await server.start()
    return server, int(pid_file.read_text())


def test_a_command_is_split_as_a_shell_would() -> None:
    assert parse_mcp("npx -y 'my server' --dir \"a b\"") == ["npx", "-y", "my server", "--dir",
                                                               "a b"]
    for empty in ("", "   "):
        with pytest.raises(ConfigError, match="--mcp needs a command"):
            parse_mcp(empty)


def test_content_that_is_not_text_is_described_in_a_line() -> None:
    from mcp.types import (  # optional
        BlobResourceContents,
        EmbeddedResource,
        ImageContent,
        ResourceLink,
        TextResourceContents,
    )

    assert _text(ImageContent(type="image", data="AAAA", mime_type="image/png")) == \
        "[image content: image/png]"
    assert _text(ResourceLink(type="resource_link", name="r", uri="file:///r.txt")) == \
        "[resource_link content: file:///r.txt]"
    assert _text(EmbeddedResource(type="resource", resource=TextResourceContents(
        uri="file:///t.txt", text="inside"))) == "inside"
    assert _text(EmbeddedResource(type="resource", resource=BlobResourceContents(
        uri="file:///b.bin", blob="AAAA"))) == "[resource content: file:///b.bin]"


async def test_the_servers_tools_are_listed_with_their_schemas() -> None:
    async with McpServer(GOOD) as server:
        tools = {t.spec.name: t.spec for t in server.tools()}
    assert sorted(tools) == ["add", "lookup"]
    assert tools["add"].description == "Add two integers."
    assert tools["add"].parameters["properties"] == {"a": {"title": "A", "type": "integer"},
                                                     "b": {"title": "B", "type": "integer"}}
    assert tools["add"].parameters["required"] == ["a", "b"]
    assert tools["lookup"].parameters["properties"]["key"]["type"] == "string"


async def test_calls_give_the_text_or_an_error_result_with_the_servers_message() -> None:
    async with McpServer(GOOD, prefix="m") as server:
        tools = {t.spec.name: t for t in server.tools()}
        assert sorted(tools) == ["m_add", "m_lookup"]
        assert await tools["m_add"].call({"a": 2, "b": 3}) == ToolResult("5")
        assert await tools["m_lookup"].call({"key": "apple"}) == ToolResult("a red fruit")
        missing = await tools["m_lookup"].call({"key": "zzz"})
        assert missing.error and "no entry for 'zzz'" in missing.text
        wrong = await tools["m_add"].call({"a": "x"})  # the server's validation: one line
        assert wrong.error and "\n" not in wrong.text and "validation error" in wrong.text
        await tools["m_add"].aclose()  # the tool holds nothing; the server stays up
        assert await tools["m_add"].call({"a": 1, "b": 1}) == ToolResult("2")


@pytest.mark.parametrize("command, cause", [
    ("assay-no-such-mcp-server --stdio", "No such file or directory"),
    (_python("raise SystemExit(3)"), "Connection closed"),
    (_python("import sys; print('starting', file=sys.stderr); sys.exit('bad token')"),
     "(its stderr: bad token)"),
])
async def test_a_server_that_does_not_start_is_one_config_error_line(command: str,
                                                                     cause: str) -> None:
    with pytest.raises(ConfigError) as caught:
        await McpServer(command).start()
    message = str(caught.value)
    assert "\n" not in message and f"MCP server {command!r} did not start" in message
    assert cause in message


async def test_a_server_that_never_answers_is_a_config_error_after_the_timeout() -> None:
    with pytest.raises(ConfigError, match="did not start: no answer within 1 s"):
        await McpServer(_python("import time; time.sleep(600)"), timeout_s=1).start()


async def test_after_aclose_the_server_process_is_gone(tmp_path: Path) -> None:
    server, pid = await _start_with_pid(tmp_path)
    os.kill(pid, 0)  # running
    await server.aclose()
    assert await _gone(pid)
    after = await server.call("add", {"a": 1, "b": 2})
    assert after.error and "not running" in after.text
    await server.aclose()  # twice: nothing happens


async def test_start_and_close_may_be_in_other_tasks_than_the_calls(tmp_path: Path) -> None:
    # the client's task groups live in the server's own task: wait_for's task is fine
    pid_file = tmp_path / "pid"
    server = McpServer(shlex.join([sys.executable, str(SERVER), str(pid_file)]))
    await asyncio.wait_for(server.start(), 60)
    assert await asyncio.create_task(server.call("add", {"a": 2, "b": 2})) == ToolResult("4")
    await asyncio.create_task(server.aclose())
    assert await _gone(int(pid_file.read_text()))


async def test_aclose_kills_what_the_server_left_running(tmp_path: Path) -> None:
    # the server exits when its stdin closes, so the client does not signal its process
    # group; its child (sharing its stderr) is killed all the same
    script = (f'sleep 300 & echo $! > {shlex.quote(str(tmp_path / "child"))}; '
              f"exec {shlex.join([sys.executable, str(SERVER), str(tmp_path / 'pid')])}")
    server = McpServer(shlex.join(["sh", "-c", script]))
    await server.start()
    child, pid = int((tmp_path / "child").read_text()), int((tmp_path / "pid").read_text())
    await server.aclose()
    assert await _gone(pid) and await _gone(child)


async def test_a_server_that_dies_mid_session_gives_error_results(tmp_path: Path) -> None:
    server, pid = await _start_with_pid(tmp_path)
    try:
        os.kill(pid, signal.SIGKILL)
        assert await _gone(pid)
        result = await server.call("add", {"a": 1, "b": 2})
        assert result.error and "\n" not in result.text
    finally:
        await server.aclose()


async def test_check_mcp_starts_each_server_and_refuses_a_name_twice() -> None:
    await check_mcp([GOOD], taken=["python", "bash"])
    with pytest.raises(ConfigError, match="offers a tool 'add' as a built-in tool does"):
        await check_mcp([GOOD], taken=["add"])
    with pytest.raises(ConfigError, match=r"offers a tool 'add' as MCP server .* does"):
        await check_mcp([GOOD, GOOD])
    await check_mcp([GOOD, McpServer(GOOD, prefix="two")], taken=["python"])
    with pytest.raises(ConfigError, match="did not start"):
        await check_mcp([_python("pass")])
