"""The engine: runs a task against a subject into the store, each sample through
:func:`assay.engine.sample.run_sample` by an executor; finalize once at the end."""

from __future__ import annotations

import asyncio
import hashlib
import os
import sys
import time
from collections.abc import Callable
from contextlib import nullcontext, suppress
from typing import Any

from assay.core.failures import ErrorSummary, error_summary, too_many_errors
from assay.core.redact import scrub
from assay.core.spec import RunSpec, credentials_needed  # noqa: F401 - their old home
from assay.core.types import Sample, SampleResult
from assay.core.version import __version__
from assay.engine.batch import BatchRound, collect, submit
from assay.engine.calls import CallShared, call_identity
from assay.engine.finalize import finalize
from assay.engine.judging import preflight, task_roles
from assay.engine.limits import RunLimits
from assay.engine.ray_executor import RayExecutor
from assay.engine.sample import Executor, LocalExecutor, RunCalls
from assay.errors import ConfigError
from assay.models.base import Subject, get_subject
from assay.models.registry import capabilities_of
from assay.sandbox import ALLOW_WEAK_FLAG, allow_weak_isolation, bwrap_problem
from assay.store import queries as q
from assay.store.owner import owner_alive
from assay.store.sqlite import Store
from assay.tasks.base import Task
from assay.tasks.registry import build_task

#: what each role's calls are counted by, per run (``stats.role_calls``)
ROLE_COUNTS = ("calls", "cache_hits", "input_tokens", "output_tokens")


def weak_isolation_mark(spec: RunSpec, dataset: dict[str, Any]) -> str | None:
    """Where ``--allow-weak-sandbox`` lets a task that runs code (its dataset record has a
    ``sandbox``) run without bubblewrap: the line marking the run, warned on stderr."""
    if not spec.allow_weak_sandbox or not dataset.get("sandbox"):
        return None
    problem = bwrap_problem()
    if problem is None:
        return None
    print(f"warning: {ALLOW_WEAK_FLAG}: {problem}; code from data or from a model runs "
          "with weak isolation (the host's files and network within its reach)", file=sys.stderr)
    return f"weak: {problem} ({ALLOW_WEAK_FLAG})"


def select_samples(samples: list[Sample], spec: RunSpec) -> list[Sample]:
    """Apply ``--sample-ids`` then ``--limit``; unknown ids are a user error."""
    if spec.sample_ids:
        by_id = {s.id: s for s in samples}
        missing = [i for i in spec.sample_ids if i not in by_id]
        if missing:
            raise ConfigError(f"unknown sample id{'s' if len(missing) > 1 else ''}: "
                              f"{', '.join(missing[:5])}" + (" …" if len(missing) > 5 else ""))
        samples = [by_id[i] for i in spec.sample_ids]
    if spec.limit is not None:
        samples = samples[: spec.limit]
    return samples


def _progress(total: int, description: str, quiet: bool
              ) -> tuple[Any, Callable[[int], None], Callable[[str], None]]:
    """A rich progress bar on stderr (a context), its advance(errors) and a setter of the
    executor's own words beside it (Ray's workers); nothing when quiet."""
    if quiet:
        return nullcontext(), lambda errors: None, lambda text: None
    import rich.progress as rp  # startup

    bar = rp.Progress(rp.TextColumn("{task.description}"), rp.BarColumn(),
                      rp.MofNCompleteColumn(), rp.TextColumn("errors {task.fields[errors]}"),
                      rp.TimeRemainingColumn(), transient=True)
    task = bar.add_task(description, total=total, errors=0)
    return (bar, lambda errors: bar.update(task, advance=1, errors=errors),
            lambda text: bar.update(task, description=f"{description} · {text}"))


def executor_for(spec: RunSpec, subject: Any = None) -> Executor:
    """The executor ``spec.executor`` names, connected (or started) now: one line and exit 2
    where it cannot be."""
    if spec.executor == "ray":
        return RayExecutor(spec, subject)
    raise ConfigError(f"unknown executor {spec.executor!r}; give local or ray")


