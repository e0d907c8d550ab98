"""Generated-data quality: generator, rubric judge, pairwise win rate, verification, review."""
