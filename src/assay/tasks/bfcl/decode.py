"""Decoding of BFCL model output into ``[{name: {param: value}}]``, as the official v4 decoders do
(reference/bfcl.md §3, §5, §9); nothing from ``bfcl_eval`` is imported, nothing is ``eval``-ed.

Official quirks are kept so verdicts agree (Python: keyword args only, unary ops negate, names and
calls become strings; Java/JS: source-text values, Java drops whitespace and anonymous bodies,
slices by bytes, keeps the first call). One deliberate difference: binary operations are
evaluated on literals only. Fast paths checked by tests/tasks/bfcl/test_decode_fast.py.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from assay.tasks.bfcl.decode_error import DecodeError
from assay.tasks.bfcl.decode_python import decode_python, fast_decode_python, holds_no_call
from assay.tasks.bfcl.decode_treesitter import decode_java, decode_javascript

__all__ = ["LANGUAGES", "DecodeError", "decode_fc", "decode_prompt", "fc_result_entries"]

LANGUAGES = ("python", "java", "javascript")


def _bracketed(text: str) -> str:
    """Strip backticks, newlines and spaces at both ends, then make sure of ``[`` ... ``]``."""
    body = text.strip("`\n ")
    if not body.startswith("["):
        body = "[" + body
    if not body.endswith("]"):
        body += "]"
    return body


def decode_prompt(text: str, language: str) -> list[dict[str, dict[str, Any]]]:
    """Decode prompt-mode output exactly as the official default decoder does, raising
    :class:`DecodeError` where it raises; a Java/JavaScript text with no call gives the
    official non-list (``{}`` / ``None``), so the caller's format check fails as officially."""
    if language not in LANGUAGES:
        raise ValueError(f"unsupported BFCL language {language!r}; choose from {LANGUAGES}")
    if not isinstance(text, str):
        raise DecodeError(f"prompt-mode output must be text, got {type(text).__name__}")
    source = _bracketed(text)
    if language == "python":
        # The exact shortcuts first: most outputs, calls and prose alike, skip the parser.
        fast = fast_decode_python(source)
        if fast is not None:
            return fast
        if holds_no_call(source):
            raise DecodeError("not a Python call list")
    try:
        if language == "python":
            return decode_python(source)
        # The official code cuts the outer brackets off blindly before parsing.
        if language == "java":
            return decode_java(source[1:-1])
        return decode_javascript(source[1:-1])
    except (DecodeError, ImportError):
        raise
    except Exception as exc:  # the official decoder fails on any exception, so do we
        raise DecodeError(f"cannot decode: {exc!r}") from exc


def decode_fc(tool_calls: list[tuple[str, str | dict]]) -> list[dict[str, dict]]:
    """Decode native tool calls ``[(name, json_arguments)]`` as the official FC handlers do:
    bad JSON raises; a parsed dict is copied; a non-object is kept (the format check fails it)."""
    return [{name: copy.deepcopy(arguments) if isinstance(arguments, dict) else _loads(arguments)}
            for name, arguments in tool_calls]


def _loads(arguments: Any) -> Any:
    if not isinstance(arguments, (str, bytes, bytearray)):
        raise DecodeError(f"tool-call arguments must be JSON text, got {type(arguments).__name__}")
    try:
        return json.loads(arguments)
    except (ValueError, RecursionError) as exc:
        raise DecodeError(f"tool-call arguments are not valid JSON: {exc}") from exc


def fc_result_entries(result: Any) -> list[dict[str, Any]]:
    """Decode an official FC result-file ``result``, ``[{name: "<json args>"}]``: each item's
    *first* key only; text (non-empty) raises, as officially; ``""`` or ``[]`` give ``[]``."""
    if isinstance(result, dict):
        # Iterating a dict yields its (string) keys, which the official decoder rejects.
        if result:
            raise DecodeError("FC result is a dict, not a list of calls")
        return []
    if isinstance(result, str):
        if result:
            raise DecodeError("FC result is text, not a list of calls")
        return []
    if not isinstance(result, (list, tuple)):
        raise DecodeError(f"FC result must be a list of calls, got {type(result).__name__}")
    decoded: list[dict[str, Any]] = []
    for item in result:
        if not isinstance(item, dict) or not item:
            raise DecodeError(f"FC call must be a non-empty dict, got {item!r}")
        name = next(iter(item))
        decoded.append({name: _loads(item[name])})
    return decoded
