"""Worker processes that a deadline can stop, for official code run as shipped (BFCL's
simulators, τ²-bench's environments and orchestrator).

A worker is a fresh interpreter (never a fork) answering ``(function, args)`` on a socket. A
kind of worker is a :class:`Worker` subclass naming the module whose ``serve(fd)`` it boots
(that module calls :func:`serve` with its warm-up). :func:`session` and :func:`run_bounded`
lend a worker of a kind; one that fails or overruns is SIGKILLed, else pooled (up to
:data:`IDLE_MAX`). While a request runs, the worker may :func:`ask` the run a question (a
model call) and wait for the answer that :meth:`Worker.acall`'s ``on_ask`` gives.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import ctypes
import json
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from multiprocessing.connection import Connection
from typing import Any, TypeVar

from assay.errors import AssayError

__all__ = ["IDLE_MAX", "Worker", "WorkerError", "WorkerTimeout", "ask", "run_bounded",
           "serve", "session", "shutdown"]

#: idle workers kept for the next sessions (their imports done; state replaced on reuse)
IDLE_MAX = 8
#: the worker's command: this process's import path, then the kind's module serves the socket
_BOOT = ("import importlib, json, sys; sys.path[:] = json.loads(sys.argv[1]); "
         "importlib.import_module(sys.argv[3]).serve(int(sys.argv[2]))")

_lock = threading.Lock()
_live: set[Worker] = set()
_idle: list[Worker] = []
#: in a worker: its end of the socket (for :func:`ask`)
_conn: Connection | None = None

W = TypeVar("W", bound="Worker")


class WorkerError(AssayError):
    """Official code in a worker could not be run to its end (its worker died)."""


class WorkerTimeout(WorkerError):
    """Official code in a worker ran past its deadline; its worker was killed."""


def serve(fd: int, *, name: str = "assay-worker", warm: Callable[[], None] | None = None
          ) -> None:
    """A worker's loop on socket ``fd``: take ``name`` (what ``ps`` shows, ≤ 15 characters),
    ``warm`` up, say ready, then answer each request's function with its value or exception."""
    global _conn
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the run's to handle
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _die_with_parent()
    with contextlib.suppress(OSError):  # a name ps shows; nothing depends on it
        with open("/proc/self/comm", "w") as f:
            f.write(name)
    if warm is not None:
        warm()
    conn = _conn = Connection(fd)
    conn.send(("ready", os.getpid()))
    while True:
        try:
            fn, args = conn.recv()
        except (EOFError, OSError):  # the run closed its end: nothing more to do
            return
        try:
            reply: tuple[str, Any] = ("ok", fn(*args))
        except Exception as e:  # noqa: BLE001 - the caller gets it as raised
            reply = ("raise", e)
        try:
            conn.send(reply)
        except (EOFError, OSError):
            return
        except Exception as e:  # noqa: BLE001 - a value or exception that cannot be pickled
            conn.send(("raise", WorkerError(f"{type(e).__name__}: {e}")))


def ask(question: Any) -> Any:
    """In a worker, inside a request: send ``question`` to the run and wait for its answer
    (an exception there is raised here)."""
    if _conn is None:
        raise WorkerError("ask() outside a worker's request")
    _conn.send(("ask", question))
    status, value = _conn.recv()
    if status == "raise":
        raise value
    return value


