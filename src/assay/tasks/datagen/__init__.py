"""Generated-data quality: generator, rubric judge, pairwise win rate, verification, review."""


def runs_in_a_plan() -> tuple[bool, str]:
    """A plan does not run these alone: they judge problems a model wrote, as one pipeline."""
    return False, ("it judges problems your model wrote, as one pipeline: assay datagen "
                   "pipeline --model M (or assay datagen judge --data problems.jsonl)")
