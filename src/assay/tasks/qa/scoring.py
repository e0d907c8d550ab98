"""Answer extraction and scorers for the generic question/answer benchmark.

Everything here is pure and fast (no I/O, no network): scorers run once per
sample on the event loop. Regexes are compiled at import; ``math_verify`` is
imported lazily inside :func:`score_math` because it is slow to import.

This module is the scorer registry (:data:`SCORERS`, :func:`get_scorer`,
:func:`infer_scorer`) and the public face of the pieces: answer extraction
(:mod:`.extraction`), normalization (:mod:`.normalize`), numbers (:mod:`.numbers`)
and the scorers (:mod:`.match_scorers`, :mod:`.choice`, :mod:`.math_scoring`).

Every scorer has the signature ``score_X(output, target, **opts) -> Score``:

* ``output`` is the raw model output (``<think>...</think>`` blocks are removed);
* ``target`` is a string, a number, or a list of acceptable answers (any match
  counts; :func:`score_f1` takes the maximum);
* unknown keyword options are ignored, so callers may pass the same options to
  every scorer;
* the returned :class:`~assay.core.types.Score` has ``name`` = the scorer name,
  ``answer`` = the extracted prediction (``None`` when nothing could be
  extracted) and ``metadata["extraction"]`` = how it was extracted.

A target a scorer cannot use (a non-numeric target for ``numeric``, a target
that is not one of the options for ``choice``, ...) raises ``ValueError`` with
a message saying what is wrong; the caller turns it into a user error.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from assay.core.types import Score
from assay.errors import ConfigError
from assay.tasks.qa.choice import LETTERS, score_choice
from assay.tasks.qa.extraction import extract_answer, strip_reasoning
from assay.tasks.qa.match_scorers import (
    score_exact,
    score_f1,
    score_includes,
    score_normalized,
    score_numeric,
)
from assay.tasks.qa.math_scoring import score_math
from assay.tasks.qa.normalize import normalize_text, squad_tokens
from assay.tasks.qa.numbers import extract_numbers, is_plain_number, parse_number

__all__ = [
    "SCORERS",
    "extract_answer",
    "extract_numbers",
    "format_choices",
    "get_scorer",
    "infer_scorer",
    "normalize_text",
    "parse_number",
    "score_choice",
    "score_exact",
    "score_f1",
    "score_includes",
    "score_math",
    "score_normalized",
    "score_numeric",
    "squad_tokens",
    "strip_reasoning",
]

# --------------------------------------------------------------------------- registry

SCORERS: dict[str, Callable[..., Score]] = {
    "exact": score_exact,
    "normalized": score_normalized,
    "includes": score_includes,
    "numeric": score_numeric,
    "f1": score_f1,
    "choice": score_choice,
    "math": score_math,
}


def get_scorer(name: str) -> Callable[..., Score]:
    """The scorer registered as ``name``; raises ``ConfigError`` for an unknown name."""
    try:
        return SCORERS[name]
    except (KeyError, TypeError):
        raise ConfigError(
            f"unknown scorer {name!r}; choose one of: {', '.join(SCORERS)}"
        ) from None


def infer_scorer(target: Any, choices: Sequence[str] | None = None) -> str:
    """A default scorer name for a sample.

    ``"choice"`` when ``choices`` is non-empty; ``"numeric"`` when the target
    (or every item of a non-empty list target) is a plain number: an int/float,
    or a string like ``42``, ``-3.5``, ``1,234`` or ``1e-3``; else
    ``"normalized"``.
    """
    if choices:
        return "choice"
    items = target if isinstance(target, (list, tuple)) else [target]
    if items and all(is_plain_number(t) for t in items):
        return "numeric"
    return "normalized"


def format_choices(question: str, choices: Sequence[str]) -> str:
    """The question, a blank line, ``A. choice`` lines, a blank line and the instruction.

    The last line is ``Answer with the letter of the correct option.``. Raises
    ``ValueError`` for more than 26 choices.
    """
    if len(choices) > len(LETTERS):
        raise ValueError(f"at most {len(LETTERS)} choices are supported, got {len(choices)}")
    lines = "\n".join(f"{LETTERS[i]}. {c}" for i, c in enumerate(choices))
    return f"{question.rstrip()}\n\n{lines}\n\nAnswer with the letter of the correct option."
