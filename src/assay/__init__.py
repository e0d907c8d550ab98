"""assay: honest evaluation of LLM agents and LLMs.

The package imports lazily: ``import assay`` is cheap, and heavy dependencies
(the OpenAI SDK, llama.cpp, datasets) load only when a run needs them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from assay.core.version import __version__

__all__ = ["__version__", "evaluate", "AssayError", "task", "Task", "TaskOptions", "Field",
           "Sample", "Outcome", "Score", "Message"]

if TYPE_CHECKING:  # pragma: no cover
    from assay.api import evaluate
    from assay.core.types import Message, Outcome, Sample, Score
    from assay.errors import AssayError
    from assay.tasks.base import Task
    from assay.tasks.options import Field, TaskOptions
    from assay.tasks.registry import task

#: what ``from assay import X`` finds where (loaded on first use)
_LAZY = {"task": "assay.tasks.registry", "Task": "assay.tasks.base",
         "TaskOptions": "assay.tasks.options", "Field": "assay.tasks.options",
         "Sample": "assay.core.types", "Outcome": "assay.core.types",
         "Score": "assay.core.types", "Message": "assay.core.types"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib  # startup

        return getattr(importlib.import_module(_LAZY[name]), name)
    if name == "evaluate":
        from assay.api import evaluate  # startup

        return evaluate
    if name == "AssayError":
        from assay.errors import AssayError  # startup

        return AssayError
    raise AttributeError(f"module 'assay' has no attribute {name!r}")
