"""Test helpers for BFCL decoding: ground-truth calls written as prompt text, and has_call.

Only the tests and ``bench/bfcl_checker.py`` use these; the product decodes text, it never
writes it.
"""

from __future__ import annotations

from typing import Any

from assay.tasks.bfcl.checker import is_call_list
from assay.tasks.bfcl.decode import LANGUAGES
from assay.tasks.bfcl.decode_tolerant import source_text

__all__ = ["calls_to_prompt_text", "has_call"]


def has_call(decoded: Any) -> bool:
    """Whether decoded output holds a call: the negation of the official ``is_empty_output``.

    Not a call: anything outside the function-calling format (``[{}]`` included) and ``[]``.
    """
    return is_call_list(decoded) and len(decoded) > 0


def _source_value(value: Any, language: str) -> str:
    """``value`` as source text: Python ``repr``, or Java / JavaScript source text."""
    return repr(value) if language == "python" else source_text(value)


def calls_to_prompt_text(decoded: list[dict], language: str) -> str:
    """Render decoded calls as official prompt-style text, e.g. ``[f(a=1, b='x')]``.

    Python values are written with ``repr`` (a ``None`` key becomes ``**value``). Java and
    JavaScript values are source text already and are written raw (key ``None``, a
    positional value, is written without a name). Java calls end with ``;`` inside the brackets: the
    tree-sitter Java grammar used officially fails on some bare calls (any call with a
    single argument), while the terminated form always parses.
    """
    if language not in LANGUAGES:
        raise ValueError(f"unsupported BFCL language {language!r}; choose from {LANGUAGES}")
    rendered = []
    for call in decoded:
        for name, params in call.items():
            args = []
            for key, value in params.items():
                text = _source_value(value, language)
                if key is None:
                    args.append(("**" + text) if language == "python" else text)
                else:
                    args.append(f"{key}={text}")
            rendered.append(f"{name}({', '.join(args)})")
    if language == "java":
        return "[" + " ".join(r + ";" for r in rendered) + "]"
    return "[" + ", ".join(rendered) + "]"
