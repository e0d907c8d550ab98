"""Running code that comes from data (``eval_code`` snippets, benchmark tests) in isolation.

With bubblewrap (``bwrap``, Debian package ``bubblewrap``, the tool Flatpak uses) the
code runs with:

* a read-only view of the root file system, with the home folder, ``/tmp``,
  ``/var/tmp``, ``/run`` and the current folder hidden behind empty tmpfs mounts
  (the Python installation is shown again, read-only, where it lives under them);
* one writable folder, ``/tmp/work``: a scratch copy of the files it is given;
* new namespaces for everything (``--unshare-all``): no network, its own process
  tree, which dies with it (``--die-with-parent``, ``--new-session``);
* a cleared environment (no API keys, no ``HOME`` secrets);
* rlimits set inside the sandbox before the code starts: CPU seconds, address space,
  file size, number of processes and open files; run by root, the code is moved to
  a user id of its own first (one no account has, new for every run), because the
  kernel does not apply the process limit to root and counts it per user: runs side by
  side (or a host daemon running as ``nobody``) would share one count;
* a wall-clock timeout, after which the whole process group is killed.

Without a working ``bwrap`` the code runs with the same rlimits, cleared environment
and scratch folder, but with the file system and network of the host: the result
says ``isolation="weak"``, and ``require=True`` refuses to run at all.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from assay.errors import ConfigError

__all__ = ["BWRAP_INSTALL", "Limits", "SandboxResult", "bwrap_problem", "isolation_level",
           "run_python"]

BWRAP_INSTALL = "apt-get install bubblewrap"
#: where the scratch folder appears inside the sandbox
WORK = "/tmp/work"
#: run by root, each run's code gets a user id from this range (see :func:`_run_uid`)
RUN_UIDS = (0x6E000000, 0x6F000000)
OUTPUT_LIMIT = 16_384  # characters of stdout/stderr kept
#: after a kill, how long the last of the output may take to come
KILL_GRACE_S = 5.0


@dataclass(frozen=True)
class Limits:
    """Resource limits for one run of sandboxed code."""

    timeout_s: float = 30.0
    cpu_s: int = 30
    memory_mb: int = 2048
    file_mb: int = 64
    processes: int = 64
    open_files: int = 256


@dataclass
class SandboxResult:
    """How sandboxed code ended."""

    exit_code: int | None
    stdout: str
    stderr: str
    timed_out: bool
    isolation: str  # "bwrap" or "weak"
    #: the files in the scratch folder after the run (relative paths), for diagnostics
    files: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Exit status 0 within the time limit."""
        return self.exit_code == 0 and not self.timed_out

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return asdict(self)


