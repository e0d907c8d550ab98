"""Running code that comes from data or from a model (``eval_code`` snippets, benchmark
tests) in isolation.

With bubblewrap (``bwrap``, Debian package ``bubblewrap``, the tool Flatpak uses) the
code runs with:

* a file system of its own that shows only what the code needs, read-only: ``/usr`` (and
  ``/bin``, ``/lib*`` where they are folders of their own), the few files of ``/etc``
  the dynamic linker and Python read, and the Python installation it runs on (the
  virtual environment and the interpreter it was made from); the workspace, the data
  cache, the home folder, ``/opt``, ``/srv``, the store are not there;
* ``/tmp`` a fresh tmpfs capped at ``Limits.disk_mb``, holding the scratch copy of its
  inputs (``/tmp/work``, the current folder) and the harness's own files
  (``/tmp/assay``); the inputs come as a stream on standard input, unpacked inside the
  sandbox (:mod:`assay.sandbox_launcher`), so the host's disk takes no write of the code;
* new namespaces (no network, its own process tree, which dies with it);
* a cleared environment (no API keys, no ``HOME`` secrets);
* run by root, a user id of its own (one no account has, new for every run);
* rlimits for each process (CPU seconds, address space, file size, open files,
  processes) and, where this machine allows a cgroup (:mod:`assay.sandbox_cgroup`),
  bounds on the run as a whole: total memory and total processes;
* a wall-clock timeout, after which the whole process group is killed; at most one run
  per CPU at a time (a wait for a turn is not timed).

Every result says which bounds held (``SandboxResult.bounds``), and
:func:`describe_isolation` says it for a run's record.

Without a working ``bwrap``, code runs only when the caller allows weak isolation
(``--allow-weak-sandbox``, see :func:`allow_weak_isolation`): then with the same rlimits,
cleared environment and scratch folder, but the file system and network of the host;
the result says ``isolation="weak"``. Otherwise :func:`run_python` refuses with one line
naming ``apt-get install bubblewrap`` and the flag.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from assay.errors import ConfigError
from assay.sandbox_bwrap import (
    MB,
    SCRATCH_ROOT,
    WORK,
    bwrap_command,
    bwrap_sizes_tmpfs,
    environment,
    namespace_args,
    python_roots,
    run_uid,
    weak_command,
)
from assay.sandbox_cgroup import BWRAP_PROCESSES, RunGroup, cgroup_method
from assay.sandbox_fs import SUPPORT_DIR, WORK_DIR, InputsTooBig, pack, remove_tree
from assay.sandbox_process import clip, feed, finish_run, kill_group, settle, slots

__all__ = ["ALLOW_WEAK_FLAG", "BWRAP_INSTALL", "Limits", "SandboxResult",
           "allow_weak_isolation", "bwrap_problem", "check_isolation", "describe_isolation",
           "isolation_level", "python_roots", "refusal", "remove_tree", "run_python",
           "scratch_folder", "weak_isolation_allowed"]

BWRAP_INSTALL = "apt-get install bubblewrap"
ALLOW_WEAK_FLAG = "--allow-weak-sandbox"


@dataclass(frozen=True)
class Limits:
    """Resource limits for one run of sandboxed code."""

    timeout_s: float = 30.0
    cpu_s: int = 30
    #: address space of each process, and the memory of the whole run where a cgroup can
    #: bound it (see ``SandboxResult.bounds``)
    memory_mb: int = 2048
    file_mb: int = 64
    #: processes of the user id the run has to itself (and of its cgroup, where there is one)
    processes: int = 64
    open_files: int = 256
    #: the size of the scratch tmpfs: the inputs and everything the code writes
    disk_mb: int = 512


@dataclass
class SandboxResult:
    """How sandboxed code ended."""

    exit_code: int | None
    stdout: str
    stderr: str
    timed_out: bool
    isolation: str  # "bwrap" or "weak"
    #: the files given to the run (relative paths in the scratch folder), for diagnostics
    files: list[str] = field(default_factory=list)
    #: the bounds on the run as a whole: "memory", "processes", "disk" -> what held them
    #: (or why nothing did)
    bounds: dict[str, str] = field(default_factory=dict)
    #: the most memory the run held at once, where the kernel tells (a cgroup's peak)
    peak_memory_mb: float | None = None

    @property
    def ok(self) -> bool:
        """Exit status 0 within the time limit."""
        return self.exit_code == 0 and not self.timed_out

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return asdict(self)


# -- whether bubblewrap works, and whether weak isolation is allowed ----------------------


@functools.lru_cache(maxsize=1)
def bwrap_problem() -> str | None:
    """Why bubblewrap cannot isolate code here (``None`` when it can)."""
    exe = shutil.which("bwrap")
    if exe is None:
        return f"bwrap is not installed ({BWRAP_INSTALL})"
    try:
        probe = subprocess.run([exe, *namespace_args(), "--ro-bind", "/", "/", "--die-with-parent",
                                "true"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"bwrap does not run: {e}"
    if probe.returncode != 0:
        return f"bwrap cannot create namespaces here: {probe.stderr.strip()[:200]}"
    return None


def isolation_level() -> str:
    """``"bwrap"`` when code from data is isolated with bubblewrap, else ``"weak"``."""
    return "weak" if bwrap_problem() else "bwrap"


_WEAK_ALLOWED: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "assay_weak_sandbox_allowed", default=False)


@contextlib.contextmanager
def allow_weak_isolation(allowed: bool = True) -> Iterator[None]:
    """Within the block (and the tasks and threads that copy its context), code from data
    or from a model may run with weak isolation where bubblewrap does not work; the
    engine enters it for a run given ``--allow-weak-sandbox``."""
    token = _WEAK_ALLOWED.set(bool(allowed))
    try:
        yield
    finally:
        _WEAK_ALLOWED.reset(token)


def weak_isolation_allowed() -> bool:
    """Whether weak isolation was allowed here (see :func:`allow_weak_isolation`)."""
    return _WEAK_ALLOWED.get()


def refusal(problem: str, what: str = "code from data or from a model") -> str:
    """The one-line error for running ``what`` where bubblewrap does not work."""
    problem = problem.replace(f" ({BWRAP_INSTALL})", "")
    return (f"{what} needs a sandbox, and {problem}: install bubblewrap ({BWRAP_INSTALL}) "
            f"or pass {ALLOW_WEAK_FLAG} to run it with weak isolation (the host's files "
            "and network within its reach)")


def check_isolation(what: str = "code from data or from a model", *,
                    allow_weak: bool | None = None) -> str:
    """``"bwrap"``, or ``"weak"`` where bubblewrap does not work and weak isolation is
    allowed (``allow_weak``, else :func:`weak_isolation_allowed`); else a one-line
    :class:`ConfigError` naming ``apt-get install bubblewrap`` and ``--allow-weak-sandbox``.
    """
    problem = bwrap_problem()
    if problem is None:
        return "bwrap"
    if not (weak_isolation_allowed() if allow_weak is None else allow_weak):
        raise ConfigError(refusal(problem, what))
    return "weak"


# -- the bubblewrap command ---------------------------------------------------------------


# -- what bounds a run -------------------------------------------------------------------


def _bounds(limits: Limits, isolation: str, group: dict[str, str]) -> dict[str, str]:
    """The bounds on a run as a whole, in words: the cgroup's where it has them."""
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
    """What a run records about how code from data is isolated: the isolation, why it is
    weak, the limits of each run and the bounds on each run as a whole."""
    limits = limits or Limits()
    problem = bwrap_problem()
    isolation = "weak" if problem else "bwrap"
    method = cgroup_method()
    if method.kind == "":
        group = {k: f"not bounded as a whole: {method.note}" for k in ("memory", "processes")}
    else:
        how = {"cgroup2": "cgroup v2", "cgroup1": "cgroup v1", "systemd-run": "systemd scope"}
        have = set(method.parents) if method.parents else {"memory", "pids"}
        group = {"memory": (f"{limits.memory_mb} MB ({how[method.kind]})" if "memory" in have
                            else "not bounded as a whole: no memory cgroup"),
                 "processes": (f"{limits.processes} ({how[method.kind]})" if "pids" in have
                               else "not bounded as a whole: no pids cgroup")}
    return {"isolation": isolation, "reason": problem,
            "limits": json.loads(json.dumps(asdict(limits))),
            "bounds": _bounds(limits, isolation, group)}


