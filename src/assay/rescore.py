"""``assay score RUN``: a run's stored outcomes scored again, with no call to its model, as
a new run whose parent is the original, finalized as the engine's are: the same scorer gives
the same verdicts, another (``--scorer lenient`` on GAIA) its own on the same outputs.
Samples that failed in the original have no output: they stay errors. The new run keeps the
original's model facts; its roles name the judges that gave its verdicts, and its stats say
what re-scored it (``rescored_from``, ``rescored_by``) and the original's judges
(``original_roles``). A judged re-scoring with no valid verdict at all is ``failed``."""

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
from assay.scoring.judge import is_judge_role
from assay.store import queries as q
from assay.store.sqlite import Store
from assay.tasks.base import score_sample
from assay.tasks.registry import build_task, resolve


def _used(roles: dict[str, Any]) -> dict[str, Any]:
    """The judges' calls and what they paid for, as a sample stores them."""
    if not roles:
        return {}
    return {"role_usage": role_usage(roles),
            "usage": {name: r.usage_record() for name, r in roles.items()}}


async def _score_rows(store: Store, task: Any, spec: Any, model: dict[str, Any], rows: list[Any],
                      judges: list[str], roles: dict[str, dict[str, Any]]
                      ) -> list[tuple[dict[str, Any], str | None, dict[str, Any]]]:
    """Each stored sample's new scores, scoring error and judges' usage, in order; a judged
    task's judge is the one its options name now, called as the engine calls. ``judges``
    gets who judged as words, ``roles`` each judge's identity as a run stores it."""
    async def one(r: Any, make: Any, limit: asyncio.Semaphore
                  ) -> tuple[dict[str, Any], str | None, dict[str, Any]]:
        if r.error is not None:
            return {}, None, {}
        async with limit:
            ctx = make(r.epoch) if make is not None else None
            roles = ctx.roles if ctx is not None else {}
            try:
                scored = await score_sample(task, sample_of(r), outcome_of(r), ctx)
                return {sc.name: sc.to_dict() for sc in scored}, None, _used(roles)
            except Exception as e:  # a scorer bug or a judge that never answered
                return {}, f"scoring failed: {type(e).__name__}: {e}", _used(roles)

    limit = asyncio.Semaphore(max(1, spec.max_connections))
    if not task.judged():
        return [await one(r, None, limit) for r in rows]
    async with scoring_contexts(store, task, spec, str(model.get("model") or "")) as make:
        first = make(0)
        judges.extend(f"{name} {who}" for name, who in first.who.items())
        for name, ctx in first.roles.items():  # as Subject.describe: no secrets
            describe = getattr(ctx.agent, "describe", None)
            roles[name] = describe() if callable(describe) else {"model": ctx.model_id}
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
    #: a judged task: how many scored samples got a valid verdict, and a line saying so
    #: where some got none (``0 of 4 samples got a valid verdict: ...``)
    valid: int = 0
    verdicts_note: str | None = None
    failed: bool = False


def _first_reply(meta: Any) -> str | None:
    """The first judge reply a score's metadata keeps (a vote's ``replies`` or ``raw``)."""
    if isinstance(meta, dict):
        for key in ("replies", "raw"):
            found = meta.get(key)
            found = found[0] if isinstance(found, list) and found else found
            if isinstance(found, str) and found.strip():
                return found
        inner: Any = meta.values()
    elif isinstance(meta, list):
        inner = meta
    else:
        return None
    return next((r for r in map(_first_reply, inner) if r), None)


def _clip(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def verdicts_note(valid: int, scored: int, first: tuple[str, dict[str, Any]] | None
                  ) -> str | None:
    """``K of N samples got a valid verdict`` and the first that got none (its judge's
    reply, else the score's explanation); ``None`` when every one got one."""
    if first is None or valid >= scored:
        return None
    sample_id, score = first
    reply = _first_reply(score.get("metadata"))
    why = f'"{_clip(reply)}"' if reply else _clip(str(score.get("explanation") or "no verdict"))
    head = f"{valid} of {scored} samples got a valid verdict"
    if valid == 0:
        return f"{head}: every judge reply was invalid (first, sample {sample_id}: {why})"
    return (f"{head}; {scored - valid} got none and are left out of the metrics "
            f"(first, sample {sample_id}: {why})")


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
    rescored = errors = valid = 0
    first_invalid: tuple[str, dict[str, Any]] | None = None
    judge_calls = [0, 0]  # the judge's calls and cache hits (a judged task only)
    judges: list[str] = []
    roles: dict[str, dict[str, Any]] = {}
    started = time.perf_counter()
    try:
        # code run when scoring (HumanEval tests) is weakly isolated only where the run allowed
        with allow_weak_isolation(spec.allow_weak_sandbox), store.background_writes():
            rows = list(store.iter_results(parent["id"]))
            verdicts = asyncio.run(_score_rows(store, task, spec, parent["model"], rows,
                                               judges, roles))
            for seq, (r, (scores, error, used)) in enumerate(zip(rows, verdicts, strict=True)):
                error = r.error or error
                rescored += error is None
                errors += error is not None
                if error is None and scores:  # the primary score: None is no verdict
                    primary = next(iter(scores.values()))
                    valid += primary.get("value") is not None
                    if primary.get("value") is None and first_invalid is None:
                        first_invalid = (r.sample_id, primary)
                for u in (used.get("role_usage") or {}).values():
                    judge_calls[0] += u["calls"]
                    judge_calls[1] += u["cache_hits"]
                # what this re-scoring paid for: its judges' calls (the model's were paid before)
                outcome = {k: v for k, v in r.outcome.items() if k not in ("role_usage", "usage")}
                store.record(new_id, replace(
                    r, run_id=new_id, seq=seq, scores=scores, error=error,
                    prediction=next(iter(scores.values()))["answer"] if scores and error is None
                    else None, model_calls=0, cache_hits=0, created_at=time.time(),
                    outcome={**outcome, **used}))
    except BaseException:
        store.set_run_status(new_id, "failed", {"rescored_from": parent["id"]})
        raise
    # the model under test as the original ran it; its roles, the judges that gave these
    # verdicts (an examiner, who played in the stored outcomes, stays)
    old_roles = dict((parent["model"] or {}).get("roles") or {})
    kept = {k: v for k, v in old_roles.items() if not (task.judged() and is_judge_role(k))}
    model = {k: v for k, v in (parent["model"] or {}).items() if k != "roles"}
    if kept or roles:
        model["roles"] = {**kept, **roles}
    store.update_run(new_id, spec=spec.to_dict(), model=model)
    stats = store.sample_totals(new_id)
    stats["cost"] = q.usage_totals(store, new_id)
    stats.update(rescored_from=parent["id"], elapsed_s=round(time.perf_counter() - started, 3),
                 model_calls=0, rescored_by={
                     "scorer": scorer or spec.task_options.get("scorer"), "roles": roles},
                 original_roles={k: v for k, v in old_roles.items() if k not in kept})
    note = verdicts_note(valid, rescored, first_invalid) if roles else None  # judges asked
    failed = note is not None and valid == 0
    if failed:  # no number came of it: never shown as a success
        stats["error"] = note
    store.set_run_status(new_id, "failed" if failed else "finished", stats)
    # finalize, as the engine does when a run ends: metrics, headline, report data, exports
    metrics = finalize(store, new_id, task=task)
    return RescoreResult(new_id, parent["id"], metrics, rescored, errors, *judge_calls,
                         judges=judges, valid=valid, verdicts_note=note, failed=failed)
