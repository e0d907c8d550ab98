"""The sandbox that runs code from data (``eval_code`` snippets): real runs, no mocks.

Each test runs a small Python snippet with :func:`assay.sandbox.run_python` and checks
what a user relies on: the snippet does its job in the scratch folder, and it cannot run
for ever, exhaust processes or memory, read secrets (environment, home folder, current
folder), write to the host, or reach the network. The last tests take bubblewrap away
and check the weak fallback and ``require=True``.

Timing: the only time checks are "the timeout fired"; the limits are small so that the
whole file runs in seconds, and nothing depends on how fast the machine is.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import resource
import signal
import socket
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import pytest

from assay import sandbox
from assay.errors import ConfigError
from assay.sandbox import Limits, SandboxResult, bwrap_problem, isolation_level, run_python

SECRET = "sk-test-secret-XYZ"
FAST = Limits(timeout_s=3, cpu_s=2)
#: for snippets that should end by themselves: the timeout is only a backstop
ROOMY = Limits(timeout_s=30, cpu_s=10)


async def _run(code: str, *, limits: Limits = FAST, name: str = "snippet.py",
               files: dict[str, str | bytes] | None = None, copy: list[Path] | None = None,
               require: bool = False, allow_weak: bool | None = None) -> SandboxResult:
    extra = {} if allow_weak is None else {"allow_weak": allow_weak}
    run = run_python(name, files={name: code, **(files or {})}, copy=copy, limits=limits,
                     require=require, **extra)
    # a backstop, far past the run's own timeout: a run that hangs fails the test
    backstop = limits.timeout_s + sandbox.KILL_GRACE_S + 60
    try:
        return await asyncio.wait_for(run, backstop)
    except asyncio.TimeoutError:
        pytest.fail(f"run_python did not return {backstop:g} s after it started")


def _marker() -> str:
    return f"assaymark{uuid.uuid4().hex}"


def _processes_with(marker: str) -> list[int]:
    """Host processes whose command line mentions ``marker`` (zombies have none)."""
    needle = marker.encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            cmdline = Path("/proc", entry, "cmdline").read_bytes()
        except OSError:
            continue
        if needle in cmdline:
            found.append(int(entry))
    return found


def _processes_of_a_run_user(marker: str) -> list[int]:
    """The processes with ``marker`` that run as another user than this test (the user
    id the sandbox gives the code when the tests run as root)."""
    out = []
    for pid in _processes_with(marker):
        with contextlib.suppress(OSError):
            if os.stat(f"/proc/{pid}").st_uid != os.getuid():
                out.append(pid)
    return out


def _assert_no_process_left(marker: str, wait_s: float = 5.0) -> None:
    deadline = time.monotonic() + wait_s
    left = _processes_with(marker)
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = _processes_with(marker)
    assert left == [], f"sandboxed processes outlived the run: {left}"


def _scratch_dirs() -> set[str]:
    base = Path(tempfile.gettempdir())
    return {p.name for p in base.glob("assay-sandbox-*")}


@pytest.fixture
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temp folder of this test's own for the scratch folders, so that other programs
    using the sandbox at the same time (their scratch folders) do not count."""
    base = tmp_path / "tempdir"
    base.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(base))
    assert tempfile.gettempdir() == str(base)
    return base






# -- 1. a normal snippet ------------------------------------------------------------------


async def test_snippet_reads_given_and_copied_files_and_exits_zero(tmp_path: Path) -> None:
    data = tmp_path / "case_data"
    (data / "sub").mkdir(parents=True)
    (data / "sub" / "table.csv").write_text("a,b\n1,2\n", encoding="utf-8")
    single = tmp_path / "notes.txt"
    single.write_text("copied single file", encoding="utf-8")
    code = (
        "import os\n"
        "print(open('given.txt').read())\n"
        "print(open('case_data/sub/table.csv').read().splitlines()[1])\n"
        "print(open('notes.txt').read())\n"
        "print('cwd', os.getcwd())\n"
    )
    r = await _run(code, files={"given.txt": "hello from files"}, copy=[data, single])
    assert r.exit_code == 0, r.stderr
    assert r.ok and not r.timed_out
    assert r.isolation == "bwrap" == isolation_level()
    assert "hello from files" in r.stdout
    assert "1,2" in r.stdout
    assert "copied single file" in r.stdout
    assert f"cwd {sandbox.WORK}" in r.stdout
    assert {"given.txt", "case_data/sub/table.csv", "notes.txt"} <= set(r.files)


