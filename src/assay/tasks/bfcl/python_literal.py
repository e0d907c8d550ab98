"""Literal evaluation of Python expressions, for BFCL's binary-operation quirk: the official
decoder ``eval``-s them; assay evaluates literals only, with Python's semantics, refusing
absurdly large results. Model text is never ``eval``-ed."""

from __future__ import annotations

import ast
import operator
import re
from collections.abc import Callable
from typing import Any

from assay.tasks.bfcl.decode_error import DecodeError

__all__ = ["evaluate_literal"]

_MAX_INT_BITS = 1 << 22
_MAX_SEQ_LEN = 10_000_000

_BINOPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
    ast.Pow: operator.pow, ast.LShift: operator.lshift, ast.RShift: operator.rshift,
    ast.BitOr: operator.or_, ast.BitXor: operator.xor, ast.BitAnd: operator.and_,
    ast.MatMult: operator.matmul,
}
_UNARY: dict[type, Callable[[Any], Any]] = {
    ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert,
    ast.Not: operator.not_,
}
_COMPARE: dict[type, Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
    ast.Gt: operator.gt, ast.GtE: operator.ge, ast.Is: operator.is_,
    ast.IsNot: operator.is_not, ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}
_WIDE_FORMAT = re.compile(r"\d{7,}|\*")
_CONVERSIONS: dict[int, Callable[[Any], str]] = {ord("s"): str, ord("r"): repr, ord("a"): ascii}


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _guard(op: type, left: Any, right: Any) -> None:
    """Refuse operations whose result would be absurdly large (resource safety)."""
    if op is ast.Pow and _is_int(left) and _is_int(right) and right > 0 and abs(left) > 1:
        if right * abs(left).bit_length() > _MAX_INT_BITS:
            raise DecodeError("power too large to evaluate")
    if op is ast.LShift and _is_int(right) and right > _MAX_INT_BITS:
        raise DecodeError("shift too large to evaluate")
    if op is ast.Mult:
        for seq, count in ((left, right), (right, left)):
            if isinstance(seq, (str, bytes, list, tuple)) and isinstance(count, int):
                if len(seq) * count > _MAX_SEQ_LEN:
                    raise DecodeError("repetition too large to evaluate")
    if op is ast.Mod and isinstance(left, (str, bytes)):
        fmt = left if isinstance(left, str) else left.decode("latin-1")
        if _WIDE_FORMAT.search(fmt):
            raise DecodeError("format width too large to evaluate")


def evaluate_literal(node: ast.expr) -> Any:
    """The value of ``node``, an expression made of literals only, as Python computes it;
    :class:`DecodeError` for anything else or a result too large; Python's errors propagate."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.BinOp):
        left, right = evaluate_literal(node.left), evaluate_literal(node.right)
        fn = _BINOPS.get(type(node.op))
        if fn is None:  # pragma: no cover - every operator is listed
            raise DecodeError(f"unsupported operator {type(node.op).__name__}")
        _guard(type(node.op), left, right)
        result = fn(left, right)
        if _is_int(result) and result.bit_length() > _MAX_INT_BITS:
            raise DecodeError("integer too large to evaluate")
        return result
    if isinstance(node, ast.UnaryOp):
        return _UNARY[type(node.op)](evaluate_literal(node.operand))
    if isinstance(node, ast.BoolOp):
        value = None
        for item in node.values:
            value = evaluate_literal(item)
            if isinstance(node.op, ast.And) and not value:
                return value
            if isinstance(node.op, ast.Or) and value:
                return value
        return value
    if isinstance(node, ast.Compare):
        left = evaluate_literal(node.left)
        for op, right_node in zip(node.ops, node.comparators, strict=True):
            right = evaluate_literal(right_node)
            outcome = _COMPARE[type(op)](left, right)
            if not outcome:
                return outcome
            left = right
        return outcome
    if isinstance(node, ast.IfExp):
        return evaluate_literal(node.body if evaluate_literal(node.test) else node.orelse)
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        if any(isinstance(item, ast.Starred) for item in node.elts):
            raise DecodeError("unpacking is not a literal")
        items = [evaluate_literal(item) for item in node.elts]
        if isinstance(node, ast.List):
            return items
        return tuple(items) if isinstance(node, ast.Tuple) else set(items)
    if isinstance(node, ast.Dict):
        if any(key is None for key in node.keys):
            raise DecodeError("dict unpacking is not a literal")
        return {evaluate_literal(k): evaluate_literal(v)  # type: ignore[arg-type]
                for k, v in zip(node.keys, node.values, strict=True)}
    if isinstance(node, ast.Subscript):
        return evaluate_literal(node.value)[evaluate_literal(node.slice)]
    if isinstance(node, ast.Slice):
        parts = (node.lower, node.upper, node.step)
        return slice(*(None if p is None else evaluate_literal(p) for p in parts))
    if isinstance(node, ast.JoinedStr):
        return "".join(evaluate_literal(part) for part in node.values)
    if isinstance(node, ast.FormattedValue):
        value = evaluate_literal(node.value)
        if node.conversion in _CONVERSIONS:
            value = _CONVERSIONS[node.conversion](value)
        spec = "" if node.format_spec is None else evaluate_literal(node.format_spec)
        if _WIDE_FORMAT.search(spec):
            raise DecodeError("format width too large to evaluate")
        return format(value, spec)
    raise DecodeError(f"not a literal expression: {type(node).__name__}")
