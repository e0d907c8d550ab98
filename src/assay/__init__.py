"""assay: honest evaluation of LLM agents and LLMs. ``import assay`` is cheap: heavy
dependencies (the OpenAI SDK, llama.cpp, datasets) load only when a run needs them."""

from __future__ import annotations

import importlib
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
         "Score": "assay.core.types", "Message": "assay.core.types",
         "evaluate": "assay.api", "AssayError": "assay.errors"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'assay' has no attribute {name!r}")
