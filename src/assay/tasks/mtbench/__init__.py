"""MT-Bench (Zheng et al. 2023): 80 two-turn questions graded 1-10 by an LLM judge with
FastChat's single-answer grading prompts.

The task is :class:`~assay.tasks.mtbench.task.MTBenchTask` (options
:class:`~assay.tasks.mtbench.task.MTBenchOptions`); the data is FastChat's, read from
local files in its own layout (:mod:`.dataset`); grading is :mod:`.judging`, the score
and run metrics :mod:`.metrics` (imported by the metric registry, so this package
imports nothing eagerly).
"""

from __future__ import annotations

from typing import Any

__all__ = ["MTBenchOptions", "MTBenchTask"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from assay.tasks.mtbench import task  # startup

        return getattr(task, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