def _die_with_parent() -> None:
    """SIGKILL this process when the thread that started it exits (Linux ``prctl``); workers
    are started by the event loop's or the scoring's thread, never a short-lived one."""
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _set_done(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class Worker:
    """One worker process and the run's end of its socket; started from the calling thread,
    its imports run in the background and the first request waits for its ``ready``.
    A kind sets the class attributes."""

    #: the module whose ``serve(fd)`` the worker runs
    boot = "assay.core.workers"
    #: what errors call it
    label = "worker"
    error: type[WorkerError] = WorkerError
    timeout_error: type[WorkerError] = WorkerTimeout

    def __init__(self) -> None:
        ours, theirs = socket.socketpair()
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", _BOOT, json.dumps(sys.path), str(theirs.fileno()),
                 self.boot], pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL)
        except OSError as e:
            ours.close()
            raise self.error(f"cannot start a {self.label} process: {e}") from e
        finally:
            theirs.close()
        self.conn = Connection(ours.detach())
        self.ready = False
        #: the thread that started it: the kernel kills the worker when that thread ends
        self.owner = threading.get_ident()
        with _lock:
            _live.add(self)

    def _died(self) -> WorkerError:
        code = self.proc.poll()
        self.kill()
        how = f"exit status {code}" if code is not None and code >= 0 else (
            f"signal {-code}" if code is not None else "closed its socket")
        return self.error(f"the {self.label} process ended unexpectedly ({how}: killed from "
                          f"outside, out of memory, or it could not start)")

    def _send(self, message: Any) -> None:
        try:
            self.conn.send(message)
        except (EOFError, OSError) as e:
            raise self._died() from e

    def _receive(self) -> tuple[str, Any]:
        try:
            status, value = self.conn.recv()
        except (EOFError, OSError) as e:
            raise self._died() from e
        return status, value

    @staticmethod
    def _value(status: str, value: Any) -> Any:
        if status == "raise":
            raise value
        return value

    def call(self, fn: Callable[..., Any], *args: Any, timeout: float | None = None) -> Any:
        """Run ``fn(*args)`` in the worker; past ``timeout`` seconds (a new worker's start not
        counted) kill it and raise the kind's timeout error."""
        if not self.ready:  # its imports: not part of any call's deadline
            self._receive()
            self.ready = True
        self._send((fn, args))
        if not self.conn.poll(timeout):
            self.kill()
            raise self.timeout_error(f"the {self.label} process ran past {timeout:g}s")
        return self._value(*self._receive())

    async def _readable(self) -> None:
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        fd = self.conn.fileno()
        loop.add_reader(fd, _set_done, done)
        try:
            await done
        finally:
            loop.remove_reader(fd)
            # uvloop leaves the socket non-blocking: a message longer than the socket's
            # buffer would then fail half read (EAGAIN) instead of being waited for
            os.set_blocking(fd, True)

    async def acall(self, fn: Callable[..., Any], *args: Any,
                    on_ask: Callable[[Any], Awaitable[Any]] | None = None) -> Any:
        """Run ``fn(*args)`` in the worker while the event loop goes on; each question it
        :func:`ask`\\ s is answered with ``await on_ask(question)`` (its exception is raised
        there). A cancelled caller leaves it running: :func:`session` kills it."""
        if not self.ready:  # a request sent before it reads would block on a full socket
            await self._readable()
            self._receive()
            self.ready = True
        self._send((fn, args))
        failed: Exception | None = None  # the run's own error an answer carried
        while True:
            await self._readable()
            status, value = self._receive()
            if status != "ask":
                if status == "raise" and failed is not None:
                    raise failed  # the request failed because the run's answer did
                return self._value(status, value)
            if on_ask is None:
                self._send(("raise", self.error("this request cannot ask the run")))
                continue
            try:
                answer: tuple[str, Any] = ("ok", await on_ask(value))
            except Exception as e:  # noqa: BLE001 - raised in the worker, where it asked
                failed = e  # the worker gets its words (the exception may not pickle)
                answer = ("raise", self.error(f"{type(e).__name__}: {e}"))
            self._send(answer)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        """SIGKILL the process (whatever it is running) and reap it; idempotent."""
        with _lock:
            _live.discard(self)
            if self in _idle:
                _idle.remove(self)
        with contextlib.suppress(Exception):
            self.proc.kill()  # a no-op once reaped: never another process's pid
        with contextlib.suppress(Exception):
            self.proc.wait(10)
        with contextlib.suppress(Exception):
            self.conn.close()


def _take(kind: type[W]) -> W:
    """An idle worker of ``kind`` this thread started, else a new one (another thread's
    worker would die with that thread)."""
    me = threading.get_ident()
    while True:
        with _lock:
            mine = [w for w in _idle if w.owner == me and type(w) is kind]
            if not mine:
                break
            worker = mine[-1]
            _idle.remove(worker)
        if worker.alive():
            return worker  # type: ignore[return-value]
        worker.kill()
    return kind()


def _release(worker: Worker, *, reusable: bool) -> None:
    """Back to the idle pool after a session that ended normally; else killed."""
    if reusable and worker.alive():
        with _lock:
            if len(_idle) < IDLE_MAX:
                _idle.append(worker)
                return
    worker.kill()


@contextlib.asynccontextmanager
async def session(kind: type[W]) -> AsyncIterator[W]:
    """A worker of ``kind`` for one session: killed when the block ends by an exception (a
    timeout's cancellation, an interrupt), else given back to the pool."""
    worker = _take(kind)
    reusable = False
    try:
        yield worker
        reusable = True
    finally:
        _release(worker, reusable=reusable)


def run_bounded(kind: type[Worker], fn: Callable[..., Any], *args: Any, timeout: float) -> Any:
    """``fn(*args)`` in a worker of ``kind``, waiting at most ``timeout`` seconds; past it the
    worker is killed and the kind's timeout error raised. An interrupt kills it too."""
    worker = _take(kind)
    reusable = False
    try:
        value = worker.call(fn, *args, timeout=timeout)
        reusable = True
        return value
    finally:
        _release(worker, reusable=reusable)


@atexit.register
def shutdown() -> None:
    """Kill every worker of this process (idle or busy)."""
    with _lock:
        workers = list(_live)
    for worker in workers:
        worker.kill()
