"""BFCL prompt mode, Python: call lists decoded with the stdlib parser, as officially (rules
and quirks: :mod:`assay.tasks.bfcl.decode`), after two exact shortcuts."""

from __future__ import annotations

import ast
import keyword
import re
import warnings
from typing import Any

from assay.tasks.bfcl.decode_error import DecodeError
from assay.tasks.bfcl.python_literal import evaluate_literal

__all__ = ["decode_python", "fast_decode_python", "holds_no_call"]

# Model text compiled under this name; its compile warnings (invalid escapes such as
# "\d", "'str' is not callable") are silenced once here rather than with a
# catch_warnings block per call, which would cost more than the parse itself.
_MODEL_TEXT = "<bfcl-model-output>"
for _category in (SyntaxWarning, DeprecationWarning):
    warnings.filterwarnings("ignore", category=_category, module=re.escape(_MODEL_TEXT))


def decode_python(source: str) -> list[dict[str, dict[str, Any]]]:
    """Bracketed text (``[...]``) decoded by the stdlib parser and the official resolution
    rules; :class:`DecodeError` where the official decoder fails."""
    cleaned = source.strip().strip("'")  # a no-op on bracketed text, kept as officially
    try:
        tree = ast.parse(cleaned, filename=_MODEL_TEXT, mode="eval")
    except (SyntaxError, ValueError) as exc:
        raise DecodeError("not a Python call list") from exc  # cause kept, no formatting cost
    body = tree.body
    if isinstance(body, ast.Call):
        calls: list[ast.expr] = [body]
    elif isinstance(body, (ast.List, ast.Tuple, ast.Set)):
        calls = list(body.elts)
    else:
        raise DecodeError(f"expected a call or a list of calls, got {type(body).__name__}")
    decoded = []
    for node in calls:
        if not isinstance(node, ast.Call):
            raise DecodeError(f"list element is not a call: {type(node).__name__}")
        decoded.append(_py_call(node))
    return decoded


# Fast paths: ``ast.parse`` is most of a decode's cost (10-20 us, failures included), so two
# exact shortcuts come first; what they are not sure of goes to the parser.
# 1. Plain call lists: ``[name(key=value, ...), ...]``, ASCII dotted names, keyword arguments
#    only, values that are escape-free string literals, decimal numbers, True/False/None or
#    flat lists/dicts of those: there the tokens mean the same to Python and the regexes,
#    and a leading "-" negates the number as the official unary quirk does.
# 2. Text that cannot be a list of calls: without "#", a list of calls ends with ")" then
#    only whitespace, continuations and one optional "," before "]"; an empty list holds
#    only whitespace and continuations. Anything else fails whatever the parser says.

_WS = r"[ \t\n]*"  # what may stand between tokens here (the parser allows more)
_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"  # ASCII only: the parser NFKC-normalizes the rest
# string bodies: no backslash (escapes), no quote, no control character but tab (line
# ends and NUL are errors to the parser), no lone surrogate (cannot be encoded)
_STR_EXCLUDED = r"\\\x00-\x08\x0a-\x1f\x7f\ud800-\udfff"
_STRING = rf"'[^'{_STR_EXCLUDED}]*'|\"[^\"{_STR_EXCLUDED}]*\""
_NUMBER = r"-?(?:0|[1-9][0-9]{0,17})(?:\.[0-9]{1,17})?|True|False|None"  # and constants
_CONSTANTS: dict[str, Any] = {"True": True, "False": False, "None": None}
_KEYWORDS = frozenset(keyword.kwlist)  # hard keywords; soft ones are plain names here
# What the tokenizer skips between tokens, plus "\\" for line continuations.
_SKIPPED = " \t\n\r\x0c\\"


class _FastRegexes:
    """Compiled on first use: compiling them costs more than importing this module."""

    def __init__(self) -> None:
        scalar = f"(?:{_STRING}|{_NUMBER})"
        flat_list = rf"\[{_WS}(?:{scalar}{_WS},{_WS})*(?:{scalar}{_WS})?\]"
        pair = rf"{scalar}{_WS}:{_WS}{scalar}{_WS}"
        flat_dict = rf"\{{{_WS}(?:{pair},{_WS})*(?:{pair})?\}}"
        call_start = rf"({_IDENT}(?:\.{_IDENT})*){_WS}\({_WS}"
        # "[" and the first call's name and "("
        self.first = re.compile(rf"{_WS}{call_start}")
        # after a call's ")": the end, or a comma and maybe the next call's name and "("
        self.after = re.compile(rf"{_WS}(?:,{_WS}(?:{call_start})?)?")
        # one keyword argument and the comma after it, if any
        self.kwarg = re.compile(
            rf"({_IDENT}){_WS}={_WS}(?:({_STRING})|({_NUMBER})|({flat_list}|{flat_dict}))"
            rf"{_WS}(,{_WS})?")
        self.scalar = re.compile(scalar)


