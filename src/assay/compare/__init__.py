"""Paired comparison of runs (``assay compare``) and a task's history (``assay history``)."""

from assay.compare.runs import compare_runs

__all__ = ["compare_runs"]
