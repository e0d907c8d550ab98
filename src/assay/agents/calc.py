"""The ``calculator`` and ``think`` tools.

``calculator`` evaluates one arithmetic expression with simpleeval (never ``eval``): numbers,
``+ - * / // % **``, the math functions below and ``pi``, ``e``; no strings, names, attributes
or subscripts beyond them. Powers, ``factorial``, ``comb``, ``perm`` and ``round`` are bounded
so that no expression runs for long (``9**9**9`` is refused, not computed). ``think`` only
records a thought."""

from __future__ import annotations

import ast
import math
from typing import Any

from assay.agents.tools import ToolContext, ToolResult, error
from assay.core.types import ToolSpec
from assay.errors import ConfigError

#: bits a power's result may have (computing it stays instant); a result is printed up to
#: an eighth of that (about 3,700 digits, under Python's own limit on printing an int)
MAX_BITS = 100_000
#: largest ``n`` of ``factorial``, ``comb`` and ``perm``; largest ``abs(ndigits)`` of ``round``
MAX_N, MAX_NDIGITS = 5_000, 400
#: characters of an expression
MAX_EXPRESSION = 2_000


def _power(a: Any, b: Any) -> Any:
    """``a ** b``, refused before it is computed when the result would be too large."""
    if isinstance(a, int) and isinstance(b, int) and abs(a) > 1 and b > 0 \
            and b * math.log2(abs(a)) > MAX_BITS:
        raise OverflowError(f"{a} ** {b} is too large (over {MAX_BITS:,} bits)")
    try:
        return pow(a, b)
    except OverflowError:
        raise OverflowError(f"{a} ** {b} is too large") from None


def _counting(f: Any) -> Any:
    """``f`` (factorial, comb, perm) refusing an ``n`` over ``MAX_N``."""
    def bounded_f(n: Any, *k: Any) -> int:
        if isinstance(n, int) and n > MAX_N:
            raise OverflowError(f"{f.__name__}({n}, ...) is too large (n over {MAX_N:,})")
        return f(n, *k)
    return bounded_f


def _number(node: ast.Constant) -> Any:
    """A literal, if it is a number (no strings, bytes or ``None``)."""
    if not isinstance(node.value, (int, float)):
        raise ValueError(f"only numbers, not {node.value!r:.40}")
    return node.value


def _round(x: Any, ndigits: Any = None) -> Any:
    if isinstance(ndigits, int) and abs(ndigits) > MAX_NDIGITS:
        raise ValueError(f"round to at most {MAX_NDIGITS} digits")
    return round(x, ndigits)


OPERATORS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b,
             ast.Mult: lambda a, b: a * b, ast.Div: lambda a, b: a / b,
             ast.FloorDiv: lambda a, b: a // b, ast.Mod: lambda a, b: a % b, ast.Pow: _power,
             ast.USub: lambda a: -a, ast.UAdd: lambda a: +a}
FUNCTIONS = {name: getattr(math, name) for name in (
    "sqrt", "cbrt", "exp", "log", "log10", "log2", "sin", "cos", "tan", "asin", "acos", "atan",
    "atan2", "sinh", "cosh", "tanh", "degrees", "radians", "hypot", "floor", "ceil", "trunc",
    "gcd", "lcm")} | {name: _counting(getattr(math, name)) for name in (
    "factorial", "comb", "perm")} | {
    "abs": abs, "round": _round, "min": min, "max": max, "pow": _power}
#: the syntax allowed: no attributes, subscripts, comparisons or assignments
NODES = (ast.Name, ast.UnaryOp, ast.BinOp, ast.Call, ast.keyword)
NAMES = {"pi": math.pi, "e": math.e, "tau": math.tau, "inf": math.inf}

CALCULATOR = ToolSpec(
    "calculator", "Evaluate an arithmetic expression, e.g. sqrt(2)*3 or (17+25)/7.",
    {"type": "object", "properties": {"expression": {
        "type": "string", "description": "numbers, + - * / // % **, parentheses, pi, e and "
        "math functions (sqrt, log, exp, sin, cos, floor, ceil, abs, round, min, max, ...)"}},
     "required": ["expression"]})

THINK = ToolSpec(
    "think", "Think step by step in writing; nothing is done and nothing is looked up.",
    {"type": "object", "properties": {"thought": {"type": "string"}}, "required": ["thought"]})


def evaluator() -> Any:
    """A simpleeval evaluator of the operators, functions and names above, and nothing else."""
    try:
        from simpleeval import SimpleEval  # optional
    except ImportError:
        raise ConfigError("the calculator tool needs simpleeval: pip install simpleeval") \
            from None
    s = SimpleEval(operators=OPERATORS, functions=FUNCTIONS, names=NAMES)
    s.nodes = {k: v for k, v in s.nodes.items() if k in NODES} | {ast.Constant: _number}
    return s


class Calculator:
    """One arithmetic expression per call; the value as text, or one line saying why not."""

    spec = CALCULATOR

    def __init__(self) -> None:
        self._eval = evaluator()

    async def call(self, arguments: dict[str, Any]) -> ToolResult:
        expression = arguments.get("expression")
        if not isinstance(expression, str) or not expression.strip():
            return error("expression: give an arithmetic expression as text, e.g. (17+25)/7")
        expression = expression.strip()
        if len(expression) > MAX_EXPRESSION:
            return error(f"expression: at most {MAX_EXPRESSION} characters")
        try:
            tree = ast.parse(expression, mode="eval")  # one expression, no statements
            value = self._eval.eval(expression, previously_parsed=tree.body)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError(f"the result is not a number ({type(value).__name__})")
            if isinstance(value, int) and value.bit_length() > MAX_BITS // 8:
                raise OverflowError(f"the result has about {int(value.bit_length() * 0.30103):,} "
                                    "digits, too many to print")
            return ToolResult(str(value))
        except Exception as e:  # any failure goes back to the model as one line
            why = " ".join(str(e).split())[:300] or type(e).__name__
            return error(f"cannot evaluate {expression[:200]}: {why}")

    async def aclose(self) -> None:
        return None


class Think:
    """A thought written into the transcript; nothing else happens."""

    spec = THINK

    async def call(self, arguments: dict[str, Any]) -> ToolResult:
        if not isinstance(arguments.get("thought"), str):
            return error("thought: give your thought as text")
        return ToolResult("ok")

    async def aclose(self) -> None:
        return None


def calculator_tool(ctx: ToolContext) -> Calculator:
    return Calculator()


def think_tool(ctx: ToolContext) -> Think:
    return Think()
