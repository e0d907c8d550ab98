"""Agents under test in a conversation, and the adapter for TaskWeaver-style agents.

A model spec as the agent receives the whole conversation every turn. A Python class
(``python/<module>:<Class>``) with ``reply(message) -> str`` keeps its own history; it is
made fresh per case and epoch, and a ``workdir`` attribute is set to the case's working
folder (what it writes there is what ``eval_code`` sees). A TaskWeaver ``VirtualUser``
subclass implementing ``get_reply_from_agent(message)`` is built per case as
``Cls(task_description, app_dir=..., config_var=...)`` (only the arguments its
``__init__`` takes). The examiner is assay's own; ``task_description`` is passed for
compatibility only (an agent that reads it sees what the examiner withholds).
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
