"""A sandboxed run bounded as a whole (rlimits bound each process: 64 of 2 GB are 128 GB):
memory and processes in a cgroup of its own, by the first that works of cgroup v2 (a child
of ours), ``systemd-run --scope``, cgroup v1. The run joins it before anything of it starts;
a bound that cannot be set is said in :attr:`RunGroup.bounds`."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import secrets
import shlex
import shutil
import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

MB = 1024 * 1024
#: processes of bubblewrap itself in the run's cgroup (its monitor and the pid 1 it starts)
BWRAP_PROCESSES = 2


@dataclass(frozen=True)
class Method:
    kind: str  # "cgroup2", "systemd-run", "cgroup1" or "" (none)
    #: the folder each run's cgroup is made in, per controller ("memory", "pids")
    parents: dict[str, str] = field(default_factory=dict)
    #: why there is no method, or what was tried (systemd-run: its path)
    note: str = ""

    def bounds(self, memory_mb: int, processes: int) -> dict[str, str]:
        """What a run's cgroup made this way bounds, in words."""
        how = {"cgroup2": "cgroup v2", "cgroup1": "cgroup v1",
               "systemd-run": "systemd scope"}.get(self.kind)
        have = set(self.parents) if self.parents else {"memory", "pids"}
        return {"memory": f"{memory_mb} MB ({how})" if how and "memory" in have else
                f"not bounded as a whole: {self.note if not how else 'no memory cgroup'}",
                "processes": f"{processes} ({how})" if how and "pids" in have else
                f"not bounded as a whole: {self.note if not how else 'no pids cgroup'}"}


def _mounts() -> list[tuple[str, str, set[str]]]:
    out = []
    with contextlib.suppress(OSError), open("/proc/self/mountinfo", encoding="utf-8") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            fields, rest = left.split(), right.split()
            if len(fields) >= 5 and len(rest) >= 3 and rest[0] in ("cgroup", "cgroup2"):
                point = fields[4].replace("\\040", " ")
                out.append((point, rest[0], set(rest[2].split(","))))
    return out


def _own_cgroups() -> dict[str, str]:
    """Controller (``""`` for v2) -> this process's cgroup path."""
    out = {}
    with contextlib.suppress(OSError), open("/proc/self/cgroup", encoding="utf-8") as f:
        for line in f:
            parts = line.rstrip("\n").split(":", 2)
            if len(parts) == 3:
                for ctl in parts[1].split(",") if parts[1] else [""]:
                    out[ctl] = parts[2]
    return out


def _read(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8").strip()
    except OSError:
        return ""


def _joins(parent: str, settings: dict[str, str]) -> bool:
    """Whether a child of ``parent`` can be made, set up and joined (tried for real)."""
    probe = os.path.join(parent, f"assay-probe-{secrets.token_hex(6)}")
    try:
        os.mkdir(probe)
    except OSError:
        return False
    try:
        for name, value in settings.items():
            Path(probe, name).write_text(value, encoding="utf-8")
        procs = os.path.join(probe, "cgroup.procs")
        done = subprocess.run(["/bin/sh", "-c", f"echo $$ > {shlex.quote(procs)}"],
                              capture_output=True, timeout=30, check=False)
        return done.returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False
    finally:
        with contextlib.suppress(OSError):
            os.rmdir(probe)


def _v2(mounts: list[tuple[str, str, set[str]]], own: dict[str, str]) -> Method | str:
    """Our own cgroup where it gives memory and pids to children; never one above ours (a
    run moved there would escape the limits of whatever started us)."""
    points = [m for m, kind, _ in mounts if kind == "cgroup2"]
    if not points or "" not in own:
        return "no cgroup v2"
    path = own[""].lstrip("/")
    for point in points:
        here = os.path.join(point, path) if path else point
        enabled = set(_read(os.path.join(here, "cgroup.subtree_control")).split())
        if ({"memory", "pids"} <= enabled and os.access(here, os.W_OK)
                and _joins(here, {"memory.max": str(64 * MB)})):
            return Method("cgroup2", {"memory": here, "pids": here})
    return (f"cgroup v2: our cgroup ({own['']}) gives no memory and pids controllers to "
            "cgroups of ours")


def _systemd() -> Method | str:
    exe = shutil.which("systemd-run")
    if exe is None or not os.path.isdir("/run/systemd/system"):
        return "no systemd to make a scope"
    cmd = [exe, *(["--user"] if os.geteuid() != 0 else []), "--scope", "--quiet", "--collect",
           "-p", "MemoryMax=64M", "-p", "TasksMax=16", "--", "/bin/true"]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError) as e:
        return f"systemd-run failed: {e}"
    if done.returncode != 0:
        return f"systemd-run refused a scope: {done.stderr.strip()[:200]}"
    return Method("systemd-run", {}, exe)


