"""Agents under test in a conversation, and the adapter for TaskWeaver-style agents.

Any model spec can be the agent (``local``, ``openai/<model>``): it receives the whole
conversation every turn. A Python class with ``reply(message) -> str`` keeps its own
history and receives each new examiner message (``python/<module>:<Class>``); it is
created fresh for every case and every epoch. If it has a ``workdir`` attribute, it is
set to the case's working folder (a fresh copy of the case's data files) before the first
message: what it writes there is what ``eval_code`` sees.

Existing TaskWeaver users bring their agents unchanged in shape: a subclass of
:class:`VirtualUser` (or any class) that implements ``get_reply_from_agent(message)``
is built per case as ``Cls(task_description, app_dir=..., config_var=...)`` (only the
arguments its ``__init__`` takes are passed)::

    from assay.tasks.converse import VirtualUser

    class TaskWeaverVirtualUser(VirtualUser):
        def __init__(self, task_description, app_dir, config_var=None):
            super().__init__(task_description)
            self.app = TaskWeaverApp(app_dir=app_dir, config=config_var)
            self.session = self.app.get_session()

        def get_reply_from_agent(self, message):
            return self.session.send_message(message).to_dict()["post_list"][-1]["message"]

    # assay run converse --cases cases/ --model python/my_eval:TaskWeaverVirtualUser ...

The examiner is assay's own (``assay.tasks.converse.examiner``): the subclass only
answers for the agent. ``task_description`` is passed for compatibility only; an agent
that reads it sees what the examiner is told to withhold.
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
