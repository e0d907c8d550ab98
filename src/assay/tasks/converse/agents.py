"""Agents under test in a conversation, and the adapter for TaskWeaver-style agents.

A model spec sees the whole conversation each turn; a Python class (``python/<module>:<Class>``,
fresh per case and epoch) keeps its own and gets ``workdir`` set.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from assay.models.python_agent import VirtualUserSlot


class VirtualUser:
    """TaskWeaver's ``VirtualUser`` shape: implement :meth:`get_reply_from_agent`."""

    def __init__(self, task_description: str, app_dir: str | None = None,
                 config_var: dict[str, Any] | None = None) -> None:
        self.task_description = task_description
        self.app_dir = app_dir
        self.config_var = config_var

    def get_reply_from_agent(self, message: str) -> str:
        """The agent's reply to the examiner's ``message``."""
        raise NotImplementedError("implement get_reply_from_agent(message) -> str")


def prepare_agent(agent: Any, *, case: Any, workdir: Path) -> None:
    """Hand a Python agent its case: build a VirtualUser, or set its ``workdir``."""
    target = getattr(getattr(agent, "agent", None), "target", None)
    if target is None:
        return
    if isinstance(target, VirtualUserSlot):
        target.start_case(task_description=case.task_description, app_dir=case.app_dir,
                          config_var=case.config_var, workdir=workdir)
    elif hasattr(target, "workdir"):
        target.workdir = str(workdir)