async def test_writing_in_the_scratch_folder_works() -> None:
    code = (
        "from pathlib import Path\n"
        "Path('out/result.txt').parent.mkdir()\n"
        "Path('out/result.txt').write_text('written inside')\n"
        "print(Path('out/result.txt').read_text())\n"
    )
    r = await _run(code)
    assert r.exit_code == 0, r.stderr
    assert "written inside" in r.stdout
    # the result lists the files the run was given (the scratch, a tmpfs, ends with it)
    assert r.files == ["snippet.py"]


async def test_files_outside_the_scratch_folder_are_refused(tmp_path: Path) -> None:
    for rel in ("../escape.txt", "a/../../escape.txt", str(tmp_path / "abs.txt")):
        with pytest.raises(ConfigError, match="outside the scratch folder"):
            await _run("print('never runs')", files={rel: "x"})
    assert not (tmp_path / "abs.txt").exists()


# -- 2. time ------------------------------------------------------------------------------


async def test_infinite_loop_is_stopped() -> None:
    r = await _run("while True:\n    pass\n", limits=FAST)
    assert not r.ok
    # the CPU limit (a kill: non-zero status) or the wall-clock timeout, whichever first
    assert r.timed_out or (r.exit_code is not None and r.exit_code != 0)


async def test_cpu_limit_kills_a_busy_loop_before_a_long_timeout() -> None:
    r = await _run("while True:\n    pass\n", limits=Limits(timeout_s=60, cpu_s=1))
    assert not r.timed_out, "the CPU limit should have ended the loop long before 60 s"
    assert r.exit_code is not None and r.exit_code != 0


async def test_sleep_runs_into_the_timeout() -> None:
    marker = _marker()
    r = await _run("import time\ntime.sleep(1000)\n", name=f"{marker}.py",
                   limits=Limits(timeout_s=2, cpu_s=2))
    assert r.timed_out is True
    assert not r.ok
    _assert_no_process_left(marker)


async def test_output_printed_before_a_timeout_is_kept() -> None:
    code = ("import sys, time\n"
            "print('progress so far', flush=True)\n"
            "print('a warning', file=sys.stderr, flush=True)\n"
            "time.sleep(1000)\n")
    r = await _run(code, limits=Limits(timeout_s=2, cpu_s=2))
    assert r.timed_out is True
    assert "progress so far" in r.stdout
    assert "a warning" in r.stderr


async def test_endless_output_is_cut_to_its_tail() -> None:
    """300 MB printed: the result keeps the tail, and the host does not hold it all."""
    code = ("import sys\n"
            "line = 'x' * 1023 + '\\n'\n"
            "for _ in range(300 * 1024):\n"
            "    sys.stdout.write(line)\n"
            "print('THE END')\n")
    peak_before_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    r = await _run(code, limits=Limits(timeout_s=120, cpu_s=60))
    peak_after_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert r.exit_code == 0, r.stderr
    assert r.stdout.endswith("THE END\n")
    assert len(r.stdout) <= sandbox.OUTPUT_LIMIT
    assert (peak_after_kib - peak_before_kib) < 100 * 1024, "the output was held in memory"


# -- 3. processes -------------------------------------------------------------------------

COUNT_FORKS = """\
import os, sys, time
n = 0
while True:
    try:
        pid = os.fork()
    except OSError as e:
        print("forks", n, type(e).__name__, flush=True)
        break
    if pid == 0:
        time.sleep(1000)
        os._exit(0)
    n += 1
sys.exit(0)
"""

FORK_BOMB = """\
import os
print("bomb started", flush=True)
while True:
    try:
        os.fork()
    except OSError:
        pass
"""


async def test_forks_are_capped_by_the_process_limit_and_children_die_with_the_run() -> None:
    marker = _marker()
    limits = Limits(timeout_s=30, cpu_s=5, processes=16)
    r = await _run(COUNT_FORKS, name=f"{marker}.py", limits=limits)
    assert not r.timed_out, r.stderr
    assert r.exit_code == 0, r.stderr
    words = r.stdout.split()
    assert words[:1] == ["forks"], r.stdout
    forks = int(words[1])
    # the snippet itself is one process of the limit
    assert 1 <= forks < limits.processes, r.stdout
    # the sleeping children did not survive their parent's exit
    _assert_no_process_left(marker)


