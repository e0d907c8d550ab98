"""What a task says about itself, for everyone who is not running it.

The planner (retrieval, capabilities, "text only" requests), ``assay data pull``,
``assay list tasks`` and the metric registry read a task's :class:`TaskInfo` and nothing
else: a task declares these facts once, on its class (``info = TaskInfo(...)``), on its
``@task`` decorator (``@task(info=TaskInfo(...))``) or, for a catalogue entry, in its
YAML file. A plugin task is one folder plus one entry point: no list elsewhere names it.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from assay.tasks.capabilities import Measure

#: the model roles a task may use beside the model under test
ROLES = ("judge", "examiner", "user")


@dataclass(frozen=True)
class DataSource:
    """Data ``assay data pull NAME`` fetches before a run (into the workspace cache).

    ``pull`` is ``module:function``, called as ``function(version=None, wheel=None,
    force=False) -> str`` (a line saying what is where); ``versioned`` says whether
    ``--version`` applies; ``present`` (``module:function() -> bool``), when given, says
    whether the data is already here, so a plan pulls it only when it is missing.
    """

    name: str
    description: str
    pull: str
    versioned: bool = False
    present: str | None = None
    #: leading arguments of ``pull`` and ``present`` (a catalogue entry's name)
    args: tuple[str, ...] = ()

    def fetch(self, *, version: str | None = None, wheel: Any = None,
              force: bool = False) -> str:
        """Pull the data; returns the line to show."""
        return _load(self.pull)(*self.args, version=version, wheel=wheel, force=force)

    def is_present(self) -> bool:
        """Whether the data is here already (``False`` when the source cannot tell)."""
        return bool(self.present and _load(self.present)(*self.args))


@dataclass(frozen=True)
class TaskInfo:
    """A task's declared facts (see the module docstring).

    * ``category``: the capability it measures, in the catalogue's vocabulary
      (``math``, ``tool_use``, ``dialogue``, ...); empty for tasks a plan never picks
      (the steps of the generated-data pipeline).
    * ``tags``, ``aliases``: words and other names the planner's retrieval matches.
    * ``agent``: it runs as an agent (tools, several steps); a text-only request leaves
      it out.
    * ``roles``: the models it asks for beside the one under test (:data:`ROLES`).
    * ``data``: what ``assay data pull`` fetches for it.

    Metrics of a task's own register through the ``assay.metrics`` entry-point group
    (see :mod:`assay.metrics.registry`), so the metric layer never imports a task.
    """

    category: str = ""
    tags: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    agent: bool = False
    roles: tuple[str, ...] = ()
    data: tuple[DataSource, ...] = ()
    #: in plans: the task is offered by retrieval (``False``: only when named)
    plannable: bool = True
    #: the capabilities the field uses it to measure, with its standing
    #: (:class:`assay.tasks.capabilities.Measure`)
    measures: tuple[Measure, ...] = ()
    #: ``module:function() -> (bool, str)``: whether the task can run here, and why (its
    #: data is gated, say); the planner asks it before it plans the task
    runs_here: str | None = None

    def can_run(self) -> tuple[bool, str] | None:
        """What :attr:`runs_here` says now (``None``: the task declares nothing)."""
        return _load(self.runs_here)() if self.runs_here else None

    def __post_init__(self) -> None:
        unknown = [r for r in self.roles if r not in ROLES]
        if unknown:
            raise ValueError(f"unknown role(s) {unknown}; a task's roles are among {ROLES}")


def _load(path: str) -> Any:
    module, _, attr = path.partition(":")
    return getattr(importlib.import_module(module), attr)
