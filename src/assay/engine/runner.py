"""The engine: runs a task against a subject, sample by sample, into the store.

Per sample: a fresh agent (``subject.session()``), ``task.solve``,
``task.score``, one committed row. Concurrency is a fixed pool of worker
tasks (``max_connections``) pulling from a queue, so memory stays flat for big
datasets; the per-endpoint semaphore lives in :mod:`assay.engine.calls`.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import sys
import time
from contextlib import nullcontext
from dataclasses import asdict, dataclass, field
from typing import Any

from assay.core.checks import check_json_finite, check_number
from assay.core.redact import content_secrets, redact_tree, redact_url, scrub
from assay.core.stored import outcome_extra, sample_extra
from assay.core.types import Sample
from assay.core.version import __version__
from assay.engine.calls import CallContext, CallShared, RetryPolicy, with_call_log
from assay.engine.failures import ErrorSummary, error_summary, too_many_errors
from assay.engine.finalize import finalize
from assay.engine.judging import preflight_roles, role_subject
from assay.errors import ConfigError, ModelCallError
from assay.models.base import DEFAULT_MAX_REPLY_BYTES, Subject, get_subject
from assay.models.registry import capabilities_of
from assay.sandbox import ALLOW_WEAK_FLAG, allow_weak_isolation, bwrap_problem
from assay.store.migrate import current_spec
from assay.store.owner import owner_alive
from assay.store.sqlite import Store
from assay.tasks.base import Task, score_sample
from assay.tasks.registry import build_task


@dataclass
class RunSpec:
    """Everything needed to (re)build a run. Stored with the run; never holds secrets."""

    task: str
    model: str = "local"
    task_options: dict[str, Any] = field(default_factory=dict)
    base_url: str | None = None
    timeout: float = 120.0
    max_connections: int = 32
    max_retries: int = 5
    retry_initial: float = 1.0
    sample_timeout: float | None = None
    limit: int | None = None
    sample_ids: list[str] | None = None
    epochs: int = 1
    seed: int | None = None
    cache: bool = True
    params: dict[str, Any] = field(default_factory=dict)
    max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES
    #: at most this many model calls start per minute (``None``: no limit)
    rpm: float | None = None
    #: code from data or from a model may run with weak isolation where bubblewrap does
    #: not work (``--allow-weak-sandbox``); otherwise such a run is refused
    allow_weak_sandbox: bool = False
    #: the run ends ``failed`` when its share of errored samples passes this (1.0: only
    #: when every sample errored); see :mod:`assay.engine.failures`
    max_error_rate: float = 1.0

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Refuse settings that would hang, finish empty or send garbage (one-line errors)."""
        check_number("--max-connections", self.max_connections, minimum=1, maximum=100_000,
                     integer=True, optional=False)
        check_number("--epochs", self.epochs, minimum=1, maximum=100_000, integer=True,
                     optional=False)
        check_number("--timeout", self.timeout, above=0, optional=False)
        check_number("--sample-timeout", self.sample_timeout, above=0)
        check_number("--max-retries", self.max_retries, minimum=0, maximum=1000, integer=True,
                     optional=False)
        check_number("retry_initial", self.retry_initial, minimum=0, optional=False)
        check_number("--limit", self.limit, minimum=1, integer=True)
        check_number("--seed", self.seed, integer=True)
        check_number("--max-reply-bytes", self.max_reply_bytes, minimum=1, integer=True,
                     optional=False)
        check_number("--rpm", self.rpm, above=0)
        check_number("--max-error-rate", self.max_error_rate, minimum=0, maximum=1,
                     optional=False)
        if not isinstance(self.params, dict):
            raise ConfigError(f"params must be a dict, got {type(self.params).__name__}")
        check_number("--temperature", self.params.get("temperature"), minimum=0)
        check_json_finite("--param", self.params)
        check_number("--param max_tokens", self.params.get("max_tokens"), minimum=1,
                     integer=True)
        check_number("--param top_p", self.params.get("top_p"), minimum=0, maximum=1)
        if self.sample_ids is not None and not all(isinstance(i, str) for i in self.sample_ids):
            raise ConfigError("--sample-ids must be a list of strings")
        if not isinstance(self.model, str) or not self.model.strip():
            raise ConfigError("--model must name a model, e.g. 'local' or 'openai/<model>'")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form, as stored: no credentials (see :mod:`assay.core.redact`).

        ``base_url`` keeps its scheme, host and path (``base_url_has_secrets`` says it
        had more); every other field goes through the one redaction policy, and
        ``redacted`` lists the fields it changed (``task_options.judge_base_url``,
        ``model``, ``params.x``): a resume must be given those again.
        """
        d = asdict(self)
        changed: list[str] = []
        secrets = content_secrets()
        d = {k: v if k == "base_url" else redact_tree(v, k, path=k, changed=changed,
                                                      secrets=secrets)
             for k, v in d.items()}
        d["base_url"] = redact_url(self.base_url)
        if d["base_url"] != self.base_url:
            d["base_url_has_secrets"] = True
        if changed:
            d["redacted"] = sorted(set(changed))
        return d

    def run_params(self) -> dict[str, Any]:
        """The run's generation parameters as a task gets them (``--param``, and ``--seed``
        unless a ``seed`` param is given): for its solve and its judge alike."""
        params = dict(self.params)
        if self.seed is not None:
            params.setdefault("seed", self.seed)
        return params

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RunSpec:
        """Inverse of :meth:`to_dict` (unknown keys from newer versions are ignored; a
        spec stored before schema 4 names its task ``benchmark``)."""
        known = {k: v for k, v in current_spec(d).items() if k in cls.__dataclass_fields__}
        return cls(**known)


def option_flag(path: str) -> str:
    """How the user gives the stored spec field at ``path`` again: ``-T name=...`` for a
    task option, ``--model``/``--param name=...`` for the others."""
    head, _, rest = path.partition(".")
    name = rest.split(".")[0].split("[")[0]
    if head == "task_options" and name:
        return f"-T {name}=..."
    if head == "params" and name:
        return f"--param {name}=..."
    return "--" + head.split("[")[0].replace("_", "-")


def credentials_needed(run_id: str, paths: list[str]) -> ConfigError:
    """The one-line error for a resume that lacks the credentials a run's spec held."""
    flags = sorted({option_flag(p) for p in paths})
    fixed = [f for f in flags if not f.startswith("-T ")]
    if fixed:  # --model and --param cannot change on resume
        return ConfigError(
            f"run {run_id} was started with credentials in {', '.join(fixed)}, which are "
            "never stored and cannot be given again on resume; start a new run")
    return ConfigError(
        f"run {run_id} was started with credentials in {', '.join(flags)}, which are never "
        f"stored; resume with {' '.join(flags)} giving the full value again")


