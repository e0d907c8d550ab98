"""A persistent session: one Python or bash process alive in one sandbox for one sample. Code goes
on its own pipe; only a line with the call's random nonce on another pipe ends a call, so output
is never framing. A timeout or exit ends the session (:class:`SessionClosed` until restart)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import shutil
import sys
from pathlib import Path
from typing import Literal

from assay.errors import AssayError, ConfigError
from assay.sandbox.policy import Limits, SandboxResult, check_isolation
from assay.sandbox.process import KILL_GRACE_S, Pipe, Sandboxed, slots

#: the Python process: each call's code run in one ``__main__``, a traceback on stderr
PYTHON = r"""
import itertools, linecache, os, sys, traceback, types
requests, done = os.fdopen(int(sys.argv[1]), "rb"), int(sys.argv[2])
del sys.argv[1:]
main = sys.modules["__main__"] = types.ModuleType("__main__")
for n in itertools.count(1):
    head = requests.readline().split()
    if len(head) != 2:
        os._exit(0)
    code = requests.read(int(head[1]) + 1)[:-1].decode("utf-8", "surrogateescape")
    name = f"<call {n}>"
    linecache.cache[name] = (len(code), None, code.splitlines(True), name)
    status = 0
    try:
        exec(compile(code, name, "exec"), main.__dict__)
    except SystemExit as e:
        status = e.code if isinstance(e.code, int) else e.code is not None
        if not isinstance(e.code, (int, type(None))):
            print(e.code, file=sys.stderr)
    except BaseException as e:
        traceback.print_exception(type(e), e, e.__traceback__.tb_next)
        status = 1
    for stream in (sys.stdout, sys.stderr):
        try: stream.flush()
        except Exception: pass
    os.write(done, head[0] + b" %d\n" % status)
"""
#: the bash process: each call's code ``eval`` ed in the one shell
BASH = r"""
__assay_requests=$1 __assay_done=$2; shift 2
while IFS=' ' read -r -u "$__assay_requests" __assay_nonce __assay_size; do
  IFS= read -r -d '' -u "$__assay_requests" __assay_code
  eval "$__assay_code" </dev/null
  printf '%s %d\n' "$__assay_nonce" "$?" >&"$__assay_done"
done
"""


class SessionClosed(AssayError):
    """A call to a session that is not running (not started, closed, or ended)."""


class Session:
    """``async with Session("python") as s: await s.run("x = 1")``: variables and scratch
    files (``files``, ``copy``) last from call to call. ``limits`` bound the session as a whole
    (``cpu_s`` over all calls) and each call (``timeout_s`` unless :meth:`run` is given one)."""

    def __init__(self, shell: Literal["python", "bash"] = "python", *,
                 limits: Limits | None = None, files: dict[str, str | bytes] | None = None,
                 copy: list[Path] | None = None, require: bool = False,
                 allow_weak: bool | None = None) -> None:
        if shell not in ("python", "bash"):
            raise ConfigError(f"a session runs python or bash, not {shell!r}")
        self.shell, self.limits = shell, limits or Limits()
        self._files, self._copy = files, copy
        self._require, self._allow_weak = require, allow_weak
        self._box: Sandboxed | None = None
        self._requests = -1
        self._done: Pipe | None = None
        self._ended = f"the {shell} session is not started"

    async def __aenter__(self) -> Session:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def alive(self) -> bool:
        return self._box is not None

    async def start(self) -> None:
        """Start the process in a fresh sandbox (a no-op while it runs)."""
        if self._box is not None:
            return
        isolation = check_isolation(f"a {self.shell} session", allow_weak=self._allow_weak,
                                    require=self._require)
        requests, self._requests = os.pipe()
        self._done = done = Pipe()
        argv = ([sys.executable, "-I", "-B", "-u", "-c", PYTHON] if self.shell == "python" else
                [shutil.which("bash") or "/bin/bash", "--noprofile", "--norc", "-c", BASH, "bash"])
        try:
            self._box = await Sandboxed.start(
                [*argv, str(requests), str(done.child)], isolation, self.limits,
                files=self._files, copy=self._copy, fds=(requests, done.child))
        except BaseException:
            await self.close()
            raise
        finally:
            os.close(requests)
            done.close_child()
        os.set_blocking(self._requests, False)

    async def run(self, code: str, *, timeout: float | None = None) -> SandboxResult:
        """Run ``code``: its stdout and stderr (the last 16,384 characters), exit status
        (Python: 1 on an uncaught exception) and whether it ran past ``timeout`` s."""
        box = self._box
        if box is None or box.proc is None:
            raise SessionClosed(self._ended)
        body = code.encode("utf-8", errors="surrogateescape")
        if b"\0" in body:
            raise ConfigError("code for a session may not hold a NUL character")
        limit = self.limits.timeout_s if timeout is None else timeout
        ended, timed_out = "", False
        for pipe in (box.out, box.err, self._done):
            pipe.data.clear()  # type: ignore[union-attr]
        try:
            async with slots():
                status = await asyncio.wait_for(self._call(body), limit)
            if status is None:  # the process ended (or closed its channel)
                await box.finish(KILL_GRACE_S)
                status = box.proc.returncode
                ended = f"its process exited with status {status}"
        except asyncio.TimeoutError:
            status, timed_out, ended = None, True, f"a call ran past {limit:g} s"
        except BaseException:  # cancelled: the call may still run
            await self.close(f"the {self.shell} session ended: a call was cancelled")
            raise
        box.out.read()
        box.err.read()
        result = box.result(status, timed_out)
        if ended:
            await self.close(f"the {self.shell} session ended: {ended}")
        return result

    async def _call(self, body: bytes) -> int | None:
        """Send one call; its status, or ``None`` when the process ended first."""
        box, done, nonce = self._box, self._done, secrets.token_hex(16).encode()
        assert box is not None and box.proc is not None and done is not None
        with contextlib.suppress(OSError):  # a broken pipe: the process is gone
            await _send(self._requests, b"%s %d\n%s\0" % (nonce, len(body), body))
        ended = asyncio.ensure_future(box.proc.wait())
        try:
            while True:
                for line in bytes(done.data).split(b"\n")[:-1]:
                    found, _, status = line.partition(b" ")
                    if found == nonce and status.lstrip(b"-").isdigit():
                        return int(status)
                if done.ended.is_set() or ended.done():
                    return None
                done.changed.clear()
                changed = asyncio.ensure_future(done.changed.wait())
                await asyncio.wait({changed, ended}, return_when=asyncio.FIRST_COMPLETED)
                changed.cancel()
        finally:
            ended.cancel()

    async def restart(self) -> None:
        await self.close()
        await self.start()

    async def close(self, why: str = "") -> None:
        """Kill the process and all it started, remove the scratch folder; never raises."""
        box, done, self._box, self._done = self._box, self._done, None, None
        self._ended = why or f"the {self.shell} session is closed"
        if box is not None:
            await box.close()
        if done is not None:
            done.close()
        if self._requests >= 0:
            os.close(self._requests)
            self._requests = -1


async def _send(fd: int, data: bytes) -> None:
    loop = asyncio.get_running_loop()
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view):]
        except BlockingIOError:
            ready = loop.create_future()
            loop.add_writer(fd, lambda f=ready: f.done() or f.set_result(None))
            try:
                await ready
            finally:
                loop.remove_writer(fd)
