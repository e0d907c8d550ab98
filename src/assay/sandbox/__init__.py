"""Code from data or a model run in isolation via :class:`.process.Sandboxed`: :func:`run_python`
(one-shot, verdict signed given a key) or :class:`Session` (alive for one sample).

Under bubblewrap: read-only allow-list root; ``/tmp`` a tmpfs capped at ``Limits.disk_mb``, the
only writable place; no network; own process tree; cleared environment; own user id; rlimits,
a cgroup where allowed, a timeout, one run per CPU. Without bwrap, code runs only with
``--allow-weak-sandbox`` (``isolation="weak"``); else a one-line refusal."""

from assay.sandbox.bwrap import BWRAP_INSTALL, WORK, bwrap_problem, python_roots
from assay.sandbox.files import scratch_folder
from assay.sandbox.policy import (
    ALLOW_WEAK_FLAG,
    Limits,
    SandboxResult,
    allow_weak_isolation,
    check_isolation,
    describe_isolation,
    isolation_level,
    signal_of,
    verdict_report,
)
from assay.sandbox.process import KILL_GRACE_S, OUTPUT_LIMIT, run_python
from assay.sandbox.session import Session, SessionClosed

__all__ = ["ALLOW_WEAK_FLAG", "BWRAP_INSTALL", "KILL_GRACE_S", "OUTPUT_LIMIT", "WORK",
           "Limits", "SandboxResult", "Session", "SessionClosed", "allow_weak_isolation",
           "bwrap_problem", "check_isolation", "describe_isolation", "isolation_level",
           "python_roots", "run_python", "scratch_folder", "signal_of", "verdict_report"]
