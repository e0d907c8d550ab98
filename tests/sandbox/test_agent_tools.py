"""The agent's ``python`` and ``bash`` tools (issue 36) under bubblewrap: state kept within one
sample's session and gone in the next, the attachments in the working folder, and every
escape tried from each tool refused: reading a host file, writing outside the scratch
folder, the network, the host's secrets in the environment, processes left behind."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

from assay.agents.tools import ToolContext, make_tool

SECRET = "sk-test-0123456789abcdef-never-seen"


async def ask(tool: Any, source: str) -> Any:
    return await tool.call({"code": source} if tool.spec.name == "python" else
                           {"command": source})


async def test_python_state_lasts_within_a_sample_and_never_into_the_next(
        tmp_path: Path) -> None:
    data = tmp_path / "table.csv"
    data.write_text("a,b\n1,2\n3,4\n")
    first = make_tool("python", ToolContext(files=[data]))
    try:
        done = await ask(first, "import csv\nrows = list(csv.DictReader(open('table.csv')))\n"
                                "total = sum(int(r['b']) for r in rows)\nprint(total)")
        assert (done.error, done.text.strip()) == (False, "6")
        again = await ask(first, "print(total + 1, len(rows))")
        assert (again.error, again.text.strip()) == (False, "7 2")
    finally:
        await first.aclose()
    second = make_tool("python", ToolContext(files=[]))
    try:
        gone = await ask(second, "print(total)")
        assert gone.error and "NameError" in gone.text
        none = await ask(second, "import os\nprint(os.listdir('.'))")
        assert none.text.strip() == "[]"  # the next sample sees none of the last one's files
    finally:
        await second.aclose()
    assert data.read_text() == "a,b\n1,2\n3,4\n"  # the original never touched


async def test_a_bash_session_keeps_its_shell_and_sees_the_attachments(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("alpha\nbeta\n")
    bash = make_tool("bash", ToolContext(files=[tmp_path / "notes.txt"]))
    try:
        await ask(bash, "export COUNT=$(wc -l < notes.txt); mkdir -p out && cd out")
        done = await ask(bash, "echo $COUNT $(basename $(pwd))")
        assert (done.error, done.text.strip()) == (False, "2 out")
        failed = await ask(bash, "false")
        assert failed.error and "exit status 1" in failed.text
    finally:
        await bash.aclose()


class Listener:
    """A TCP server on 127.0.0.1 that counts the connections it accepts."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.accepted += 1
            conn.close()

    def close(self) -> None:
        self.stop.set()
        self.thread.join()
        self.sock.close()


def escapes(host_file: Path, outside: Path, port: int, marker: str) -> dict[str, dict[str, str]]:
    """Per tool, per escape: code that prints a line ESCAPED if it gets out."""
    return {
        "python": {
            "read a host file": f"print('ESCAPED' if 'HOST-ONLY' in open({str(host_file)!r})"
                                ".read() else 'no')",
            "read the repository": "import os\nprint('ESCAPED' if os.path.exists("
                                   f"{str(Path(__file__).resolve())!r}) else 'no')",
            "write outside": f"open({str(outside)!r}, 'w').write('x')\nprint('ESCAPED')",
            "network": "import socket\ns = socket.create_connection(('127.0.0.1', "
                       f"{port}), timeout=5)\nprint('ESCAPED')",
            "environment secrets": "import os\nprint('ESCAPED' if any("
                                   f"{SECRET!r} in v for v in os.environ.values()) else 'no')",
            "leave a process": "import subprocess\nsubprocess.Popen(['sleep', "
                               f"'{marker}1'], start_new_session=True)\nprint('started')",
        },
        "bash": {
            "read a host file": f"grep -q HOST-ONLY {host_file} && echo ESCAPED || echo no",
            "read the repository": f"test -e {Path(__file__).resolve()} && echo ESCAPED "
                                   "|| echo no",
            "write outside": f"echo x > {outside} && echo ESCAPED",
            "network": f"(exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo ESCAPED "
                       "|| echo no",
            "environment secrets": f"env | grep -q {SECRET} && echo ESCAPED || echo no",
            "leave a process": f"setsid nohup sleep {marker}2 >/dev/null 2>&1 & echo started",
        },
    }


def running(marker: str) -> list[str]:
    done = subprocess.run(["pgrep", "-af", f"sleep {marker}"], capture_output=True, text=True)
    return [line for line in done.stdout.splitlines() if "pgrep" not in line]


async def test_no_escape_from_the_python_or_bash_tool_succeeds(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    host_file = tmp_path / "host-secret.txt"
    host_file.write_text("HOST-ONLY")
    outside = tmp_path / "written-from-the-sandbox"
    marker = f"4242.{os.getpid()}"
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    listener = Listener()
    tried, escaped = 0, []
    try:
        for shell, attempts in escapes(host_file, outside, listener.port, marker).items():
            tool = make_tool(shell, ToolContext(files=[]))
            try:
                for what, source in attempts.items():
                    done = await ask(tool, source)
                    tried += 1
                    if "ESCAPED" in (line.strip() for line in done.text.splitlines()):
                        escaped.append(f"{shell}: {what}: {done.text[:200]}")
            finally:
                await tool.aclose()
        # nothing reached the host: the file outside, a connection, a process left running
        if outside.exists():
            escaped.append("a file was written outside the scratch folder")
        if listener.accepted:
            escaped.append(f"{listener.accepted} connections reached the host's listener")
        for _ in range(600):  # killed on close; the reaper gets 60 s on a busy machine
            if not running(marker):
                break
            await asyncio.sleep(0.1)
        if running(marker):
            escaped.append(f"processes left running: {running(marker)}")
    finally:
        listener.close()
    print("FIGURES sandbox-escapes", json.dumps({"tried": tried, "succeeded": len(escaped)}))
    assert tried == 12 and escaped == []
