"""The generated-data pipeline: a parent run whose steps are child runs, resumable.

``start_pipeline`` records the pipeline as a run of ``datagen_pipeline`` (its options:
the pipeline's arguments; its spec: the generator and the engine settings every step
inherits; its dataset: the reference set) and runs the steps as ordinary engine runs
whose parent it is: ``datagen_generate`` with the generator, ``datagen_judge`` once
per judge (a jury when there are several), ``datagen_winrate`` with the first judge,
``datagen_verify`` once per solver. The store is the only state: ``resume_pipeline``
(``assay datagen pipeline --resume ID``, after Ctrl-C or kill -9) reads the steps back
from the parent's children, skips the finished ones, continues an interrupted one with
the engine's own resume (no committed sample is sent again) and runs the rest.

The problems, the reference set and the comprehensive report are written to
``assay-runs/datagen/<pipeline id>/`` (``pipeline.json`` there is a snapshot for
readers, never read back).
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.core.atomic import atomic_write_text
from assay.core.redact import scrub
from assay.core.version import __version__
from assay.engine.runner import RunSpec
from assay.errors import AssayError, ConfigError
from assay.store.owner import check_resumable
from assay.store.sqlite import Store, new_run_id
from assay.tasks.datagen.pipeline_task import NAME, PipelineOptions
from assay.tasks.datagen.problem import load_problems, save_problems
from assay.tasks.datagen.steps import engine_settings, metrics_of, resume_step, run_step

__all__ = ["metrics_of", "pipeline_dir", "pipeline_record", "resume_pipeline", "run_pipeline",
           "start_pipeline"]

GENERATE, JUDGE, WINRATE, VERIFY = ("datagen_generate", "datagen_judge", "datagen_winrate",
                                    "datagen_verify")


def pipeline_dir(pipeline_id: str) -> Path:
    """Folder of a pipeline's files (absolute: its steps' options name files in it)."""
    from assay.store.sqlite import workspace_dir

    return (workspace_dir() / "datagen" / pipeline_id).resolve()


@dataclass
class _Pipeline:
    """A pipeline being run: its parent run and what its steps need."""

    store: Store
    id: str
    generator: str
    options: PipelineOptions
    engine: dict[str, Any]
    folder: Path
    reference_file: Path | None
    overrides: dict[str, Any] | None = None
    quiet: bool = True
    #: the steps already in the store, by (task, index among that task's steps)
    existing: dict[tuple[str, int], dict[str, Any]] = field(default_factory=dict)

    def step(self, task: str, index: int, model: str, options: dict[str, Any]) -> str:
        """Run step ``(task, index)``: skipped when finished, resumed when interrupted."""
        found = self.existing.get((task, index))
        if found is None:
            return run_step(self.store, task, model, options, engine=self.engine,
                            parent_id=self.id, quiet=self.quiet)
        if found["spec"].get("model") != model:
            raise AssayError(f"pipeline {self.id}: step {task} #{index + 1} was run with "
                             f"{found['spec'].get('model')}, not {model}; start a new pipeline")
        if found["status"] == "finished":
            return found["id"]
        return resume_step(self.store, found["id"], overrides=self.overrides, parent_id=self.id,
                           quiet=self.quiet)


def _existing_steps(store: Store, pipeline_id: str) -> dict[tuple[str, int], dict[str, Any]]:
    seen: Counter[str] = Counter()
    out: dict[tuple[str, int], dict[str, Any]] = {}
    for child in store.children(pipeline_id):
        run = store.get_run(child)
        task = run["task"]
        if task in (GENERATE, JUDGE, WINRATE, VERIFY):
            out[(task, seen[task])] = run
            seen[task] += 1
    return out


def _load_reference(reference: str | None, folder: Path
                    ) -> tuple[Path | None, dict[str, Any] | None, list[str]]:
    """The reference set saved in the pipeline's folder, its description, and notes."""
    from assay.errors import DatasetError
    from assay.tasks.datagen.references import load_reference

    try:
        refs, info = load_reference(reference)
    except DatasetError as e:
        why = str(e) if str(e).startswith("no reference set") else f"no reference set: {e}"
        return None, None, [f"{why}; generation ran without style examples and the win "
                            "rate was skipped"]
    return save_problems(refs, folder / "reference.jsonl"), info, []


