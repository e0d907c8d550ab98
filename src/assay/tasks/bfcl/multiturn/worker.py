"""Official BFCL simulator code in worker processes that a timeout can stop
(:mod:`assay.core.workers`): a simulator runs whatever a model sends (possibly minutes
inside one C call). A session's instances stay in :data:`STATE`; :func:`session` and
:func:`run_bounded` lend a worker per entry.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import sys
from collections.abc import Callable, Mapping
from typing import Any

from assay.core import workers
from assay.core.workers import IDLE_MAX, WorkerError, WorkerTimeout
from assay.tasks.bfcl.multiturn import sim
from assay.tasks.bfcl.multiturn.checker import check_entry
from assay.tasks.bfcl.multiturn.executor import execute_calls

__all__ = ["IDLE_MAX", "PROCESS_NAME", "STATE", "SimulatorError", "SimulatorTimeout",
           "Worker", "check", "open_entry", "prepare", "run_bounded", "run_calls", "serve",
           "session", "setup", "shutdown"]

#: what ``ps`` shows for a worker (``/proc/<pid>/comm``, at most 15 characters)
PROCESS_NAME = "assay-bfcl-sim"
#: every live worker of this process (the pool's own set)
_live = workers._live
shutdown = workers.shutdown

#: the worker side's state between the requests of one session (in the worker process)
STATE: dict[str, Any] = {}


class SimulatorError(WorkerError):
    """The official simulator code could not be run to its end (its worker died)."""


class SimulatorTimeout(SimulatorError, WorkerTimeout):
    """The official simulator code ran past its deadline; its worker was killed."""


class Worker(workers.Worker):
    """A process running the BFCL simulators."""

    boot = __name__
    label = "BFCL simulator"
    error = SimulatorError
    timeout_error = SimulatorTimeout


def serve(fd: int) -> None:
    """A worker's loop (:func:`assay.core.workers.serve`), the simulators imported first."""
    workers.serve(fd, name=PROCESS_NAME, warm=_warm)


def session() -> contextlib.AbstractAsyncContextManager[Worker]:
    """A worker for one entry's conversation (see :func:`assay.core.workers.session`)."""
    return workers.session(Worker)


def run_bounded(fn: Callable[..., Any], *args: Any, timeout: float) -> Any:
    """``fn(*args)`` in a simulator worker, at most ``timeout`` seconds."""
    return workers.run_bounded(Worker, fn, *args, timeout=timeout)


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
