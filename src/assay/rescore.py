"""``assay score RUN``: a run's stored outcomes scored again, with no call to its model, as
a new run whose parent is the original, finalized as the engine's are: the same scorer gives
the same verdicts, another (``--scorer lenient`` on GAIA) its own on the same outputs.
Samples that failed in the original have no output: they stay errors."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field, replace
from typing import Any

from assay.core.spec import RunSpec
from assay.core.stored import outcome_of, sample_of
from assay.core.version import __version__
from assay.engine.finalize import finalize
from assay.engine.judging import scoring_contexts
from assay.engine.sample import role_usage
from assay.errors import ConfigError
from assay.sandbox import allow_weak_isolation
from assay.store.sqlite import Store
from assay.tasks.base import score_sample
from assay.tasks.registry import build_task, resolve


async def _score_rows(store: Store, task: Any, spec: Any, model: dict[str, Any], rows: list[Any],
                      judges: list[str]) -> list[tuple[dict[str, Any], str | None, dict[str, Any]]]:
    """Each stored sample's new scores, scoring error and judges' usage, in order; a judged
    task's judge is the one its options name now, called as the engine calls."""
    async def one(r: Any, make: Any, limit: asyncio.Semaphore
                  ) -> tuple[dict[str, Any], str | None, dict[str, Any]]:
        if r.error is not None:
            return {}, None, {}
        async with limit:
            ctx = make(r.epoch) if make is not None else None
            roles = ctx.roles if ctx is not None else {}
            try:
                scored = await score_sample(task, sample_of(r), outcome_of(r), ctx)
                return {sc.name: sc.to_dict() for sc in scored}, None, role_usage(roles)
            except Exception as e:  # a scorer bug or a judge that never answered
                return {}, f"scoring failed: {type(e).__name__}: {e}", role_usage(roles)

    limit = asyncio.Semaphore(max(1, spec.max_connections))
    if not task.judged():
        return [await one(r, None, limit) for r in rows]
    async with scoring_contexts(store, task, spec, str(model.get("model") or "")) as make:
        judges.extend(f"{name} {who}" for name, who in make(0).who.items())
        return list(await asyncio.gather(*(one(r, make, limit) for r in rows)))


@dataclass
class RescoreResult:
    """The new run and its metrics."""

    run_id: str
    parent_id: str
    metrics: dict[str, Any]
    rescored: int
    errors: int
    #: calls to the judge (a judged task), and how many the response cache answered
    judge_calls: int = 0
    judge_cache_hits: int = 0
    #: the judges asked: ``judge openai/m at http://host/v1`` (the endpoint as shown)
    judges: list[str] = field(default_factory=list)


def rescore(store: Store, run_id: str, *, scorer: str | None = None,
            options: dict[str, Any] | None = None,
            judge_model: str | list[str] | None = None,
            judge_base_url: str | None = None) -> RescoreResult:
    """Score the stored outcomes of ``run_id`` again into a new run (linked as its child).

    ``scorer`` sets the task's ``scorer`` option; ``options``, others that only affect
    scoring. A new ``judge_model`` never inherits the stored judge's endpoint: without
    ``judge_base_url``, it takes its own (see :func:`assay.engine.judging.role_subject`).
    """
    parent = store.get_run(run_id)
    spec = RunSpec.from_dict(parent["spec"])
    opts = {**spec.task_options, **(options or {})}
    fields = (resolve(spec.task).Options.model_fields
              if scorer is not None or judge_model is not None or judge_base_url is not None
              else {})
    if scorer is not None:
        if "scorer" not in fields:
            raise ConfigError(f"task {spec.task} has no alternative scorers; 'assay score "
                              f"{parent['id']}' without --scorer scores it again as it was")
        opts["scorer"] = scorer
    if judge_model is not None:  # a judged task's judge (a list: a jury), its judge_model
        if "judge_model" not in fields:
            raise ConfigError(f"task {spec.task} has no judge; --judge-model re-judges runs of "
                              "tasks that have one (mt_bench, converse, ...)")
        opts["judge_model"] = judge_model
        if "judge_base_url" not in (options or {}):  # the stored one served another judge
            opts.pop("judge_base_url", None)
    if judge_base_url is not None:
        if "judge_base_url" not in fields:
            raise ConfigError(f"task {spec.task} takes no judge endpoint; --judge-base-url "
                              "applies to tasks with a judge_base_url option (mt_bench, converse, "
                              "datagen_judge, datagen_winrate)")
        opts["judge_base_url"] = judge_base_url
    task = build_task(spec.task, opts)
    if judge_model is None and task.judged() and getattr(
            getattr(task, "opts", None), "judge_model", None) == []:
        # the run's own model judged (the task's default): it judges again, as the judge
        opts["judge_model"] = spec.model
        task = build_task(spec.task, opts)
    if not store.sample_totals(parent["id"])["samples"]:
        kids = store.children(parent["id"])
        hint = (f"; it is a parent run: score its steps ({', '.join(kids)})" if kids else "")
        raise ConfigError(f"run {parent['id']} has no stored samples to score{hint}")
    # samples are not loaded again: the stored options (as resolved) with this scoring's
    spec.task_options = {**opts, **task.options}
    new_id = store.create_run(
        task=parent["task"], spec=spec.to_dict(), model=parent["model"],
        dataset=parent["dataset"], package_version=__version__, parent_id=parent["id"])
    rescored = errors = 0
    judge_calls = [0, 0]  # the judge's calls and cache hits (a judged task only)
    judges: list[str] = []
    started = time.perf_counter()
    try:
        # code run when scoring (HumanEval tests) is weakly isolated only where the run allowed
        with allow_weak_isolation(spec.allow_weak_sandbox), store.background_writes():
            rows = list(store.iter_results(parent["id"]))
            verdicts = asyncio.run(_score_rows(store, task, spec, parent["model"], rows, judges))
            for seq, (r, (scores, error, used)) in enumerate(zip(rows, verdicts, strict=True)):
                error = r.error or error
                rescored += error is None
                errors += error is not None
                for u in used.values():
                    judge_calls[0] += u["calls"]
                    judge_calls[1] += u["cache_hits"]
                outcome = {k: v for k, v in r.outcome.items() if k != "role_usage"}
                store.record(new_id, replace(
                    r, run_id=new_id, seq=seq, scores=scores, error=error,
                    prediction=next(iter(scores.values()))["answer"] if scores and error is None
                    else None, model_calls=0, cache_hits=0, created_at=time.time(),
                    outcome={**outcome, "role_usage": used} if used else outcome))
    except BaseException:
        store.set_run_status(new_id, "failed", {"rescored_from": parent["id"]})
        raise
    stats = store.sample_totals(new_id)
    stats.update(rescored_from=parent["id"], elapsed_s=round(time.perf_counter() - started, 3),
                 model_calls=0)
    store.set_run_status(new_id, "finished", stats)
    # finalize, as the engine does when a run ends: metrics, headline, report data, exports
    metrics = finalize(store, new_id, task=task)
    return RescoreResult(new_id, parent["id"], metrics, rescored, errors, *judge_calls,
                         judges=judges)
