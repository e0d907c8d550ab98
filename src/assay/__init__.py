"""assay: honest evaluation of LLM agents and LLMs.

The package imports lazily: ``import assay`` is cheap, and heavy dependencies
(the OpenAI SDK, llama.cpp, datasets) load only when a run needs them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = ["__version__", "evaluate", "AssayError"]

if TYPE_CHECKING:  # pragma: no cover
    from assay.api import evaluate
    from assay.errors import AssayError


def __getattr__(name: str) -> Any:
    if name == "evaluate":
        from assay.api import evaluate

        return evaluate
    if name == "AssayError":
        from assay.errors import AssayError

        return AssayError
    raise AttributeError(f"module 'assay' has no attribute {name!r}")
