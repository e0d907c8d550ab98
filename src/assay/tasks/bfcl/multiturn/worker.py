"""Official BFCL simulator code in worker processes that a timeout can stop.

A simulator runs whatever a model sends (possibly minutes inside one C call), so it runs in a
fresh-interpreter worker (never a fork) answering ``(function, args)`` on a socket; a session's
instances stay in :data:`STATE`. :func:`session` and :func:`run_bounded` lend a worker per entry;
one that fails or overruns is SIGKILLed, else pooled (up to :data:`IDLE_MAX`).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import ctypes
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Callable, Mapping
from multiprocessing.connection import Connection
from typing import Any

from assay.errors import AssayError
from assay.tasks.bfcl.multiturn import sim
from assay.tasks.bfcl.multiturn.checker import check_entry
from assay.tasks.bfcl.multiturn.executor import execute_calls

__all__ = ["IDLE_MAX", "PROCESS_NAME", "STATE", "SimulatorError", "SimulatorTimeout",
           "Worker", "check", "open_entry", "prepare", "run_bounded", "run_calls", "serve",
           "session", "setup", "shutdown"]

#: what ``ps`` shows for a worker (``/proc/<pid>/comm``, at most 15 characters)
PROCESS_NAME = "assay-bfcl-sim"
#: idle workers kept for the next entries (their imports done; state replaced on reuse)
IDLE_MAX = 8
#: the worker's command: this process's import path, then serve on the inherited socket
_BOOT = ("import json, sys; sys.path[:] = json.loads(sys.argv[1]); "
         "from assay.tasks.bfcl.multiturn.worker import serve; serve(int(sys.argv[2]))")

_lock = threading.Lock()
_live: set[Worker] = set()
_idle: list[Worker] = []

#: the worker side's state between the requests of one session (in the worker process)
STATE: dict[str, Any] = {}


class SimulatorError(AssayError):
    """The official simulator code could not be run to its end (its worker died)."""


class SimulatorTimeout(SimulatorError):
    """The official simulator code ran past its deadline; its worker was killed."""


def serve(fd: int) -> None:
    """A worker's loop on socket ``fd``: say ready, then answer each request's function with
    its value or exception."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the run's to handle
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _die_with_parent()
    with contextlib.suppress(OSError):  # a name ps shows; nothing depends on it
        with open("/proc/self/comm", "w") as f:
            f.write(PROCESS_NAME)
    _warm()
    conn = Connection(fd)
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
            conn.send(("raise", SimulatorError(f"{type(e).__name__}: {e}")))


def _die_with_parent() -> None:
    """SIGKILL this process when the thread that started it exits (Linux ``prctl``); workers
    are started by the event loop's or the scoring's thread, never a short-lived one."""
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _warm() -> None:
    """Import the simulator modules before saying ready, so no call's deadline pays for
    them; best effort (a failure recurs, with its real error, when a session needs it)."""
    with contextlib.suppress(Exception):
        for name in sim.MULTI_TURN_CLASSES:
            # memory and web search import bfcl_eval.utils (folders made on import) or
            # network packages: imported by the worker that needs them, never here
            if not name.startswith(("MemoryAPI", "WebSearch")):
                sim.load_class(name)
        with sim.pristine_long_context():
            pass


def setup(env_keys: tuple[str, ...] = ()) -> dict[str, Any]:
    """What a worker needs to find the simulators: the folder holding ``bfcl_eval`` and the
    variables ``env_keys`` as set here (a worker keeps the environment it started with)."""
    root = sim.sim_root()
    return {"root": str(root) if root is not None else None,
            "env": {k: os.environ[k] for k in env_keys if k in os.environ}}


def prepare(spec: Mapping[str, Any]) -> None:
    """In a worker: apply :func:`setup`'s ``spec`` and forget the previous session."""
    STATE.clear()
    os.environ.update(spec.get("env") or {})
    root = spec.get("root")
    if root and root not in sys.path and importlib.util.find_spec("bfcl_eval") is None:
        sys.path.append(root)
        importlib.invalidate_caches()


def open_entry(spec: Mapping[str, Any], involved: list[str], initial_config: dict[str, Any],
               long_context: bool) -> None:
    """In a worker: fresh instances of an entry's classes, loaded as officially."""
    prepare(spec)
    with sim.pristine_long_context():
        instances = sim.make_instances(involved, initial_config, long_context=long_context)
    STATE["methods"] = sim.involved_methods(instances)


