"""Code benchmarks: HumanEval and MBPP, their tests run in the bubblewrap sandbox. The
names below are imported on first use, so importing the package (the metric registry
does) costs nothing."""

from __future__ import annotations

from typing import Any

__all__ = ["CodeTask", "HumanEvalTask", "MBPPTask", "code_pass"]


def __getattr__(name: str) -> Any:
    if name in ("CodeTask", "HumanEvalTask", "MBPPTask"):
        from assay.tasks.code import task  # startup

        return getattr(task, name)
    if name == "code_pass":
        from assay.tasks.code.metrics import code_pass  # startup

        return code_pass
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
