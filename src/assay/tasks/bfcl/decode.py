"""Decoding of BFCL model output into calls, as the official BFCL v4 decoders do it.

Facts reproduced here (``reference/bfcl.md`` §3, §5, §9) come from the official
``default_decode_ast_prompting`` (prompt mode), the tree-sitter Java / JavaScript call
parsers it relies on, and the OpenAI-style FC ``decode_ast``. This is an independent
implementation: nothing from ``bfcl_eval`` is imported or copied, and model text is
never ``eval``-ed.

Decoded form: ``[{function_name: {param: value, ...}}, ...]``.

Official quirks kept on purpose (the headline score must agree verdict for verdict):

* Python: only keyword arguments are kept (positional ones are dropped silently); a
  unary operator always *negates* a literal (``+5`` -> -5, ``not True`` -> -1);
  ``x`` -> ``"x"``; ``g(1)`` -> ``"g(1)"``; ``g(b=1)`` -> ``{"g": {"b": 1}}``;
  ``x[0]`` -> ``"x[0]"``; ``...`` -> ``"..."``; ``**kw`` -> key ``None``; attributes,
  sets, f-strings and lambdas fail the whole decode.
* Binary operations are evaluated (the official code calls ``eval``). assay evaluates
  literal expressions only; a binary operation that mentions a name or a call fails to
  decode. The official ``eval`` would resolve such names in its own module namespace
  and call builtins (``abs(-5)+1`` -> 6): the one deliberate difference.
* Java / JavaScript: argument values are source-text strings; quotes are stripped only
  from string literals. Java rebuilds nested values from their tokens *without*
  whitespace (``1 + 2`` -> ``"1+2"``), drops anonymous class bodies
  (``new HashMap<>() {{ put(..); }}`` -> ``"new HashMap<>()"``), slices text by byte
  offsets (non-ASCII text comes out shifted) and returns only the first call. When no
  call is found the official Java decoder returns ``{}`` and the JavaScript one
  ``None``; :func:`decode_prompt` returns those same values, which then fail the
  function-calling format check (``ast_decoder:decoder_wrong_output_format``).

Speed: parsing is most of the cost of a Python decode, so two exact shortcuts run before
the stdlib parser: plain call lists (``[f(a=1, b='x')]``, the usual model output) are read
with a few regexes, and text that cannot hold a call list (prose, the usual irrelevance
answer) fails at once. Anything they are not sure of goes to the parser; the tests check
that all three ways give the same result (tests/tasks/bfcl/test_decode_fast.py).

The per-language decoders live in :mod:`assay.tasks.bfcl.decode_python` (with
:mod:`assay.tasks.bfcl.python_literal`) and :mod:`assay.tasks.bfcl.decode_treesitter`;
assay's tolerant extraction, never part of the headline score, in
:mod:`assay.tasks.bfcl.decode_tolerant`.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from assay.tasks.bfcl.decode_error import DecodeError
from assay.tasks.bfcl.decode_python import decode_python, fast_decode_python, holds_no_call
from assay.tasks.bfcl.decode_treesitter import decode_java, decode_javascript

__all__ = [
    "LANGUAGES",
    "DecodeError",
    "decode_fc",
    "decode_prompt",
    "fc_result_entries",
]

LANGUAGES = ("python", "java", "javascript")


# --------------------------------------------------------------------------------------
# prompt mode: shared preparation


def _bracketed(text: str) -> str:
    """Strip backticks, newlines and spaces at both ends, then make sure of ``[`` ... ``]``."""
    body = text.strip("`\n ")
    if not body.startswith("["):
        body = "[" + body
    if not body.endswith("]"):
        body += "]"
    return body


def decode_prompt(text: str, language: str) -> list[dict[str, dict[str, Any]]]:
    """Decode prompt-mode output exactly as the official default decoder does.

    ``language`` is ``"python"``, ``"java"`` or ``"javascript"``. Raises
    :class:`DecodeError` wherever the official decoder raises. For Java and JavaScript
    the official decoder returns a non-list when the text holds no call (Java ``{}``,
    JavaScript ``None``); those values are returned unchanged so that the caller's
    format check fails exactly as the official one does.
    """
    if language not in LANGUAGES:
        raise ValueError(f"unsupported BFCL language {language!r}; choose from {LANGUAGES}")
    if not isinstance(text, str):
        raise DecodeError(f"prompt-mode output must be text, got {type(text).__name__}")
    source = _bracketed(text)
    if language == "python":
        # The exact shortcuts first (see fast_decode_python): most outputs, calls and prose
        # alike, never reach the parser.
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


# --------------------------------------------------------------------------------------
# FC mode


def decode_fc(tool_calls: list[tuple[str, str | dict]]) -> list[dict[str, dict]]:
    """Decode native tool calls ``[(name, json_arguments)]`` as the official FC handlers do.

    The argument text is ``json.loads``-ed (an already parsed dict is taken as is, copied).
    Bad JSON raises :class:`DecodeError`, as the official decoder raises. A JSON value
    that is not an object is kept; the format check rejects it later, as officially.
    """
    decoded: list[dict[str, Any]] = []
    for name, arguments in tool_calls:
        if isinstance(arguments, dict):
            decoded.append({name: copy.deepcopy(arguments)})
            continue
        decoded.append({name: _loads(arguments)})
    return decoded


def _loads(arguments: Any) -> Any:
    if not isinstance(arguments, (str, bytes, bytearray)):
        raise DecodeError(f"tool-call arguments must be JSON text, got {type(arguments).__name__}")
    try:
        return json.loads(arguments)
    except (ValueError, RecursionError) as exc:
        raise DecodeError(f"tool-call arguments are not valid JSON: {exc}") from exc


def fc_result_entries(result: Any) -> list[dict[str, Any]]:
    """Decode the ``result`` of an official FC result-file line, ``[{name: "<json args>"}]``.

    Mirrors the official FC decoder: each item contributes its *first* key only, whose
    value must be JSON text. A text reply (a non-empty string) raises
    :class:`DecodeError`, as it does officially; an empty string or list decodes to ``[]``.
    """
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