def run_calls(calls: list[str]) -> list[str]:
    """In a worker: run one step's calls on the session's instances (the safe executor)."""
    return execute_calls(calls, STATE["methods"])


def check(spec: Mapping[str, Any], model_result: Any, entry: dict[str, Any],
          ground_truth: list[list[str]], category: str) -> dict[str, Any]:
    """In a worker: :func:`checker.check_entry` on fresh instances there."""
    prepare(spec)
    return check_entry(model_result, entry, ground_truth, category)


def _set_done(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class Worker:
    """One worker process and the run's end of its socket; started from the calling thread,
    its imports run in the background and the first request waits for its ``ready``."""

    def __init__(self) -> None:
        ours, theirs = socket.socketpair()
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", _BOOT, json.dumps(sys.path), str(theirs.fileno())],
                pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL)
        except OSError as e:
            ours.close()
            raise SimulatorError(f"cannot start a BFCL simulator process: {e}") from e
        finally:
            theirs.close()
        self.conn = Connection(ours.detach())
        self.ready = False
        #: the thread that started it: the kernel kills the worker when that thread ends
        self.owner = threading.get_ident()
        with _lock:
            _live.add(self)

    def _died(self) -> SimulatorError:
        code = self.proc.poll()
        self.kill()
        how = f"exit status {code}" if code is not None and code >= 0 else (
            f"signal {-code}" if code is not None else "closed its socket")
        return SimulatorError(f"the BFCL simulator process ended unexpectedly ({how}: "
                              f"killed from outside, out of memory, or it could not start)")

    def _send(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
        try:
            self.conn.send((fn, args))
        except (EOFError, OSError) as e:
            raise self._died() from e

    def _receive(self) -> tuple[str, Any]:
        try:
            status, value = self.conn.recv()
        except (EOFError, OSError) as e:
            raise self._died() from e
        return status, value

    def _reply(self) -> Any:
        status, value = self._receive()
        if status == "raise":
            raise value
        return value

    def call(self, fn: Callable[..., Any], *args: Any, timeout: float | None = None) -> Any:
        """Run ``fn(*args)`` in the worker; past ``timeout`` seconds (a new worker's start not
        counted) kill it and raise :class:`SimulatorTimeout`."""
        if not self.ready:  # its imports: not part of any call's deadline
            self._receive()
            self.ready = True
        self._send(fn, args)
        if not self.conn.poll(timeout):
            self.kill()
            raise SimulatorTimeout(f"the BFCL simulators ran past {timeout:g}s")
        return self._reply()

    async def _readable(self) -> None:
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        fd = self.conn.fileno()
        loop.add_reader(fd, _set_done, done)
        try:
            await done
        finally:
            loop.remove_reader(fd)

    async def acall(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run ``fn(*args)`` in the worker while the event loop goes on (a cancelled caller
        leaves it running: :func:`session` kills it)."""
        if not self.ready:  # a request sent before it reads would block on a full socket
            await self._readable()
            self._receive()
            self.ready = True
        self._send(fn, args)
        await self._readable()
        return self._reply()

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


def _take() -> Worker:
    """An idle worker this thread started, else a new one (another thread's worker would
    die with that thread)."""
    me = threading.get_ident()
    while True:
        with _lock:
            mine = [w for w in _idle if w.owner == me]
            if not mine:
                break
            worker = mine[-1]
            _idle.remove(worker)
        if worker.alive():
            return worker
        worker.kill()
    return Worker()


def _release(worker: Worker, *, reusable: bool) -> None:
    """Back to the idle pool after a session that ended normally; else killed."""
    if reusable and worker.alive():
        with _lock:
            if len(_idle) < IDLE_MAX:
                _idle.append(worker)
                return
    worker.kill()


@contextlib.asynccontextmanager
async def session() -> AsyncIterator[Worker]:
    """A worker for one entry's conversation: killed when the block ends by an exception
    (a timeout's cancellation, an interrupt), else given back to the pool."""
    worker = _take()
    reusable = False
    try:
        yield worker
        reusable = True
    finally:
        _release(worker, reusable=reusable)


def run_bounded(fn: Callable[..., Any], *args: Any, timeout: float) -> Any:
    """``fn(*args)`` in a worker, waiting at most ``timeout`` seconds; past it the worker
    is killed and :class:`SimulatorTimeout` raised. An interrupt kills it too."""
    worker = _take()
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
