"""The one parent-run driver (a plan, a datagen pipeline). The store is the only state: after
Ctrl-C or ``kill -9`` a finished step's run is reused, a half-done one resumed, the rest run."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from assay.api import make_spec, resume_spec, run_async
from assay.core.redact import scrub
from assay.core.version import __version__
from assay.engine.loop import run
from assay.engine.ray_executor import SIDE_BY_SIDE
from assay.engine.runner import Engine, RunSpec
from assay.errors import AssayError, ConfigError
from assay.metrics.run import run_metrics
from assay.store.owner import check_resumable
from assay.store.sqlite import Store, new_run_id

#: the RunSpec fields a datagen pipeline or command sets for its steps
ENGINE_FIELDS = ("base_url", "max_connections", "timeout", "max_retries", "retry_initial",
                 "sample_timeout", "seed", "cache", "params", "max_reply_bytes", "rpm")
#: every engine setting of a RunSpec (what a plan's tasks inherit)
ALL_ENGINE_FIELDS = tuple(f for f in RunSpec.__dataclass_fields__
                          if f not in ("task", "model", "task_options"))


class StepFailed(AssayError):
    """A step of a parent run failed (recorded in the parent's steps)."""


def engine_settings(spec: RunSpec, fields: tuple[str, ...] = ENGINE_FIELDS) -> dict[str, Any]:
    """The engine settings of ``spec`` (what its steps inherit)."""
    return {name: getattr(spec, name) for name in fields}


def run_step(store: Store, task: str, model: str, options: dict[str, Any], *,
             engine: dict[str, Any] | None = None, parent_id: str | None = None,
             quiet: bool = True) -> str:
    """Run ``task`` on ``model`` as ``assay run`` would (reports written); returns its id."""
    return run(arun_step(store, task, model, options, engine=engine, parent_id=parent_id,
                         quiet=quiet))


async def arun_step(store: Store, task: str, model: str, options: dict[str, Any], *,
                    engine: dict[str, Any] | None = None, parent_id: str | None = None,
                    quiet: bool = True) -> str:
    """:func:`run_step` on the running event loop (steps side by side: a plan on Ray)."""
    spec = make_spec(task, model, task_options={k: v for k, v in options.items()
                                                if v is not None},
                     engine={k: v for k, v in (engine or {}).items() if v is not None})
    return await _execute(store, spec, None, None, parent_id, quiet)


def resume_step(store: Store, run_id: str, *, overrides: dict[str, Any] | None = None,
                parent_id: str | None = None, quiet: bool = True) -> str:
    """Continue an interrupted run with the engine's resume (``overrides``: what may change,
    and ``task_options`` whose credentials were never stored)."""
    return run(_execute(store, None, run_id, overrides, parent_id, quiet))


async def _execute(store: Store, spec: RunSpec | None, resume: str | None,
                   overrides: dict[str, Any] | None, parent_id: str | None, quiet: bool) -> str:
    result = await run_async(spec, resume=resume, store=store, quiet=quiet,
                             engine=Engine(store, quiet=quiet), overrides=overrides,
                             parent_id=parent_id)
    return result.run_id


metrics_of = run_metrics  # a run's metrics, as stored when it finished


def stop(store: Store, run_id: str, status: str, error: str | None = None) -> None:
    """Record how a parent run stopped; never raises (the original error matters more)."""
    try:
        stats = {k: v for k, v in store.get_run(run_id)["stats"].items() if k != "owner"}
        if error:
            # scrubbed before the cut: a secret split by it would leave a fragment
            stats["error"] = scrub(error)[:500]
        store.set_run_status(run_id, status, stats)
    except BaseException:  # noqa: BLE001 - e.g. the store is locked; list runs shows it
        pass


@dataclass
class ParentRun:
    """A parent run being driven: its id, its recorded steps and its children."""

    store: Store
    id: str
    #: the parent's spec (model and engine settings steps inherit), with unstored credentials
    spec: RunSpec
    quiet: bool = True
    #: settings a resumed step may change (see :func:`resume_step`)
    overrides: dict[str, Any] | None = None
    #: what each step did, in order (stored as the parent's ``steps``)
    steps: list[dict[str, Any]] = field(default_factory=list)
    #: the children stored when the parent was reopened (a step may take one up)
    known: list[str] = field(default_factory=list)

    @classmethod
    def create(cls, store: Store, spec: RunSpec, *, kind: str, model: dict[str, Any],
               dataset: dict[str, Any], quiet: bool = True, run_id: str | None = None,
               on_created: Callable[[str], Any] | None = None) -> ParentRun:
        """A new parent run of ``kind`` in the store (its spec without credentials);
        ``on_created`` is called with its id once it is there."""
        pid = store.create_run(task=spec.task, kind=kind, spec=spec.to_dict(), model=model,
                               dataset=dataset, package_version=__version__,
                               run_id=run_id or new_run_id())
        if on_created is not None:
            on_created(pid)
        return cls(store, pid, spec, quiet)

    @classmethod
    def reopen(cls, store: Store, run_id: str, *, kind: str, what: str,
               overrides: dict[str, Any] | None = None, quiet: bool = True) -> ParentRun:
        """A stopped parent run of ``kind`` (``what`` in messages) to resume, its spec as
        stored plus ``overrides`` (a changed spec is stored)."""
        record = store.get_run(run_id)
        if record["kind"] != kind:
            raise ConfigError(f"run {record['id']} is a {record['kind']} run ({record['task']}), "
                              f"not a {what}; see 'assay list runs'")
        check_resumable(record, record["task"], what)
        spec = resume_spec(store, record["id"], None, overrides)
        if spec.to_dict() != record["spec"]:  # a new endpoint, connections, ...: recorded
            store.update_run(record["id"], spec=spec.to_dict(), model=record["model"])
        return cls(store, record["id"], spec, quiet, overrides,
                   list(record.get("steps") or []), store.children(record["id"]))

    @property
    def record(self) -> dict[str, Any]:
        return self.store.get_run(self.id)

    def step(self, key: str, task: str, model: str,
             options: dict[str, Any] | Callable[[], dict[str, Any]], **kwargs: Any) -> str:
        """Run step ``key``; returns its run id. A finished run is reused, a half-done one
        resumed; ``options`` may be a function, called only when the step runs (downloads)."""
        return run(self.astep(key, task, model, options, **kwargs))

    async def astep(self, key: str, task: str, model: str,
                    options: dict[str, Any] | Callable[[], dict[str, Any]], *,
                    engine: dict[str, Any] | None = None, names: Iterable[str] = (),
                    needs: Iterable[str] = (), before: Callable[[], Any] | None = None,
                    echo: Callable[[str], Any] | None = None, label: str | None = None,
                    store: Store | None = None) -> str:
        """:meth:`step` on the running event loop; ``store``: the child run's own connection
        to the parent's store (steps side by side each write through their own)."""
        say = echo or (lambda _text: None)
        child_store = store or self.store
        label = label or key
        entry = self._entry(key, task)
        for need in needs:
            done = self._entry_of(need)
            if done is None or done["status"] != "finished":
                self._record(entry, status="skipped", error=f"step {need} did not finish")
                raise StepFailed(f"{label}: skipped, step {need} did not finish")
        found = self._found(entry, {task, *names})
        had: set[str] | None = None  # the children before a new one is made
        try:
            if found is not None and found["spec"].get("model") != model:
                raise ConfigError(f"run {self.id}: step {label} was run with "
                                  f"{found['spec'].get('model')}, not {model}; start a new "
                                  "run")
            if found is not None and found["status"] == "finished":
                say(f"{label}: finished before (run {found['id']}), kept")
                self._record(entry, run=found["id"], status="finished")
                return found["id"]
            if found is not None:
                say(f"{label}: resuming run {found['id']}")
                self._record(entry, run=found["id"], status="running")
                child = await _execute(child_store, None, found["id"],
                                       self._resume_overrides(found, _options_of(options)),
                                       self.id, self.quiet)
            else:
                limit = (engine or {}).get("limit")
                say(f"{label}: running" + (f" (limit {limit})" if limit is not None else ""))
                self._record(entry, status="running")
                had = set(self.store.children(self.id))
                if before is not None:
                    before()
                child = await arun_step(child_store, task, model, _options_of(options),
                                        engine=engine, parent_id=self.id, quiet=self.quiet)
        except AssayError as e:
            self._record(entry, status="failed", error=scrub(str(e))[:500],
                         run=self._made(entry, had))
            say(f"{label}: failed: {e}")
            raise StepFailed(str(e)) from e
        except BaseException as e:  # Ctrl-C, SIGTERM, a bug: recorded, then raised again
            # Ctrl-C or SIGTERM reaches a step on the event loop as its cancellation
            stopped = isinstance(e, KeyboardInterrupt | SystemExit | asyncio.CancelledError)
            try:
                self._record(entry, status="interrupted" if stopped else "failed",
                             error=None if stopped else scrub(f"{type(e).__name__}: {e}")[:500],
                             run=self._made(entry, had))
            except Exception:  # noqa: BLE001 - e.g. the store is locked: the error matters more
                pass
            raise
        status = self.store.get_run(child)["status"]
        self._record(entry, run=child, status=status)
        return child

    def drive(self, body: Callable[[ParentRun], dict[str, Any]],
              summarize: Callable[[ParentRun, dict[str, Any]], dict[str, Any]] | None = None
              ) -> dict[str, Any]:
        """Run ``body``, then store the parent's status and summary as its metrics; Ctrl-C or an
        error stores ``interrupted`` or ``failed`` and is raised again."""
        started = time.perf_counter()
        self.store.set_run_status(self.id, "running")
        try:
            summary = body(self)
        except (KeyboardInterrupt, SystemExit):
            stop(self.store, self.id, "interrupted")
            raise
        except BaseException as e:
            stop(self.store, self.id, "failed", f"{type(e).__name__}: {e}")
            raise
        stats = {k: v for k, v in self.record["stats"].items() if k != "owner"}
        stats["elapsed_s"] = round(stats.get("elapsed_s", 0.0) + time.perf_counter() - started, 3)
        stats["sessions"] = stats.get("sessions", 0) + 1
        failed = any(s["status"] in ("failed", "skipped") for s in self.steps)
        self.store.set_run_status(self.id, "failed" if failed else "finished", stats)
        if summarize is not None:
            summary = summarize(self, summary)
        self.store.set_metrics(self.id, summary)
        return summary

    def _entry_of(self, key: str) -> dict[str, Any] | None:
        return next((s for s in self.steps if s["key"] == key), None)

    def _entry(self, key: str, task: str) -> dict[str, Any]:
        entry = self._entry_of(key)
        if entry is None:
            entry = {"key": key, "task": task, "run": None, "status": "pending", "error": None}
            self.steps.append(entry)
        return entry

    def _made(self, entry: dict[str, Any], had: set[str] | None) -> str | None:
        """The step's run: the one recorded, else the child made since ``had``."""
        if entry["run"] or had is None:
            return entry["run"]
        return next((c for c in self.store.children(self.id) if c not in had), None)

    def _record(self, entry: dict[str, Any], **changes: Any) -> None:
        entry.update({"error": None, **changes})
        self.store.set_run_steps(self.id, self.steps)

    def _found(self, entry: dict[str, Any], names: set[str]) -> dict[str, Any] | None:
        """The step's run: the one recorded, else (its id lost to a kill, or an older
        assay's parent) the first known child of the step's task no step has taken."""
        if entry["run"]:
            return self.store.get_run(entry["run"])
        taken = {s["run"] for s in self.steps if s["run"]}
        for child in self.known:
            if child not in taken:
                record = self.store.get_run(child)
                if record["task"] in names:
                    return record
        return None

    def _resume_overrides(self, found: dict[str, Any], options: dict[str, Any]
                          ) -> dict[str, Any] | None:
        """The parent's overrides, plus the task options whose credentials were never stored."""
        masked = {p.split(".")[1].split("[")[0] for p in found["spec"].get("redacted") or []
                  if p.startswith("task_options.")}
        again = {k: v for k, v in options.items() if k in masked}
        if not again:
            return self.overrides
        return {**(self.overrides or {}), "task_options": again}


def steps_of(p: ParentRun, calls: list[tuple[tuple[Any, ...], dict[str, Any]]]
             ) -> list[str | StepFailed]:
    """Each ``(args, kwargs)`` of :meth:`ParentRun.step`: its run id, or its failure. On Ray
    (``--executor ray``) the steps run side by side, each child with its own connection to
    the store and no progress bar of its own; else one after another."""
    if p.spec.executor != "ray" or len(calls) < 2:
        out: list[str | StepFailed] = []
        for args, kwargs in calls:
            try:
                out.append(p.step(*args, **kwargs))
            except StepFailed as e:
                out.append(e)
        return out
    return run(_side_by_side(p, calls))


async def _side_by_side(p: ParentRun, calls: list[tuple[tuple[Any, ...], dict[str, Any]]]
                        ) -> list[str | StepFailed]:
    stores = [Store(p.store.path) for _ in calls]
    quiet, p.quiet = p.quiet, True  # one bar per child would tear the terminal
    SIDE_BY_SIDE.set(len(calls))  # this task's context, which each step's copies
    try:
        done = await asyncio.gather(*(p.astep(*args, **kwargs, store=store)
                                      for (args, kwargs), store in zip(calls, stores,
                                                                       strict=True)),
                                    return_exceptions=True)
    finally:
        p.quiet = quiet
        for store in stores:
            store.close()
    for one in done:  # a step's failure is its own; anything else stops the parent
        if isinstance(one, BaseException) and not isinstance(one, StepFailed):
            raise one
    return done


def _options_of(options: dict[str, Any] | Callable[[], dict[str, Any]]) -> dict[str, Any]:
    return options() if callable(options) else options
