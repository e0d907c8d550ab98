"""The judge's side of a code test: runs the problem's tests, reports the verdict.

Run in the sandbox (standard library only), it makes itself non-dumpable, deletes the job and
itself before the candidate (:mod:`.candidate`) starts, talks to it only over :mod:`.channel`, and
writes an HMAC-signed verdict to stdout. A candidate that exits, crashes or misbehaves fails."""

from __future__ import annotations

import ast
import builtins
import ctypes
import hashlib
import hmac
import importlib
import importlib.util
import json
import os
import signal
import symtable
import sys
import traceback
from typing import Any

if __name__ == "__main__":
    # the sandbox's script (``python -I``: its folder is not on sys.path): the channel was
    # copied in beside it, as text, and is read now, before the candidate exists
    _SPEC = importlib.util.spec_from_file_location(
        "assay_code_channel", os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                           "channel.py"))
    assert _SPEC is not None and _SPEC.loader is not None
    channel = importlib.util.module_from_spec(_SPEC)
    _SPEC.loader.exec_module(channel)
else:
    from assay.tasks.code import channel

CHANNEL, MAX_TEXT = channel.CHANNEL, channel.MAX_TEXT
CandidateGone, Remote = channel.CandidateGone, channel.Remote

JOB = "job.json"
PROGRAM = "program.py"
#: the verdict line: PREFIX, the HMAC of the JSON, the JSON
PREFIX = "assay-verdict"
PR_GET_DUMPABLE, PR_SET_DUMPABLE = 3, 4


def external_names(tree_source: str) -> set[str]:
    """The names the test code reads but never binds (at its top level)."""
    top = symtable.symtable(tree_source, PROGRAM, "exec")
    bound = {s.get_name() for s in top.get_symbols() if s.is_assigned() or s.is_imported()}
    found: set[str] = set()

    def walk(table: symtable.SymbolTable) -> None:
        for sym in table.get_symbols():
            if sym.is_referenced() and (table is top or sym.is_global()) \
                    and sym.get_name() not in bound:
                found.add(sym.get_name())
        for child in table.get_children():
            walk(child)

    walk(top)
    return found


def _only_attributes(tree: Any, name: str) -> bool:
    parents: dict[int, Any] = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[id(child)] = node
    uses = [n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == name]
    return bool(uses) and all(isinstance(parents.get(id(n)), ast.Attribute)
                              and parents[id(n)].value is n for n in uses)


def prompt_namespace(prompt: str) -> dict[str, Any]:
    """The problem's own code run in the judge, so the helpers the tests call are the problem's."""
    namespace: dict[str, Any] = {}
    if prompt.strip():
        exec(compile(prompt, "<prompt>", "exec"), namespace)
    return namespace


def test_namespace(source: str, tree: Any, entry_point: str | None,
                   prompt: dict[str, Any]) -> dict[str, Any]:
    """The tests' names: the entry point as a proxy (even over a builtin), the
    prompt's helpers, the harness's builtins, stdlib modules used without import, and proxies
    for the program's other names (MBPP's classes)."""
    namespace: dict[str, Any] = {"__name__": "__assay_tests__"}
    for name in sorted(external_names(source)):
        if name == entry_point:
            continue
        if name in prompt and not name.startswith("__"):
            namespace[name] = prompt[name]
        elif hasattr(builtins, name):
            continue
        elif name in sys.stdlib_module_names and _only_attributes(tree, name):
            namespace[name] = importlib.import_module(name)
        else:
            namespace[name] = Remote(("g", name))
    if entry_point:
        namespace[entry_point] = Remote(("g", entry_point))
    return namespace


def program_line(exc: BaseException) -> int | None:
    """The program's line for the candidate's exceptions, else the test line."""
    line = getattr(exc, "assay_line", None)
    return line if isinstance(line, int) else test_line(exc)


