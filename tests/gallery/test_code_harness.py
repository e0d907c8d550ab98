"""The judge's side of the code tests (``assay.tasks.code.harness``) and the host's
reading of its verdict (``assay.sandbox.verdict_report``), piece by piece.

What crosses from the candidate is read by :func:`channel.decode`: plain data and handles
only, whatever pickle the candidate writes. The verdict is only a line signed with the
run's key. The tests' names resolve to the harness's own builtins, the problem's own
helpers, the standard modules, and proxies for the program's names. The end-to-end
checks (real bubblewrap, real attacks) are in ``tests/attack/test_code_verdict_attacks.py``.
"""

from __future__ import annotations

import ast
import hashlib
import hmac
import json
import pickle

import pytest

from assay import sandbox
from assay.tasks.code import channel, execute, harness
from assay.tasks.code.channel import Malformed, Remote, decode
from assay.tasks.code.extract import humaneval_program, mbpp_program


class Evil:
    """An object whose pickle would call code when read."""

    def __reduce__(self):
        return (print, ("pwned",))


def persistent(pid: tuple) -> bytes:
    """A pickle whose value is the persistent id ``pid`` (how handles travel)."""

    class P(pickle.Pickler):
        def persistent_id(self, obj):
            return pid if obj == "HANDLE" else None

    import io

    out = io.BytesIO()
    P(out, protocol=4).dump("HANDLE")
    return out.getvalue()


def test_plain_values_come_back_with_their_exact_types():
    value = {"a": [1, 2.5, True, None, "x", b"y", (1, (2,)), {3, 4}, frozenset({5})],
             7: {"nested": [[[]]]}}
    assert decode(pickle.dumps(value), {}) == value
    big = 10 ** 400
    assert decode(pickle.dumps(big), {}) == big
    assert decode(persistent(("c", 1.0, -2.0)), {}) == complex(1, -2)


@pytest.mark.parametrize("payload", [
    pickle.dumps(Evil()),                     # GLOBAL/STACK_GLOBAL + REDUCE
    pickle.dumps(Evil(), protocol=0),         # GLOBAL as text
    pickle.dumps(Evil(), protocol=2),
    pickle.dumps(ValueError("x")),
    pickle.dumps(bytearray(b"x")),            # not a plain type: a global is needed
    pickle.dumps(Exception),                  # a class
], ids=["reduce", "protocol0", "protocol2", "exception", "bytearray", "class"])
def test_a_reply_that_names_or_calls_code_is_refused(payload):
    with pytest.raises(Malformed):
        decode(payload, {})


def test_a_handle_cannot_be_called_or_rebuilt_while_reading():
    handle = persistent(("h", 1))[:-1]  # without STOP
    remote = Remote(("h", 1))
    # REDUCE on the handle (would be a remote call), BUILD on it (would set its reference)
    reduce = handle + b")R."
    build = handle + b"}X\x0a\x00\x00\x00_assay_ref(X\x01\x00\x00\x00gX\x04\x00\x00\x00evil"
    build += b"tsb."
    for payload in (reduce, build):
        with pytest.raises(Malformed, match="opcode (REDUCE|BUILD)"):
            decode(payload, {1: remote})
    assert object.__getattribute__(remote, "_assay_ref") == ("h", 1)


@pytest.mark.parametrize("pid", [("h", 0), ("h", -1), ("h", "1"), ("h", 1.0), ("g", "x"),
                                 ("c", 1, 2), ("c", 1.0), ("x",), "h"])
def test_unknown_or_misshapen_references_are_refused(pid):
    with pytest.raises(Malformed):
        decode(persistent(pid), {})


def test_one_handle_is_one_object_and_compares_by_identity():
    handles: dict[int, Remote] = {}
    first = decode(persistent(("h", 3)), handles)
    again = decode(persistent(("h", 3)), handles)
    other = decode(persistent(("h", 4)), handles)
    assert first is again and first is not other
    assert first == first and first != other and first != 3 and first != [] and first != "x"
    assert len({first, again, other}) == 2


def test_bombs_deep_nesting_and_junk_are_refused():
    x: list = []
    for _ in range(60):
        x = [x, x]  # 2**60 paths through a few bytes of pickle
    with pytest.raises(Malformed, match="too large"):
        decode(pickle.dumps(x), {})
    deep = b"\x80\x04" + b"]" * 500 + b"a" * 499 + b"."  # 500 nested lists, opcodes only
    with pytest.raises(Malformed, match="deeply"):
        decode(deep, {})
    for junk in (b"", b"\xff" * 10, pickle.dumps([1, 2])[:-3], b"\x80\x04}](K\x01eNs."):
        with pytest.raises(Malformed):
            decode(junk, {})


def test_remote_exceptions_are_builtin_types_by_name():
    exc = channel.remote_exception("call", ["MyError", "ValueError", "Exception"], "bad", 7)
    assert type(exc) is ValueError and str(exc) == "bad"
    assert exc.assay_error == "MyError" and exc.assay_line == 7
    # a name that is not a builtin exception class (or not a class at all) is Exception
    assert type(channel.remote_exception("call", ["print", "Evil"], "m", None)) is Exception
    assert type(channel.remote_exception("call", "ValueError", "m", None)) is Exception
    # only a "next" may end an iteration (a StopIteration from a call would make map()
    # or all() in a test stop early and pass)
    assert type(channel.remote_exception("call", ["StopIteration"], "", None)) is RuntimeError
    assert type(channel.remote_exception("next", ["StopIteration"], "", None)) is StopIteration
    assert type(channel.remote_exception("call", ["SystemExit"], "0", None)) is SystemExit


