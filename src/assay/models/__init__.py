"""Models and agents under test, behind one async protocol; providers by registry."""

from assay.models.base import Model, Subject, get_subject, parse_model_spec
from assay.models.registry import ModelCapabilities, Provider, capabilities_of

__all__ = ["Model", "ModelCapabilities", "Provider", "Subject", "capabilities_of",
           "get_subject", "parse_model_spec"]
