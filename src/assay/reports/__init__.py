"""Reports rendered from the store."""

from assay.reports.render import write_reports

__all__ = ["write_reports"]
