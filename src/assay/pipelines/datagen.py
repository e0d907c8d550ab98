"""The generated-data pipeline: a ``pipeline`` parent run whose steps (generate, judge per
judge, winrate, verify per solver) are child runs; ``--resume ID`` keeps finished steps and a
failed step stops it. Output goes to ``assay-runs/datagen/<pipeline id>/``."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import field_validator

from assay.core.atomic import atomic_write_text
from assay.engine.runner import RunSpec
from assay.errors import ConfigError, DatasetError
from assay.pipelines.parent import ParentRun, engine_settings
from assay.reports.datagen import (
    GENERATE,
    JUDGE,
    VERIFY,
    WINRATE,
    pipeline_dir,
    pipeline_record,
    write_pipeline_report,
)
from assay.store.sqlite import Store, new_run_id
from assay.tasks.datagen.generate import write_outputs
from assay.tasks.datagen.jury import jury_summary
from assay.tasks.datagen.problem import load_problems, save_problems
from assay.tasks.datagen.references import load_reference
from assay.tasks.datagen.rubric import resolve_rubric
from assay.tasks.datagen.verify import near_duplicates, verification_summary
from assay.tasks.options import Field, TaskOptions, validate_options

NAME = "datagen_pipeline"


class PipelineOptions(TaskOptions):
    """Arguments of a generated-data pipeline (stored as the parent run's options)."""

    n: int = Field(30, ge=1, description="How many problems to generate.")
    judge_models: list[str] = Field(["local"], description="Judge models (several: a jury).")
    solver_models: list[str] = Field([], description="Solver models for answer verification.")
    reference: str | None = Field(None, description="Reference set (file, HF id, 'math500').")
    rubric: str | None = Field(None, description="Custom rubric YAML.")
    seed: int = Field(0, description="Seed for generation and pairing.")
    near_duplicate_threshold: float = Field(0.5, ge=0, le=1, description="Word 8-gram "
                                            "overlap that flags a near-duplicate.")

    @field_validator("judge_models")
    @classmethod
    def _some_judge(cls, v: list[str]) -> list[str]:
        if not v:
            raise ValueError("give at least one judge model")
        return v


def _load_reference(reference: str | None, folder: Path
                    ) -> tuple[Path | None, dict[str, Any] | None, list[str]]:
    """The reference set saved in the pipeline's folder, its description, and notes."""
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
    """Start a pipeline (``arguments``: :class:`PipelineOptions`); returns its record."""
    options = validate_options(PipelineOptions,
                               {k: v for k, v in arguments.items() if v is not None}, NAME)
    if options.rubric:  # a bad rubric is a one-line error now, not after the generation
        resolve_rubric(options.rubric)
        # stored absolute, so that the pipeline resumes from any folder
        options.rubric = str(Path(options.rubric).expanduser().resolve())
    # the pipeline's seed also seeds the models' sampling, unless the engine has its own
    settings = {"seed": options.seed, **{k: v for k, v in (engine or {}).items() if v is not None}}
    spec = RunSpec(task=NAME, model=model, task_options=options.model_dump(), **settings)
    pid = new_run_id()
    folder = pipeline_dir(pid)
    folder.mkdir(parents=True, exist_ok=True)
    ref_file, ref_info, notes = _load_reference(options.reference, folder)
    parent = ParentRun.create(
        store, spec, kind="pipeline", run_id=pid, quiet=quiet, on_created=on_created,
        model={"model": model, "judge_models": options.judge_models,
               "solver_models": options.solver_models},
        dataset={"reference": ref_info, "reference_file": str(ref_file) if ref_file else None,
                 "notes": notes})
    return _drive(parent, ref_file)


def resume_pipeline(store: Store, pipeline_id: str, *, overrides: dict[str, Any] | None = None,
                    quiet: bool = True) -> dict[str, Any]:
    """Continue a pipeline after Ctrl-C or kill -9 (``overrides``: changed engine settings)."""
    parent = ParentRun.reopen(store, pipeline_id, kind="pipeline", what="pipeline",
                              overrides=overrides, quiet=quiet)
    ref = parent.record["dataset"].get("reference_file")
    if ref and not Path(ref).is_file():
        raise ConfigError(f"pipeline {parent.id}: its reference set {ref} is gone; start a "
                          "new pipeline")
    return _drive(parent, Path(ref) if ref else None)


def _drive(parent: ParentRun, reference_file: Path | None) -> dict[str, Any]:
    """Run the steps not finished yet, then store the summaries and write the report."""
    folder = pipeline_dir(parent.id)
    options = PipelineOptions.model_validate(parent.spec.task_options)
    engine = engine_settings(parent.spec)

    def body(p: ParentRun) -> dict[str, Any]:
        summary = _run_steps(p, p.spec.model, options, engine, folder, reference_file)
        summary["report"] = str(folder / "report.md")
        return summary

    parent.drive(body)
    record = pipeline_record(parent.store, parent.id)
    record["reports"] = {k: str(v) for k, v in
                         write_pipeline_report(parent.store, record, folder).items()}
    atomic_write_text(folder / "pipeline.json", json.dumps(record, indent=2, default=str),
                      encoding="utf-8")
    return record


def _run_steps(p: ParentRun, generator: str, o: PipelineOptions, engine: dict[str, Any],
               folder: Path, reference_file: Path | None) -> dict[str, Any]:
    """The steps in their order; returns the pipeline's summaries (its metrics)."""
    steps: dict[str, Any] = {GENERATE: [], JUDGE: [], WINRATE: [], VERIFY: []}
    gen_id = p.step("generate", GENERATE, generator, {
        "n": o.n, "seed": o.seed,
        "reference": str(reference_file) if reference_file else "none"}, engine=engine)
    steps[GENERATE].append(gen_id)
    # the problems file is written again from the store on every pass (same content)
    outputs = write_outputs(p.store, gen_id, folder / "generated.jsonl")
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
    judge_ids = [p.step(f"judge {i + 1}", JUDGE, jm, {
        "data": str(data), "rubric": o.rubric, "generator_model": generator},
        engine=engine, needs=["generate"]) for i, jm in enumerate(o.judge_models)]
    steps[JUDGE] = judge_ids
    if len(judge_ids) > 1:
        summary["jury"] = jury_summary(
            [(jm, p.store.results(r, transcripts=False))
             for jm, r in zip(o.judge_models, judge_ids, strict=True)],
            generator_model=generator)
    if reference_file is not None:
        steps[WINRATE].append(p.step("winrate", WINRATE, o.judge_models[0], {
            "data": str(data), "reference": str(reference_file), "seed": o.seed,
            "generator_model": generator, "judge_model": list(o.judge_models),
            # every model the pipeline names is served where its --base-url says
            "judge_base_url": (engine or {}).get("base_url")},
            engine=engine, needs=["generate"]))
        summary["near_duplicates"] = near_duplicates(
            load_problems(data), load_problems(reference_file),
            threshold=o.near_duplicate_threshold)
    if o.solver_models:
        verify_ids = [p.step(f"verify {i + 1}", VERIFY, sm, {"data": str(data)},
                             engine=engine, needs=["generate"])
                      for i, sm in enumerate(o.solver_models)]
        steps[VERIFY] = verify_ids
        summary["verification"] = verification_summary(
            [(sm, p.store.results(r, transcripts=False))
             for sm, r in zip(o.solver_models, verify_ids, strict=True)])
    return summary


def run_pipeline(*, n: int, model: str, judge_models: list[str],
                 solver_models: list[str] | None = None, reference: str | None = None,
                 rubric: str | None = None, seed: int = 0,
                 engine: dict[str, Any] | None = None, store: Store | None = None,
                 near_duplicate_threshold: float = 0.5, quiet: bool = True) -> dict[str, Any]:
    """A new pipeline (:func:`start_pipeline`) in ``store`` or the workspace's."""
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
