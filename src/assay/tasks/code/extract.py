"""From a model's reply to the code that is run (every code task and ``code_pass``).

``<think>`` blocks are dropped; the code is the fenced block defining the entry point, else the
first block, else the whole reply. HumanEval: a function replaces the prompt's definition, anything
else is a completion; then ``test`` and ``check``. MBPP: code, ``test_setup_code``, asserts."""

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
    """Whether ``code`` compiles (never run; quietly: a reply's invalid escapes would warn)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            compile(code, "<reply>", "exec")
        except (SyntaxError, ValueError, OverflowError, MemoryError, RecursionError):
            return False
    return True


def extract_code(reply: str, entry_point: str | None = None) -> Extracted:
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
    """A program to run: ``source`` as one file would hold it, run as two parts that never
    share a process (:mod:`assay.tasks.code.harness`), ``source == candidate + tests``."""

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
    """The first function the reference code defines that the tests call, else a guess."""
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
    """The failed test's source (a multi-line ``assert`` whole) and its program line;
    None when the failure is not in the tests. Old verdicts give the line in ``reason`` only."""
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
