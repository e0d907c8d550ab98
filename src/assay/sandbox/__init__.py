"""Code from data or a model run in isolation, one way in (:class:`.process.Sandboxed`):
:func:`run_python` (one-shot, its verdict signed where a key is given) or :class:`Session`
(a Python or bash process alive for one sample).

Under bubblewrap: a read-only allow-list root (``/usr``, a few ``/etc`` files, the Python
installation); ``/tmp`` a fresh tmpfs capped at ``Limits.disk_mb`` holding the scratch
folder, the only writable place; no network; its own process tree; a cleared environment;
run by root, a user id of its own; rlimits per process and a cgroup where allowed; a
wall-clock timeout; one run per CPU at a time. Without a working bwrap, code runs only
with ``--allow-weak-sandbox`` (``isolation="weak"``); else a one-line refusal."""

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