async def test_fork_bomb_is_contained() -> None:
    marker = _marker()
    r = await _run(FORK_BOMB, name=f"{marker}.py",
                   limits=Limits(timeout_s=3, cpu_s=2, processes=16))
    assert not r.ok
    assert r.timed_out or r.exit_code != 0
    _assert_no_process_left(marker)


async def test_background_child_does_not_outlive_a_snippet_that_exits() -> None:
    marker = _marker()
    code = (
        "import os, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    while True:\n"
        "        time.sleep(0.1)\n"
        "print('parent done', flush=True)\n"
    )
    r = await _run(code, name=f"{marker}.py", limits=Limits(timeout_s=30, cpu_s=5))
    assert r.exit_code == 0, r.stderr
    assert "parent done" in r.stdout
    assert not r.timed_out, "the run should end when the snippet exits, not at the timeout"
    _assert_no_process_left(marker)


HOLD_ALL_PROCESSES = """\
import os, time
while True:
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(1000)
        os._exit(0)
open("full", "w").write("the process limit is reached")
time.sleep(1000)
"""


async def test_a_fork_bomb_does_not_starve_a_concurrent_run(private_tmp: Path) -> None:
    """Runs go on side by side (the engine runs cases concurrently): one that uses up its
    process limit must not leave another without processes."""
    marker = _marker()
    limits = Limits(timeout_s=60, cpu_s=10, processes=16)
    before = _scratch_dirs()
    hog = asyncio.ensure_future(_run(HOLD_ALL_PROCESSES, name=f"{marker}.py", limits=limits))
    try:
        deadline = time.monotonic() + 30
        # the hog's scratch is a tmpfs of its own: its processes, seen from the host (those
        # of its user id: bubblewrap's own run as root), say when it holds them all
        while len(_processes_of_a_run_user(marker)) < limits.processes:
            assert not hog.done(), hog.result()
            assert time.monotonic() < deadline, "the first run never reached its limit"
            await asyncio.sleep(0.05)
        code = "import subprocess, sys\nprint(subprocess.run([sys.executable, '-c', 'print(42)'],\n" \
               "    capture_output=True, text=True).stdout.strip())\n"
        r = await _run(code, limits=limits)
        assert r.exit_code == 0, r.stderr
        assert r.stdout.strip() == "42"
        assert not hog.done()
    finally:
        hog.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await hog
    # cancelling a run kills what it started
    _assert_no_process_left(marker)
    assert _scratch_dirs() - before == set()


PRIVILEGES = """\
import getpass, json, os, shutil, subprocess
status = dict(line.split(":", 1) for line in open("/proc/self/status") if ":" in line)
out = {"uid": os.getuid(), "euid": os.geteuid(), "gid": os.getgid(), "groups": os.getgroups(),
       "user": getpass.getuser(),
       "caps": [status[k].strip() for k in ("CapPrm", "CapEff", "CapAmb")],
       "no_new_privs": status["NoNewPrivs"].strip()}
mount = shutil.which("mount")
if mount:  # a setuid-root program on most systems
    os.mkdir("mnt")
    out["mount"] = subprocess.run([mount, "-t", "tmpfs", "none", "mnt"],
                                  capture_output=True).returncode
print(json.dumps(out))
"""


async def test_code_runs_unprivileged() -> None:
    r = await _run(PRIVILEGES)
    assert r.exit_code == 0, r.stderr
    seen = json.loads(r.stdout)
    assert seen["uid"] != 0 and seen["euid"] != 0 and seen["gid"] != 0
    assert 0 not in seen["groups"]
    assert seen["user"]  # getpass works, though the user id has no account
    assert seen["caps"] == ["0000000000000000"] * 3
    assert seen["no_new_privs"] == "1"  # setuid programs give no privileges
    assert seen.get("mount", 1) != 0


# -- 4. environment -----------------------------------------------------------------------


