"""The scoring vocabulary: every answer-matching function under one canonical name, with
its other spellings declared as aliases (the table is in :mod:`assay.scoring`).

qa's ``scorer`` option, a YAML task's ``scorer:``, ``Task(scorer="...")`` and the metric
registry all resolve names here, so every spelling a stored run holds keeps scoring with
the same function. Every scorer has the signature ``fn(output, target, **opts) -> Score``
(the contract is in :mod:`assay.scoring.matching`).
"""

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
    """A scoring function under its canonical name, with the other names it answers to."""

    #: the canonical name (the metric registry's name for it)
    name: str
    fn: Callable[..., Score]
    #: other accepted spellings (qa's short names, common abbreviations)
    aliases: tuple[str, ...]
    #: the name its per-sample verdicts carry (``Score.name``), one of the aliases: stored
    #: runs hold it, so it stays what it was when the function was qa's scorer
    label: str


#: the vocabulary, in the order qa has always listed its scorers
VOCABULARY: tuple[Scorer, ...] = (
    Scorer("exact_match", score_exact, ("exact", "em"), "exact"),
    Scorer("normalized_match", score_normalized, ("normalized",), "normalized"),
    Scorer("includes_match", score_includes, ("includes",), "includes"),
    Scorer("numeric_match", score_numeric, ("numeric",), "numeric"),
    Scorer("token_f1", score_f1, ("f1",), "f1"),
    Scorer("choice_accuracy", score_choice, ("choice", "mc_accuracy"), "choice"),
    Scorer("math_verify", score_math, ("math", "math_equivalence"), "math"),
)
_BY_NAME: dict[str, Scorer] = {s.name: s for s in VOCABULARY}

#: every accepted spelling (canonical names and aliases) -> its canonical name
ALIASES: dict[str, str] = {key: s.name for s in VOCABULARY for key in (s.name, *s.aliases)}

#: canonical names that are scorers only, with no metric of that name: none today (every
#: scorer is also the registered metric of its canonical name)
SCORER_ONLY: frozenset[str] = frozenset()

#: the functions by the label their verdicts carry (qa's short names, in qa's order)
SCORERS: dict[str, Callable[..., Score]] = {s.label: s.fn for s in VOCABULARY}


def _check_vocabulary() -> None:
    """Refuse, at import, a spelling given to two functions or a label not declared."""
    spellings = [key for s in VOCABULARY for key in (s.name, *s.aliases)]
    if len(spellings) != len(set(spellings)):
        raise ValueError("a scorer name or alias is declared twice in the vocabulary")
    for s in VOCABULARY:
        if s.label not in s.aliases:
            raise ValueError(f"scorer {s.name}: its label {s.label!r} is not an alias")


_check_vocabulary()


def unknown_name(kind: str, name: Any, spellings: Iterable[str], canonical: Sequence[str],
                 resolve: Callable[[str], str] = str) -> ConfigError:
    """The one-line error for an unknown name: the closest spelling's canonical name as a
    suggestion, then the canonical names to choose from."""
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
    """The vocabulary entry of the scorer spelled ``name`` (any spelling)."""
    return _BY_NAME[canonical_scorer(name)]


def get_scorer(name: str) -> Callable[..., Score]:
    """The function of the scorer spelled ``name``; raises ``ConfigError`` when unknown."""
    return scorer_info(name).fn


def infer_scorer(target: Any, choices: Sequence[str] | None = None) -> str:
    """A default scorer name for a sample (the label stored with the run).

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