def weak_isolation_mark(spec: RunSpec, dataset: dict[str, Any]) -> str | None:
    """Where ``--allow-weak-sandbox`` lets code run without bubblewrap: the line that
    marks the run (and a warning on stderr); else ``None``. Only a task that runs code
    from data or from a model is marked: its dataset record describes the sandbox."""
    if not spec.allow_weak_sandbox or not dataset.get("sandbox"):
        return None
    problem = bwrap_problem()
    if problem is None:
        return None
    print(f"warning: {ALLOW_WEAK_FLAG}: {problem}; code from data or from a model runs "
          "with weak isolation (the host's files and network within its reach)",
          file=sys.stderr)
    return f"weak: {problem} ({ALLOW_WEAK_FLAG})"


def select_samples(samples: list[Sample], spec: RunSpec) -> list[Sample]:
    """Apply ``--sample-ids`` then ``--limit``; unknown ids are a user error."""
    if spec.sample_ids:
        by_id = {s.id: s for s in samples}
        missing = [i for i in spec.sample_ids if i not in by_id]
        if missing:
            raise ConfigError(f"unknown sample id(s): {', '.join(missing[:5])}")
        samples = [by_id[i] for i in spec.sample_ids]
    if spec.limit is not None:
        samples = samples[: spec.limit]
    return samples


