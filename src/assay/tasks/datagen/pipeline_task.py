"""``datagen_pipeline``: the run that a generated-data pipeline is, in the store.

A pipeline is a parent run (task ``datagen_pipeline``, status running / finished /
interrupted / failed like any run) whose options are the pipeline's arguments and
whose spec holds the generator model and the engine settings every step inherits.
Its steps (generate, each judge, win rate, each solver) are child runs. It is run
with ``assay datagen pipeline`` (:mod:`assay.tasks.datagen.pipeline`), not ``assay run``:
it has no samples of its own. Its metrics, stored once when it finishes, are the
summaries across steps (problems written, jury, verification, near-duplicates).
"""

from __future__ import annotations

from typing import Any

from pydantic import field_validator

from assay.core.types import SampleResult
from assay.errors import ConfigError
from assay.tasks.base import Task
from assay.tasks.info import TaskInfo
from assay.tasks.options import Field, PathField, TaskOptions
from assay.tasks.registry import task

NAME = "datagen_pipeline"


class PipelineOptions(TaskOptions):
    """Arguments of a generated-data pipeline (stored as the parent run's options)."""

    n: int = Field(30, ge=1, description="How many problems to generate.")
    judge_models: list[str] = Field(["local"], description="Judge models (several: a jury).")
    solver_models: list[str] = Field([], description="Solver models for answer verification.")
    reference: str | None = PathField(None, description="Reference set (file, HF id, 'math500').")
    rubric: str | None = PathField(None, description="Custom rubric YAML.")
    seed: int = Field(0, description="Seed for generation and pairing.")
    near_duplicate_threshold: float = Field(0.5, ge=0, le=1, description="Word 8-gram "
                                            "overlap that flags a near-duplicate.")

    @field_validator("judge_models")
    @classmethod
    def _some_judge(cls, v: list[str]) -> list[str]:
        if not v:
            raise ValueError("give at least one judge model")
        return v


@task(NAME)
class PipelineTask(Task):
    """Generate, judge, compare with real problems and verify answers, as one parent run."""

    description = ("The generated-data pipeline as a parent run: generate, judge (a jury), win "
                   "rate, verify; run with 'assay datagen pipeline', resumed with --resume.")
    info = TaskInfo(plannable=False, tags=("datagen", "judge"))
    Options = PipelineOptions

    def __init__(self, **options: Any) -> None:
        super().__init__(options=options)

    def samples(self) -> list[Any]:
        """A pipeline has no samples: its steps are runs of their own."""
        raise ConfigError("datagen_pipeline runs its steps as runs of their own; start it "
                          "with 'assay datagen pipeline' and resume it with 'assay datagen "
                          "pipeline --resume ID'")

    @classmethod
    def metrics(cls, results: list[SampleResult],
                options: dict[str, Any] | None = None) -> dict[str, Any]:
        """Nothing per sample: the pipeline stores its summaries when it finishes."""
        return {}
