"""SQuAD v1.1's official answer matching, rule for rule (``evaluate-v1.1.py``): F1 on the
multiset of shared tokens (0.0 when none, two empty answers included) or exact match,
the best over the targets. Differs from ``matching.score_f1`` only in its normalization."""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Callable
from typing import Any

from assay.core.types import Score
from assay.errors import ConfigError
from assay.scoring.extraction import extract_answer

__all__ = ["score_squad_exact", "score_squad_f1", "squad_v1_tokens"]

_SQUAD_PUNCT = frozenset(string.punctuation)
_SQUAD_ARTICLES = re.compile(r"\b(a|an|the)\b")


def squad_v1_tokens(text: str) -> list[str]:
    """Lowercase, ASCII punctuation deleted, a/an/the replaced by a space, split."""
    kept = "".join(c for c in text.lower() if c not in _SQUAD_PUNCT)
    return _SQUAD_ARTICLES.sub(" ", kept).split()


def _squad_pair_f1(pred: list[str], gold: list[str]) -> float:
    shared = sum((Counter(pred) & Counter(gold)).values())
    if not shared:
        return 0.0  # v1.1: two empty answers score 0 too
    p, r = shared / len(pred), shared / len(gold)
    return 2 * p * r / (p + r)


def _squad(name: str, output: str, target: Any, pair: Callable[..., float]) -> Score:
    answer, method = extract_answer(output)
    golds = [str(t) for t in (target if isinstance(target, (list, tuple)) else [target])]
    if not golds:
        raise ConfigError(f"{name} needs at least one target answer")
    if answer is None:
        return Score(name, 0.0, None, "no answer could be extracted", {"extraction": "none"})
    tokens = squad_v1_tokens(answer)
    best = max(pair(tokens, squad_v1_tokens(g)) for g in golds)
    return Score(name, best, answer, f"{name} {best:.3f}", {"extraction": method})


def score_squad_f1(output: str, target: Any, **opts: Any) -> Score:
    return _squad("squad_f1", output, target, _squad_pair_f1)


def score_squad_exact(output: str, target: Any, **opts: Any) -> Score:
    return _squad("squad_exact_match", output, target, lambda p, g: 1.0 if p == g else 0.0)