def _v1(mounts: list[tuple[str, str, set[str]]], own: dict[str, str]) -> Method | str:
    """A child of our own cgroup in the v1 ``memory`` and ``pids`` hierarchies."""
    parents = {}
    settings = {"memory": {"memory.limit_in_bytes": str(64 * MB)}, "pids": {"pids.max": "16"}}
    for ctl in ("memory", "pids"):
        for point, kind, opts in mounts:
            if kind == "cgroup" and ctl in opts and ctl in own:
                parent = os.path.join(point, own[ctl].lstrip("/"))
                if os.access(parent, os.W_OK) and _joins(parent, settings[ctl]):
                    parents[ctl] = parent
                    break
    if parents:
        return Method("cgroup1", parents)
    if not any(kind == "cgroup" for _, kind, _ in mounts):
        return "no cgroup v1"
    return "cgroup v1: no memory or pids cgroup of ours may be made"


@functools.lru_cache(maxsize=1)
def cgroup_method() -> Method:
    """How this machine bounds a run as a whole (found once); else ``note`` says what was tried."""
    mounts, own = _mounts(), _own_cgroups()
    tried = []
    for found in (_v2(mounts, own), _systemd(), _v1(mounts, own)):
        if isinstance(found, Method):
            return found
        tried.append(found)
    return Method("", {}, "no cgroup for the run: " + "; ".join(tried))


class RunGroup:
    """The cgroup of one run (or, where none can be made, the reason why)."""

    def __init__(self, memory_mb: int, processes: int, *, helpers: int = 0) -> None:
        """``processes`` for the code, and ``helpers`` more for what starts it (bwrap)."""
        self.method, self.memory_mb = cgroup_method(), memory_mb
        self.processes, self.helpers = processes, helpers
        self.dirs: dict[str, str] = {}  # controller -> the run's cgroup folder
        self.prefix: list[str] = []
        try:
            self._make()
        except OSError as e:  # a cgroup that cannot be made is said, never fatal
            self._remove_dirs()
            self.dirs, self.prefix = {}, []
            self.method = Method("", {}, f"the run's cgroup could not be made: {e}")
        self.bounds = self.method.bounds(memory_mb, processes)

    def _make(self) -> None:
        m = self.method
        name = f"assay-sandbox-{secrets.token_hex(8)}"
        if m.kind == "systemd-run":
            self.prefix = [m.note, *(["--user"] if os.geteuid() != 0 else []), "--scope",
                           "--quiet", "--collect", "-p", f"MemoryMax={self.memory_mb}M",
                           "-p", "MemorySwapMax=0", "-p", f"TasksMax={self.processes + self.helpers}", "--"]
            return
        made: dict[str, str] = {}  # v2: one folder for both controllers
        for ctl, parent in m.parents.items():
            if parent not in made:
                path = os.path.join(parent, name)
                os.mkdir(path)
                made[parent] = path
            self.dirs[ctl] = made[parent]
        if "memory" in self.dirs:
            d = self.dirs["memory"]
            if m.kind == "cgroup2":
                _write(d, "memory.max", str(self.memory_mb * MB))
                with contextlib.suppress(OSError):  # no swap accounting: nothing to bound
                    _write(d, "memory.swap.max", "0")
                with contextlib.suppress(OSError):  # one out of memory: all of the run
                    _write(d, "memory.oom.group", "1")
            else:
                _write(d, "memory.limit_in_bytes", str(self.memory_mb * MB))
                with contextlib.suppress(OSError):
                    _write(d, "memory.memsw.limit_in_bytes", str(self.memory_mb * MB))
        if "pids" in self.dirs:
            _write(self.dirs["pids"], "pids.max", str(self.processes + self.helpers))

    def wrap(self, cmd: list[str]) -> list[str]:
        if self.prefix:
            return [*self.prefix, *cmd]
        procs = dict.fromkeys(os.path.join(d, "cgroup.procs") for d in self.dirs.values())
        if not procs:
            return cmd
        joins = " && ".join(f"echo $$ > {shlex.quote(p)}" for p in procs)
        return ["/bin/sh", "-c", f'{joins} && exec "$@"', "sh", *cmd]

    def peak_mb(self) -> float | None:
        """The most memory the run held at once, where the kernel says."""
        d = self.dirs.get("memory")
        if d is None:
            return None
        text = _read(os.path.join(d, "memory.peak" if self.method.kind == "cgroup2"
                                  else "memory.max_usage_in_bytes"))
        return round(int(text) / MB, 1) if text.isdigit() else None

    def kill_all(self) -> bool:
        """Kill every process in the run's cgroup; whether there was any."""
        left = {int(p) for d in self.dirs.values()
                for p in _read(os.path.join(d, "cgroup.procs")).split() if p.isdigit()}
        for pid in left:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        return bool(left)

    async def close(self) -> None:
        """Kill what is left of the run and remove its cgroups; never raises."""
        for _ in range(100):
            if not self.kill_all():
                break
            await asyncio.sleep(0.02)
        for _ in range(50):
            if self._remove_dirs():
                return
            await asyncio.sleep(0.02)

    def _remove_dirs(self) -> bool:
        gone = True
        for d in dict.fromkeys(self.dirs.values()):
            try:
                os.rmdir(d)
            except FileNotFoundError:
                pass
            except OSError:
                gone = False
        return gone


def _write(folder: str, name: str, value: str) -> None:
    Path(folder, name).write_text(value, encoding="utf-8")
