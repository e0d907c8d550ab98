"""GAIA: general-assistant evaluation with the official scorer, attachments and submissions.
Imports nothing: the task is :class:`assay.tasks.gaia.task.GAIATask`, and the metric registry
imports :mod:`.metrics` alone."""