class _Progress:
    """A rich progress bar on stderr, or nothing when quiet."""

    def __init__(self, total: int, description: str, quiet: bool) -> None:
        self._bar: Any = None
        self._task: Any = None
        if not quiet:
            from rich.progress import (  # startup
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeRemainingColumn,
            )

            self._bar = Progress(
                TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                TextColumn("errors {task.fields[errors]}"), TimeRemainingColumn(),
                transient=True,
            )
            self._task = self._bar.add_task(description, total=total, errors=0)

    def __enter__(self) -> _Progress:
        if self._bar is not None:
            self._bar.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._bar is not None:
            self._bar.stop()

    def advance(self, errors: int) -> None:
        if self._bar is not None:
            self._bar.update(self._task, advance=1, errors=errors)


class Engine:
    """Runs :class:`RunSpec` s into a :class:`Store`."""

    def __init__(self, store: Store, *, quiet: bool = False) -> None:
        self.store = store
        self.quiet = quiet
        #: id of the run in progress (so a caller can mark it interrupted on Ctrl-C)
        self.current_run_id: str | None = None

    async def run(
        self,
        spec: RunSpec | None,
        *,
        resume: str | None = None,
        task: Task | None = None,
        subject: Subject | Any | None = None,
        parent_id: str | None = None,
    ) -> str:
        """Run (or resume) and return the run id. Finished samples are never redone.

        On resume, ``spec`` may be omitted (the stored one is used). ``parent_id``: the
        run this one is a step of (a pipeline's). Code from data or from a model runs
        with weak isolation only when the spec allows it (``--allow-weak-sandbox``).
        """
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
        if not resume:
            # the options as the task resolved them (defaults, files read, choices
            # inferred from the data) over those given: what --resume and 'assay score'
            # rebuild it from
            spec.task_options = {**spec.task_options, **loaded.options}
        if resume:
            old_hash = record["dataset"].get("content_hash")
            if old_hash and dataset.get("content_hash") and old_hash != dataset["content_hash"]:
                raise ConfigError(
                    f"the dataset changed since run {run_id} started (content hash "
                    f"{old_hash[:12]} != {dataset['content_hash'][:12]}); start a new run"
                )
        subj = subject or get_subject(spec.model, base_url=spec.base_url, timeout=spec.timeout,
                                      max_reply_bytes=spec.max_reply_bytes)
        roles: dict[str, Any] = {}
        started = False
        try:
            for name, role in task.roles(spec.model).items():
                roles[name] = role_subject(name, role, spec)
            preflight = getattr(getattr(subj, "model", None), "preflight", None)
            if preflight is not None:
                await preflight()
            await preflight_roles(roles)
            described = subj.describe()
            if roles:
                described = {**described,
                             "roles": {k: r.describe() for k, r in roles.items()}}
            if not resume:
                run_id = self.store.create_run(
                    task=task.name, spec=spec.to_dict(), model=described,
                    dataset=dataset, package_version=__version__, parent_id=parent_id,
                )
                self.current_run_id = run_id
            else:
                self.store.set_run_status(run_id, "running")
                # allowed overrides (endpoint, limits); an endpoint shown alike may still be
                # another (its query or credentials): the record says which was called
                if spec.to_dict() != record["spec"] or described != record["model"]:
                    self.store.update_run(run_id, spec=spec.to_dict(), model=described)
                if weak and record["dataset"].get("isolation") != weak:  # weak from now on
                    self.store.set_run_dataset(run_id, {**record["dataset"], "isolation": weak})
            started = True
            await self._execute(run_id, spec, task, subj, samples, roles)
        except (KeyboardInterrupt, asyncio.CancelledError):
            if started:
                self._mark(run_id, "interrupted", None)
            raise
        except BaseException as e:
            if started:
                self._mark(run_id, "failed", f"{type(e).__name__}: {e}")
            raise
        finally:
            for one in (subj, *roles.values()):
                await one.aclose()
        del samples, loaded  # freed before the results are read back
        # finalize, once: metrics, headline, report data and official exports, stored with
        # the run (readers read them and never import the task's code)
        finalize(self.store, run_id, task=task)
        self._fail_on_errors(run_id, spec)
        return run_id

    def _fail_on_errors(self, run_id: str, spec: RunSpec) -> None:
        """Mark a finished run ``failed`` when every sample errored or its error rate
        passes ``spec.max_error_rate``; its most common error is kept in its stats."""
        totals = self.store.sample_totals(run_id)  # one query; the errors read only if so
        if too_many_errors(ErrorSummary(totals["samples"], totals["errors"]),
                           spec.max_error_rate):
            stats = self.store.get_run(run_id)["stats"]
            stats["error"] = scrub(error_summary(self.store, run_id).line())[:500]
            self.store.set_run_status(run_id, "failed", stats)

    def _mark(self, run_id: str, status: str, error: str | None) -> None:
        """Record how a run stopped; never raises (the original error matters more)."""
        try:
            self.store.stop_writer()
        except BaseException:  # noqa: BLE001 - the run is already failing
            pass
        try:
            stats = self.store.get_run(run_id)["stats"]
            stats.pop("owner", None)
            stats.update(self.store.sample_totals(run_id))
            if error:
                stats["error"] = scrub(error)[:500]
            self.store.set_run_status(run_id, status, stats)
        except BaseException:  # noqa: BLE001 - e.g. the store is locked; list runs shows it
            pass

    async def _execute(self, run_id: str, spec: RunSpec, task: Task, subj: Any,
                       samples: list[Sample], roles: dict[str, Any] | None = None) -> None:
        done = self.store.completed_keys(run_id)
        todo = [
            (seq, s, epoch)
            for epoch in range(spec.epochs)
            for seq, s in enumerate(samples)
            if (s.id, epoch) not in done
        ]
        identity = json.dumps(subj.describe(), sort_keys=True)
        params = spec.run_params()  # every sample's context carries them (ctx.params)
        run_state: dict[str, Any] = {}  # what the samples of this run share

        def shared_for(model_id: str) -> CallShared:  # the run's limits, one cache per model
            return CallShared(
                self.store, max_connections=spec.max_connections,
                policy=RetryPolicy(max_retries=spec.max_retries, initial=spec.retry_initial),
                use_cache=spec.cache, seed=spec.seed, model_id=model_id,
                max_reply_bytes=spec.max_reply_bytes, rpm=spec.rpm,
            )

        shared = shared_for(subj.model_id)
        role_calls = {name: (r, json.dumps(r.describe(), sort_keys=True), shared_for(r.model_id))
                      for name, r in (roles or {}).items()}
        #: each role's calls and cache hits in this session (said when the run ends)
        role_counts = {name: [0, 0] for name in role_calls}
        queue: asyncio.Queue[tuple[int, Sample, int]] = asyncio.Queue()
        for item in todo:
            queue.put_nowait(item)
        errors = 0
        started = time.perf_counter()
        record = self.store.record
        # one encoder for every sample (json.dumps with options builds one per call)
        encode = json.JSONEncoder(ensure_ascii=False, default=str).encode

        async def one(seq: int, sample: Sample, epoch: int) -> bool:
            t0 = time.perf_counter()
            ctx: CallContext | None = None
            error = None
            outcome = None
            try:
                ctx = CallContext(subj.session(), shared, identity, epoch, params=params,
                                  run_state=run_state)
                for name, (r, r_identity, r_shared) in role_calls.items():
                    ctx.roles[name] = CallContext(r.session(), r_shared, r_identity, epoch,
                                                  params=params, run_state=run_state)
                if spec.sample_timeout:
                    outcome = await asyncio.wait_for(task.solve(sample, ctx), spec.sample_timeout)
                else:
                    outcome = await task.solve(sample, ctx)
                error = outcome.error
            except ModelCallError as e:
                error = str(e)
            except asyncio.TimeoutError:
                error = f"sample timed out after {spec.sample_timeout:g}s"
            except Exception as e:  # a bug in a task or agent must not sink the run
                error = f"{type(e).__name__}: {e}"
            scores: dict[str, Any] = {}
            prediction = None
            if error is None and outcome is not None:
                try:
                    for sc in await score_sample(task, sample, outcome, ctx):
                        scores[sc.name] = sc.to_dict()
                    if scores:
                        prediction = next(iter(scores.values()))["answer"]
                except Exception as e:
                    error = f"scoring failed: {type(e).__name__}: {e}"
            for name, role in (ctx.roles.items() if ctx else ()):
                role_counts[name][0] += role.calls
                role_counts[name][1] += role.cache_hits
            transcript = [m.to_dict() for m in outcome.transcript] if outcome else []
            usage = ctx.usage if ctx else None
            record(run_id, (
                sample.id, epoch, seq, encode(sample.input_json()), encode(sample.target),
                encode(transcript), outcome.output if outcome else "", prediction,
                encode(scores), error,
                time.perf_counter() - t0,
                usage.input_tokens if usage else 0, usage.output_tokens if usage else 0,
                ctx.calls if ctx else 0, ctx.cache_hits if ctx else 0,
                encode(sample.metadata) if sample.metadata else None,
                time.time(),
                ctx.model_s if ctx else None, ctx.wait_s if ctx else None,
                encode(extra) if (extra := sample_extra(sample)) else None,
                encode(done) if (done := with_call_log(outcome_extra(outcome), ctx)) else None,
            ))
            return error is not None

        progress = _Progress(len(todo), f"{task.name} · {subj.model_id}", self.quiet)

        async def worker() -> None:
            nonlocal errors
            while True:
                try:
                    seq, sample, epoch = queue.get_nowait()
                except asyncio.QueueEmpty:
                    return
                if await one(seq, sample, epoch):
                    errors += 1
                progress.advance(errors)

        with self.store.background_writes(), progress if not self.quiet else nullcontext():
            n_workers = max(1, min(spec.max_connections, len(todo)))
            if all(capabilities_of(m).one_call_at_a_time
                   for m in (subj, *(r for r, _, _ in role_calls.values()))):
                n_workers = 1  # every model answers one call at a time (as declared)
            workers = [asyncio.ensure_future(worker()) for _ in range(n_workers)]
            try:
                await asyncio.gather(*workers)
            except BaseException:
                for w in workers:  # one failure (e.g. the store) stops every worker
                    w.cancel()
                await asyncio.gather(*workers, return_exceptions=True)
                raise
        elapsed = time.perf_counter() - started
        old = self.store.get_run(run_id)["stats"]
        stats = self.store.sample_totals(run_id)
        stats.pop("owner", None)
        stats["elapsed_s"] = round(old.get("elapsed_s", 0.0) + elapsed, 3)
        stats["sessions"] = old.get("sessions", 0) + 1
        if role_calls:  # whom the roles called: model_calls are the subject's alone
            before = old.get("role_calls") or {}
            stats["role_calls"] = {name: {
                "model": r.model_id, "endpoint": r.describe().get("base_url"),
                "calls": role_counts[name][0] + (before.get(name) or {}).get("calls", 0),
                "cache_hits": role_counts[name][1] + (before.get(name) or {}).get("cache_hits", 0)}
                for name, (r, _, _) in role_calls.items()}
        self.store.set_run_status(run_id, "finished", stats)
