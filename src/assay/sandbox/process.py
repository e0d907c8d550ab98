"""The one way into the sandbox (:class:`Sandboxed`), and the one-shot program on it."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import tempfile
import weakref
from dataclasses import asdict
from pathlib import Path

from assay.sandbox.bwrap import MB, SCRATCH_ROOT, bwrap_command, environment, launcher, run_uid
from assay.sandbox.cgroup import BWRAP_PROCESSES, RunGroup
from assay.sandbox.files import SUPPORT_DIR, WORK_DIR, InputsTooBig, pack, remove_tree
from assay.sandbox.policy import Limits, SandboxResult, bounds, check_isolation, verdict_report

OUTPUT_LIMIT = 16_384  # characters of stdout/stderr kept
#: after a kill, how long the last of the output may take to come
KILL_GRACE_S = 5.0
_SLOTS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
    weakref.WeakKeyDictionary())


def slots() -> asyncio.Semaphore:
    """One run per CPU (2 at least) per loop: more make slow code time out and each holds memory."""
    loop = asyncio.get_running_loop()
    sem = _SLOTS.get(loop)
    if sem is None:
        sem = _SLOTS[loop] = asyncio.Semaphore(max(2, os.cpu_count() or 1))
    return sem


def kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


class Pipe:
    """A pipe from the sandbox (``child``: its end), read as it fills; the tail is kept."""

    def __init__(self) -> None:
        self.fd, self.child = os.pipe()
        os.set_blocking(self.fd, False)
        self.data = bytearray()
        self.ended, self.changed = asyncio.Event(), asyncio.Event()  # ended: EOF, or closed
        self._loop = asyncio.get_running_loop()
        self._loop.add_reader(self.fd, self.read)

    def read(self) -> None:
        """Take what the pipe holds now (a bounded amount: a writer may never stop)."""
        for _ in range(64):
            if self.ended.is_set():
                break
            try:
                chunk = os.read(self.fd, 65_536)
            except BlockingIOError:
                break
            except OSError:
                chunk = b""
            if not chunk:
                self.close()
            self.data += chunk
            if len(self.data) > 8 * OUTPUT_LIMIT:
                del self.data[:-4 * OUTPUT_LIMIT]  # still OUTPUT_LIMIT characters in UTF-8
        self.changed.set()

    def text(self) -> str:
        return self.data.decode("utf-8", errors="replace")[-OUTPUT_LIMIT:]

    def close_child(self) -> None:
        if self.child >= 0:
            os.close(self.child)
            self.child = -1

    def close(self) -> None:
        self.close_child()
        if not self.ended.is_set():
            self.ended.set()
            self._loop.remove_reader(self.fd)
            os.close(self.fd)


async def _feed(stdin: asyncio.StreamWriter, tar: Path) -> None:
    """Stream the inputs' tar to the launcher; one that ended early just stops it."""
    try:
        with open(tar, "rb") as f:
            while chunk := f.read(1 << 20):
                stdin.write(chunk)
                await stdin.drain()
    except (BrokenPipeError, ConnectionResetError):
        pass
    finally:
        with contextlib.suppress(Exception):
            stdin.close()


