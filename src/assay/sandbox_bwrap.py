"""The bubblewrap command line of a sandboxed run: what the code's file system shows, its
environment, its user id, and the launcher's configuration (:mod:`assay.sandbox`
runs it; :mod:`assay.sandbox_launcher` starts the code inside)."""

from __future__ import annotations

import functools
import json
import os
import secrets
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from assay.sandbox_fs import SUPPORT_DIR, WORK_DIR

#: the sandbox's /tmp: a size-capped tmpfs holding the scratch folder and the support files
SCRATCH_ROOT = "/tmp"
#: where the scratch folder appears inside the sandbox
WORK = f"{SCRATCH_ROOT}/{WORK_DIR}"
#: where the harness's own files (``support``) appear inside the sandbox
SUPPORT = f"{SCRATCH_ROOT}/{SUPPORT_DIR}"
#: run by root, each run's code gets a user id from this range (see :func:`run_uid`)
RUN_UIDS = (0x6E000000, 0x6F000000)
MB = 1024 * 1024
#: files of /etc that the dynamic linker, Python and common libraries read (when present)
ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "timezone",
             "nsswitch.conf", "alternatives", "fonts", "mime.types")
#: top folders shown when they are folders of their own (on merged-/usr systems, links)
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
_LAUNCHER = (Path(__file__).with_name("sandbox_launcher.py")).read_text(encoding="utf-8")


@functools.lru_cache(maxsize=1)
def bwrap_sizes_tmpfs() -> bool:
    """Whether this bwrap caps a tmpfs (``--size``, bubblewrap 0.8 or later)."""
    exe = shutil.which("bwrap")
    if exe is None:
        return False
    try:
        probe = subprocess.run([exe, *namespace_args(), "--ro-bind", "/", "/", "--size",
                                str(MB), "--tmpfs", "/tmp", "--die-with-parent", "true"],
                               capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return probe.returncode == 0


def namespace_args() -> list[str]:
    """bwrap's namespace arguments (run by root: the capabilities the launcher needs)."""
    if os.geteuid() == 0:
        # run by root, bwrap makes no user namespace; the launcher needs setuid/setgid to
        # become a user of its own (the kernel never applies RLIMIT_NPROC to root), and
        # chown to give it the scratch tmpfs, which bwrap makes as root
        return ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts",
                "--unshare-cgroup-try", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID",
                "--cap-add", "CAP_CHOWN"]
    return ["--unshare-all"]


def python_roots() -> list[str]:
    """The folders of the Python installation the code runs on (shown read-only)."""
    roots = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix,
                                           sys.base_exec_prefix)}
    roots.add(os.path.dirname(os.path.dirname(os.path.realpath(sys.executable))))
    return sorted(r for r in roots if r and r != "/")


def _visible(roots: list[str]) -> list[str]:
    """bwrap arguments for the read-only part of the sandbox's file system: an allow-list,
    on bwrap's own empty root."""
    args: list[str] = []
    shown: list[str] = []
    made: set[str] = {"/"}

    def show(path: str) -> None:
        # the folders leading to it, made traversable (bwrap would make them 0700)
        parts = Path(path).parts
        for i in range(2, len(parts)):
            parent = str(Path(*parts[:i]))
            if parent not in made:
                args.extend(["--perms", "0755", "--dir", parent])
                made.add(parent)
        args.extend(["--ro-bind", path, path])

    for d in SYSTEM_DIRS:
        if os.path.islink(d):  # merged /usr: /bin -> usr/bin
            args += ["--symlink", os.readlink(d), d]
        elif os.path.isdir(d):
            show(d)
            shown.append(d)
    for name in ETC_FILES:
        if os.path.exists(f"/etc/{name}"):
            show(f"/etc/{name}")
    for path in sorted(Path("/etc").glob("python3*")):  # Debian's sitecustomize
        show(str(path))
    for r in sorted(roots, key=len):
        if any(r == s or r.startswith(s.rstrip("/") + "/") for s in shown):
            continue  # already shown (a Python under /usr, a venv inside another root)
        show(r)
        shown.append(r)
    return args


def bwrap_command(limits: dict[str, Any], script: str, uid: int | None) -> list[str]:
    """The bwrap command running ``script`` under ``limits`` (a :class:`~assay.sandbox.Limits`
    as a dict) as user ``uid`` (``None``: bwrap's own user namespace)."""
    cmd = ["bwrap", *namespace_args(), "--die-with-parent", "--new-session", "--clearenv",
           "--dev", "/dev", "--proc", "/proc"]
    if bwrap_sizes_tmpfs():
        cmd += ["--size", str(limits["disk_mb"] * MB)]
    # the tmpfs first: a Python installation under /tmp is shown on top of it, not hidden
    cmd += ["--tmpfs", SCRATCH_ROOT, *_visible(python_roots()), "--chdir", SCRATCH_ROOT]
    for k, v in environment(WORK, SCRATCH_ROOT).items():
        cmd += ["--setenv", k, v]
    return [*cmd, sys.executable, "-I", "-c", _LAUNCHER,
            launch_config(limits, SCRATCH_ROOT, script, uid)]


def weak_command(root: Path, limits: dict[str, Any], script: str) -> list[str]:
    """The command running ``script`` with weak isolation: the launcher alone."""
    return [sys.executable, "-I", "-c", _LAUNCHER, launch_config(limits, str(root), script,
                                                                  None)]


def launch_config(limits: dict[str, Any], root: str, script: str, uid: int | None) -> str:
    """What the launcher is told: the folders, the user id, the script, the limits."""
    return json.dumps({"root": root, "work": f"{root}/{WORK_DIR}", "uid": uid,
                       "script": script, "limits": limits})


def run_uid() -> int:
    """A user id for one run: RLIMIT_NPROC counts the processes of a user, so runs that
    shared one (``nobody``, say) would share one limit, and a fork bomb in one would leave
    the others, running at the same time, unable to start a process."""
    return RUN_UIDS[0] + secrets.randbelow(RUN_UIDS[1] - RUN_UIDS[0])


def environment(home: str, tmp: str) -> dict[str, str]:
    """The whole environment of the code (nothing of the caller's)."""
    # USER/LOGNAME: getpass.getuser() reads them first; the run's user id has no account
    return {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": home, "TMPDIR": tmp,
            "USER": "sandbox", "LOGNAME": "sandbox", "LANG": "C.UTF-8",
            "PYTHONDONTWRITEBYTECODE": "1", "PYTHONIOENCODING": "utf-8", "MPLBACKEND": "Agg"}
