"""BFCL v4: tool-calling evaluation that agrees with the official leaderboard verdict for verdict.
Imports nothing: the task is :class:`assay.tasks.bfcl.task.BFCLTask`, and the metric registry
imports :mod:`.metrics` alone."""