async def test_environment_is_cleared_of_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("ASSAY_TEST_TOKEN", SECRET)
    code = (
        "import json, os\n"
        f"host_pid = {os.getpid()}\n"
        "print('key', os.environ.get('OPENAI_API_KEY'))\n"
        "print(json.dumps(dict(os.environ)))\n"
        "for path in ('/proc/self/environ', '/proc/1/environ', f'/proc/{host_pid}/environ',\n"
        "             f'/proc/{os.getppid()}/environ'):\n"
        "    try:\n"
        "        print(path, open(path, 'rb').read())\n"
        "    except OSError as e:\n"
        "        print(path, type(e).__name__)\n"
    )
    r = await _run(code)
    assert r.exit_code == 0, r.stderr
    assert SECRET not in r.stdout and SECRET not in r.stderr
    assert "key None" in r.stdout
    env = json.loads(r.stdout.splitlines()[1])
    assert "OPENAI_API_KEY" not in env and "ASSAY_TEST_TOKEN" not in env
    assert env["HOME"] == sandbox.WORK


# -- 5. writing outside the scratch folder ------------------------------------------------

WRITE = """\
import sys
target = {target!r}
with open(target, "w") as f:
    f.write("escaped")
print("WROTE", target)
"""


def _write_targets(tmp_path: Path) -> dict[str, Path]:
    name = f"assay-sandbox-escape-{uuid.uuid4().hex}.txt"
    return {"cwd": Path.cwd() / name, "repo": Path(__file__).resolve().parents[2] / name,
            "tmp_path": tmp_path / name, "etc": Path("/etc") / name,
            "home": Path.home() / name, "usr": Path(sys.prefix) / name}


@pytest.mark.parametrize("where", ["cwd", "repo", "tmp_path", "etc", "home", "usr"])
async def test_writing_outside_the_scratch_folder_fails(tmp_path: Path, where: str) -> None:
    target = _write_targets(tmp_path)[where]
    assert target.parent.is_dir()
    try:
        r = await _run(WRITE.format(target=str(target)))
        assert r.exit_code != 0, f"the snippet wrote {target}: {r.stdout}"
        assert "WROTE" not in r.stdout
        assert not target.exists(), f"{target} appeared on the host"
    finally:
        with contextlib.suppress(FileNotFoundError):
            target.unlink()


# -- 6. network ---------------------------------------------------------------------------


class _Server:
    """A real listener on the host that records every connection it accepts."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.sock.listen(8)
        self.sock.settimeout(0.1)
        self.accepted: list[object] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                conn, addr = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.accepted.append(addr)
            conn.close()

    def wait_for(self, n: int, wait_s: float = 10.0) -> None:
        deadline = time.monotonic() + wait_s
        while len(self.accepted) < n and time.monotonic() < deadline:
            time.sleep(0.05)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self.sock.close()


def _host_addresses() -> list[str]:
    """127.0.0.1 and, where there is one, the host's outward IPv4 address."""
    addresses = ["127.0.0.1"]
    with contextlib.suppress(OSError), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect(("192.0.2.1", 9))  # no packet is sent; this only picks a route
        addresses.append(s.getsockname()[0])
    with contextlib.suppress(OSError):
        addresses += [a[4][0] for a in socket.getaddrinfo(socket.gethostname(), None,
                                                          socket.AF_INET)]
    return sorted(set(addresses))


CONNECT_TCP = """\
import socket, sys
for host in {hosts!r}:
    try:
        socket.create_connection((host, {port}), timeout=3).close()
    except OSError as e:
        print("failed", host, type(e).__name__, flush=True)
    else:
        print("CONNECTED", host, flush=True)
        sys.exit(0)
sys.exit(3)
"""


async def test_no_connection_to_a_server_on_the_host() -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("0.0.0.0", 0))
    server = _Server(sock)
    try:
        port = sock.getsockname()[1]
        hosts = _host_addresses()
        r = await _run(CONNECT_TCP.format(hosts=hosts, port=port), limits=ROOMY)
        assert r.exit_code == 3, (r.stdout, r.stderr)
        assert "CONNECTED" not in r.stdout
        assert server.accepted == []
        # the server did accept: a connection from the host itself gets through
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
        server.wait_for(1)
        assert len(server.accepted) == 1
    finally:
        server.close()


async def test_no_connection_to_an_abstract_unix_socket_on_the_host() -> None:
    address = f"\0assay-sandbox-test-{uuid.uuid4().hex}"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(address)
    server = _Server(sock)
    try:
        code = (
            "import socket, sys\n"
            "s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
            "s.settimeout(3)\n"
            f"s.connect({address!r})\n"
            "print('CONNECTED')\n"
        )
        r = await _run(code, limits=ROOMY)
        assert r.exit_code != 0, r.stdout
        assert "CONNECTED" not in r.stdout
        assert server.accepted == []
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as c:
            c.connect(address)
        server.wait_for(1)
        assert len(server.accepted) == 1
    finally:
        server.close()