# -- running ------------------------------------------------------------------------------


@contextlib.contextmanager
def scratch_folder(prefix: str = "assay-") -> Iterator[str]:
    """A fresh temporary folder (its path), removed afterwards whatever code left in it
    (any depth, any modes, links, fifos: see :func:`remove_tree`); unlike
    ``tempfile.TemporaryDirectory``, the removal never raises."""
    path = tempfile.mkdtemp(prefix=prefix)
    try:
        yield path
    finally:
        remove_tree(path)


async def run_python(script: str, *, files: dict[str, str | bytes] | None = None,
                     copy: list[Path] | None = None, limits: Limits | None = None,
                     require: bool = False, support: dict[str, str | bytes] | None = None,
                     allow_weak: bool | None = None) -> SandboxResult:
    """Run the Python file ``script`` in isolation.

    ``files`` (relative path -> content) and the files and folders in ``copy`` make the
    scratch folder, the code's current folder; ``support`` (relative path -> content)
    are the harness's own files, in a folder of their own beside it (``SUPPORT``), so
    nothing the inputs hold can take their place. ``script`` is a path in ``support``
    when it is one of its keys, else in the scratch folder. Nothing the code does to
    either folder makes this raise: what it leaves is removed, whatever its depth or
    modes; inputs larger than ``limits.disk_mb`` end the run unstarted (not ``ok``).

    Where bubblewrap does not work, the code runs with weak isolation only when allowed
    (``allow_weak``, else :func:`weak_isolation_allowed`); ``require=True`` refuses it
    even then. A refusal is a one-line :class:`ConfigError`.
    """
    limits = limits or Limits()
    problem = bwrap_problem()
    if problem is not None:
        if require:  # weak isolation refused even where it is allowed
            raise ConfigError(f"code from data or from a model needs a sandbox, and "
                              f"{problem.replace(f' ({BWRAP_INSTALL})', '')}: install "
                              f"bubblewrap ({BWRAP_INSTALL})")
        check_isolation(allow_weak=allow_weak)
    isolation = "weak" if problem else "bwrap"
    support = dict(support or {})
    inside = SUPPORT_DIR if script in support else WORK_DIR
    async with slots():
        tmp = Path(tempfile.mkdtemp(prefix="assay-sandbox-"))
        group: RunGroup | None = None
        feeding: asyncio.Future[None] | None = None
        try:
            tar = tmp / "inputs.tar"
            try:
                listing = pack(tar, copy=list(copy or []), files=dict(files or {}),
                               support=support, budget_bytes=limits.disk_mb * MB)
            except InputsTooBig as e:
                return SandboxResult(
                    exit_code=None, stdout="", timed_out=False, isolation=isolation,
                    stderr=f"assay sandbox: {e}, more than the scratch folder holds "
                           f"(disk_mb={limits.disk_mb}); the code did not run",
                    bounds=_bounds(limits, isolation, {}))
            if problem is None:
                uid = run_uid() if os.geteuid() == 0 else None
                cmd = bwrap_command(asdict(limits), f"{SCRATCH_ROOT}/{inside}/{script}", uid)
                env, cwd = environment(WORK, SCRATCH_ROOT), str(tmp)
                helpers = BWRAP_PROCESSES
            else:
                root = tmp / "root"
                root.mkdir()
                cmd = weak_command(root, asdict(limits), str(root / inside / script))
                env, cwd = environment(str(root / WORK_DIR), str(root)), str(root)
                helpers = 0
            group = RunGroup(limits.memory_mb, limits.processes, helpers=helpers)
            # the inputs go through a pipe, never as an open file: run as the same user
            # (no root here), the code could open the sandbox's /proc/1/fd/0 and read a
            # file again, harness files included; a pipe it has already emptied
            proc = await asyncio.create_subprocess_exec(
                *group.wrap(cmd), cwd=cwd, env=env, stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                start_new_session=True)
            feeding = asyncio.ensure_future(feed(proc, tar))
            # the output is read as it comes (not with communicate(), which a timeout
            # cancels and which keeps all of it): what was printed before a timeout is kept
            out, err = bytearray(), bytearray()
            finish = asyncio.ensure_future(finish_run(proc, out, err, group))
            timed_out = False
            try:
                await asyncio.wait_for(asyncio.shield(finish), limits.timeout_s)
            except asyncio.TimeoutError:
                timed_out = True
                kill_group(proc.pid)
                await settle(proc, finish)
            except BaseException:
                kill_group(proc.pid)
                await settle(proc, finish)
                raise
            return SandboxResult(exit_code=proc.returncode, stdout=clip(bytes(out)),
                                 stderr=clip(bytes(err)), timed_out=timed_out,
                                 isolation=isolation, files=listing,
                                 bounds=_bounds(limits, isolation, group.bounds),
                                 peak_memory_mb=group.peak_mb())
        finally:
            if feeding is not None and not feeding.done():
                feeding.cancel()
            if group is not None:
                await group.close()  # what is left of the run is killed first
            remove_tree(tmp)
