"""One sample, start to end (:func:`run_sample`), and the executor that runs a run's
samples through it (:class:`LocalExecutor`; another, Ray's say, would take the same call)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from assay.core.stored import outcome_extra, sample_extra
from assay.core.types import Outcome, Sample, SampleResult
from assay.engine.batch import Deferred
from assay.engine.calls import CallContext, CallShared
from assay.engine.judging import ScoreContext
from assay.engine.limits import RunLimits, SampleMeter
from assay.errors import ModelCallError
from assay.tasks.base import score_sample


@dataclass(slots=True)
class RunCalls:
    """What every sample of a run shares: the subject's and each role's call state (cache,
    limits, retries), the run's generation parameters and per-run state."""

    shared: CallShared
    identity: str
    #: role name -> (its subject, its identity, its call state)
    roles: dict[str, tuple[Any, str, CallShared]] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)
    run_state: dict[str, Any] = field(default_factory=dict)
    sample_timeout: float | None = None
    #: ``--sample-token-limit``: the tokens one sample may pay for, all its roles together
    sample_token_limit: int | None = None
    #: the run's budget, metered live where the samples run in this process (else ``None``)
    limits: RunLimits | None = None


@dataclass(slots=True)
class SampleJob:
    """Where one sample stands in its run: its place in the data, its epoch, the run's calls."""

    seq: int
    epoch: int
    run: RunCalls


async def run_sample(task: Any, sample: Sample, subject: Any,
                     job: SampleJob) -> SampleResult | None:
    """A fresh agent, ``solve``, then ``score`` with a context that reaches the judges but
    never the model under test, both within ``--sample-timeout``. The sample's own failure
    (a model error, a task bug, a timeout) is the result's ``error``, never raised; ``None``:
    a call went to this round's batch (``--batch``), the sample runs again next round."""
    t0 = time.perf_counter()
    run = job.run
    done: dict[str, Any] = {"outcome": None, "scores": {}, "error": None, "scored": False}
    ctx: CallContext | None = None
    meter = SampleMeter(run.sample_token_limit,
                        run.limits.live(job.seq, job.epoch) if run.limits else None)
    try:
        ctx = CallContext(subject.session(), run.shared, run.identity, job.epoch,
                          params=run.params, run_state=run.run_state)
        for name, (role, identity, shared) in run.roles.items():
            ctx.roles[name] = CallContext(role.session(), shared, identity, job.epoch,
                                          params=run.params, run_state=run.run_state)
        for one in (ctx, *ctx.roles.values()):
            one.meter = meter
        await asyncio.wait_for(_solve_and_score(task, sample, ctx, done),
                               run.sample_timeout or None)
    except Deferred:
        for one in (ctx, *ctx.roles.values()) if ctx is not None else ():
            one.unread_batch()
        return None
    except asyncio.TimeoutError:
        done["error"] = f"sample timed out after {run.sample_timeout:g}s"
    except Exception as e:  # an agent that cannot start must not sink the run
        done["error"] = f"{type(e).__name__}: {e}"
    outcome: Outcome | None = done["outcome"]
    scores = done["scores"]
    extra = outcome_extra(outcome) or {}
    if ctx is not None:
        log = ctx.call_log()
        if log is not None:
            extra["call_log"] = log
        if ctx.roles:  # every role's usage, as the subject's is in its own columns
            extra["role_usage"] = role_usage(ctx.roles)
        # what each role's paid calls took and cost (cache hits are free)
        extra["usage"] = {"subject": ctx.usage_record(),
                          **{name: r.usage_record() for name, r in ctx.roles.items()}}
    return SampleResult(
        run_id="", sample_id=sample.id, epoch=job.epoch, seq=job.seq,
        input=sample.input_json(), target=sample.target,
        transcript=[m.to_dict() for m in outcome.transcript] if outcome else [],
        output=outcome.output if outcome else "",
        prediction=next(iter(scores.values()))["answer"] if done["scored"] and scores else None,
        scores=scores, error=done["error"], latency_s=time.perf_counter() - t0,
        input_tokens=ctx.usage.input_tokens if ctx else 0,
        output_tokens=ctx.usage.output_tokens if ctx else 0,
        model_calls=ctx.calls if ctx else 0, cache_hits=ctx.cache_hits if ctx else 0,
        metadata=sample.metadata or {}, created_at=time.time(),
        model_s=ctx.model_s if ctx else None, wait_s=ctx.wait_s if ctx else None,
        sample=sample_extra(sample) or {}, outcome=extra)


def role_usage(roles: dict[str, CallContext]) -> dict[str, dict[str, int]]:
    """Each role's calls, cache hits and tokens in one sample (stored as ``role_usage``)."""
    return {name: {"calls": r.calls, "cache_hits": r.cache_hits,
                   "input_tokens": r.usage.input_tokens, "output_tokens": r.usage.output_tokens}
            for name, r in roles.items()}


async def _solve_and_score(task: Any, sample: Sample, ctx: CallContext,
                           done: dict[str, Any]) -> None:
    """Fill ``done`` as the sample goes, so a timeout keeps what was finished."""
    try:
        outcome = done["outcome"] = await task.solve(sample, ctx)
        done["error"] = outcome.error
    except ModelCallError as e:
        done["error"] = str(e)
    except Exception as e:  # a bug in a task or agent must not sink the run
        done["error"] = f"{type(e).__name__}: {e}"
    if done["error"] is not None or done["outcome"] is None:
        return
    scoring = ScoreContext(ctx.model_id, ctx.epoch, roles=ctx.roles, params=ctx.params)
    try:
        for sc in await score_sample(task, sample, done["outcome"], scoring):
            done["scores"][sc.name] = sc.to_dict()
        done["scored"] = True
    except Exception as e:
        done["error"] = f"scoring failed: {type(e).__name__}: {e}"


class Executor(Protocol):
    """How a run's samples get through :func:`run_sample`: each ``(seq, sample, epoch)`` of
    ``work`` once, each result handed to ``commit`` on the driver as it comes."""

    async def execute(self, task: Any, subject: Any, work: list[tuple[int, Sample, int]],
                      run: RunCalls, commit: Callable[[SampleResult], None],
                      workers: int) -> None: ...


class LocalExecutor:
    """In this process: ``workers`` asyncio tasks on one queue (flat memory), each result to
    ``commit`` (the store's one writer); a failure outside a sample stops them all."""

    async def execute(self, task: Any, subject: Any, work: list[tuple[int, Sample, int]],
                      run: RunCalls, commit: Callable[[SampleResult], None],
                      workers: int) -> None:
        queue: asyncio.Queue[tuple[int, Sample, int]] = asyncio.Queue()
        for item in work:
            queue.put_nowait(item)

        async def worker() -> None:
            while True:
                if run.limits is not None and run.limits.reason():
                    return  # a run limit reached: no new sample starts
                try:
                    seq, sample, epoch = queue.get_nowait()
                except asyncio.QueueEmpty:
                    return
                result = await run_sample(task, sample, subject, SampleJob(seq, epoch, run))
                if result is not None:
                    commit(result)

        await _all_or_none([worker() for _ in range(max(1, min(workers, len(work))))])


async def _all_or_none(coros: list[Awaitable[None]]) -> None:
    tasks = [asyncio.ensure_future(c) for c in coros]
    try:
        await asyncio.gather(*tasks)
    except BaseException:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