_FAST: _FastRegexes | None = None


def _fast_scalar(token: str) -> Any:
    first = token[0]
    if first == "'" or first == '"':
        return token[1:-1]
    if first == "T" or first == "F" or first == "N":
        return _CONSTANTS[token]
    return float(token) if "." in token else int(token)


def _fast_container(text: str, scalar: re.Pattern[str]) -> Any:
    # Between the scalars there are only spaces, "," and ":", none of which can start one.
    items = [_fast_scalar(token) for token in scalar.findall(text)]
    if text[0] == "[":
        return items
    out: dict[Any, Any] = {}
    for n in range(0, len(items), 2):
        out[items[n]] = items[n + 1]
    return out


def fast_decode_python(source: str) -> list[dict[str, dict[str, Any]]] | None:
    """Shortcut 1 above: the calls in bracketed text, or None when it is outside the grammar."""
    global _FAST
    rx = _FAST
    if rx is None:
        rx = _FAST = _FastRegexes()
    end = len(source) - 1  # the final "]"; no match may reach it (endpos)
    found = rx.first.match(source, 1, end)
    if found is None:
        return [] if not source[1:-1].strip(" \t\n") else None
    calls: list[dict[str, dict[str, Any]]] = []
    kwarg_match = rx.kwarg.match
    while True:
        name = found.group(1)
        if name in _KEYWORDS or ("." in name and not _KEYWORDS.isdisjoint(name.split("."))):
            return None
        pos = found.end()
        params: dict[str, Any] = {}
        while source[pos] != ")":  # source[end] is "]": the loop stops there at the latest
            kwarg = kwarg_match(source, pos, end)
            if kwarg is None:
                return None
            key, text, scalar, container, comma = kwarg.groups()
            if key in _KEYWORDS:
                return None
            if text is not None:
                params[key] = text[1:-1]
            elif scalar is not None:
                params[key] = _fast_scalar(scalar)
            else:
                params[key] = _fast_container(container, rx.scalar)
            pos = kwarg.end()
            if comma is None and source[pos] != ")":
                return None
        calls.append({name: params})
        found = rx.after.match(source, pos + 1, end)
        if found.group(1) is None:  # no next call: the end, or something else
            return calls if found.end() == end else None


def holds_no_call(source: str) -> bool:
    """Shortcut 2 above: True only when decoding bracketed ``source`` must fail."""
    if "#" in source:
        return False
    last = source.rfind(")")
    if last < 0:  # no call at all: only an empty list decodes
        return source[1:-1].strip(_SKIPPED) != ""
    rest = source[last + 1:-1].strip(_SKIPPED)
    return rest != "" and rest != ","


def _dotted_name(func: ast.expr) -> str:
    """``a.b.c`` from an attribute chain; parts that are not names are left out."""
    parts: list[str] = []
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if isinstance(func, ast.Name):
        parts.append(func.id)
    return ".".join(reversed(parts))


def _py_call(node: ast.Call) -> dict[str, dict[Any, Any]]:
    """One call: its dotted name and its keyword arguments (positional ones dropped)."""
    return {_dotted_name(node.func): {kw.arg: _py_value(kw.value) for kw in node.keywords}}


def _py_value(node: ast.expr | None) -> Any:
    """An argument value, following the official resolution rules and quirks."""
    if isinstance(node, ast.Constant):
        return "..." if node.value is Ellipsis else node.value
    if isinstance(node, ast.UnaryOp):
        # Official quirk: whatever the operator, the literal operand is negated.
        if not isinstance(node.operand, ast.Constant):
            raise DecodeError("unary operator on a non-literal")
        try:
            return -node.operand.value
        except TypeError as exc:
            raise DecodeError(f"cannot negate {node.operand.value!r}") from exc
    if isinstance(node, ast.List):
        return [_py_value(item) for item in node.elts]
    if isinstance(node, ast.Dict):
        return {_py_value(k): _py_value(v) for k, v in zip(node.keys, node.values, strict=True)}
    if isinstance(node, ast.BinOp):
        return evaluate_literal(node)
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Call):
        return _py_call(node) if node.keywords else ast.unparse(node)
    if isinstance(node, ast.Tuple):
        return tuple(_py_value(item) for item in node.elts)
    if isinstance(node, ast.Subscript):
        return ast.unparse(node.value) + "[" + ast.unparse(node.slice) + "]"
    raise DecodeError(f"unsupported argument syntax: {type(node).__name__}")