def namespace(tests: str, entry: str | None, prompt: str = "") -> dict:
    return harness.test_namespace(tests, ast.parse(tests), entry,
                                  harness.prompt_namespace(prompt))


def test_the_tests_see_their_builtins_the_problems_helpers_and_proxies():
    prompt = ("import math\n\ndef poly(xs, x):\n    return sum(c * x ** i for i, c in "
              "enumerate(xs))\n\ndef find_zero(xs):\n    \"\"\"doc\"\"\"\n")
    tests = ("def check(candidate):\n    s = candidate([1, 2])\n"
             "    assert math.fabs(poly([1, 2], s)) < 1e-4 and abs(s) < 9 and len([s])\n"
             "check(find_zero)\n")
    ns = namespace(tests, "find_zero", prompt)
    # the prompt's own helper (a model cannot redefine it for the tests), real modules
    assert not isinstance(ns["poly"], Remote) and ns["poly"]([1, 2], 1) == 3
    assert ns["math"].__name__ == "math" and not isinstance(ns["math"], Remote)
    assert isinstance(ns["find_zero"], Remote)
    assert "abs" not in ns and "len" not in ns  # the harness's own builtins
    # MBPP: the entry point is a proxy even where it shadows a builtin (task 126's sum),
    # the program's classes are proxies, modules used as modules are the real ones
    ns = namespace("assert sum(10, 15) == 6\nassert sorted([Pair(1, 2)]) == []\n"
                   "assert math.isclose(area(1), 3.14)\n", "sum")
    assert isinstance(ns["sum"], Remote) and isinstance(ns["Pair"], Remote)
    assert isinstance(ns["area"], Remote) and ns["math"].__name__ == "math"
    assert "sorted" not in ns


def test_programs_split_into_candidate_and_tests_with_the_same_lines():
    prompt = 'def add(a, b):\n    """Add."""\n'
    test = "\n\ndef check(candidate):\n    assert candidate(1, 2) == 3\n"
    for reply in ("    return a + b\n", "```python\ndef add(a, b):\n    return a + b\n```"):
        program = humaneval_program(reply, prompt=prompt, test=test, entry_point="add")
        assert program.source == program.candidate + program.tests
        assert "assert" not in program.candidate and "return a + b" not in program.tests
        assert program.prompt == prompt and program.entry_point == "add"
        line = program.tests.split("\n").index("    assert candidate(1, 2) == 3")
        assert program.source.split("\n")[line + program.candidate.count("\n")] == \
            "    assert candidate(1, 2) == 3"
    program = mbpp_program("def f(x):\n    return x\n", tests=["assert f(1) == 1"],
                           setup="y = 2", entry_point="f")
    assert program.source == program.candidate + program.tests
    assert program.candidate == "def f(x):\n    return x\n" and "assert" in program.tests


def signed(key: bytes, report: dict) -> str:
    body = json.dumps(report, sort_keys=True)
    return f"assay-verdict {hmac.new(key, body.encode(), hashlib.sha256).hexdigest()} {body}"


def test_only_a_line_signed_with_the_runs_key_is_a_verdict():
    key = b"k" * 32
    other = b"o" * 32
    fail = {"status": "assertion", "error": "AssertionError", "message": "", "line": 3}
    stdout = "\n".join([
        "noise", signed(other, {"status": "passed"}),
        "assay-verdict 00 " + json.dumps({"status": "passed"}),
        "@@assay-0123@@" + json.dumps({"status": "passed"}), signed(key, fail), ""])
    report, rest = sandbox.verdict_report(stdout, key)
    assert report == fail
    assert "noise" in rest and "assay-verdict 00" in rest  # kept as output, never a verdict
    assert sandbox.verdict_report(stdout, other)[0] == {"status": "passed"}
    assert sandbox.verdict_report("assay-verdict 00 {}", key)[0] is None


def test_the_runner_version_and_key_change_with_the_runner():
    program = humaneval_program("    return a\n", prompt="def f(a):\n", test="\n",
                                entry_point="f")
    limits = execute.code_limits(5)
    key = execute.verdict_key(program, limits)
    assert execute.RUNNER_VERSION != "1"
    assert key != execute.verdict_key(
        humaneval_program("    return a\n", prompt="def f(a):\n", test="\n",
                          entry_point="g"), limits)


def test_the_candidate_finds_none_of_the_judges_files_beside_it():
    """The harness reads its channel, the job and itself, then deletes them before the
    candidate starts: the program sees only its own files, and a channel.py it writes is
    never read (the verdict still comes, signed)."""
    from assay.sandbox import bwrap_problem

    if bwrap_problem():
        pytest.skip(bwrap_problem())  # allowed: the reason names apt-get install bubblewrap
    program = humaneval_program(
        "```python\nimport os\n\n\ndef files():\n    seen = sorted(os.listdir('.'))\n"
        "    open('channel.py', 'w').write('raise SystemExit(0)')\n    return seen\n```",
        prompt='def files():\n    """The files beside it."""\n', entry_point="files",
        test="\n\ndef check(candidate):\n    seen = candidate()\n"
             "    assert 'program.py' in seen, seen\n"
             "    assert not {'job.json', 'harness.py', 'channel.py'} & set(seen), seen\n"
             "    assert 'channel.py' in candidate()\n")
    verdict = execute.run_program_blocking(program, execute.code_limits(10))
    assert (verdict.status, verdict.reason) == ("passed", "all tests passed"), verdict
