"""Scoring shared by every task: answer extraction, normalization, matching and the one
scoring vocabulary.

A layer below tasks and metrics: it imports only :mod:`assay.core`, :mod:`assay.errors`,
the data layer (:func:`assay.data.math500.last_boxed` for the ``boxed`` parser) and
third-party libraries. Everything is pure and fast; ``math_verify`` is imported on first
use.

* :mod:`.extraction`: the final answer of an output (``Answer:``, ``\\boxed{}``, whole);
* :mod:`.normalize`: text normalization and SQuAD-style tokens;
* :mod:`.numbers`: numbers in answers and targets;
* :mod:`.matching`, :mod:`.choice`, :mod:`.math_scoring`: the scorers;
* :mod:`.squad`, :mod:`.structured`: SQuAD v1.1 matching, JSON and label sets;
* :mod:`.parsers`: the answer parsers catalogue entries name;
* :mod:`.vocabulary`: the names.

One name per function
---------------------
Every scorer has one canonical name: the name of the metric it is in the metric registry.
Its other spellings are declared aliases and resolve to the same function wherever a name
is read: qa's ``scorer`` option, a YAML task's ``scorer:``, ``Task(scorer="...")`` and the
metric registry (``assay list metrics``). The per-sample ``Score`` a scorer returns keeps
the short label that stored runs hold; a metric renames it to the canonical name.

==================  ===========================  ==========  =========================
canonical name      aliases                      label       function
==================  ===========================  ==========  =========================
exact_match         exact, em                    exact       matching.score_exact
normalized_match    normalized                   normalized  matching.score_normalized
includes_match      includes                     includes    matching.score_includes
numeric_match       numeric                      numeric     matching.score_numeric
token_f1            f1                           f1          matching.score_f1
choice_accuracy     choice, mc_accuracy          choice      choice.score_choice
math_verify         math, math_equivalence       math        math_scoring.score_math
==================  ===========================  ==========  =========================

No scorer is scorer-only today (:data:`.vocabulary.SCORER_ONLY`): every canonical name is a
registered metric. ``squad_f1`` and ``squad_exact_match`` (alias ``squad_em``) are metrics
only, whose matching is :mod:`.squad`. The answer parsers (:data:`.parsers.PARSERS`) have
one name each and no aliases: ``answer_line`` (:func:`.extraction.extract_answer`),
``gsm8k_strict``, ``gsm8k_flexible``, ``gsm8k_cot``, ``boxed``, ``first_line``, ``whole``.
An unknown name is a one-line ``ConfigError`` listing the canonical names, with the
closest one suggested.
"""

from __future__ import annotations

from assay.scoring.choice import LETTERS, choice_target_index, format_choices, score_choice
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
]
