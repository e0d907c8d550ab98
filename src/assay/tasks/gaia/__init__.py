"""GAIA: general-assistant evaluation with the official scorer, attachments and submissions."""

from assay.tasks.gaia.task import GAIA_SYSTEM_PROMPT, GAIATask

__all__ = ["GAIA_SYSTEM_PROMPT", "GAIATask"]
