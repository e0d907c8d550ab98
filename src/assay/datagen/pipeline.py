"""The generated-data workflow, step by step or in one command.

Every model-driven step is an ordinary engine run in the workspace store
(resumable, cached, reportable): ``datagen_generate`` with the generator,
``datagen_judge`` once per judge (a jury when there are several),
``datagen_winrate`` with the first judge, ``datagen_verify`` once per solver.
A pipeline records its run ids in ``assay-runs/datagen/<id>/pipeline.json``
and writes one comprehensive report across them.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.core.atomic import atomic_write_text
from assay.datagen.problem import Problem, load_problems, save_problems
from assay.engine.runner import Engine, RunSpec
from assay.store.sqlite import Store, new_run_id


@dataclass
class StepOptions:
    """Engine settings shared by every step of a pipeline."""

    base_url: str | None = None
    max_connections: int = 8
    timeout: float = 300.0
    max_retries: int = 5
    seed: int | None = None
    cache: bool = True
    quiet: bool = True
    params: dict[str, Any] = field(default_factory=dict)


def run_step(store: Store, benchmark: str, model: str, options: dict[str, Any],
             step: StepOptions | None = None) -> str:
    """One engine run; returns its id (its reports are written too)."""
    from assay.engine.loop import run
    from assay.reports.render import write_reports

    step = step or StepOptions()
    spec = RunSpec(benchmark=benchmark, model=model, base_url=step.base_url,
                   benchmark_options={k: v for k, v in options.items() if v is not None},
                   max_connections=step.max_connections, timeout=step.timeout,
                   max_retries=step.max_retries, seed=step.seed, cache=step.cache,
                   params=dict(step.params))
    run_id = run(Engine(store, quiet=step.quiet).run(spec))
    write_reports(store, run_id)
    return run_id


def results_of(store: Store, run_id: str) -> list[Any]:
    """Stored results of a run."""
    return store.results(run_id)


def metrics_of(store: Store, run_id: str) -> dict[str, Any]:
    """A run's metrics, computed as its reports do."""
    from assay.tasks.registry import task_class

    run = store.get_run(run_id)
    return task_class(run["spec"]["benchmark"]).metrics(
        store.results(run_id), run["spec"].get("benchmark_options"))


def generate(store: Store, *, n: int, model: str, out: Path, reference: str | None = None,
             seed: int = 0, delay: float = 0.0, step: StepOptions | None = None,
             **options: Any) -> tuple[str, dict[str, Any]]:
    """Generate ``n`` problems; write the valid ones to ``out`` (failures beside it)."""
    from assay.datagen.generate import write_outputs

    run_id = run_step(store, "datagen_generate", model,
                      {"n": n, "reference": reference, "seed": seed, "delay": delay, **options},
                      step)
    return run_id, write_outputs(store, run_id, out)


def judge(store: Store, data: Path, judge_models: list[str], *, rubric: str | None = None,
          reference: Path | None = None, generator_model: str | None = None,
          step: StepOptions | None = None) -> tuple[list[str], dict[str, Any] | None]:
    """One judge run per model; with several, the jury summary (agreement included)."""
    from assay.datagen.judge import jury_summary

    run_ids = [run_step(store, "datagen_judge", jm,
                        {"data": str(data), "rubric": rubric,
                         "reference": str(reference) if reference else None,
                         "generator_model": generator_model}, step)
               for jm in judge_models]
    jury = None
    if len(run_ids) > 1:
        jury = jury_summary([(jm, store.results(r)) for jm, r in zip(judge_models, run_ids,
                                                                    strict=True)],
                            generator_model=generator_model)
    return run_ids, jury


def verify(store: Store, data: Path, solver_models: list[str], *,
           step: StepOptions | None = None) -> tuple[list[str], dict[str, Any]]:
    """One solver run per model, combined."""
    from assay.datagen.verify import verification_summary

    run_ids = [run_step(store, "datagen_verify", sm, {"data": str(data)}, step)
               for sm in solver_models]
    return run_ids, verification_summary(
        [(sm, store.results(r)) for sm, r in zip(solver_models, run_ids, strict=True)])


def pipeline_dir(pipeline_id: str) -> Path:
    """Folder of a pipeline's files."""
    from assay.store.sqlite import workspace_dir

    return workspace_dir() / "datagen" / pipeline_id


def run_pipeline(*, n: int, model: str, judge_models: list[str],
                 solver_models: list[str] | None = None, reference: str | None = None,
                 rubric: str | None = None, seed: int = 0, delay: float = 0.0,
                 step: StepOptions | None = None, store: Store | None = None,
                 near_duplicate_threshold: float = 0.5) -> dict[str, Any]:
    """Generate, judge, compare, verify, then write the comprehensive report."""
    from assay.datagen.references import load_reference
    from assay.datagen.verify import near_duplicates
    from assay.errors import DatasetError

    own = store is None
    store = store or Store()
    pid = new_run_id()
    folder = pipeline_dir(pid)
    folder.mkdir(parents=True, exist_ok=True)
    record: dict[str, Any] = {"id": pid, "created_at": time.time(), "n": n, "model": model,
                              "judge_models": judge_models, "solver_models": solver_models or [],
                              "seed": seed, "notes": []}
    try:
        refs: list[Problem] = []
        try:
            refs, ref_info = load_reference(reference)
            ref_file = save_problems(refs, folder / "reference.jsonl")
            record["reference"] = ref_info
        except DatasetError as e:
            ref_file = None
            record["reference"] = None
            why = str(e) if str(e).startswith("no reference set") else f"no reference set: {e}"
            record["notes"].append(f"{why}; generation ran without style examples and the "
                                   "win rate was skipped")
        gen_id, outputs = generate(store, n=n, model=model, out=folder / "generated.jsonl",
                                   reference=str(ref_file) if ref_file else "none", seed=seed,
                                   delay=delay, step=step)
        record["generate_run"] = gen_id
        record["outputs"] = {k: str(v) if isinstance(v, Path) else v for k, v in outputs.items()}
        data = Path(outputs["problems"])
        generated = load_problems(data) if outputs["n_problems"] else []
        if not generated:
            record["notes"].append("no valid problem was generated; judging, win rate and "
                                   "verification were skipped")
        else:
            judge_ids, jury = judge(store, data, judge_models, rubric=rubric,
                                    generator_model=model, step=step)
            record["judge_runs"] = judge_ids
            record["jury"] = jury
            if ref_file is not None:
                record["winrate_run"] = run_step(
                    store, "datagen_winrate", judge_models[0],
                    {"data": str(data), "reference": str(ref_file), "seed": seed,
                     "generator_model": model}, step)
                record["near_duplicates"] = near_duplicates(
                    generated, refs, threshold=near_duplicate_threshold)
            if solver_models:
                record["verify_runs"], record["verification"] = verify(
                    store, data, solver_models, step=step)
        atomic_write_text(folder / "pipeline.json", json.dumps(record, indent=2, default=str),
                                              encoding="utf-8")
        from assay.datagen.report import write_pipeline_report

        record["reports"] = {k: str(v) for k, v in
                             write_pipeline_report(store, record, folder).items()}
        atomic_write_text(folder / "pipeline.json", json.dumps(record, indent=2, default=str),
                                              encoding="utf-8")
        return record
    finally:
        if own:
            store.close()