async def test_no_dns_and_no_external_connection() -> None:
    code = (
        "import socket, sys\n"
        "reached = []\n"
        "try:\n"
        "    socket.getaddrinfo('example.com', 443)\n"
        "    reached.append('dns')\n"
        "except OSError as e:\n"
        "    print('dns failed', type(e).__name__)\n"
        "for host, port in (('1.1.1.1', 53), ('8.8.8.8', 443)):\n"
        "    try:\n"
        "        socket.create_connection((host, port), timeout=3).close()\n"
        "        reached.append(host)\n"
        "    except OSError as e:\n"
        "        print(host, 'failed', type(e).__name__)\n"
        "print('reached', reached)\n"
        "sys.exit(0 if reached else 7)\n"
    )
    r = await _run(code, limits=ROOMY)
    assert r.exit_code == 7, (r.stdout, r.stderr)
    assert "reached []" in r.stdout


# -- 7. host files are hidden -------------------------------------------------------------

PEEK = """\
import json, os
out = {{}}
for key, path in (("home", {home!r}), ("cwd", {cwd!r}), ("root", "/root")):
    try:
        out[key] = sorted(os.listdir(path))
    except OSError as e:
        out[key] = type(e).__name__
for key, path in (("home_file", {home_file!r}), ("cwd_file", {cwd_file!r})):
    try:
        out[key] = open(path).read()
    except OSError as e:
        out[key] = type(e).__name__
print(json.dumps(out))
"""


def _shown_of(folder: Path) -> list[str] | str:
    """What the sandbox shows of a host folder that holds no part of the sandbox's own
    file system but the Python installation: the first names on the way to the Python
    installation's folders under it (a clone's ``.venv``, pyenv's ``.pyenv`` in the home
    folder), or nothing at all (the folder does not exist there)."""
    names = set()
    roots = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    roots.add(os.path.dirname(os.path.dirname(os.path.realpath(sys.executable))))
    for root in roots:
        rel = os.path.relpath(root, folder)
        if not rel.startswith(".."):
            names.add(rel.split(os.sep)[0])
    return sorted(names) if names else "FileNotFoundError"


async def test_home_and_current_folder_are_hidden(monkeypatch: pytest.MonkeyPatch) -> None:
    """Of the current folder and the home folder the sandbox shows only the Python
    installation the code runs on: with the virtual environment inside the current folder
    (``.venv`` in a clone, the common layout), ``.venv`` and nothing else of the clone."""
    cwd = Path.cwd()
    if not any(p.is_file() for p in cwd.iterdir()):
        monkeypatch.chdir(Path(__file__).parent)  # a current folder that holds files
        cwd = Path.cwd()
    cwd_file = sorted(p for p in cwd.iterdir() if p.is_file())[0]
    secret_name = f".assay-sandbox-secret-{uuid.uuid4().hex}"
    home_file = Path.home() / secret_name
    home_file.write_text(SECRET, encoding="utf-8")
    try:
        code = PEEK.format(home=str(Path.home()), cwd=str(cwd), home_file=str(home_file),
                           cwd_file=str(cwd_file))
        r = await _run(code)
        assert r.exit_code == 0, r.stderr
        seen = json.loads(r.stdout)
        assert secret_name not in r.stdout and SECRET not in r.stdout
        assert seen["home_file"] in ("FileNotFoundError", "PermissionError")
        # the real home's and current folder's entries are not there, but for the way to
        # the Python installation where it lives under them (shown read-only)
        assert seen["home"] == _shown_of(Path.home()), seen["home"]
        assert seen["cwd"] == _shown_of(cwd), seen["cwd"]
        assert seen["root"] == _shown_of(Path("/root")), seen["root"]
        assert seen["cwd_file"] == "FileNotFoundError"
        assert cwd_file.name not in r.stdout
    finally:
        home_file.unlink()


