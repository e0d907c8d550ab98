"""BFCL v4: tool-calling evaluation that agrees with the official leaderboard verdict for verdict."""

from assay.tasks.bfcl.task import BFCLTask

__all__ = ["BFCLTask"]
