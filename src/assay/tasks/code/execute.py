"""A program's tests run in the sandbox (never outside it) by the harness (:mod:`.harness`),
and the verdict, signed with a per-run key. Statuses: ``passed``, ``assertion``, ``exception``
(also a reply that is not plain data), ``syntax_error``, ``exit`` (exited or closed its channel
early), ``killed`` (a signal: CPU, memory or process limit), ``timeout``."""

from __future__ import annotations

import asyncio
import contextvars
import hashlib
import json
import secrets
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from assay.errors import AssayError
from assay.sandbox import Limits, SandboxResult, run_python, signal_of
from assay.tasks.code.extract import Program

#: bumped when the runner or the verdict rules change (a stored verdict is then re-run)
RUNNER_VERSION = "2"
HERE = Path(__file__).resolve().parent
#: the judge (the sandbox's script), its channel and the candidate's server, copied as text
RUNNER_FILE = "harness.py"
CHANNEL_FILE = "channel.py"
CANDIDATE_FILE = "candidate.py"
PROGRAM_FILE = "program.py"
JOB_FILE = "job.json"
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
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Verdict:
        return cls(**{k: data.get(k) for k in cls.__dataclass_fields__})


def code_limits(timeout_s: float, memory_mb: int = 2048) -> Limits:
    """CPU past the wall clock (a busy loop is a ``timeout``); 64 processes stop a fork bomb."""
    return Limits(timeout_s=float(timeout_s), cpu_s=int(timeout_s) + 5, memory_mb=memory_mb,
                  processes=64)


def verdict_key(program: Program, limits: Limits) -> str:
    """A hash of the program's parts, the limits and the runner version."""
    h = hashlib.sha256(RUNNER_VERSION.encode())
    h.update(json.dumps(asdict(limits), sort_keys=True).encode())
    for part in (program.candidate, program.tests, program.entry_point or "", program.prompt):
        data = part.encode("utf-8", errors="surrogatepass")
        h.update(len(data).to_bytes(8, "big") + data)
    return h.hexdigest()


def _judge(result: SandboxResult, limits: Limits, vkey: str) -> Verdict:
    report = result.verdict
    output = (result.stderr.strip() + "\n" + result.stdout.strip()).strip()[-OUTPUT_KEPT:]
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
        sig = signal_of(result)
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


async def run_program(program: Program, limits: Limits) -> Verdict:
    key = secrets.token_bytes(32)
    files: dict[str, str | bytes] = {name: (HERE / name).read_text(encoding="utf-8")
                                     for name in (RUNNER_FILE, CHANNEL_FILE, CANDIDATE_FILE)}
    files[PROGRAM_FILE] = program.candidate
    files[JOB_FILE] = json.dumps({"tests": program.tests, "prompt": program.prompt,
                                  "entry_point": program.entry_point,
                                  "line_offset": program.candidate.count("\n"),
                                  "key": key.hex()})
    result = await run_python(RUNNER_FILE, files=files, limits=limits, key=key)
    return _judge(result, limits, verdict_key(program, limits))


def run_program_blocking(program: Program, limits: Limits) -> Verdict:
    """:func:`run_program` from synchronous code; in a running loop, on a thread of its own."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(run_program(program, limits))
    # the caller's context goes with it: it says whether weak isolation was allowed
    context = contextvars.copy_context()
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(context.run, asyncio.run, run_program(program, limits)).result()
