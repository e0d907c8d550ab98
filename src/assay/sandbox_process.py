"""The pipes and the process group of a sandboxed run: its inputs streamed in, its output
read as it comes (only the tail kept), a kill that never hangs on a pipe held open, and
at most one run per CPU at a time (:mod:`assay.sandbox` runs them)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import weakref
from pathlib import Path

from assay.sandbox_cgroup import RunGroup

OUTPUT_LIMIT = 16_384  # characters of stdout/stderr kept
#: after a kill, how long the last of the output may take to come
KILL_GRACE_S = 5.0


_SLOTS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
    weakref.WeakKeyDictionary())


def slots() -> asyncio.Semaphore:
    """Runs go at most one per CPU at a time (two at least), per event loop: the engine
    runs many samples, and a case many eval_code points, at once; more runs than CPUs
    only make slow code look like a timeout, and each may hold ``memory_mb``."""
    loop = asyncio.get_running_loop()
    sem = _SLOTS.get(loop)
    if sem is None:
        sem = _SLOTS[loop] = asyncio.Semaphore(max(2, os.cpu_count() or 1))
    return sem


async def drain(stream: asyncio.StreamReader, keep: bytearray) -> None:
    """Read ``stream`` to its end, keeping only its tail: the output may be endless."""
    while chunk := await stream.read(65_536):
        keep += chunk
        if len(keep) > 8 * OUTPUT_LIMIT:
            del keep[:-4 * OUTPUT_LIMIT]  # still OUTPUT_LIMIT characters, in UTF-8


async def finish_run(proc: asyncio.subprocess.Process, out: bytearray, err: bytearray,
                  group: RunGroup) -> None:
    """Read the output until the run ends. The run ends with its main process, as it
    does in bubblewrap (whose PID namespace dies with it): what it left running (a daemon
    with weak isolation) is killed where a cgroup holds it, and output still held open
    by something beyond reach is read for a moment only."""
    assert proc.stdout is not None and proc.stderr is not None
    drains = asyncio.gather(drain(proc.stdout, out), drain(proc.stderr, err))
    try:
        await proc.wait()
        group.kill_all()
        try:
            await asyncio.wait_for(asyncio.shield(drains), KILL_GRACE_S)
        except asyncio.TimeoutError:
            transport = getattr(proc, "_transport", None)
            if transport is not None:
                transport.close()
    finally:
        drains.cancel()
        with contextlib.suppress(BaseException):
            await drains


async def settle(proc: asyncio.subprocess.Process, finish: asyncio.Future[None]) -> None:
    """After a kill, wait a little for the end of the output. A process that left the
    process group (possible with weak isolation only: with bwrap the whole PID namespace
    dies) may hold the pipes open for ever: stop reading then, rather than hang."""
    try:
        await asyncio.wait_for(asyncio.shield(finish), KILL_GRACE_S)
    except asyncio.TimeoutError:
        finish.cancel()
        transport = getattr(proc, "_transport", None)
        if transport is not None:
            transport.close()


def clip(data: bytes) -> str:
    """The output's text, its last ``OUTPUT_LIMIT`` characters."""
    text = data.decode("utf-8", errors="replace")
    return text if len(text) <= OUTPUT_LIMIT else text[-OUTPUT_LIMIT:]


async def feed(proc: asyncio.subprocess.Process, tar: Path) -> None:
    """Stream the inputs' tar into the sandbox's stdin, then close it; a launcher that
    ended early (a refused input, a kill) just stops the stream."""
    assert proc.stdin is not None
    try:
        with open(tar, "rb") as f:
            while chunk := f.read(1 << 20):
                proc.stdin.write(chunk)
                await proc.stdin.drain()
    except (BrokenPipeError, ConnectionResetError):
        pass
    finally:
        with contextlib.suppress(Exception):
            proc.stdin.close()


def kill_group(pid: int) -> None:
    """SIGKILL the run's process group (gone already: nothing to do)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
