"""IFEval and IFBench (verifiable instruction following) as one task, ``flavor`` apart.

* :mod:`~assay.tasks.instructions.task`: :class:`InstructionTask` and its options;
* :mod:`~assay.tasks.instructions.scoring`: the official strict/loose verdicts over the
  ``if-verifiable`` checkers;
* :mod:`~assay.tasks.instructions.resources`: the NLTK data those checkers read, from
  PyPI, checked against NLTK's own files;
* :mod:`~assay.tasks.instructions.metrics`: ``ifeval_strict`` / ``ifeval_loose`` in the
  metric registry.

Nothing heavy is imported here: the checkers (and NLTK) load on first use.
"""

from __future__ import annotations

from typing import Any

__all__ = ["InstructionOptions", "InstructionTask"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from assay.tasks.instructions import task  # startup

        return getattr(task, name)
    raise AttributeError(name)
