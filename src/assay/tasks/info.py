"""What a task says about itself, for everyone who is not running it (the planner, ``assay
data pull``, ``assay list tasks``): declared once, on its class (``info = TaskInfo(...)``),
its ``@task(info=...)`` or a catalogue entry's YAML; no list elsewhere names a task.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # a pydantic model: its class is built only where measures are declared
    from assay.tasks.capabilities import Measure

#: the model roles a task may use beside the model under test
ROLES = ("judge", "examiner", "user")


@dataclass(frozen=True)
class DataSource:
    """Data ``assay data pull NAME`` fetches before a run; ``pull`` is called as
    ``function(version=None, wheel=None, force=False) -> str``, ``present`` as ``() -> bool``."""

    name: str
    description: str
    pull: str
    versioned: bool = False
    present: str | None = None
    #: leading arguments of ``pull``, ``present`` and ``downloaded`` (a catalogue entry's name)
    args: tuple[str, ...] = ()
    #: ``() -> bool``: what ``pull`` downloads is here already (a wheel several entries share),
    #: so pulling only unpacks it
    downloaded: str | None = None

    def fetch(self, *, version: str | None = None, wheel: Any = None, force: bool = False) -> str:
        """Pull the data; returns the line to show."""
        return _load(self.pull)(*self.args, version=version, wheel=wheel, force=force)

    def is_present(self) -> bool:
        """Whether the data is here already (``False`` when the source cannot tell)."""
        return bool(self.present and _load(self.present)(*self.args))

    def is_downloaded(self) -> bool:
        """Whether pulling would download nothing (``False`` when the source cannot tell)."""
        return bool(self.downloaded and _load(self.downloaded)(*self.args))


@dataclass(frozen=True)
class TaskInfo:
    """A task's declared facts. Metrics of its own register through the ``assay.metrics``
    entry-point group, so the metric layer never imports a task."""

    #: the capability it measures (``math``, ``tool_use``, ...); empty: a plan never picks it
    category: str = ""
    #: words and other names the planner's retrieval matches
    tags: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    #: it runs as an agent (tools, several steps); a text-only request leaves it out
    agent: bool = False
    #: the reference agent's tools a plan runs it with (``()``: the model alone)
    agent_tools: tuple[str, ...] = ()
    #: the models it asks for beside the one under test (:data:`ROLES`)
    roles: tuple[str, ...] = ()
    #: what ``assay data pull`` fetches for it
    data: tuple[DataSource, ...] = ()
    #: in plans: the task is offered by retrieval (``False``: only when named)
    plannable: bool = True
    #: the capabilities the field uses it to measure, with its standing
    measures: tuple[Measure, ...] = ()
    #: ``module:function() -> (bool, str)``: can the task run here, and why (gated data, say)
    runs_here: str | None = None

    def can_run(self) -> tuple[bool, str] | None:
        """What :attr:`runs_here` says now (``None``: the task declares nothing)."""
        return _load(self.runs_here)() if self.runs_here else None

    def __post_init__(self) -> None:
        unknown = [r for r in self.roles if r not in ROLES]
        if unknown:
            noun = "role" if len(unknown) == 1 else "roles"
            raise ValueError(f"unknown {noun} {unknown}; a task's roles are among {ROLES}")


def _load(path: str) -> Any:
    module, _, attr = path.partition(":")
    return getattr(importlib.import_module(module), attr)