async def test_symlinks_in_copied_files_do_not_reveal_host_files(tmp_path: Path) -> None:
    """A data folder (or a file the agent wrote) that links to a host secret must not
    carry the secret into the sandbox."""
    secret_file = Path.home() / f".assay-sandbox-secret-{uuid.uuid4().hex}"
    secret_file.write_text(SECRET, encoding="utf-8")
    try:
        data = tmp_path / "data"
        data.mkdir()
        (data / "inner_link.txt").symlink_to(secret_file)
        (data / "ok.txt").write_text("plain", encoding="utf-8")
        (data / "alias.txt").symlink_to("ok.txt")  # a link within the data keeps working
        top_link = tmp_path / "top_link.txt"
        top_link.symlink_to(secret_file)
        code = (
            "import os\n"
            "for path in ('data/inner_link.txt', 'top_link.txt', 'data/ok.txt',\n"
            "             'data/alias.txt'):\n"
            "    try:\n"
            "        print(path, open(path).read())\n"
            "    except OSError as e:\n"
            "        print(path, type(e).__name__)\n"
        )
        r = await _run(code, copy=[data, top_link])
        assert r.exit_code == 0, r.stderr
        assert "data/ok.txt plain" in r.stdout
        assert "data/alias.txt plain" in r.stdout
        assert SECRET not in r.stdout and SECRET not in r.stderr
        # the host file the links point to is untouched (not chowned, not removed)
        assert secret_file.read_text(encoding="utf-8") == SECRET
        assert secret_file.stat().st_uid == os.getuid()
        # nor can a file given to the run be written through a copied link
        with pytest.raises(ConfigError, match="outside the scratch folder"):
            await _run("print('never runs')", copy=[top_link],
                       files={"top_link.txt": "overwritten"})
        with pytest.raises(ConfigError, match="outside the scratch folder"):
            await _run("print('never runs')", copy=[data],
                       files={"data/inner_link.txt": "overwritten"})
        assert secret_file.read_text(encoding="utf-8") == SECRET
    finally:
        secret_file.unlink()


# -- 8. memory and file size --------------------------------------------------------------


async def test_allocating_8_gib_fails() -> None:
    r = await _run("b = bytearray(8 * 1024 ** 3)\nprint('ALLOCATED', len(b))\n",
                   limits=Limits(timeout_s=30, cpu_s=10, memory_mb=512))
    assert r.exit_code != 0
    assert "ALLOCATED" not in r.stdout
    assert "MemoryError" in r.stderr


async def test_file_over_the_size_limit_cannot_be_written() -> None:
    code = (
        "with open('big.bin', 'wb') as f:\n"
        "    f.write(b'x' * (2 * 1024 * 1024))\n"
        "print('WROTE')\n"
    )
    r = await _run(code, limits=Limits(timeout_s=30, cpu_s=10, file_mb=1))
    assert r.exit_code != 0
    assert "WROTE" not in r.stdout
    # one below the limit is fine
    small = code.replace("2 * 1024 * 1024", "512 * 1024")
    r = await _run(small, limits=Limits(timeout_s=30, cpu_s=10, file_mb=1))
    assert r.exit_code == 0, r.stderr
    assert "WROTE" in r.stdout


# -- 10. the scratch folder goes away ----------------------------------------------------


async def test_scratch_folder_is_removed_after_every_run(private_tmp: Path) -> None:
    before = _scratch_dirs()
    assert before == set()
    r = await _run("open('left.txt', 'w').write('x')\nprint('ok')\n")
    assert r.exit_code == 0, r.stderr
    # read-only files and folders made by the snippet
    r = await _run(
        "import os\n"
        "os.makedirs('ro/deeper')\n"
        "open('ro/deeper/f.txt', 'w').write('x')\n"
        "os.chmod('ro/deeper/f.txt', 0o400)\n"
        "os.chmod('ro/deeper', 0o500)\n"
        "os.chmod('ro', 0o500)\n")
    assert r.exit_code == 0, r.stderr
    # while a run goes on, its scratch folder is there (so this test watches the right place)
    running = asyncio.ensure_future(
        _run("import time\ntime.sleep(1000)\n", limits=Limits(timeout_s=3, cpu_s=1)))
    while not _scratch_dirs() and not running.done():
        await asyncio.sleep(0.01)
    assert len(_scratch_dirs()) == 1
    r = await running
    assert r.timed_out
    r = await _run("raise SystemExit(5)\n")
    assert r.exit_code == 5
    left = _scratch_dirs() - before
    assert left == set(), f"scratch folders left behind: {left}"


