"""Scoring shared by every task: answer extraction, normalization, matching and the one
scoring vocabulary (:mod:`.vocabulary`): each scorer's canonical name is its metric's name
and the ``Score.name`` its verdicts carry; its aliases resolve to it wherever a name is
read. An unknown name is a one-line ``ConfigError`` suggesting the closest.

==================  ===========================  =========================
canonical name      aliases                      function
==================  ===========================  =========================
exact_match         exact, em                    matching.score_exact
normalized_match    normalized                   matching.score_normalized
includes_match      includes                     matching.score_includes
numeric_match       numeric                      matching.score_numeric
token_f1            f1                           matching.score_f1
choice_accuracy     choice, mc_accuracy          choice.score_choice
math_verify         math, math_equivalence       math_scoring.score_math
==================  ===========================  =========================

A layer below tasks and metrics: imports only :mod:`assay.core`, :mod:`assay.errors`,
:mod:`assay.data.math500` and third-party libraries (``math_verify`` on first use)."""

from __future__ import annotations

from assay.scoring.choice import (
    LETTERS,
    choice_target_index,
    format_choices,
    score_choice,
    target_letters,
)
from assay.scoring.extraction import clean_answer, extract_answer, strip_reasoning
from assay.scoring.matching import (
    score_exact,
    score_f1,
    score_includes,
    score_normalized,
    score_numeric,
)
from assay.scoring.math_scoring import score_math
from assay.scoring.normalize import normalize_text, squad_tokens
from assay.scoring.numbers import extract_numbers, is_plain_number, parse_number
from assay.scoring.parsers import PARSERS, get_parser
from assay.scoring.squad import score_squad_exact, score_squad_f1, squad_v1_tokens
from assay.scoring.structured import json_value, label_set, schema_validator, set_counts
from assay.scoring.vocabulary import (
    ALIASES,
    SCORER_ONLY,
    SCORERS,
    VOCABULARY,
    Scorer,
    canonical_scorer,
    get_scorer,
    infer_scorer,
    scorer_info,
)

__all__ = [
    "ALIASES", "LETTERS", "PARSERS", "SCORERS", "SCORER_ONLY", "VOCABULARY", "Scorer",
    "canonical_scorer", "choice_target_index", "clean_answer", "extract_answer",
    "extract_numbers", "format_choices", "get_parser", "get_scorer", "infer_scorer",
    "is_plain_number", "json_value", "label_set", "normalize_text", "parse_number",
    "schema_validator", "score_choice", "score_exact", "score_f1", "score_includes",
    "score_math", "score_normalized", "score_numeric", "score_squad_exact", "score_squad_f1",
    "scorer_info", "set_counts", "squad_tokens", "squad_v1_tokens", "strip_reasoning",
    "target_letters",
]
