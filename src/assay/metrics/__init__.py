"""Metrics: pure functions over stored results; every rate carries an interval."""

from assay.metrics.stats import mean_with_ci, proportion, wilson_interval

__all__ = ["mean_with_ci", "proportion", "wilson_interval"]
