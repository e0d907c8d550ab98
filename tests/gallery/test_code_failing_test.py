"""The failing test of a code task's miss: which ``assert`` (or test call) failed, as its
source, run in the real bubblewrap sandbox; verdicts unchanged."""

from __future__ import annotations

import pytest

from assay.sandbox import bwrap_problem
from assay.tasks.code import execute
from assay.tasks.code.extract import failing_test, humaneval_program, mbpp_program

TESTS = ["assert add(1, 1) == 2", "assert add(\n    2,\n    2,\n) == 5", "assert add(0, 0) == 0"]


@pytest.fixture
def sandbox() -> None:
    problem = bwrap_problem()
    if problem:
        pytest.skip(problem)


def _run(program):
    return execute.run_program_blocking(program, execute.code_limits(20))


def test_the_failing_assert_is_named_whole_even_over_several_lines(sandbox) -> None:
    program = mbpp_program("def add(a, b):\n    return a + b\n", tests=TESTS,
                           entry_point="add")
    verdict = _run(program)
    assert not verdict.passed and verdict.status == "assertion"
    source, line = failing_test(program, verdict.test_line, verdict.reason, verdict.status)
    assert source == "assert add(\n    2,\n    2,\n) == 5"
    assert program.source.splitlines()[line - 1].startswith(("assert add(", "    2", ")"))


def test_a_candidate_that_raises_names_the_test_that_called_it(sandbox) -> None:
    program = mbpp_program("def add(a, b):\n    if a == 2:\n        raise KeyError(a)\n"
                           "    return a + b\n", tests=TESTS, entry_point="add")
    verdict = _run(program)
    assert verdict.status == "exception" and "KeyError" in verdict.reason
    source, _ = failing_test(program, verdict.test_line, verdict.reason, verdict.status)
    assert source.startswith("assert add(\n    2,")


def test_a_pass_and_a_syntax_error_name_no_test(sandbox) -> None:
    good = mbpp_program("def add(a, b):\n    return a + b\n", tests=TESTS[:1],
                        entry_point="add")
    verdict = _run(good)
    assert verdict.passed and verdict.test_line is None
    bad = mbpp_program("def add(a, b) return\n", tests=TESTS, entry_point="add")
    verdict = _run(bad)
    assert not verdict.passed
    assert failing_test(bad, verdict.test_line, verdict.reason, verdict.status) is None


def test_a_verdict_stored_before_test_lines_still_names_a_failed_assert() -> None:
    program = humaneval_program("    return 0\n", prompt="def f(x):\n",
                                test="def check(candidate):\n    assert candidate(1) == 1\n",
                                entry_point="f")
    line = program.source.splitlines().index("    assert candidate(1) == 1") + 1
    reason = f"AssertionError (line {line})"
    assert failing_test(program, None, reason, "assertion") == (
        "assert candidate(1) == 1", line)
    assert failing_test(program, None, reason, "exception") is None  # a line of unknown kind
    assert failing_test(program, None, "AssertionError (line 1)", "assertion") is None
