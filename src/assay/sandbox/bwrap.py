"""The bubblewrap command of a sandboxed process: whether bwrap works, the file system,
environment and user id the code gets, and the launcher's configuration."""

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

from assay.sandbox.files import WORK_DIR

BWRAP_INSTALL = "apt-get install bubblewrap"
#: the sandbox's /tmp: a size-capped tmpfs holding the scratch folder and the support files
SCRATCH_ROOT = "/tmp"
WORK = f"{SCRATCH_ROOT}/{WORK_DIR}"
#: run by root, each run's code gets a user id from this range (see :func:`run_uid`)
RUN_UIDS = (0x6E000000, 0x6F000000)
MB = 1024 * 1024
#: files of /etc that the dynamic linker, Python and common libraries read (when present)
ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "timezone",
             "nsswitch.conf", "alternatives", "fonts", "mime.types")
#: top folders shown when they are folders of their own (on merged-/usr systems, links)
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
_LAUNCHER = Path(__file__).with_name("launcher.py").read_text(encoding="utf-8")


def _probe(*args: str) -> subprocess.CompletedProcess[str] | str:
    try:
        return subprocess.run(["bwrap", *namespace_args(), "--ro-bind", "/", "/", *args,
                               "--die-with-parent", "true"], capture_output=True, text=True,
                              timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        return str(e)


@functools.lru_cache(maxsize=1)
def bwrap_problem() -> str | None:
    """Why bubblewrap cannot isolate code here (``None`` when it can)."""
    if shutil.which("bwrap") is None:
        return f"bwrap is not installed ({BWRAP_INSTALL})"
    probe = _probe()
    if isinstance(probe, str):
        return f"bwrap does not run: {probe}"
    if probe.returncode != 0:
        return f"bwrap cannot create namespaces here: {probe.stderr.strip()[:200]}"
    return None


@functools.lru_cache(maxsize=1)
def bwrap_sizes_tmpfs() -> bool:
    """Whether this bwrap caps a tmpfs (``--size``, bubblewrap 0.8 or later)."""
    if shutil.which("bwrap") is None:
        return False
    probe = _probe("--size", str(MB), "--tmpfs", "/tmp")
    return not isinstance(probe, str) and probe.returncode == 0


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
    roots = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix,
                                           sys.base_exec_prefix)}
    roots.add(os.path.dirname(os.path.dirname(os.path.realpath(sys.executable))))
    return sorted(r for r in roots if r and r != "/")


def _visible(roots: list[str]) -> list[str]:
    """bwrap arguments showing the read-only allow-list on bwrap's own empty root."""
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


def bwrap_command(limits: dict[str, Any], argv: list[str], uid: int | None) -> list[str]:
    """``argv`` under ``limits`` as user ``uid`` (``None``: bwrap's user namespace)."""
    cmd = ["bwrap", *namespace_args(), "--die-with-parent", "--new-session", "--clearenv",
           "--dev", "/dev", "--proc", "/proc"]
    if bwrap_sizes_tmpfs():
        cmd += ["--size", str(limits["disk_mb"] * MB)]
    # the tmpfs first: a Python installation under /tmp is shown on top of it, not hidden
    cmd += ["--tmpfs", SCRATCH_ROOT, *_visible(python_roots()), "--chdir", SCRATCH_ROOT]
    for k, v in environment(WORK, SCRATCH_ROOT).items():
        cmd += ["--setenv", k, v]
    return [*cmd, *launcher(limits, SCRATCH_ROOT, argv, uid)]


def launcher(limits: dict[str, Any], root: str, argv: list[str], uid: int | None) -> list[str]:
    """The launcher told folders, user id, limits and command; alone, weak isolation's command."""
    config = {"root": root, "work": f"{root}/{WORK_DIR}", "uid": uid, "argv": argv,
              "limits": limits}
    return [sys.executable, "-I", "-c", _LAUNCHER, json.dumps(config)]


def run_uid() -> int:
    """A user id for one run: RLIMIT_NPROC counts a user's processes, so runs sharing
    one would share the limit, and a fork bomb in one would starve the others."""
    return RUN_UIDS[0] + secrets.randbelow(RUN_UIDS[1] - RUN_UIDS[0])


def environment(home: str, tmp: str) -> dict[str, str]:
    """The code's whole environment (nothing of the caller's)."""
    # USER/LOGNAME: getpass.getuser() reads them first; the run's user id has no account
    return {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": home, "TMPDIR": tmp,
            "USER": "sandbox", "LOGNAME": "sandbox", "LANG": "C.UTF-8",
            "PYTHONDONTWRITEBYTECODE": "1", "PYTHONIOENCODING": "utf-8", "MPLBACKEND": "Agg"}