@functools.lru_cache(maxsize=1)
def bwrap_problem() -> str | None:
    """Why bubblewrap cannot isolate code here (``None`` when it can)."""
    exe = shutil.which("bwrap")
    if exe is None:
        return f"bwrap is not installed ({BWRAP_INSTALL})"
    try:
        probe = subprocess.run([exe, *_namespace_args(), "--ro-bind", "/", "/", "--die-with-parent",
                                "true"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"bwrap does not run: {e}"
    if probe.returncode != 0:
        return f"bwrap cannot create namespaces here: {probe.stderr.strip()[:200]}"
    return None


def isolation_level() -> str:
    """``"bwrap"`` when code from data is isolated with bubblewrap, else ``"weak"``."""
    return "weak" if bwrap_problem() else "bwrap"


def _namespace_args() -> list[str]:
    if os.geteuid() == 0:
        # run by root, bwrap makes no user namespace; the launcher needs setuid/setgid to
        # become a user of its own (the kernel never applies RLIMIT_NPROC to root)
        return ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts",
                "--unshare-cgroup-try", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    return ["--unshare-all"]


def _hidden_dirs() -> list[str]:
    """Folders that may hold secrets or other users' work: hidden inside the sandbox."""
    dirs = {"/tmp", "/var/tmp", "/run", "/root", os.path.expanduser("~"), os.getcwd()}
    return sorted(d for d in dirs if d and d != "/" and os.path.isdir(d))


def _python_roots() -> list[str]:
    roots = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    roots.add(os.path.dirname(os.path.dirname(os.path.realpath(sys.executable))))
    return sorted(r for r in roots if r and r != "/")


def _run_uid() -> int:
    """A user id for one run: RLIMIT_NPROC counts the processes of a user, so runs that
    shared one (``nobody``, say) would share one limit, and a fork bomb in one would leave
    the others, running at the same time, unable to start a process."""
    return RUN_UIDS[0] + secrets.randbelow(RUN_UIDS[1] - RUN_UIDS[0])


def _launcher(limits: Limits, script: str, uid: int | None) -> str:
    """The Python code that sets the limits inside the sandbox, then runs ``script``."""
    mb = 1024 * 1024
    lines = [
        "import os, resource, sys",
        f"resource.setrlimit(resource.RLIMIT_CPU, ({limits.cpu_s}, {limits.cpu_s}))",
        f"resource.setrlimit(resource.RLIMIT_AS, ({limits.memory_mb * mb}, "
        f"{limits.memory_mb * mb}))",
        f"resource.setrlimit(resource.RLIMIT_FSIZE, ({limits.file_mb * mb}, "
        f"{limits.file_mb * mb}))",
        f"resource.setrlimit(resource.RLIMIT_NOFILE, ({limits.open_files}, "
        f"{limits.open_files}))",
        f"resource.setrlimit(resource.RLIMIT_NPROC, ({limits.processes}, {limits.processes}))",
    ]
    if uid is not None:
        lines += ["os.setgroups([])", f"os.setgid({uid})", f"os.setuid({uid})"]
    lines.append(f"os.execv(sys.executable, [sys.executable, '-I', '-B', {script!r}])")
    return "; ".join(lines)


def _environment(home: str) -> dict[str, str]:
    # USER/LOGNAME: getpass.getuser() reads them first; the run's user id has no account
    return {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": home, "USER": "sandbox",
            "LOGNAME": "sandbox", "LANG": "C.UTF-8",
            "PYTHONDONTWRITEBYTECODE": "1", "PYTHONIOENCODING": "utf-8", "MPLBACKEND": "Agg"}


def _bwrap_command(scratch: Path, limits: Limits, script: str, uid: int | None) -> list[str]:
    cmd = ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    for d in _hidden_dirs():
        cmd += ["--tmpfs", d]
    hidden = _hidden_dirs()
    for r in _python_roots():  # the interpreter, shown again where a hidden folder covers it
        covering = [d for d in hidden if r == d or r.startswith(d.rstrip("/") + "/")]
        if not covering:
            continue
        # the folders leading to it, made traversable (bwrap makes mount points 0700)
        top = min(covering, key=len)
        parts = Path(r).relative_to(top).parts
        for i in range(1, len(parts)):
            cmd += ["--perms", "0755", "--dir", str(Path(top, *parts[:i]))]
        cmd += ["--ro-bind", r, r]
    cmd += ["--bind", str(scratch), WORK, "--chdir", WORK, *_namespace_args(),
            "--die-with-parent", "--new-session", "--clearenv"]
    for k, v in _environment(WORK).items():
        cmd += ["--setenv", k, v]
    return [*cmd, sys.executable, "-I", "-c", _launcher(limits, f"{WORK}/{script}", uid)]


def _weak_command(scratch: Path, limits: Limits, script: str) -> list[str]:
    return [sys.executable, "-I", "-c", _launcher(limits, str(scratch / script), None)]


def _copy_in(scratch: Path, sources: list[Path], files: dict[str, str | bytes]) -> None:
    for src in sources:
        target = scratch / src.name
        # links are copied as links: followed here (by the host, as root), a link in the
        # data or in an agent's files would carry what it points to (a secret in the
        # home folder, say) into the sandbox, past the folders the sandbox hides
        if src.is_symlink():
            os.symlink(os.readlink(src), target)
        elif src.is_dir():
            shutil.copytree(src, target, dirs_exist_ok=True, symlinks=True)
        elif src.is_file():
            shutil.copy2(src, target)
    for rel, content in files.items():
        target = (scratch / rel).resolve()
        if scratch.resolve() not in target.parents:
            raise ConfigError(f"sandbox file {rel!r} would lie outside the scratch folder")
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content, encoding="utf-8")


def _give_to(scratch: Path, uid: int) -> None:
    for dirpath, dirnames, filenames in os.walk(scratch):
        os.chown(dirpath, uid, uid)
        for name in filenames + dirnames:
            os.chown(os.path.join(dirpath, name), uid, uid, follow_symlinks=False)


def _listing(scratch: Path) -> list[str]:
    out = []
    for dirpath, _, filenames in os.walk(scratch):
        for name in filenames:
            out.append(os.path.relpath(os.path.join(dirpath, name), scratch))
    return sorted(out)[:200]


async def _drain(stream: asyncio.StreamReader, keep: bytearray) -> None:
    """Read ``stream`` to its end, keeping only its tail: the output may be endless."""
    while chunk := await stream.read(65_536):
        keep += chunk
        if len(keep) > 8 * OUTPUT_LIMIT:
            del keep[:-4 * OUTPUT_LIMIT]  # still OUTPUT_LIMIT characters, in UTF-8


async def _finish(proc: asyncio.subprocess.Process, out: bytearray, err: bytearray) -> None:
    assert proc.stdout is not None and proc.stderr is not None
    await asyncio.gather(_drain(proc.stdout, out), _drain(proc.stderr, err))
    await proc.wait()


async def _settle(proc: asyncio.subprocess.Process, finish: asyncio.Future[None]) -> None:
    """After a kill, wait a little for the end of the output. A process that left the
    process group (possible with weak isolation only: with bwrap the whole PID namespace
    dies) may hold the pipes open for ever: stop reading then, rather than hang."""
    try:
        await asyncio.wait_for(asyncio.shield(finish), KILL_GRACE_S)
    except asyncio.TimeoutError:
        finish.cancel()
        transport = getattr(proc, "_transport", None)
        if transport is not None:
            transport.close()


def _clip(data: bytes) -> str:
    text = data.decode("utf-8", errors="replace")
    return text if len(text) <= OUTPUT_LIMIT else text[-OUTPUT_LIMIT:]


async def run_python(script: str, *, files: dict[str, str | bytes] | None = None,
                     copy: list[Path] | None = None, limits: Limits | None = None,
                     require: bool = False) -> SandboxResult:
    """Run the Python file ``script`` (a path inside the scratch folder) in isolation.

    ``files`` (relative path -> content) and the files and folders in ``copy`` are put in
    a fresh scratch folder first; the folder is deleted afterwards. ``require``: raise a
    :class:`ConfigError` rather than run with weak isolation.
    """
    limits = limits or Limits()
    problem = bwrap_problem()
    if problem and require:
        raise ConfigError(f"code from data needs a sandbox and {problem}; install bubblewrap "
                          f"({BWRAP_INSTALL}) or leave out --require-sandbox")
    with tempfile.TemporaryDirectory(prefix="assay-sandbox-") as tmp:
        scratch = Path(tmp) / "work"
        scratch.mkdir()
        _copy_in(scratch, list(copy or []), dict(files or {}))
        if problem is None:
            uid = _run_uid() if os.geteuid() == 0 else None
            if uid is not None:
                _give_to(scratch, uid)
            cmd = _bwrap_command(scratch, limits, script, uid)
            env = _environment(WORK)
        else:
            cmd = _weak_command(scratch, limits, script)
            env = _environment(str(scratch))
        proc = await asyncio.create_subprocess_exec(
            *cmd, cwd=str(scratch), env=env, stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            start_new_session=True)
        # the output is read as it comes (not with communicate(), which a timeout cancels
        # and which keeps all of it): what was printed before a timeout is kept
        out, err = bytearray(), bytearray()
        finish = asyncio.ensure_future(_finish(proc, out, err))
        timed_out = False
        try:
            await asyncio.wait_for(asyncio.shield(finish), limits.timeout_s)
        except asyncio.TimeoutError:
            timed_out = True
            _kill_group(proc.pid)
            await _settle(proc, finish)
        except BaseException:
            _kill_group(proc.pid)
            await _settle(proc, finish)
            raise
        return SandboxResult(exit_code=proc.returncode, stdout=_clip(bytes(out)),
                             stderr=_clip(bytes(err)),
                             timed_out=timed_out, isolation="weak" if problem else "bwrap",
                             files=_listing(scratch))


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def describe_isolation() -> dict[str, Any]:
    """What a run records about how code from data was isolated."""
    problem = bwrap_problem()
    return {"isolation": "weak" if problem else "bwrap", "reason": problem,
            "limits": json.loads(json.dumps(asdict(Limits())))}