# -- 9. without bubblewrap ---------------------------------------------------------------




async def test_weak_fallback_without_bwrap(no_bwrap: None, private_tmp: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    problem = bwrap_problem()
    assert problem is not None and sandbox.BWRAP_INSTALL in problem
    assert "apt-get install bubblewrap" in problem
    assert isolation_level() == "weak"
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    before = _scratch_dirs()
    # what the engine does for a run given --allow-weak-sandbox
    allowed = sandbox.allow_weak_isolation()
    allowed.__enter__()
    r = await _run("import os\nprint('key', os.environ.get('OPENAI_API_KEY'))\n"
                   "print(sorted(os.environ))\nopen('x.txt', 'w').write('x')\n"
                   "print(open('x.txt').read())\n")
    assert r.isolation == "weak"
    assert r.exit_code == 0, r.stderr
    assert "key None" in r.stdout
    assert SECRET not in r.stdout and "OPENAI_API_KEY" not in r.stdout
    assert r.files == ["snippet.py"]
    assert r.bounds["disk"].startswith("not bounded")
    marker = _marker()
    r = await _run("import time\ntime.sleep(1000)\n", name=f"{marker}.py",
                   limits=Limits(timeout_s=2, cpu_s=2))
    assert r.isolation == "weak"
    assert r.timed_out is True
    _assert_no_process_left(marker)
    r = await _run("b = bytearray(8 * 1024 ** 3)\n",
                   limits=Limits(timeout_s=30, cpu_s=10, memory_mb=512))
    assert r.exit_code != 0 and "MemoryError" in r.stderr
    # a child that leaves the process group (weak isolation cannot stop it) and holds the
    # output pipes open: the timeout still ends the run, with what was printed
    marker = _marker()
    code = ("import os, time\n"
            "if os.fork() == 0:\n"
            "    os.setsid()\n"
            "    time.sleep(120)\n"
            "    os._exit(0)\n"
            "print('parent', flush=True)\n"
            "time.sleep(1000)\n")
    try:
        r = await _run(code, name=f"{marker}.py", limits=Limits(timeout_s=2, cpu_s=2))
        assert r.timed_out is True
        assert "parent" in r.stdout
        if r.bounds["processes"].startswith("not bounded"):
            # the run did not wait for the escaped child (it sleeps 120 s)
            assert _processes_with(marker), "the run waited for a child that left its group"
        else:  # the run's cgroup holds every process it started: the child was killed
            _assert_no_process_left(marker)
    finally:
        allowed.__exit__(None, None, None)
        for pid in _processes_with(marker):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    assert _scratch_dirs() - before == set()


async def test_weak_isolation_is_refused_unless_allowed(no_bwrap: None, tmp_path: Path) -> None:
    flag = tmp_path / "ran.txt"
    code = f"open({str(flag)!r}, 'w').write('ran')\n"
    with pytest.raises(ConfigError) as info:
        await _run(code)
    message = str(info.value)
    assert "\n" not in message
    assert sandbox.BWRAP_INSTALL in message and sandbox.ALLOW_WEAK_FLAG in message
    assert not flag.exists()
    with sandbox.allow_weak_isolation(False), pytest.raises(ConfigError):
        await _run(code)
    assert not flag.exists()
    with sandbox.allow_weak_isolation():
        with pytest.raises(ConfigError):  # require=True refuses even then
            await _run(code, require=True)
        assert not flag.exists()
        r = await _run(code)
    assert r.isolation == "weak" and r.exit_code == 0, r.stderr
    assert flag.read_text() == "ran"  # weak isolation: the host's files are within reach
    flag.unlink()
    r = await _run(code, allow_weak=True)
    assert r.isolation == "weak" and r.exit_code == 0 and flag.exists()


async def test_require_refuses_to_run_without_bwrap(no_bwrap: None, tmp_path: Path) -> None:
    flag = tmp_path / "ran.txt"
    with pytest.raises(ConfigError, match="bubblewrap") as info:
        await _run(f"open({str(flag)!r}, 'w').write('ran')\n", require=True)
    assert sandbox.BWRAP_INSTALL in str(info.value)
    assert not flag.exists()


async def test_require_runs_when_bwrap_works() -> None:
    r = await _run("print('fine')\n", require=True)
    assert r.isolation == "bwrap" and r.exit_code == 0 and "fine" in r.stdout
