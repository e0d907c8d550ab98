"""The ``calculator`` tool (simpleeval, bounded) and the ``think`` tool."""

from __future__ import annotations

import math

import pytest

from assay.agents.calc import Calculator
from assay.agents.tools import ToolContext, make_tool


async def calc(expression: object):
    return await Calculator().call({"expression": expression})


@pytest.mark.parametrize("expression, value", [
    ("sqrt(2)*3", math.sqrt(2) * 3), ("(17+25)/7", 6.0), ("2**10", 1024), ("7 // 2 + 7 % 2", 4),
    ("-2**2", -4), ("round(2.567, 2)", 2.57), ("round(2.567, ndigits=1)", 2.6),
    ("max(1, 5, 3) - min(4, 2)", 3), ("floor(pi) + ceil(e)", 6), ("log(e**3)", 3.0),
    ("abs(-1.5)", 1.5), ("factorial(5)", 120), ("cos(0) + sin(0) + exp(0)", 2.0),
    (" 2 ** 0.5 ", math.sqrt(2))])
async def test_arithmetic(expression: str, value: float) -> None:
    r = await calc(expression)
    assert (r.error, r.text) == (False, str(value))


@pytest.mark.parametrize("expression", [
    "__import__('os')", "(1).real", "sin.__name__", "open('/etc/passwd')", "[1, 2][0]",
    "lambda: 1", "x = 5", "1; 2", "import os", "'a' * 10**9", "1 < 2",
    "9**9**9", "pow(9, 9**9)", "3999999**3999999", "10**50000", "factorial(10**6)",
    "comb(10**7, 5*10**6)", "round(5, -10**9)", "10.0**400", "1/0", "log(0)", "(-8)**(1/3)",
    "sqrt", pytest.param("(" * 300 + "1" + ")" * 300, id="nested"),
    pytest.param("1" * 3000, id="long")])
async def test_refused_as_error_results(expression: str) -> None:
    r = await calc(expression)
    assert r.error and "\n" not in r.text, r.text


async def test_no_strings_even_on_the_way() -> None:
    r = await calc("'a' * 3")
    assert r.error and "only numbers" in r.text


@pytest.mark.parametrize("expression", [None, 12, "", "   "])
async def test_a_missing_expression_is_named(expression: object) -> None:
    r = await calc(expression)
    assert r.error and r.text.startswith("expression")


async def test_think_acknowledges() -> None:
    tool = make_tool("think", ToolContext())
    assert tool.spec.name == "think" and "\n" not in tool.spec.description
    r = await tool.call({"thought": "first add, then divide"})
    assert (r.error, r.text) == (False, "ok")
    r = await tool.call({})
    assert r.error and r.text.startswith("thought")
    assert await tool.aclose() is None


async def test_the_calculator_is_built_from_the_registry() -> None:
    tool = make_tool("calculator", ToolContext())
    assert tool.spec.name == "calculator" and "\n" not in tool.spec.description
    assert (await tool.call({"expression": "(17+25)/7"})).text == "6.0"
    assert await tool.aclose() is None
