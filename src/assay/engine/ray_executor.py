"""``--executor ray``: the run's samples through :func:`run_sample` in Ray actors, the driver
the store's one writer, as :class:`~assay.engine.sample.LocalExecutor` does in one process.

Ray does the work: actors (one per worker, each running many samples at once), its object
store (a sample's files), scheduling and fault detection. What is assay's: each actor builds
the task's subject and roles from the run's spec, as the driver did; the driver deals samples
by load and commits each result as it comes; a worker that dies has its samples dealt again
(after a first crash a sample runs alone, so a sample that kills its worker three times is
recorded as its own error and nothing else is blamed); the response cache is the driver's
(workers read it through a reader on the driver's node; the driver writes what they send
back); ``--rpm`` holds for the whole run (one pacer per model); samples that share run state
(BFCL's memory chains: ``task.affinity(sample)``) run on one worker."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import math
import os
import socket
import sys
import tempfile
import time
from collections import Counter, deque
from contextvars import ContextVar
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from assay.core.spec import RunSpec
from assay.core.stored import sample_extra
from assay.core.types import Sample, SampleResult
from assay.engine.calls import CallShared, call_identity
from assay.engine.judging import task_roles
from assay.engine.sample import RunCalls, SampleJob, run_sample
from assay.errors import ConfigError
from assay.models.base import get_subject
from assay.sandbox import allow_weak_isolation
from assay.store.sqlite import Store
from assay.tasks.registry import FILE_MODULE_PREFIX

#: times a sample may be running on a worker that died before it is recorded as its error
MAX_CRASHES = 3
#: how many runs of this process share the cluster at once (a plan's children side by
#: side): each run's actors take that share of the CPUs, so all of them can start
SIDE_BY_SIDE: ContextVar[int] = ContextVar("side_by_side", default=1)
#: environment a worker needs to reach the models as the driver does (keys stay out of the
#: store; they travel to the cluster's workers as the driver's own environment would)
_ENV_PREFIXES = ("OPENAI_", "ASSAY_", "HF_", "ANTHROPIC_")


def _ray() -> Any:
    """The ``ray`` package, or one line saying how to install it."""
    try:
        import ray  # optional: the [ray] extra
    except ImportError as e:
        raise ConfigError(f"--executor ray needs Ray ({e}); install it with: "
                          "pip install 'assay[ray]'") from None
    return ray


def connect(address: str | None, workers: int | None) -> None:
    """Join the Ray cluster at ``address`` (``auto``, ``ray://host:port``), or start a local
    one (``None``); once per process. One line where it cannot be reached."""
    ray = _ray()
    if ray.is_initialized():
        return
    _check_reachable(address)
    env = {k: v for k, v in os.environ.items() if k.startswith(_ENV_PREFIXES)}
    try:
        ray.init(address=address, include_dashboard=False, log_to_driver=False,
                 logging_level=logging.ERROR, configure_logging=False,
                 num_cpus=None if address else max(os.cpu_count() or 1, workers or 1),
                 runtime_env={"env_vars": env} if env else None)
    except (ConnectionError, RuntimeError, ValueError) as e:
        where = address or "a local Ray instance"
        raise ConfigError(f"cannot reach the Ray cluster at {where}: "
                          f"{' '.join(str(e).split())[:300]}; start one with 'ray start --head' "
                          "or give its address with --ray-address") from None


def _check_reachable(address: str | None, timeout: float = 5.0) -> None:
    """A ``host:port`` (or ``ray://host:port``) that takes no connection fails here in
    seconds; Ray itself would keep retrying for minutes."""
    if not address or address == "auto":
        return
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not port.isdigit():
        raise ConfigError(f"--ray-address {address!r} is not auto, HOST:PORT or ray://HOST:PORT")
    try:
        socket.create_connection((host.strip("[]") or "127.0.0.1", int(port)), timeout).close()
    except OSError as e:
        raise ConfigError(f"cannot reach the Ray cluster at {address}: {e.strerror or e}; start "
                          "one with 'ray start --head' or give its address with --ray-address"
                          ) from None


class CacheReader:
    """The driver's response cache, read on the driver's node (the store is a file there)."""

    def __init__(self, path: str) -> None:
        self.store = Store(path, readonly=True)

    def keys(self, model_id: str) -> set[str]:
        return self.store.cache_keys(model_id)

    def get(self, key: str) -> str | None:
        return self.store.cache_get(key)


class Pacer:
    """``--rpm`` for the whole run: the delay after which each caller may start its call."""

    def __init__(self, rpm: float) -> None:
        self.interval, self.next = 60.0 / rpm, 0.0
        self.starts = 0

    def reserve(self) -> float:
        now = time.monotonic()
        start = max(now, self.next)
        self.next = start + self.interval
        self.starts += 1
        return start - now

    def reserved(self) -> int:
        """How many call starts it spaced (every worker's)."""
        return self.starts


class RemoteCache:
    """What a worker's :class:`CallShared` takes for a store: reads from the driver's cache,
    new replies kept here until they go back to the driver with a result."""

    def __init__(self, reader: Any) -> None:
        self.reader, self.new = reader, []

    def cache_keys(self, model_id: str) -> set[str]:
        return _ray().get(self.reader.keys.remote(model_id)) if self.reader else set()

    async def cache_get(self, key: str) -> str | None:
        return await self.reader.get.remote(key)

    def cache_put(self, key: str, model: str, reply_json: str) -> None:
        self.new.append((key, model, reply_json))

    def drain(self) -> list[tuple[str, str, str]]:
        out, self.new = self.new, []
        return out


class RemotePacer:
    """A worker's side of the run's :class:`Pacer` (the interface of ``RateLimiter``)."""

    def __init__(self, pacer: Any) -> None:
        self.pacer, self.interval = pacer, 1.0

    async def wait(self) -> float:
        delay = await self.pacer.reserve.remote()
        await asyncio.sleep(delay)
        return delay


class SampleWorker:
    """One Ray actor: the task, its subject and roles built from the run's spec, then
    :func:`run_sample` for each sample it is dealt (many at once, under its share of
    ``--max-connections``)."""

    def __init__(self, task: Any, spec: RunSpec, subject: Any, reader: Any,
                 pacers: dict[str, Any], connections: int) -> None:
        self.task, self.spec = task, spec
        self.subject = subject or get_subject(spec.model, base_url=spec.base_url,
                                              timeout=spec.timeout,
                                              max_reply_bytes=spec.max_reply_bytes,
                                              endpoints=spec.endpoints)
        self.roles = task_roles(task, spec, self.subject)
        self.cache = RemoteCache(reader if spec.cache else None)
        self.files = Path(tempfile.mkdtemp(prefix="assay-ray-"))
        #: a sample file's path on the driver -> where this worker reads it
        self.seen: dict[str, str] = {}

        def calls(model: Any) -> CallShared:  # --rpm: the run's one pacer, not the worker's
            shared = CallShared.for_spec(self.cache, spec, model, max_connections=connections,
                                         rpm=None)
            if model.model_id in pacers:
                shared.limiter = RemotePacer(pacers[model.model_id])
            return shared

        self.run = RunCalls(calls(self.subject), call_identity(self.subject),
                            {name: (r, call_identity(r), calls(r))
                             for name, r in self.roles.items()},
                            params=spec.run_params(), sample_timeout=spec.sample_timeout,
                            sample_token_limit=spec.sample_token_limit)

    def pid(self) -> int:
        return os.getpid()

    async def run_one(self, seq: int, sample: Sample, epoch: int,
                      files: list[tuple[str, str, Any]]) -> tuple[SampleResult, list[Any]]:
        """The sample's result and the replies it (or any sample before) added to the cache."""
        if files:
            sample = replace(sample, files=[self._file(*f) for f in files])
        with allow_weak_isolation(self.spec.allow_weak_sandbox):
            result = await run_sample(self.task, sample, self.subject,
                                      SampleJob(seq, epoch, self.run))
        return result, self.cache.drain()

    def _file(self, original: str, digest: str, data: Any) -> str:
        """A sample's file where this worker's task reads it: at its own path where that holds
        the same bytes (this machine, a shared file system: prompts that name it stay the
        local run's), else a copy from the object store; either checked by its sha256."""
        if data is None:  # the driver could not read it either: the task sees it missing
            return original
        if original not in self.seen:
            here = Path(original)
            with contextlib.suppress(OSError):
                if here.is_file() and hashlib.sha256(here.read_bytes()).hexdigest() == digest:
                    self.seen[original] = original
                    return original
            ray = _ray()
            data = ray.get(data) if isinstance(data, ray.ObjectRef) else data
            if hashlib.sha256(data).hexdigest() != digest:
                raise ConfigError(f"the file {here.name} arrived changed on the worker "
                                  "(its sha256 differs from the driver's)")
            copy = self.files / digest[:16] / here.name
            copy.parent.mkdir(parents=True, exist_ok=True)
            copy.write_bytes(data)
            self.seen[original] = str(copy)
        return self.seen[original]


@dataclass
class _Slot:
    """A worker actor, the samples it runs now (``ref -> item``) and its share of them."""

    actor: Any
    running: dict[Any, tuple[int, Sample, int]]
    alone: bool = False  # running a sample that crashed a worker: nothing beside it


class RayExecutor:
    """The executor of ``--executor ray`` (see the module's docstring)."""

    def __init__(self, spec: RunSpec, subject: Any = None, worker: type = SampleWorker) -> None:
        #: the actor class (``bench/ray_scale_sim.py`` gives one that returns ready results)
        self.spec, self.subject, self.worker = spec, subject, worker
        #: the progress bar's words (the engine sets it), and what the run records
        self.say: Any = lambda text: None
        self.summary: dict[str, Any] = {}
        connect(spec.ray_address, spec.workers)
        ray = _ray()
        cpus = ray.cluster_resources().get("CPU", 1.0)
        self.workers = spec.workers or max(1, int(cpus))
        #: each actor's share of a CPU: many workers fit a small cluster (they mostly wait),
        #: and so do the actors of runs side by side
        self.cpus = min(1.0, cpus / (self.workers * SIDE_BY_SIDE.get()))

    async def execute(self, task: Any, subject: Any, work: list[tuple[int, Sample, int]],
                      run: RunCalls, commit: Any, workers: int) -> None:
        if not work:
            return
        ray = _ray()
        from ray import cloudpickle  # optional
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy  # optional

        spec, store = self.spec, run.shared.store
        n = max(1, min(self.workers, len(work)))
        per = max(1, math.ceil(workers / n))  # each worker's share of --max-connections
        here = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(),
                                              soft=False)
        reader = (ray.remote(num_cpus=0)(CacheReader).options(scheduling_strategy=here)
                  .remote(str(store.path)) if spec.cache else None)
        pacers = {}
        if spec.rpm:
            for model_id in {subject.model_id, *(r.model_id for r, _, _ in run.roles.values())}:
                pacers[model_id] = ray.remote(num_cpus=0)(Pacer).remote(spec.rpm)
        for name, module in list(sys.modules.items()):  # a task file's code travels with it
            if name.startswith(FILE_MODULE_PREFIX):
                cloudpickle.register_pickle_by_value(module)
        worker_cls = ray.remote(self.worker).options(num_cpus=self.cpus, max_concurrency=per)
        shipped = self.subject  # a subject object the caller gave; else each worker builds one

        def start() -> _Slot:
            return _Slot(worker_cls.remote(task, spec, shipped, reader, pacers, per), {})

        slots = [start() for _ in range(n)]
        files: dict[str, tuple[str, str, Any]] = {}
        queue = deque(work)
        crashes: Counter[tuple[Any, int]] = Counter()
        affinity = getattr(task, "affinity", None)  # a task outside the Task class may lack it
        bound: dict[str, int] = {}  # affinity key -> slot
        restarts = redealt = 0
        done_by = [0] * n  # results each worker slot gave back
        began, told = time.monotonic(), 0.0
        pending: dict[asyncio.Future[Any], tuple[int, Any]] = {}

        def ship(sample: Sample) -> list[tuple[str, str, Any]]:
            out = []
            for path in sample.files or []:
                if path not in files:
                    try:
                        data = Path(path).read_bytes()
                    except OSError:  # missing here too: the task says so, as it does locally
                        files[path] = (path, "", None)
                    else:
                        files[path] = (path, hashlib.sha256(data).hexdigest(), ray.put(data))
                out.append(files[path])
            return out

        def deal() -> None:
            """Samples to workers with room, the least busy first, while any has room; a
            sample whose worker is full (affinity) or that needs one alone waits its turn."""
            waiting: list[tuple[int, Sample, int]] = []
            while queue and any(not s.alone and len(s.running) < per for s in slots) and not (
                    run.limits is not None and run.limits.reason()):  # a run limit: no more
                item = queue.popleft()
                key = affinity(item[1]) if affinity else None
                suspect = crashes[(item[1].id, item[2])] > 0
                choices = [bound[key]] if key in bound else range(len(slots))
                free = [i for i in choices if not slots[i].alone and (
                    not slots[i].running if suspect else len(slots[i].running) < per)]
                if not free:
                    waiting.append(item)
                    continue
                i = min(free, key=lambda j: len(slots[j].running))
                if key is not None:
                    bound[key] = i
                slot = slots[i]
                slot.alone = suspect
                ref = slot.actor.run_one.remote(*item, ship(item[1]))
                slot.running[ref] = item
                pending[asyncio.ensure_future(_awaited(ref))] = (i, ref)
            queue.extendleft(reversed(waiting))  # in their order, before the rest

        deal()
        try:
            while pending:
                done, _ = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                for fut in done:
                    i, ref = pending.pop(fut)
                    slot = slots[i]
                    item = slot.running.pop(ref, None)
                    if item is None:  # its worker died and it was dealt again already
                        continue
                    try:
                        result, cached = fut.result()
                    except (ray.exceptions.RayActorError, ray.exceptions.WorkerCrashedError) as e:
                        if "creation task" in str(e):  # it could not start: it never will
                            raise ConfigError(f"the Ray workers cannot start: {_cause(e)}"
                                              ) from None
                        restarts += 1
                        if restarts > 3 * n + MAX_CRASHES:
                            raise ConfigError(f"the Ray workers keep dying ({restarts} so far)"
                                              f"; the last: {fut.exception()}") from None
                        lost = [item, *slot.running.values()]
                        slot.running.clear()
                        slots[i] = start()
                        for one in lost:
                            crashes[(one[1].id, one[2])] += 1
                            if crashes[(one[1].id, one[2])] >= MAX_CRASHES:
                                commit(_crashed(one))
                            else:
                                queue.appendleft(one)
                                redealt += 1
                        continue
                    except ray.exceptions.RayTaskError as e:  # outside the sample's own path
                        slot.alone = False  # (its file, say): that sample's error, not the run's
                        commit(_crashed(item, f"the Ray worker could not run it: {_cause(e)}"))
                        continue
                    slot.alone = False
                    for key, model_id, reply in cached:
                        store.cache_put(key, model_id, reply)
                    result.sample = sample_extra(item[1]) or {}  # the driver's paths
                    commit(result)
                    done_by[i] += 1
                now = time.monotonic()
                if now - told >= 1.0:  # each worker's rate beside the bar, once a second
                    told = now
                    self.say(f"{n} Ray workers: " + " ".join(
                        f"{k / max(now - began, 1e-9):.1f}" for k in done_by) + " /s")
                deal()
        finally:
            self.summary = {"kind": "ray", "workers": n, "results_per_worker": done_by,
                            "samples_dealt_again": redealt, "workers_restarted": restarts,
                            "crashed_samples": sum(1 for k in crashes.values()
                                                   if k >= MAX_CRASHES)}
            with contextlib.suppress(Exception):  # --rpm: the starts the run's one pacer spaced
                self.summary["paced_starts"] = {m: ray.get(p.reserved.remote(), timeout=30)
                                                for m, p in pacers.items()}
            for fut in pending:
                if fut.done() and not fut.cancelled():
                    fut.exception()  # retrieved: asyncio says nothing of it later
                else:
                    fut.cancel()
            for slot in slots:
                with contextlib.suppress(Exception):
                    ray.kill(slot.actor)
            for extra in (reader, *pacers.values()):
                if extra is not None:
                    with contextlib.suppress(Exception):
                        ray.kill(extra)


def _cause(error: BaseException) -> str:
    """The last line of what a worker raised (``ModuleNotFoundError: No module named 'x'``)."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    found = [line for line in lines if "Error:" in line and not line.startswith("ray.")]
    return (found or lines or [type(error).__name__])[-1][:300]


async def _awaited(ref: Any) -> Any:
    return await ref


def _crashed(item: tuple[int, Sample, int], error: str | None = None) -> SampleResult:
    """The error of a sample that was running each time a worker died, MAX_CRASHES times
    (or ``error``: what else kept its worker from running it)."""
    seq, sample, epoch = item
    return SampleResult(
        run_id="", sample_id=sample.id, epoch=epoch, seq=seq, input=sample.input_json(),
        target=sample.target, transcript=[], output="", prediction=None, scores={},
        error=error or f"the Ray worker running this sample died {MAX_CRASHES} times (its "
                       "process crashed or was killed); not retried again",
        latency_s=0.0, input_tokens=0, output_tokens=0, model_calls=0, cache_hits=0,
        metadata=sample.metadata or {}, created_at=time.time(),
        sample=sample_extra(sample) or {})
