"""Models and agents under test, behind one async protocol."""

from assay.models.base import Model, Subject, get_subject, parse_model_spec

__all__ = ["Model", "Subject", "get_subject", "parse_model_spec"]
