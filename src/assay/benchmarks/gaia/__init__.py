"""GAIA: general-assistant evaluation with the official scorer, attachments and submissions."""

from assay.benchmarks.gaia.benchmark import GAIA_SYSTEM_PROMPT, GAIABenchmark

__all__ = ["GAIA_SYSTEM_PROMPT", "GAIABenchmark"]
