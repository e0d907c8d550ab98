"""A sandboxed run's limits and result, whether weak isolation is allowed, and what a
run records about its isolation."""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import hmac
import json
import os
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

from assay.errors import ConfigError
from assay.sandbox.bwrap import BWRAP_INSTALL, bwrap_problem, bwrap_sizes_tmpfs
from assay.sandbox.cgroup import cgroup_method

ALLOW_WEAK_FLAG = "--allow-weak-sandbox"
#: the first word of a line signed on a one-shot program's verdict channel
VERDICT_PREFIX = "assay-verdict"


@dataclass(frozen=True)
class Limits:
    """Resource limits of one sandboxed program or session (``timeout_s``: of each call)."""

    timeout_s: float = 30.0
    #: CPU seconds of each process (a session's process: over all its calls)
    cpu_s: int = 30
    #: address space of each process, and of the whole run where a cgroup can bound it
    memory_mb: int = 2048
    file_mb: int = 64
    #: processes of the user id the run has to itself (and of its cgroup, where there is one)
    processes: int = 64
    open_files: int = 256
    #: the size of the scratch tmpfs: the inputs and everything the code writes
    disk_mb: int = 512


@dataclass
class SandboxResult:
    """How sandboxed code (a program, or one call of a session) ended."""

    exit_code: int | None
    stdout: str
    stderr: str
    timed_out: bool
    isolation: str  # "bwrap" or "weak"
    #: the files given to the run (relative paths in the scratch folder)
    files: list[str] = field(default_factory=list)
    #: "memory", "processes", "disk" -> what bounded the run as a whole (or why nothing did)
    bounds: dict[str, str] = field(default_factory=dict)
    #: the most memory the run held at once, where the kernel tells (a cgroup's peak)
    peak_memory_mb: float | None = None
    #: what the program signed with the run's key (see :func:`verdict_report`)
    verdict: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


def signal_of(result: Any) -> int | None:
    """The signal that ended a result's code (bwrap reports 128 + the signal)."""
    code = result.exit_code
    if code is not None and code < 0:
        return -code
    return code - 128 if code is not None and code > 128 and result.isolation == "bwrap" else None


def verdict_report(stdout: str, key: bytes) -> tuple[dict[str, Any] | None, str]:
    """The last report on ``stdout`` signed with ``key`` (``assay-verdict <hmac> <json>``;
    ``None`` if none) and the rest of stdout; a line the key did not sign is never a verdict."""
    report: dict[str, Any] | None = None
    kept = []
    for line in stdout.split("\n"):
        parts = line.split(" ", 2)
        if len(parts) == 3 and parts[0] == VERDICT_PREFIX and hmac.compare_digest(hmac.new(
                key, parts[2].encode("utf-8", errors="surrogatepass"), hashlib.sha256
        ).hexdigest(), parts[1]):
            with contextlib.suppress(ValueError):
                found = json.loads(parts[2])
                report = found if isinstance(found, dict) else report
            continue
        kept.append(line)
    return report, "\n".join(kept)


def isolation_level() -> str:
    return "weak" if bwrap_problem() else "bwrap"


_WEAK_ALLOWED: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "assay_weak_sandbox_allowed", default=False)


@contextlib.contextmanager
def allow_weak_isolation(allowed: bool = True) -> Iterator[None]:
    """Within the block (and contexts copied from it), code may run with weak isolation."""
    token = _WEAK_ALLOWED.set(bool(allowed))
    try:
        yield
    finally:
        _WEAK_ALLOWED.reset(token)


def check_isolation(what: str = "code from data or from a model", *,
                    allow_weak: bool | None = None, require: bool = False) -> str:
    """``"bwrap"``, or ``"weak"`` where bubblewrap fails and weak isolation is
    allowed (``allow_weak``, else the context's) and not ``require`` d; else a ConfigError."""
    problem = bwrap_problem()
    if problem is None:
        return "bwrap"
    problem = problem.replace(f" ({BWRAP_INSTALL})", "")
    if require:
        raise ConfigError(f"{what} needs a sandbox, and {problem}: install bubblewrap "
                          f"({BWRAP_INSTALL})")
    if not (_WEAK_ALLOWED.get() if allow_weak is None else allow_weak):
        raise ConfigError(f"{what} needs a sandbox, and {problem}: install bubblewrap "
                          f"({BWRAP_INSTALL}) or pass {ALLOW_WEAK_FLAG} to run it with weak "
                          "isolation (the host's files and network within its reach)")
    return "weak"


def bounds(limits: Limits, isolation: str, group: dict[str, str]) -> dict[str, str]:
    """The bounds on a run as a whole, in words (the cgroup's where it has them)."""
    out = dict(group)
    if "not bounded" in out.get("processes", "not bounded"):
        if isolation == "bwrap" and os.geteuid() == 0:
            out["processes"] = (f"{limits.processes} (RLIMIT_NPROC of a user id the run "
                                "has to itself)")
        elif isolation == "bwrap" or os.geteuid() != 0:
            out["processes"] = (f"{limits.processes} (RLIMIT_NPROC, shared with this "
                                "user's other processes)")
        else:
            out["processes"] = "not bounded: root is exempt from RLIMIT_NPROC, and " + (
                out.get("processes", "").split(": ", 1)[-1] or "no cgroup")
    if isolation != "bwrap":
        out["disk"] = (f"not bounded: weak isolation writes to the host's disk "
                       f"({limits.file_mb} MB per file)")
    elif bwrap_sizes_tmpfs():
        out["disk"] = f"{limits.disk_mb} MB (the scratch is a size-capped tmpfs)"
    else:
        out["disk"] = ("not bounded: this bwrap cannot cap a tmpfs (--size needs "
                       f"bubblewrap 0.8); {limits.file_mb} MB per file")
    return out


def describe_isolation(limits: Limits | None = None) -> dict[str, Any]:
    """What a run records about its sandbox: the isolation, why weak, limits, bounds."""
    limits = limits or Limits()
    problem = bwrap_problem()
    isolation = "weak" if problem else "bwrap"
    group = cgroup_method().bounds(limits.memory_mb, limits.processes)
    return {"isolation": isolation, "reason": problem,
            "limits": json.loads(json.dumps(asdict(limits))),
            "bounds": bounds(limits, isolation, group)}
