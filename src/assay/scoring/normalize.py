"""Text normalization for comparing answers: :func:`normalize_text` and SQuAD tokens."""

from __future__ import annotations

import re
import string
import unicodedata

__all__ = ["normalize_text", "squad_tokens"]



class _PunctuationTable(dict):
    """``str.translate`` table deleting Unicode punctuation (categories ``P*``), lazily filled."""

    def __missing__(self, cp: int) -> int | None:
        value = None if unicodedata.category(chr(cp))[0] == "P" else cp
        self[cp] = value
        return value


_PUNCT = _PunctuationTable({ord(c): None for c in string.punctuation
                            if unicodedata.category(c)[0] == "P"})
_ARTICLES = re.compile(r"\b(?:a|an|the)\b")


def normalize_text(text: str) -> str:
    """Normalize text for comparison.

    Unicode NFKC, case folding (a stronger lowercase), removal of all Unicode
    punctuation (categories ``P*``; symbols such as ``$`` or ``+`` are kept),
    whitespace collapsed to single spaces, stripped. Articles are *not* removed
    (that is SQuAD's normalization, see :func:`squad_tokens`).
    """
    if text.isascii():
        text = text.lower()
    else:
        text = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())
    return " ".join(text.translate(_PUNCT).split())


def squad_tokens(text: str) -> list[str]:
    """Tokens for SQuAD-style F1: :func:`normalize_text`, then English articles removed.

    The articles ``a``, ``an`` and ``the`` are dropped as whole words, as in the
    official SQuAD evaluation script; tokens are split on whitespace.
    """
    return _ARTICLES.sub(" ", normalize_text(text)).split()
