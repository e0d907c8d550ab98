"""Conversations: an examiner model talks to the agent, a judge grades weighted points."""

from assay.tasks.converse.agents import VirtualUser

__all__ = ["VirtualUser"]