def start_pipeline(store: Store, *, model: str, engine: dict[str, Any] | None = None,
                   quiet: bool = True, on_created: Callable[[str], Any] | None = None,
                   **arguments: Any) -> dict[str, Any]:
    """Start a pipeline for generator ``model``; returns its record (see
    :func:`pipeline_record`). ``arguments`` are :class:`PipelineOptions` (``n``,
    ``judge_models``, ``solver_models``, ``reference``, ``rubric``, ``seed``,
    ``near_duplicate_threshold``); ``engine`` the RunSpec settings every step uses.
    ``on_created`` is called with the pipeline's id once its run is in the store."""
    from assay.tasks.options import validate_options

    options = validate_options(PipelineOptions,
                               {k: v for k, v in arguments.items() if v is not None}, NAME)
    if options.rubric:  # a bad rubric is a one-line error now, not after the generation
        from assay.tasks.datagen.rubric import resolve_rubric

        resolve_rubric(options.rubric)
        # stored absolute, so that the pipeline resumes from any folder
        options.rubric = str(Path(options.rubric).expanduser().resolve())
    # the pipeline's seed also seeds the models' sampling, unless the engine has its own
    settings = {"seed": options.seed, **{k: v for k, v in (engine or {}).items()
                                        if v is not None}}
    spec = RunSpec(task=NAME, model=model, task_options=options.model_dump(),
                   **settings)
    pid = new_run_id()
    folder = pipeline_dir(pid)
    folder.mkdir(parents=True, exist_ok=True)
    ref_file, ref_info, notes = _load_reference(options.reference, folder)
    store.create_run(task=NAME, spec=spec.to_dict(), run_id=pid,
                     model={"model": model, "judge_models": options.judge_models,
                            "solver_models": options.solver_models},
                     dataset={"reference": ref_info,
                              "reference_file": str(ref_file) if ref_file else None,
                              "notes": notes},
                     package_version=__version__)
    if on_created is not None:
        on_created(pid)
    return _drive(_Pipeline(store, pid, model, options, engine_settings(spec), folder,
                            ref_file, quiet=quiet))


def resume_pipeline(store: Store, pipeline_id: str, *, overrides: dict[str, Any] | None = None,
                    quiet: bool = True) -> dict[str, Any]:
    """Continue a pipeline after Ctrl-C or kill -9: finished steps are kept, an
    interrupted step is resumed by the engine, the steps not started are run.
    ``overrides``: engine settings that may change (``base_url``, ``max_connections``,
    ``timeout``, ``max_retries``, ``cache``, ``rpm``, ...)."""
    from assay.api import resume_spec

    record = store.get_run(pipeline_id)
    pid = record["id"]
    check_resumable(record, NAME, "pipeline")
    spec = resume_spec(store, pid, None, overrides)
    if spec.to_dict() != record["spec"]:  # a new endpoint, connections, ...: recorded
        store.update_run(pid, spec=spec.to_dict(), model=record["model"])
    options = PipelineOptions.model_validate(spec.task_options)
    ref = record["dataset"].get("reference_file")
    if ref and not Path(ref).is_file():
        raise ConfigError(f"pipeline {pid}: its reference set {ref} is gone; start a new "
                          "pipeline")
    return _drive(_Pipeline(store, pid, spec.model, options, engine_settings(spec),
                            pipeline_dir(pid), Path(ref) if ref else None,
                            overrides=overrides, quiet=quiet,
                            existing=_existing_steps(store, pid)))


def _drive(p: _Pipeline) -> dict[str, Any]:
    """Run the steps not finished yet, then store the summaries and write the report."""
    store = p.store
    started = time.perf_counter()
    store.set_run_status(p.id, "running")
    try:
        summary = _run_steps(p)
    except (KeyboardInterrupt, SystemExit):
        _stop(store, p.id, "interrupted", None)
        raise
    except BaseException as e:
        _stop(store, p.id, "failed", f"{type(e).__name__}: {e}")
        raise
    stats = {k: v for k, v in store.get_run(p.id)["stats"].items() if k != "owner"}
    stats["elapsed_s"] = round(stats.get("elapsed_s", 0.0) + time.perf_counter() - started, 3)
    stats["sessions"] = stats.get("sessions", 0) + 1
    summary["report"] = str(p.folder / "report.md")
    store.set_metrics(p.id, summary)
    store.set_run_status(p.id, "finished", stats)
    record = pipeline_record(store, p.id)
    from assay.tasks.datagen.report import write_pipeline_report

    record["reports"] = {k: str(v) for k, v in
                         write_pipeline_report(store, record, p.folder).items()}
    atomic_write_text(p.folder / "pipeline.json", json.dumps(record, indent=2, default=str),
                      encoding="utf-8")
    return record


def _stop(store: Store, run_id: str, status: str, error: str | None) -> None:
    """Record how the pipeline stopped; never raises (the original error matters more)."""
    try:
        stats = {k: v for k, v in store.get_run(run_id)["stats"].items() if k != "owner"}
        if error:
            # scrubbed before the cut: a secret split by it would leave a fragment
            stats["error"] = scrub(error)[:500]
        store.set_run_status(run_id, status, stats)
    except BaseException:  # noqa: BLE001 - e.g. the store is locked; list runs shows it
        pass


