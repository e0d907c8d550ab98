"""Tasks: how they are declared (:func:`task`, :class:`Task`, :class:`TaskOptions`) and
found (:func:`resolve`, :func:`build_task`)."""

from assay.tasks.base import Task
from assay.tasks.options import Field, TaskOptions
from assay.tasks.registry import available, build_task, resolve, task

__all__ = ["Field", "Task", "TaskOptions", "available", "build_task", "resolve", "task"]
