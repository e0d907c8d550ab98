"""Moved to :mod:`assay.core.failures` (readers need it too); kept for the runner's import."""
from assay.core.failures import ErrorSummary, error_hint, error_summary, too_many_errors  # noqa: F401