class Engine:
    """Runs :class:`RunSpec` s into a :class:`Store`."""

    def __init__(self, store: Store, *, quiet: bool = False,
                 executor: Executor | None = None) -> None:
        self.store, self.quiet = store, quiet
        #: ``None``: the one ``spec.executor`` names, for each run
        self.executor: Executor | None = executor
        #: id of the run in progress (so a caller can mark it interrupted on Ctrl-C)
        self.current_run_id: str | None = None

    async def run(self, spec: RunSpec | None, *, resume: str | None = None,
                  task: Task | None = None, subject: Subject | Any | None = None,
                  parent_id: str | None = None) -> str:
        """Run (or resume: ``spec`` may then be omitted) and return the run id; finished
        samples are never redone. ``parent_id``: the run this one is a step of."""
        allowed = spec.allow_weak_sandbox if spec is not None else bool(
            resume and self.store.get_run(resume)["spec"].get("allow_weak_sandbox"))
        with allow_weak_isolation(allowed):
            return await self._run(spec, resume=resume, task=task,
                                   subject=subject, parent_id=parent_id)

    async def _run(self, spec: RunSpec | None, *, resume: str | None,
                   task: Task | None, subject: Subject | Any | None,
                   parent_id: str | None) -> str:
        if resume:
            record = self.store.get_run(resume)
            run_id = record["id"]
            if spec is None:  # a caller may pass the stored spec with a base_url that has
                spec = RunSpec.from_dict(record["spec"])  # its credentials put back
                if record["spec"].get("redacted"):  # masked values would be sent as they are
                    raise credentials_needed(run_id, record["spec"]["redacted"])
            holder = record["stats"].get("owner") or {}
            if (record["status"] == "running" and owner_alive(holder)
                    and holder.get("pid") != os.getpid()):
                raise ConfigError(f"run {run_id} is still running (process {holder.get('pid')}); "
                                  "stop it before resuming")
        if spec is None:
            raise ValueError("Engine.run needs a RunSpec or a run id to resume")
        spec.validate()
        self.current_run_id = run_id if resume else None
        if task is None:
            task = build_task(spec.task, spec.task_options)
        loaded = task.load()  # once per run: nothing is kept on, or written to, the task
        samples = select_samples(loaded.samples, spec)
        if not samples:
            raise ConfigError("the dataset has no samples to run; check the file and --limit")
        dataset = dict(loaded.info, selected=len(samples))
        ran = sorted(str(s.id) for s in samples)
        if ran != sorted(str(s.id) for s in loaded.samples):  # part of the data: which part
            digest = hashlib.sha256("\n".join(ran).encode()).hexdigest()[:12]
            dataset["selection"] = f"{len(samples)} of {len(loaded.samples)} ({digest})"
        weak = weak_isolation_mark(spec, dataset)
        if weak:  # said on the console, and kept with the run for every report
            dataset["isolation"] = weak
        if not resume:  # as the task resolved them: what --resume and 'assay score' rebuild
            spec.task_options = {**spec.task_options, **loaded.options}
        else:
            old_hash = record["dataset"].get("content_hash")
            if old_hash and dataset.get("content_hash") and old_hash != dataset["content_hash"]:
                raise ConfigError(
                    f"the dataset changed since run {run_id} started (content hash "
                    f"{old_hash[:12]} != {dataset['content_hash'][:12]}); start a new run")
        subj = subject or get_subject(spec.model, base_url=spec.base_url, timeout=spec.timeout,
                                      max_reply_bytes=spec.max_reply_bytes,
                                      endpoints=spec.endpoints)
        roles: dict[str, Any] = {}
        started = False
        executor = self.executor or LocalExecutor()
        try:
            if self.executor is None and spec.executor == "ray":  # reached before the run is
                executor = executor_for(spec, subject)  # created: a cluster down creates none
            roles = task_roles(task, spec, subj)
            if getattr(task, "needs_logprobs", False) and not capabilities_of(subj).logprobs:
                raise ConfigError(f"{task.name} asks for log-likelihoods and {subj.model_id} "
                                  "gives no log-probs; use --mc generate, or a model that "
                                  "does (local, openai/... on a vLLM or llama.cpp server)")
            if spec.batch and not callable(getattr(subj.session(), "request_body", None)):
                raise ConfigError(f"--batch needs a model served with a Batch API (openai/"
                                  f"...); {subj.model_id} answers each call itself, so leave "
                                  "--batch out")
            await preflight(subj, roles)
            described = subj.describe()
            if roles:
                described = {**described, "roles": {k: r.describe() for k, r in roles.items()}}
            if not resume:
                run_id = self.store.create_run(
                    task=task.name, spec=spec.to_dict(), model=described,
                    dataset=dataset, package_version=__version__, parent_id=parent_id)
                self.current_run_id = run_id
            else:
                self.store.set_run_status(run_id, "running")
                # allowed overrides; an endpoint shown alike may differ (query, credentials)
                if spec.to_dict() != record["spec"] or described != record["model"]:
                    self.store.update_run(run_id, spec=spec.to_dict(), model=described)
                if weak and record["dataset"].get("isolation") != weak:  # weak from now on
                    self.store.set_run_dataset(run_id, {**record["dataset"], "isolation": weak})
            started = True
            await self._execute(run_id, spec, task, subj, samples, roles, executor)
        except (KeyboardInterrupt, asyncio.CancelledError):
            if started:
                self._mark(run_id, "interrupted", None)
            raise
        except BaseException as e:
            if started:
                self._mark(run_id, "failed", f"{type(e).__name__}: {e}")
            raise
        finally:
            for one in {id(s): s for s in (subj, *roles.values())}.values():
                await one.aclose()
        del samples, loaded  # freed before the results are read back
        # once: metrics, headline, report data and exports, all that readers read of the run
        finalize(self.store, run_id, task=task)
        self._fail_on_errors(run_id, spec)
        return run_id

    def _fail_on_errors(self, run_id: str, spec: RunSpec) -> None:
        """Mark a finished run ``failed`` past ``spec.max_error_rate`` (or when every sample
        errored), its most common error kept in its stats."""
        totals = self.store.sample_totals(run_id)  # one query; the errors read only if so
        if too_many_errors(ErrorSummary(totals["samples"], totals["errors"]), spec.max_error_rate):
            stats = self.store.get_run(run_id)["stats"]
            stats["error"] = scrub(error_summary(self.store, run_id).line())[:500]
            self.store.set_run_status(run_id, "failed", stats)

    def _mark(self, run_id: str, status: str, error: str | None) -> None:
        """Record how a run stopped; never raises (the original error matters more)."""
        with suppress(BaseException):  # the run is already failing
            self.store.stop_writer()
        with suppress(BaseException):  # e.g. the store is locked; list runs shows it
            stats = self.store.get_run(run_id)["stats"]
            stats.pop("owner", None)
            stats.update(self.store.sample_totals(run_id))
            if error:
                stats["error"] = scrub(error)[:500]
            self.store.set_run_status(run_id, status, stats)

    async def _execute(self, run_id: str, spec: RunSpec, task: Task, subj: Any,
                       samples: list[Sample], roles: dict[str, Any],
                       executor: Executor) -> None:
        todo = self._todo(run_id, spec, samples)
        old = self.store.get_run(run_id)["stats"]
        spent = q.usage_totals(self.store, run_id)
        limits = RunLimits(spec, cost=spent["usd"] or 0.0, tokens=spent["tokens"],
                           elapsed=old.get("elapsed_s", 0.0))
        run = RunCalls(
            CallShared.for_spec(self.store, spec, subj),
            call_identity(subj),
            {name: (r, call_identity(r), CallShared.for_spec(self.store, spec, r))
             for name, r in (roles or {}).items()},
            params=spec.run_params(), sample_timeout=spec.sample_timeout,
            sample_token_limit=spec.sample_token_limit, limits=limits if limits.any else None)
        unpriced = [s.pricer.model for s in (run.shared, *(r[2] for r in run.roles.values()))
                    if not s.pricer.known]
        if spec.cost_limit is not None and unpriced:
            raise ConfigError(f"--cost-limit needs a price for {unpriced[0]}; give one with "
                              "--pricing FILE (model: {input: USD, output: USD} per million "
                              "tokens)")
        #: each role's calls, cache hits and tokens in this session (said when the run ends)
        role_counts = {name: dict.fromkeys(ROLE_COUNTS, 0) for name in run.roles}
        errors = 0
        started = time.perf_counter()
        record = self.store.record
        bar, advance, said = _progress(len(todo), f"{task.name} · {subj.model_id}", self.quiet)
        if hasattr(executor, "say"):  # the executor's own progress (Ray: each worker's rate)
            executor.say = said

        def commit(result: SampleResult) -> None:
            nonlocal errors
            result.run_id = run_id
            record(run_id, result)
            for name, used in (result.outcome.get("role_usage") or {}).items():
                for k in ROLE_COUNTS:
                    role_counts[name][k] += used[k]
            errors += result.error is not None
            used = (result.outcome or {}).get("usage") or {}
            limits.settle(result.seq, result.epoch,
                          sum(u.get("cost_usd") or 0.0 for u in used.values()),
                          sum(u["input_tokens"] + u["output_tokens"] for u in used.values()))
            advance(errors)

        with self.store.background_writes(), bar:
            # 1 where every model declares it answers one call at a time, unless the task's
            # requests are batched across samples (log-likelihoods): samples side by side
            # then fill one call
            n_workers = 1 if all(capabilities_of(m).one_call_at_a_time for m in (
                subj, *(r for r, _, _ in run.roles.values()))) and not getattr(
                task, "needs_logprobs", False) else spec.max_connections
            if spec.batch:
                await self._batch_rounds(run_id, spec, task, subj, samples, run, commit,
                                         executor)
            else:
                await executor.execute(task, subj, todo, run, commit, n_workers)
        elapsed = time.perf_counter() - started
        old = self.store.get_run(run_id)["stats"]
        stats = self.store.sample_totals(run_id)
        stats.pop("owner", None)
        stats["elapsed_s"] = round(old.get("elapsed_s", 0.0) + elapsed, 3)
        stats["sessions"] = old.get("sessions", 0) + 1
        if old.get("batches"):
            stats["batches"] = old["batches"]
        stats["cost"] = cost_summary(self.store, run_id, run)
        ran = getattr(executor, "summary", None)
        if ran:  # how this session's samples were run (Ray: workers, re-dealt, restarts)
            stats["executor"] = ran
        if run.roles:  # whom the roles called: model_calls are the subject's alone
            before = old.get("role_calls") or {}
            stats["role_calls"] = {name: {
                "model": r.model_id, "endpoint": r.describe().get("base_url"),
                **{k: n + (before.get(name) or {}).get(k, 0)
                   for k, n in role_counts[name].items()}}
                for name, (r, _, _) in run.roles.items()}
        if limits.stopped:  # the samples not started wait for --resume with a higher limit
            stats["stopped"] = limits.stopped
            self.store.set_run_status(run_id, "interrupted", stats)
        else:
            self.store.set_run_status(run_id, "finished", stats)

    async def _batch_rounds(self, run_id: str, spec: RunSpec, task: Task, subj: Any,
                            samples: list[Sample], run: RunCalls, commit: Any,
                            executor: Executor) -> None:
        """``--batch``: collect the run's open batches, run the samples not done (their
        uncached calls kept for a batch), submit those, and again until none is kept."""
        models: dict[str, tuple[Any, BatchRound]] = {}  # one batch per model a round
        for model, shared in [(subj, run.shared), *((r, sh) for r, _, sh in run.roles.values())]:
            shared.batch = models.setdefault(model.model_id, (model, BatchRound(self.store)))[1]
            shared.batch.shared.append(shared)
        while True:
            records = self.store.get_run(run_id)["stats"].get("batches") or []
            for rec in records:
                if rec["status"] == "submitted":
                    agent, batch = models.get(rec["model"], (None, None))
                    await collect(self.store, run_id, rec, agent and agent.session(), batch,
                                  spec.batch_poll, self.quiet)
            await executor.execute(task, subj, self._todo(run_id, spec, samples), run, commit,
                                   spec.max_connections)
            # the answers read: collected; each new batch stored as soon as it is submitted
            records = [{**r, "status": "collected"} if r["status"] != "submitted" else r
                       for r in records]
            self._save_batches(run_id, records)
            submitted = 0
            for model_id, (_, batch) in models.items():
                rec = await submit(self.store, run_id, model_id, batch)
                if rec:
                    records.append(rec)
                    submitted += 1
                    self._save_batches(run_id, records)
                    if not self.quiet:
                        print(f"batch {rec['id']}: {rec['requests']} requests to {model_id}; "
                              f"this process may stop, 'assay run {spec.task} --resume "
                              f"{run_id}' collects it", file=sys.stderr)
            if not submitted:
                return

    def _todo(self, run_id: str, spec: RunSpec, samples: list[Sample]
              ) -> list[tuple[int, Sample, int]]:
        """``(seq, sample, epoch)`` of every sample and epoch not finished (errors run again)."""
        done = self.store.completed_keys(run_id)
        return [(seq, s, epoch) for epoch in range(spec.epochs) for seq, s in enumerate(samples)
                if (s.id, epoch) not in done]

    def _save_batches(self, run_id: str, records: list[dict[str, Any]]) -> None:
        """The run's batches with its stats now (a later process collects what is open)."""
        stats = self.store.get_run(run_id)["stats"]
        self.store.set_run_status(run_id, "running", {**stats, "batches": records})


def cost_summary(store: Store, run_id: str, run: RunCalls) -> dict[str, Any]:
    """What the run's paid calls cost, per role and in all (``usd`` None: a price unknown,
    ``unpriced`` names the models), and where each price came from."""
    totals = q.usage_totals(store, run_id)
    sources = {"subject": run.shared.pricer,
               **{name: shared.pricer for name, (_, _, shared) in run.roles.items()}}
    for name, role in totals["roles"].items():
        pricer = sources.get(name)
        if pricer is not None:
            role.update(model=pricer.model, price=pricer.source)
    return totals
