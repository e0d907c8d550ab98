"""The persistent sandbox session (:class:`assay.sandbox.Session`): real bubblewrap, no mocks.

A session keeps one Python or bash process alive for one sample: what one call leaves
(variables, files in its scratch folder) the next call sees, and no other session does;
it has no network and nothing outside its scratch folder to write to; a call past its
timeout, or one that ends the process, ends the session clearly; closing it leaves no
process and no folder behind; and nothing the code prints or writes can end a call.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import tempfile
import time
import uuid
from pathlib import Path

import pytest

from assay import sandbox
from assay.errors import ConfigError
from assay.sandbox import Limits, Session, SessionClosed

SECRET = "sk-test-session-secret"
FAST = Limits(timeout_s=10, cpu_s=20)
REPO = Path(__file__).resolve().parents[2]




@pytest.fixture
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temp folder of this test's own, so other runs' scratch folders do not count."""
    base = tmp_path / "tempdir"
    base.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(base))
    return base


def _processes_with(marker: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            with contextlib.suppress(OSError):
                if marker.encode() in Path("/proc", entry, "cmdline").read_bytes():
                    found.append(int(entry))
    return found


def _no_process_left(marker: str, wait_s: float = 5.0) -> bool:
    deadline = time.monotonic() + wait_s
    while _processes_with(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    return _processes_with(marker) == []


SLEEPER = ("import subprocess, sys\n"
           "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(1000)', {m!r}])\n")


# -- state ------------------------------------------------------------------------------------


async def test_state_is_kept_across_calls_of_one_session() -> None:
    async with Session("python", limits=FAST, files={"given.txt": "from the host"}) as s:
        r = await s.run("import os\nx = 41\ndef twice(n):\n    return 2 * n\n"
                        "open('made.txt', 'w').write('by call one')\nos.mkdir('sub')\n"
                        "os.chdir('sub')\nprint('one')\n")
        assert (r.exit_code, r.stdout, r.stderr) == (0, "one\n", "")
        assert r.isolation == "bwrap" and r.ok
        r = await s.run("print(twice(x + 1), os.getcwd())\n"
                        "print(open('../made.txt').read(), open('../given.txt').read())\n")
        assert r.exit_code == 0, r.stderr
        assert r.stdout == f"84 {sandbox.WORK}/sub\nby call one from the host\n"
        # an exception ends the call, not the session; its traceback shows the code
        r = await s.run("y = 1\nraise ValueError('no good')\n")
        assert r.exit_code == 1 and not r.ok and s.alive
        assert "ValueError: no good" in r.stderr and "raise ValueError" in r.stderr
        r = await s.run("print(y)\nraise SystemExit(4)\n")
        assert (r.exit_code, r.stdout) == (4, "1\n") and s.alive


async def test_state_is_gone_in_the_next_session_and_never_shared() -> None:
    async with Session(limits=FAST) as one, Session(limits=FAST) as two:
        r = await one.run("secret = 'one'\nopen('/tmp/work/mine.txt', 'w').write('one')\n")
        assert r.exit_code == 0, r.stderr
        r = await two.run("import os\nprint(os.path.exists('/tmp/work/mine.txt'))\n"
                          "print('secret' in globals())\n")
        assert (r.exit_code, r.stdout) == (0, "False\nFalse\n"), r.stderr
        r = await one.run("print(open('mine.txt').read(), secret)\n")
        assert r.stdout == "one one\n"
    async with Session(limits=FAST) as again:
        r = await again.run("import os\nprint(os.listdir('.'), 'secret' in globals())\n")
        assert (r.exit_code, r.stdout) == (0, "[] False\n"), r.stderr


async def test_a_bash_session_keeps_its_shell() -> None:
    async with Session("bash", limits=FAST) as s:
        r = await s.run("N=7\ncount() { echo \"n=$1\"; }\nmkdir d && cd d && echo hi > f\n"
                        "echo warned >&2\nfalse")
        assert (r.exit_code, r.stdout, r.stderr) == (1, "", "warned\n")
        r = await s.run("count $N; pwd; cat f; read -r line; echo \"read=${line:-nothing}\"")
        assert r.exit_code == 0, r.stderr
        assert r.stdout == f"n=7\n{sandbox.WORK}/d\nhi\nread=nothing\n"
        r = await s.run("echo bye; exit 3")  # the shell ends: so does the session
        assert (r.exit_code, r.stdout, s.alive) == (3, "bye\n", False)
        with pytest.raises(SessionClosed, match="exited with status 3"):
            await s.run("echo again")


# -- isolation --------------------------------------------------------------------------------


async def test_a_session_has_no_network_and_no_host_environment(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    accepted: list[object] = []
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    server.settimeout(0.2)
    port = server.getsockname()[1]
    try:
        async with Session(limits=FAST) as s:
            r = await s.run(
                "import os, socket\nprint(sorted(os.environ))\n"
                f"print(os.environ.get('OPENAI_API_KEY'))\n"
                "try:\n"
                f"    socket.create_connection(('127.0.0.1', {port}), timeout=3)\n"
                "    print('connected')\n"
                "except OSError as e:\n"
                "    print('refused', type(e).__name__)\n")
        with contextlib.suppress(OSError):
            accepted.append(server.accept())
    finally:
        server.close()
    assert r.exit_code == 0, r.stderr
    assert "refused" in r.stdout and "connected" not in r.stdout
    assert accepted == []
    assert SECRET not in r.stdout and "OPENAI_API_KEY" not in r.stdout


def _outside(tmp_path: Path) -> dict[str, Path]:
    name = f"assay-session-escape-{uuid.uuid4().hex}"
    return {"host tmp": Path(tempfile.gettempdir()) / name, "home": Path.home() / name,
            "repo": REPO / name, "test folder": tmp_path / name}


async def test_nothing_outside_the_scratch_folder_is_writable(tmp_path: Path) -> None:
    targets = _outside(tmp_path)
    assert all(t.parent.is_dir() for t in targets.values())
    try:
        async with Session(limits=FAST) as py, Session("bash", limits=FAST) as sh:
            for where, target in targets.items():
                r = await py.run(f"open({str(target)!r}, 'w').write('escaped')\nprint('WROTE')\n")
                assert not target.exists(), f"python wrote {where} on the host"
                if where != "host tmp":  # the sandbox's /tmp is its own tmpfs
                    assert r.exit_code != 0 and "WROTE" not in r.stdout, where
                r = await sh.run(f"echo escaped > {str(target)!r} && echo WROTE")
                assert not target.exists(), f"bash wrote {where} on the host"
                if where != "host tmp":
                    assert r.exit_code != 0 and "WROTE" not in r.stdout, where
            r = await py.run("import os\nprint(sorted(os.listdir('/tmp')))\n")
            assert r.exit_code == 0 and "assay-session-escape" in r.stdout  # its own /tmp
    finally:
        for target in targets.values():
            with contextlib.suppress(FileNotFoundError):
                target.unlink()


# -- how calls end ----------------------------------------------------------------------------


async def test_a_call_past_its_timeout_ends_the_session_and_restart_is_fresh(
        private_tmp: Path) -> None:
    marker = f"assaymark{uuid.uuid4().hex}"
    s = Session(limits=FAST)
    await s.start()
    try:
        r = await s.run(SLEEPER.format(m=marker) + "x = 1\nprint('before', flush=True)\n"
                        "import time\ntime.sleep(1000)\n", timeout=2)
        assert r.timed_out and not r.ok and r.exit_code is None
        assert r.stdout == "before\n"
        assert not s.alive
        assert _no_process_left(marker), "the timed-out session's processes live on"
        with pytest.raises(SessionClosed, match="ran past 2 s"):
            await s.run("print(x)")
        await s.restart()
        r = await s.run("print('x' in globals())")
        assert (r.exit_code, r.stdout) == (0, "False\n")
    finally:
        await s.close()
    assert list(private_tmp.iterdir()) == []
    with pytest.raises(SessionClosed):
        await s.run("print(1)")


async def test_a_call_that_ends_the_interpreter_ends_the_session() -> None:
    async with Session(limits=FAST) as s:
        r = await s.run("import os, sys\nprint('last words', flush=True)\nos._exit(9)\n")
        assert (r.exit_code, r.stdout, r.timed_out, s.alive) == (9, "last words\n", False,
                                                                   False)
        with pytest.raises(SessionClosed, match="exited with status 9"):
            await s.run("print(1)")


async def test_closing_kills_what_the_session_started_and_removes_its_scratch(
        private_tmp: Path) -> None:
    marker = f"assaymark{uuid.uuid4().hex}"
    async with Session(limits=FAST) as s:
        r = await s.run(SLEEPER.format(m=marker))
        assert r.exit_code == 0, r.stderr
        await asyncio.sleep(0.5)
        assert _processes_with(marker), "the background process never started"
        assert list(private_tmp.iterdir()) != []  # the scratch is there while it runs
    assert _no_process_left(marker), "processes outlived their session"
    assert list(private_tmp.iterdir()) == []


async def test_output_of_a_call_is_bounded_to_its_tail() -> None:
    async with Session(limits=FAST) as s:
        r = await s.run("for i in range(200_000):\n    print('line', i)\nprint('THE END')\n")
        assert r.exit_code == 0, r.stderr
        assert len(r.stdout) <= sandbox.OUTPUT_LIMIT and r.stdout.endswith("THE END\n")
        r = await s.run("print('small')")  # nothing of the last call's output is left
        assert r.stdout == "small\n"


async def test_nothing_the_code_prints_or_writes_ends_a_call() -> None:
    """Lines that look like the framing, on stdout and on every pipe the process can write
    to (the channel that says a call is done among them), end no call: only the line with
    the call's own nonce, written by the session's process after the code, does."""
    forge = ("import os, sys, time\n"
             "fakes = b''.join(b'%032x %d\\n' % (i, 0) for i in range(64))\n"
             "sys.stdout.buffer.write(fakes); sys.stdout.flush()\n"
             "for fd in map(int, os.listdir('/proc/self/fd')):\n"
             "    if fd > 2:\n"
             "        try:\n"
             "            os.write(fd, fakes)\n"
             "        except OSError:\n"
             "            pass\n"
             "time.sleep(1)\n"
             "print('still mine')\n"
             "raise SystemExit(5)\n")
    async with Session(limits=FAST) as s:
        r = await s.run(forge)
        assert r.exit_code == 5 and r.stdout.endswith("still mine\n"), (r.stdout, r.stderr)
        r = await s.run("print('next')")
        assert (r.exit_code, r.stdout) == (0, "next\n")
    async with Session("bash", limits=FAST) as s:
        r = await s.run("for fd in /proc/self/fd/*; do echo \"$(printf '%032d' 0) 0\" "
                        ">> \"$fd\"; done 2>/dev/null; sleep 1; echo mine; false")
        assert r.exit_code == 1 and r.stdout.endswith("mine\n")


# -- without bubblewrap -----------------------------------------------------------------------




async def test_without_bwrap_a_session_is_refused_unless_weak_isolation_is_allowed(
        no_bwrap: None) -> None:
    with pytest.raises(ConfigError) as info:
        await Session("bash").start()
    assert "\n" not in str(info.value)
    assert sandbox.BWRAP_INSTALL in str(info.value) and sandbox.ALLOW_WEAK_FLAG in str(info.value)
    with sandbox.allow_weak_isolation():
        with pytest.raises(ConfigError, match="bubblewrap"):
            await Session(require=True).start()
        async with Session(limits=FAST) as s:
            r = await s.run("x = 2")
            r = await s.run("print(x * 21)")
    assert (r.isolation, r.exit_code, r.stdout) == ("weak", 0, "42\n")
    assert r.bounds["disk"].startswith("not bounded")
