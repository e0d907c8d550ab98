"""Moved to :mod:`assay.data.problems` (the review page reads problems files too)."""
from assay.data.problems import *  # noqa: F403