class Sandboxed:
    """One process in the sandbox, started by the launcher with its inputs, stdout and
    stderr :class:`Pipe` s and ``fds``; :meth:`close` it."""

    def __init__(self, isolation: str, limits: Limits, tmp: Path) -> None:
        self.isolation, self.limits, self.tmp = isolation, limits, tmp
        self.files: list[str] = []
        self.group: RunGroup | None = None
        self.proc: asyncio.subprocess.Process | None = None
        self.feeding: asyncio.Future[None] | None = None
        self.out, self.err = Pipe(), Pipe()

    @classmethod
    async def start(cls, argv: list[str], isolation: str, limits: Limits, *,
                    script: str | None = None, files: dict[str, str | bytes] | None = None,
                    copy: list[Path] | None = None, support: dict[str, str | bytes] | None = None,
                    fds: tuple[int, ...] = ()) -> Sandboxed:
        """Start ``argv`` (then ``script``, under the sandbox's root) with ``files``
        and ``copy`` in its scratch folder and ``support`` beside it."""
        box = cls(isolation, limits, Path(tempfile.mkdtemp(prefix="assay-sandbox-")))
        try:
            tar = box.tmp / "inputs.tar"
            box.files = pack(tar, copy=list(copy or []), files=dict(files or {}),
                             support=dict(support or {}), budget_bytes=limits.disk_mb * MB)
            root = SCRATCH_ROOT if isolation == "bwrap" else str(box.tmp / "root")
            argv = [*argv, f"{root}/{script}"] if script else argv
            if isolation == "bwrap":
                cmd = bwrap_command(asdict(limits), argv, run_uid() if os.geteuid() == 0 else None)
                cwd, helpers = str(box.tmp), BWRAP_PROCESSES
            else:
                os.mkdir(root)
                cmd, cwd, helpers = launcher(asdict(limits), root, argv, None), root, 0
            box.group = RunGroup(limits.memory_mb, limits.processes, helpers=helpers)
            # the inputs go through a pipe, never as an open file: run as the same user
            # (no root here), the code could open the sandbox's /proc/1/fd/0 and read a
            # file again, harness files included; a pipe it has already emptied
            box.proc = await asyncio.create_subprocess_exec(
                *box.group.wrap(cmd), cwd=cwd, env=environment(f"{root}/{WORK_DIR}", root),
                stdin=asyncio.subprocess.PIPE, stdout=box.out.child, stderr=box.err.child,
                pass_fds=fds, start_new_session=True)
            box.out.close_child()
            box.err.close_child()
            assert box.proc.stdin is not None
            box.feeding = asyncio.ensure_future(_feed(box.proc.stdin, tar))
        except BaseException:
            await box.close()
            raise
        return box

    async def finish(self, timeout: float) -> bool:
        """Wait for the program (killed after ``timeout`` s: True), and a moment for
        the end of its output; the run ends with its main process, as bwrap's PID namespace does."""
        assert self.proc is not None and self.group is not None
        timed_out = False
        try:
            await asyncio.wait_for(self.proc.wait(), timeout)
        except asyncio.TimeoutError:
            timed_out = True
            kill_group(self.proc.pid)
        self.group.kill_all()
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.gather(
                self.proc.wait(), self.out.ended.wait(), self.err.ended.wait()), KILL_GRACE_S)
        self.out.read()
        self.err.read()
        return timed_out

    def result(self, exit_code: int | None, timed_out: bool) -> SandboxResult:
        group = self.group.bounds if self.group is not None else {}
        return SandboxResult(
            exit_code=exit_code, stdout=self.out.text(), stderr=self.err.text(),
            timed_out=timed_out, isolation=self.isolation, files=self.files,
            bounds=bounds(self.limits, self.isolation, group),
            peak_memory_mb=self.group.peak_mb() if self.group is not None else None)

    async def close(self) -> None:
        """Kill what is left, remove the cgroup and scratch; never raises."""
        if self.feeding is not None and not self.feeding.done():
            self.feeding.cancel()
        if self.proc is not None and self.proc.returncode is None:
            kill_group(self.proc.pid)
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self.proc.wait(), KILL_GRACE_S)
        if self.group is not None:
            await self.group.close()  # what is left of the run is killed first
        self.out.close()
        self.err.close()
        remove_tree(self.tmp)


async def run_python(script: str, *, files: dict[str, str | bytes] | None = None,
                     copy: list[Path] | None = None, limits: Limits | None = None,
                     require: bool = False, support: dict[str, str | bytes] | None = None,
                     allow_weak: bool | None = None, key: bytes | None = None) -> SandboxResult:
    """Run the Python file ``script`` (in ``support`` when one of its keys, else the
    scratch) once in the sandbox; the code cannot make this raise, and inputs past ``disk_mb``
    end it unstarted. With ``key``, the last stdout line it signed is the ``verdict``. Where
    bwrap fails, a ConfigError unless weak isolation is allowed and not ``require`` d."""
    limits = limits or Limits()
    isolation = check_isolation(allow_weak=allow_weak, require=require)
    inside = SUPPORT_DIR if script in (support or {}) else WORK_DIR
    async with slots():
        try:
            box = await Sandboxed.start([sys.executable, "-I", "-B"], isolation, limits,
                                        script=f"{inside}/{script}", files=files, copy=copy,
                                        support=support)
        except InputsTooBig as e:
            return SandboxResult(
                exit_code=None, stdout="", timed_out=False, isolation=isolation,
                stderr=f"assay sandbox: {e}, more than the scratch folder holds "
                       f"(disk_mb={limits.disk_mb}); the code did not run",
                bounds=bounds(limits, isolation, {}))
        try:
            timed_out = await box.finish(limits.timeout_s)
            assert box.proc is not None
            result = box.result(box.proc.returncode, timed_out)
        finally:
            await box.close()
    if key is not None:
        result.verdict, result.stdout = verdict_report(result.stdout, key)
    return result