def test_line(exc: BaseException) -> int | None:
    """The tests' line running when ``exc`` ended them, numbered as in the whole program;
    None when the tests' code is not on the traceback."""
    line = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename == PROGRAM:
            line = frame.lineno
    return line


def run_tests(job: dict[str, Any]) -> dict[str, Any]:
    offset = int(job.get("line_offset") or 0)
    workdir = os.getcwd()
    CHANNEL.start(workdir)  # first: its interpreter starts while the tests compile here
    os.chdir("/")
    try:
        tree = ast.parse(job["tests"], PROGRAM, "exec")
        ast.increment_lineno(tree, offset)
        code = compile(tree, PROGRAM, "exec")
        namespace = test_namespace(job["tests"], tree, job.get("entry_point"),
                                   prompt_namespace(job.get("prompt") or ""))
    except SyntaxError as e:
        line = e.lineno + offset if e.lineno else None
        return {"status": "syntax_error", "error": type(e).__name__,
                "message": str(e.msg)[:MAX_TEXT], "line": line}
    failed = CHANNEL.ready()
    if failed is not None:
        return failed
    try:
        exec(code, namespace)
    except CandidateGone as e:
        return _broken(e)
    except SystemExit as e:
        if CHANNEL.broken is not None:
            return _broken(CHANNEL.broken)
        message = str(e) if hasattr(e, "assay_error") else repr(e.code)
        return {"status": "exit", "error": "SystemExit", "message": message[:100],
                "line": program_line(e)}
    except BaseException as e:
        if CHANNEL.broken is not None:
            return _broken(CHANNEL.broken)
        traceback.print_exc()
        status = "assertion" if isinstance(e, AssertionError) else "exception"
        try:
            message = str(e)[:MAX_TEXT]
        except Exception:
            message = ""
        return {"status": status, "error": getattr(e, "assay_error", type(e).__name__),
                "message": message, "line": program_line(e), "test_line": test_line(e)}
    if CHANNEL.broken is not None:
        return _broken(CHANNEL.broken)
    return {"status": "passed"}


def _broken(exc: CandidateGone) -> dict[str, Any]:
    return {"status": exc.status, "error": exc.error, "message": exc.message, "line": None}


def make_undumpable() -> None:
    """No process of the candidate's user may ptrace this one or read it through /proc."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0 or libc.prctl(PR_GET_DUMPABLE, 0, 0,
                                                                     0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE, 0) failed")


def sign(key: bytes, report: dict[str, Any]) -> bytes:
    body = json.dumps(report, sort_keys=True, ensure_ascii=True)
    mac = hmac.new(key, body.encode(), hashlib.sha256).hexdigest()
    return f"\n{PREFIX} {mac} {body}\n".encode()


def main() -> None:
    # the candidate runs as the same user and may signal us: no KeyboardInterrupt from
    # it (the candidate restores the default for itself)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    verdict_fd = os.dup(1)  # not inheritable: the candidate never gets it
    os.dup2(2, 1)  # what the tests print goes to stderr, never next to the verdict
    key = b""
    try:
        with open(JOB, encoding="utf-8") as f:
            job = json.load(f)
        key = bytes.fromhex(job["key"])
        os.unlink(JOB)
        os.unlink(os.path.abspath(sys.argv[0]))
        os.unlink(os.path.abspath(channel.__file__))
        make_undumpable()
    except BaseException as e:  # the harness cannot protect the verdict: say so, loudly
        report = {"status": "harness_error", "message": f"{type(e).__name__}: {e}"[:MAX_TEXT]}
        os.write(verdict_fd, sign(key, report))
        os._exit(3)
    try:
        report = run_tests(job)
    except BaseException as e:  # never a pass: a failure of the harness itself
        report = {"status": "exception", "error": type(e).__name__,
                  "message": f"the test harness failed: {e}"[:MAX_TEXT], "line": None}
    data = sign(key, report)
    while data:
        data = data[os.write(verdict_fd, data):]
    CHANNEL.stop()
    os._exit(0)


if __name__ == "__main__":
    main()
