"""``assay score RUN``: score a run's stored outcomes again, with no model calls.

The stored sample and outcome of every result are all a task's scorer needs, so a
run is scored again in any process, as a new run whose parent is the original: the
same scorer reproduces the same verdicts, and another one (``--scorer lenient`` on
a GAIA run, say) gives its numbers on the very same outputs. Samples that failed in
the original run (a model call that never succeeded) stay errors; they have no output
to score.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from assay import __version__
from assay.errors import ConfigError
from assay.store.sqlite import Store


@dataclass
class RescoreResult:
    """The new run and its metrics."""

    run_id: str
    parent_id: str
    metrics: dict[str, Any]
    rescored: int
    errors: int


def rescore(store: Store, run_id: str, *, scorer: str | None = None,
            options: dict[str, Any] | None = None) -> RescoreResult:
    """Score the stored outcomes of ``run_id`` again into a new run (linked as its child).

    ``scorer`` sets the task's ``scorer`` option (the tasks that have one: qa, gaia,
    task files declaring it); ``options`` change other task options that only affect
    scoring. Options that change the samples do not apply: there are no new outputs.
    """
    from assay.core.stored import outcome_of, sample_of
    from assay.engine.runner import RunSpec
    from assay.metrics.run import compute_metrics
    from assay.sandbox import allow_weak_isolation
    from assay.tasks.registry import build_task, resolve

    parent = store.get_run(run_id)
    spec = RunSpec.from_dict(parent["spec"])
    opts = dict(spec.task_options)
    opts.update(options or {})
    if scorer is not None:
        ref = resolve(spec.task)
        if "scorer" not in ref.Options.model_fields:
            raise ConfigError(f"task {ref.name} has no alternative scorers; 'assay score "
                              f"{parent['id']}' without --scorer scores it again as it was")
        opts["scorer"] = scorer
    task = build_task(spec.task, opts)
    if not store.sample_totals(parent["id"])["samples"]:
        kids = store.children(parent["id"])
        hint = (f"; it is a parent run: score its steps ({', '.join(kids)})" if kids else "")
        raise ConfigError(f"run {parent['id']} has no stored samples to score{hint}")
    spec.task_options = dict(task.options)
    new_id = store.create_run(
        task=parent["task"], spec=spec.to_dict(), model=parent["model"],
        dataset=parent["dataset"], package_version=__version__, parent_id=parent["id"])
    encode = json.JSONEncoder(ensure_ascii=False, default=str).encode
    rescored = errors = 0
    started = time.perf_counter()
    try:
        # code run at scoring time (HumanEval/MBPP tests) runs with weak isolation only
        # where the scored run allowed it (--allow-weak-sandbox is stored in its spec)
        with allow_weak_isolation(spec.allow_weak_sandbox), store.background_writes():
            for seq, r in enumerate(store.iter_results(parent["id"])):
                error = r.error
                scores: dict[str, Any] = {}
                prediction = None
                if error is None:
                    try:
                        for sc in task.score(sample_of(r), outcome_of(r)):
                            scores[sc.name] = sc.to_dict()
                        prediction = next(iter(scores.values()))["answer"] if scores else None
                        rescored += 1
                    except Exception as e:  # a scorer bug is that sample's error
                        error = f"scoring failed: {type(e).__name__}: {e}"
                if error is not None:
                    errors += 1
                store.record(new_id, (
                    r.sample_id, r.epoch, seq, encode(r.input), encode(r.target),
                    encode(r.transcript), r.output, prediction, encode(scores), error,
                    r.latency_s, r.input_tokens, r.output_tokens, 0, 0,
                    encode(r.metadata) if r.metadata else None, time.time(),
                    r.model_s, r.wait_s, encode(r.sample) if r.sample else None,
                    encode(r.outcome) if r.outcome else None,
                ))
    except BaseException:
        store.set_run_status(new_id, "failed", {"rescored_from": parent["id"]})
        raise
    stats = store.sample_totals(new_id)
    stats.update(rescored_from=parent["id"], elapsed_s=round(time.perf_counter() - started, 3),
                 model_calls=0)
    store.set_run_status(new_id, "finished", stats)
    metrics = compute_metrics(store, store.get_run(new_id), task_cls=type(task))
    return RescoreResult(new_id, parent["id"], metrics, rescored, errors)
