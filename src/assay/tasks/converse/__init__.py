"""Conversations: an examiner model talks to the agent, a judge grades weighted points.

See :mod:`assay.tasks.converse.task` (the ``converse`` task) and
:mod:`assay.tasks.converse.agents` (agents under test, and the TaskWeaver adapter).
"""

from assay.tasks.converse.agents import VirtualUser

__all__ = ["VirtualUser"]