def _run_steps(p: _Pipeline) -> dict[str, Any]:
    """The steps in their order; returns the pipeline's summaries (its metrics)."""
    from assay.tasks.datagen.generate import write_outputs

    o = p.options
    steps: dict[str, Any] = {GENERATE: [], JUDGE: [], WINRATE: [], VERIFY: []}
    gen_id = p.step(GENERATE, 0, p.generator, {
        "n": o.n, "seed": o.seed,
        "reference": str(p.reference_file) if p.reference_file else "none"})
    steps[GENERATE].append(gen_id)
    # the problems file is written again from the store on every pass (same content)
    outputs = write_outputs(p.store, gen_id, p.folder / "generated.jsonl")
    data = Path(outputs["problems"])
    summary: dict[str, Any] = {
        "n_problems": outputs["n_problems"], "n_failures": outputs["n_failures"],
        "outputs": {k: str(v) if isinstance(v, Path) else v for k, v in outputs.items()},
        "jury": None, "verification": None, "near_duplicates": None, "steps": steps,
        "notes": [],
    }
    if not outputs["n_problems"]:
        summary["notes"].append("no valid problem was generated; judging, win rate and "
                                "verification were skipped")
        return summary
    judge_ids = [p.step(JUDGE, i, jm, {"data": str(data), "rubric": o.rubric,
                                       "generator_model": p.generator})
                 for i, jm in enumerate(o.judge_models)]
    steps[JUDGE] = judge_ids
    if len(judge_ids) > 1:
        from assay.tasks.datagen.jury import jury_summary

        summary["jury"] = jury_summary(
            [(jm, p.store.results(r, transcripts=False))
             for jm, r in zip(o.judge_models, judge_ids, strict=True)],
            generator_model=p.generator)
    if p.reference_file is not None:
        from assay.tasks.datagen.verify import near_duplicates

        steps[WINRATE].append(p.step(WINRATE, 0, o.judge_models[0], {
            "data": str(data), "reference": str(p.reference_file), "seed": o.seed,
            "generator_model": p.generator}))
        summary["near_duplicates"] = near_duplicates(
            load_problems(data), load_problems(p.reference_file),
            threshold=o.near_duplicate_threshold)
    if o.solver_models:
        from assay.tasks.datagen.verify import verification_summary

        verify_ids = [p.step(VERIFY, i, sm, {"data": str(data)})
                      for i, sm in enumerate(o.solver_models)]
        steps[VERIFY] = verify_ids
        summary["verification"] = verification_summary(
            [(sm, p.store.results(r, transcripts=False))
             for sm, r in zip(o.solver_models, verify_ids, strict=True)])
    return summary


def pipeline_record(store: Store, pipeline_id: str) -> dict[str, Any]:
    """A pipeline as the report reads it, from the store: its arguments, the reference
    set, each step's run id, the outputs and the summaries stored when it finished."""
    run = store.get_run(pipeline_id)
    opts = run["spec"]["task_options"]
    metrics = run.get("metrics") or {}
    # the steps its last pass used (stored with its summaries when it finished), else
    # those in the store so far
    steps = metrics.get("steps")
    if steps is None:
        steps = {}
        for (task, _), step in sorted(_existing_steps(store, run["id"]).items()):
            steps.setdefault(task, []).append(step["id"])

    def ids(task: str) -> list[str]:
        return list(steps.get(task) or [])

    dataset = run["dataset"] or {}
    record: dict[str, Any] = {
        "id": run["id"], "status": run["status"], "created_at": run["created_at"],
        "n": opts["n"], "model": run["spec"]["model"], "judge_models": opts["judge_models"],
        "solver_models": opts["solver_models"], "seed": opts["seed"],
        "reference": dataset.get("reference"),
        "notes": list(dataset.get("notes") or []) + list(metrics.get("notes") or []),
        "generate_run": next(iter(ids(GENERATE)), None),
        "outputs": metrics.get("outputs"),
        "judge_runs": ids(JUDGE), "jury": metrics.get("jury"),
        "winrate_run": next(iter(ids(WINRATE)), None),
        "near_duplicates": metrics.get("near_duplicates"),
        "verify_runs": ids(VERIFY), "verification": metrics.get("verification"),
    }
    return record


def run_pipeline(*, n: int, model: str, judge_models: list[str],
                 solver_models: list[str] | None = None, reference: str | None = None,
                 rubric: str | None = None, seed: int = 0,
                 engine: dict[str, Any] | None = None, store: Store | None = None,
                 near_duplicate_threshold: float = 0.5, quiet: bool = True) -> dict[str, Any]:
    """Generate, judge, compare, verify, then write the comprehensive report (a new
    pipeline; see :func:`start_pipeline`)."""
    own = store is None
    store = store or Store()
    try:
        return start_pipeline(store, model=model, engine=engine, quiet=quiet, n=n,
                              judge_models=judge_models, solver_models=solver_models or [],
                              reference=reference, rubric=rubric, seed=seed,
                              near_duplicate_threshold=near_duplicate_threshold)
    finally:
        if own:
            store.close()

