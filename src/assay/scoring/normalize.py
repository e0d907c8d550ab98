"""Text normalization for comparing answers: :func:`normalize_text` and SQuAD tokens."""

from __future__ import annotations

import re
import string
import unicodedata

__all__ = ["normalize_text", "squad_tokens"]


class _PunctuationTable(dict):
    """``str.translate`` table deleting Unicode punctuation (``P*``), lazily filled."""

    def __missing__(self, cp: int) -> int | None:
        value = None if unicodedata.category(chr(cp))[0] == "P" else cp
        self[cp] = value
        return value


_PUNCT = _PunctuationTable({ord(c): None for c in string.punctuation
                            if unicodedata.category(c)[0] == "P"})
_ARTICLES = re.compile(r"\b(?:a|an|the)\b")


def normalize_text(text: str) -> str:
    """NFKC, casefold, Unicode punctuation (``P*``, not symbols like ``$``) removed,
    whitespace collapsed; articles are kept (SQuAD's :func:`squad_tokens` drops them)."""
    if text.isascii():
        text = text.lower()
    else:
        text = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())
    return " ".join(text.translate(_PUNCT).split())


def squad_tokens(text: str) -> list[str]:
    """Tokens for SQuAD-style F1: :func:`normalize_text`, then a/an/the dropped."""
    return _ARTICLES.sub(" ", normalize_text(text)).split()
