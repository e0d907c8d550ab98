"""The scoring vocabulary: every ``fn(output, target, **opts) -> Score`` under one canonical
name with declared aliases. qa's ``scorer``, a YAML ``scorer:``, ``Task(scorer=...)`` and the
metric registry all resolve names here, so every spelling a stored run holds still scores."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from assay.core.types import Score
from assay.errors import ConfigError
from assay.scoring.choice import score_choice
from assay.scoring.matching import (
    score_exact,
    score_f1,
    score_includes,
    score_normalized,
    score_numeric,
)
from assay.scoring.math_scoring import score_math
from assay.scoring.numbers import is_plain_number

__all__ = ["ALIASES", "SCORERS", "SCORER_ONLY", "VOCABULARY", "Scorer", "canonical_scorer",
           "get_scorer", "infer_scorer", "scorer_info", "unknown_name"]


@dataclass(frozen=True)
class Scorer:
    """``name`` is the metric registry's, and the ``Score.name`` its verdicts carry (a
    store from before holds the short aliases: :mod:`assay.store.migrate` renames them)."""

    name: str
    fn: Callable[..., Score]
    aliases: tuple[str, ...]


#: the vocabulary, in the order qa has always listed its scorers
VOCABULARY: tuple[Scorer, ...] = (
    Scorer("exact_match", score_exact, ("exact", "em")),
    Scorer("normalized_match", score_normalized, ("normalized",)),
    Scorer("includes_match", score_includes, ("includes",)),
    Scorer("numeric_match", score_numeric, ("numeric",)),
    Scorer("token_f1", score_f1, ("f1",)),
    Scorer("choice_accuracy", score_choice, ("choice", "mc_accuracy")),
    Scorer("math_verify", score_math, ("math", "math_equivalence")),
)
_BY_NAME: dict[str, Scorer] = {s.name: s for s in VOCABULARY}

ALIASES: dict[str, str] = {key: s.name for s in VOCABULARY for key in (s.name, *s.aliases)}

#: canonical names with no metric of that name: none today
SCORER_ONLY: frozenset[str] = frozenset()

#: the functions by canonical name, in qa's order
SCORERS: dict[str, Callable[..., Score]] = {s.name: s.fn for s in VOCABULARY}


def _check_vocabulary() -> None:
    spellings = [key for s in VOCABULARY for key in (s.name, *s.aliases)]
    if len(spellings) != len(set(spellings)):
        raise ValueError("a scorer name or alias is declared twice in the vocabulary")


_check_vocabulary()


def unknown_name(kind: str, name: Any, spellings: Iterable[str], canonical: Sequence[str],
                 resolve: Callable[[str], str] = str) -> ConfigError:
    """The one-line error for an unknown name, suggesting the closest spelling's canonical
    name, then listing the canonical names."""
    close = (difflib.get_close_matches(name, list(spellings), n=1)
             if isinstance(name, str) else [])
    hint = f" (did you mean {resolve(close[0])!r}?)" if close else ""
    return ConfigError(f"unknown {kind} {name!r}{hint}; choose one of: {', '.join(canonical)}")


def canonical_scorer(name: str) -> str:
    """The canonical name of the scorer spelled ``name``; ``ConfigError`` when unknown."""
    key = ALIASES.get(name) if isinstance(name, str) else None
    if key is None:
        raise unknown_name("scorer", name, ALIASES, [s.name for s in VOCABULARY],
                           ALIASES.__getitem__)
    return key


def scorer_info(name: str) -> Scorer:
    return _BY_NAME[canonical_scorer(name)]


def get_scorer(name: str) -> Callable[..., Score]:
    return scorer_info(name).fn


def infer_scorer(target: Any, choices: Sequence[str] | None = None) -> str:
    """The default scorer for a sample: ``choice_accuracy`` with choices, ``numeric_match``
    when the target (every item of a list) is a plain number, else ``normalized_match``."""
    if choices:
        return "choice_accuracy"
    items = target if isinstance(target, (list, tuple)) else [target]
    return ("numeric_match" if items and all(is_plain_number(t) for t in items)
            else "normalized_match")
