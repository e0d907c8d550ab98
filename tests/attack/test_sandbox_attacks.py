"""Attacks on the sandbox itself (issue 22, points 2, 3, 12, 13), as a hostile completion,
agent or eval_code snippet would make them, through the real bubblewrap sandbox and, where
the path exists, the real CLI.

* Point 2: whatever the code under test (or the agent before it) does to its own folders
  ends as a fail of that sample, never an error: 1,600 nested folders, names past
  PATH_MAX, modes 000, links, fifos, sockets; an agent that puts a folder or a link where
  the eval code's runner goes.
* Point 3: the code sees its scratch copy and the interpreter, nothing else: no workspace,
  no ``ASSAY_HOME`` (put under /opt), no data cache, no store, no /srv or /home, no host
  environment through /proc; a completion that hunts for the canonical solutions scores 0.
* Point 12: one run's memory, disk and processes are bounded as a whole; eval_code points
  run a few at a time.
* Point 13: without bubblewrap, code from data or from a model is refused in one line
  unless ``--allow-weak-sandbox``, which warns, marks the reports, and leaves no daemon.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from assay import sandbox
from assay.sandbox import Limits, run_python
from assay.store.sqlite import Store
from assay.tasks.code import task as code_task
from assay.testing import FakeServer

from .clitools import REPO, cli

SECRET = f"sk-attack-{uuid.uuid4().hex}"
RM = shutil.which("rm") or "/bin/rm"  # found now: some tests take bwrap off the PATH
MB = 1024 * 1024
#: the code task's file in the assay under test (a checkout given by PYTHONPATH included)
CODE_TASK = Path(code_task.__file__)


@pytest.fixture(autouse=True)
def _needs_bwrap() -> None:
    sandbox.bwrap_problem.cache_clear()
    problem = sandbox.bwrap_problem()
    if problem:  # an allowed skip: the reason names apt-get install bubblewrap
        pytest.skip(f"the sandbox attacks need bubblewrap: {problem}")


@pytest.fixture
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A temp folder of this test's own (for this process and the CLI it starts), so
    scratch folders left behind are this test's; removed after it, however deep."""
    base = tmp_path / "tempdir"
    base.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(base))
    monkeypatch.setenv("TMPDIR", str(base))
    yield base
    _rm(base)


@pytest.fixture
def no_bwrap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A PATH without bwrap (Python is started by its absolute path): yields that folder."""
    empty = tmp_path / "bin-without-bwrap"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    sandbox.bwrap_problem.cache_clear()
    yield empty
    monkeypatch.undo()
    sandbox.bwrap_problem.cache_clear()


def _allowing_weak(allowed: bool = True) -> contextlib.AbstractContextManager[Any]:
    """Weak isolation allowed, as ``--allow-weak-sandbox`` does (code older than the
    flag ran weak by default: nothing to allow there)."""
    allow = getattr(sandbox, "allow_weak_isolation", None)
    return allow(allowed) if allow is not None else contextlib.nullcontext()


def _left(base: Path) -> list[str]:
    return sorted(p.name for p in base.glob("assay-sandbox-*"))


async def _run(code: str, limits: Limits, **kwargs: Any) -> sandbox.SandboxResult:
    backstop = limits.timeout_s + sandbox.KILL_GRACE_S + 60
    return await asyncio.wait_for(
        run_python("attack.py", files={"attack.py": code}, limits=limits, **kwargs), backstop)


def _cgroups_writable() -> bool:
    """Whether this machine lets root make a cgroup for a run (read from /proc and /sys
    here, apart from the sandbox's own detection): systemd, a writable v1 memory
    hierarchy, or a v2 cgroup of ours that gives memory to its children."""
    if os.path.isdir("/run/systemd/system") and any(
            os.access(os.path.join(d, "systemd-run"), os.X_OK) for d in ("/usr/bin", "/bin")):
        return True
    own = {}
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, ctl, path = line.split(":", 2)
        own[ctl] = path
    v1 = Path("/sys/fs/cgroup/memory", own.get("memory", "/").lstrip("/"))
    if "memory" in own and v1.is_dir() and os.access(v1, os.W_OK):
        return True
    # v2: our own cgroup only, where it already gives memory to cgroups of ours (a run
    # moved into a cgroup above ours would leave the limits of what started it)
    v2 = Path("/sys/fs/cgroup", own.get("", "/").lstrip("/"))
    ctl = v2 / "cgroup.subtree_control"
    return ctl.is_file() and "memory" in ctl.read_text().split() and os.access(v2, os.W_OK)


def _rm(path: Path) -> None:
    """Remove a tree this test made 1,500 folders deep (``shutil.rmtree``, pytest's too,
    recurses past Python's limit on it): GNU rm walks it without recursion."""
    subprocess.run([RM, "-rf", "--", str(path)], check=False)


def _processes_with(marker: str) -> list[int]:
    needle = marker.encode()
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            with contextlib.suppress(OSError):
                if needle in Path("/proc", entry, "cmdline").read_bytes():
                    found.append(int(entry))
    return found


# -- point 2: what the code does to its scratch is its own fail ---------------------------

SCRATCH_ATTACKS = {
    "deep-1600": """
        import os
        for i in range(1600):
            os.mkdir("d")
            os.chdir("d")
        open("bottom.txt", "w").write("x")
        print("depth 1600")
    """,
    "past-path-max": """
        import os
        name = "n" * 250
        for i in range(300):  # 75 KB of path: every absolute path past PATH_MAX
            os.mkdir(name)
            os.chdir(name)
        open("f", "w").write("x")
        os.mkfifo("fifo")
        print("long")
    """,
    "modes-000": """
        import os
        for top in ("a", "b"):
            os.makedirs(top + "/x/y")
            open(top + "/x/y/f.txt", "w").write("x")
            os.chmod(top + "/x/y/f.txt", 0)
            os.chmod(top + "/x/y", 0)
            os.chmod(top + "/x", 0o100)
            os.chmod(top, 0)
        os.chmod(".", 0o500)
        print("locked")
    """,
    "links-fifos-sockets": """
        import os, socket
        os.symlink("/", "root")
        os.symlink(".", "self")
        os.symlink("loop", "loop")
        os.symlink("/etc/shadow", "shadow")
        os.mkdir("sub")
        os.symlink("..", "sub/up")
        os.mkfifo("fifo")
        s = socket.socket(socket.AF_UNIX)
        s.bind("sock")
        os.link("attack.py", "hard")
        print("linked")
    """,
    "all-and-fail": """
        import os, sys
        for i in range(1200):
            os.mkdir("d")
            os.chdir("d")
        os.mkfifo("fifo")
        os.chdir(os.environ["HOME"])  # the scratch folder
        os.chmod("d", 0)
        sys.exit(3)
    """,
}


@pytest.mark.parametrize("isolation", ["bwrap", "weak"])
@pytest.mark.parametrize("attack", sorted(SCRATCH_ATTACKS))
async def test_what_code_does_to_its_scratch_never_raises_and_nothing_is_left(
        attack: str, isolation: str, private_tmp: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    if isolation == "weak":  # the scratch then lies on the host's disk: the hard case
        empty = tmp_path / "no-bwrap"
        empty.mkdir()
        monkeypatch.setenv("PATH", str(empty))
        sandbox.bwrap_problem.cache_clear()
    try:
        with _allowing_weak(isolation == "weak"):
            r = await _run(textwrap.dedent(SCRATCH_ATTACKS[attack]),
                           Limits(timeout_s=60, cpu_s=30))
    finally:
        sandbox.bwrap_problem.cache_clear()
    assert r.isolation == isolation
    assert not r.timed_out, r.stderr
    assert r.exit_code == (3 if attack == "all-and-fail" else 0), r.stderr
    assert _left(private_tmp) == [], "the scratch folder was left behind"


async def test_hostile_inputs_are_copied_as_far_as_they_can_be(private_tmp: Path,
                                                                 tmp_path: Path) -> None:
    """The inputs themselves (an agent's folder) hold the same traps: the run starts with
    what can be copied, and nothing raises."""
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "ok.txt").write_text("plain", encoding="utf-8")
    deep = agent / "deep"
    deep.mkdir()
    fd = os.open(deep, os.O_RDONLY)
    try:  # 1,500 folders, made relative to a folder handle (no path is ever that long)
        for _ in range(1500):
            os.mkdir("d", dir_fd=fd)
            nxt = os.open("d", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = nxt
    finally:
        os.close(fd)
    os.mkfifo(agent / "fifo")
    (agent / "loop").symlink_to("loop")
    (agent / "secret").symlink_to("/etc/shadow")
    locked = agent / "locked"
    locked.mkdir()
    (locked / "f").write_text("x", encoding="utf-8")
    locked.chmod(0)
    try:
        code = ("import os\nprint(open('agent/ok.txt').read())\n"
                "print(sorted(os.listdir('agent')))\n"
                "print(os.path.islink('agent/secret'), os.path.exists('agent/secret'))\n")
        r = await _run(code, Limits(timeout_s=60, cpu_s=30), copy=[agent])
    finally:
        locked.chmod(0o700)
        _rm(agent)
    assert r.exit_code == 0, r.stderr
    assert r.stdout.splitlines()[0] == "plain"
    assert "'ok.txt'" in r.stdout and "'fifo'" not in r.stdout  # a fifo is never opened
    assert "True False" in r.stdout  # the link came as a link, to nothing in the sandbox
    assert _left(private_tmp) == []


AGENT = '''\
import os, re, socket
from pathlib import Path


class Hostile:
    """Leaves its folder in the state its case's name asks for."""

    workdir = None

    def reply(self, message):
        case = re.search(r"\\[CASE-([a-z0-9-]+)\\]", message).group(1)
        w = Path(self.workdir)
        (w / "result.txt").write_text("42")
        if case == "runner-folder":  # the issue's reproduction
            (w / ".assay" / "_assay_eval.py").mkdir(parents=True)
            (w / ".assay" / "_assay_eval.py" / "x").write_text("x")
        elif case == "support-link":
            os.symlink("/", w / ".assay")
        elif case == "support-names":
            for name in ("_assay_eval.py", "snippet.py", "chat_history.json"):
                (w / name).mkdir()
                (w / ".assay" / name).mkdir(parents=True)
            os.mkfifo(w / ".assay" / "fifo")
        elif case == "traps":
            os.mkfifo(w / "fifo")
            os.symlink("loop", w / "loop")
            s = socket.socket(socket.AF_UNIX)
            s.bind(str(w / "sock"))
            (w / "locked").mkdir()
            (w / "locked" / "f").write_text("x")
            os.chmod(w / "locked", 0)
        elif case == "deep":
            fd = os.open(w, os.O_RDONLY)
            for _ in range(1500):
                os.mkdir("d", dir_fd=fd)
                nxt = os.open("d", os.O_RDONLY, dir_fd=fd)
                os.close(fd)
                fd = nxt
            os.close(fd)
        return "done"
'''

CASES = ("runner-folder", "support-link", "support-names", "traps", "deep")


def _stop_after_one(body: dict[str, Any]) -> str:
    text = json.dumps(body.get("messages"))
    case = text.split("[CASE-", 1)[1].split("]", 1)[0]
    done = "Agent:" in text
    return json.dumps({"message": "" if done else f"[CASE-{case}] go", "task_finished": done})


def _converse_server(**kwargs: Any) -> FakeServer:
    def route(body: dict[str, Any]) -> str:
        if body["model"] == "examiner":
            return _stop_after_one(body)
        return json.dumps({"reason": "judged", "is_hit": True})
    return FakeServer(responder=route, **kwargs)


def _case(folder: Path, name: str, points: list[dict[str, Any]], **extra: Any) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    case = {"version": 1, "task_description": f"[CASE-{name}] Say 42.", "max_rounds": 1,
            "scoring_points": points, **extra}
    (folder / f"{name}.yaml").write_text(yaml.safe_dump(case), encoding="utf-8")


def _converse(cases: Path, url: str, model: str, *extra: str, env: dict[str, str] | None = None,
              timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return cli("run", "converse", "--cases", str(cases), "--model", model,
               "--examiner-model", "openai/examiner", "--judge-model", "openai/judge",
               "--base-url", url, "-T", f"examiner_base_url={url}", "-T",
               f"judge_base_url={url}", "-q", *extra,
               env={"OPENAI_API_KEY": "sk-test", **(env or {})}, timeout=timeout)


def _stored(run_id: str) -> tuple[dict[str, Any], list[Any]]:
    store = Store()
    try:
        return store.get_run(run_id), store.results(run_id)
    finally:
        store.close()


def test_an_agent_that_clutters_its_folder_makes_eval_code_miss_never_error(
        tmp_path: Path, private_tmp: Path) -> None:
    mods = tmp_path / "mods"
    mods.mkdir()
    (mods / "hostile_agent.py").write_text(AGENT, encoding="utf-8")
    cases = tmp_path / "cases"
    points = [{"score_point": "wrote 42", "weight": 1,
               "eval_code": "assert open('result.txt').read() == '42'"},
              {"score_point": "wrote 43", "weight": 1,
               "eval_code": "assert open('result.txt').read() == '43', 'not 43'"}]
    for name in CASES:
        _case(cases, name, points)
    with _converse_server() as srv:
        out = _converse(cases, srv.base_url, "python/hostile_agent:Hostile",
                        env={"PYTHONPATH": os.pathsep.join(  # keep a checkout given there
                            [str(mods), *filter(None, [os.environ.get("PYTHONPATH")])])})
    assert out.returncode == 0, out.stderr[-3000:]
    run, results = _stored(out.stdout.split()[1])
    assert sorted(r.sample_id for r in results) == sorted(CASES)
    for r in results:
        assert r.error is None, (r.sample_id, r.error)
        right, wrong = r.scores["score"]["metadata"]["points"]
        assert right["is_hit"] is True, (r.sample_id, right)
        assert wrong["is_hit"] is False and "not 43" in wrong["reason"], (r.sample_id, wrong)
        assert r.score_value("score") == 0.5
    # the agent's folders and the sandbox's scratch folders are gone, however cluttered
    assert sorted(p.name for p in private_tmp.glob("assay-*")) == []


# -- point 3: the sandbox shows only the scratch and the interpreter ----------------------

HUNT = r"""
import glob, gzip, json, os, sys
found, secrets_seen, probes = [], [], {}
for path in PLANTED:
    try:
        with open(path, "rb") as f:
            data = f.read()
        probes[path] = "READ"
        if path.endswith(".gz"):
            data = gzip.decompress(data)
        if SECRET.encode() in data:
            secrets_seen.append(path)
    except OSError as e:
        probes[path] = type(e).__name__
for top in ("/opt", "/srv", "/home", "/mnt", "/media", "/var", "/root", "/work", WORKSPACE,
            ASSAY_HOME, os.path.dirname(ASSAY_HOME), CWD):
    try:
        probes["ls " + top] = sorted(os.listdir(top))
    except OSError as e:
        probes["ls " + top] = type(e).__name__
for pattern in ("/*/*.db", "/opt/**/*.jsonl.gz", "/home/*/.cache/**", "/*/assay.db",
                "/*/*/assay.db", "/*/*/*/assay.db"):
    probes["glob " + pattern] = glob.glob(pattern, recursive=True)[:20]
skip = {"/proc", "/sys", "/dev"}
for dirpath, dirs, files in os.walk("/"):
    dirs[:] = [d for d in dirs if os.path.join(dirpath, d) not in skip]
    for name in files:
        path = os.path.join(dirpath, name)
        if name.endswith((".db", ".jsonl.gz", ".jsonl", ".sqlite")) or MARK in name:
            found.append(path)
            try:
                with open(path, "rb") as f:
                    data = f.read(50_000_000)
                if name.endswith(".gz"):
                    data = gzip.decompress(data)
                if SECRET.encode() in data:
                    secrets_seen.append(path)
            except Exception:
                pass
print(json.dumps({"found": found, "secrets": secrets_seen, "probes": probes,
                  "top": sorted(os.listdir("/"))}))
"""


@pytest.fixture
def planted(tmp_path: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict]:
    """A workspace under /opt (ASSAY_HOME) with a real store and a cached data file, and
    secrets under /srv, /home and the current folder, each named with a marker."""
    mark = f"assaymark{uuid.uuid4().hex[:12]}"
    opt = Path("/opt") / mark
    home = opt / "assay-home"
    (home / "cache").mkdir(parents=True)
    db = home / "assay.db"
    with sqlite3.connect(db) as con:
        con.execute("CREATE TABLE runs (id TEXT, spec TEXT)")
        con.execute("INSERT INTO runs VALUES (?, ?)", ("r1", json.dumps({"key": SECRET})))
    row = {"task_id": "HumanEval/0", "entry_point": "add", "prompt": "def add(a, b):\n",
           "canonical_solution": f"    return a + b  # {SECRET}\n"}
    cached = home / "cache" / "HumanEval.jsonl.gz"
    cached.write_bytes(gzip.compress((json.dumps(row) + "\n").encode()))
    srv = Path("/srv") / f"{mark}.db"
    srv.write_text(SECRET, encoding="utf-8")
    home_dir = Path("/home") / mark
    home_dir.mkdir()
    (home_dir / "data.jsonl").write_text(SECRET, encoding="utf-8")
    cwd_file = Path.cwd() / f"{mark}.jsonl"
    cwd_file.write_text(SECRET, encoding="utf-8")
    ws_file = workspace / f"{mark}.db"
    workspace.mkdir(parents=True, exist_ok=True)
    ws_file.write_text(SECRET, encoding="utf-8")
    monkeypatch.setenv("ASSAY_HOME", str(home))
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    try:
        yield {"mark": mark, "home": home, "row": row,
               "paths": [str(p) for p in (db, cached, srv, home_dir / "data.jsonl",
                                          cwd_file, ws_file)],
               "workspace": str(workspace)}
    finally:
        shutil.rmtree(opt, ignore_errors=True)
        shutil.rmtree(home_dir, ignore_errors=True)
        for p in (srv, cwd_file, ws_file):
            with contextlib.suppress(OSError):
                p.unlink()


async def test_walking_the_file_system_finds_no_workspace_store_or_data(planted: dict) -> None:
    code = (f"PLANTED = {planted['paths']!r}\nSECRET = {SECRET!r}\nMARK = {planted['mark']!r}\n"
            f"WORKSPACE = {planted['workspace']!r}\nASSAY_HOME = {str(planted['home'])!r}\n"
            f"CWD = {os.getcwd()!r}\n" + HUNT)
    r = await _run(code, Limits(timeout_s=300, cpu_s=300))
    assert r.exit_code == 0, r.stderr[-3000:]
    seen = json.loads(r.stdout)
    assert SECRET not in r.stdout and seen["secrets"] == []
    assert [p for p in seen["found"] if planted["mark"] in p] == []
    for path in planted["paths"]:
        assert seen["probes"][path] == "FileNotFoundError", (path, seen["probes"][path])
    for top in ("/opt", "/srv", "/home", "/mnt", "/media", "/var", planted["workspace"],
                str(planted["home"])):
        assert seen["probes"]["ls " + top] == "FileNotFoundError", (top, seen["probes"])
    assert all(v == [] for k, v in seen["probes"].items() if k.startswith("glob "))
    # the top of the file system: the system's folders, and the way to the interpreter
    allowed = {"usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc", "dev", "proc",
               "tmp"} | {Path(r).parts[1] for r in sandbox.python_roots()}
    assert set(seen["top"]) <= allowed, set(seen["top"]) - allowed


async def test_the_host_environment_is_out_of_reach_through_proc(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASSAY_TEST_TOKEN", SECRET)
    code = textwrap.dedent("""
        import glob, os
        out = []
        for path in ["/proc/1/environ", "/proc/self/environ", "/proc/1/cmdline",
                     "/proc/1/root/proc/1/environ", "/proc/1/cwd", "/proc/1/mem",
                     *glob.glob("/proc/[0-9]*/environ"), *glob.glob("/proc/[0-9]*/cmdline")]:
            try:
                out.append((path, open(path, "rb").read()[:100000]))
            except OSError as e:
                out.append((path, type(e).__name__))
        for pid in range(1, 400):
            try:
                out.append((pid, open(f"/proc/{pid}/environ", "rb").read()))
            except OSError:
                pass
        print(out)
    """)
    r = await _run(code, Limits(timeout_s=60, cpu_s=30))
    assert r.exit_code == 0, r.stderr
    assert SECRET not in r.stdout and SECRET not in r.stderr
    assert "('/proc/1/environ', 'PermissionError')" in r.stdout


HUMANEVAL_ROW = {
    "task_id": "Attack/0", "entry_point": "add",
    "prompt": "def add(a, b):\n    \"\"\"Return a + b.\"\"\"\n",
    "canonical_solution": "    return a + b\n",
    "test": "def check(candidate):\n    assert candidate(1, 2) == 3\n"
            "    assert candidate(-5, 5) == 0\n",
}

#: a wrong answer that looks for the canonical solutions wherever the workspace may be
CHEAT = '''```python
def add(a, b):
    import gzip, json, os
    for top in ("/opt", "/srv", "/home", "/root", "/work", "/tmp", "/var", "/"):
        for dirpath, dirs, files in os.walk(top):
            dirs[:] = [d for d in dirs if d not in ("proc", "sys", "dev", "usr")]
            for name in files:
                if not name.endswith((".jsonl", ".jsonl.gz")):
                    continue
                path = os.path.join(dirpath, name)
                try:
                    raw = open(path, "rb").read()
                    text = (gzip.decompress(raw) if name.endswith(".gz") else raw).decode()
                except Exception:
                    continue
                for line in text.splitlines():
                    try:
                        row = json.loads(line)
                    except ValueError:
                        continue
                    if isinstance(row, dict) and row.get("entry_point") == "add":
                        scope = {}
                        exec(row["prompt"] + row["canonical_solution"], scope)
                        return scope["add"](a, b)
    return a - b
```'''

#: a wrong answer that also buries its scratch under 1,500 folders
NEST = '''```python
import os
for _ in range(1500):
    os.mkdir("n")
    os.chdir("n")


def add(a, b):
    return a * b
```'''


@pytest.mark.parametrize("reply", ["cheat", "nest"])
def test_a_completion_cannot_fake_a_pass_by_its_surroundings(reply: str, tmp_path: Path,
                                                             private_tmp: Path) -> None:
    """The issue's reproductions through ``assay run``: a wrong completion that finds the
    canonical solution in the data file (the workspace under /opt), and one that nests
    1,500 folders in its scratch; both score 0, neither is an error."""
    mark = f"assaymark{uuid.uuid4().hex[:12]}"
    home = Path("/opt") / mark / "assay-home"
    data = home / "data" / "HumanEval.jsonl"
    data.parent.mkdir(parents=True)
    data.write_text(json.dumps(HUMANEVAL_ROW) + "\n", encoding="utf-8")
    try:
        with FakeServer(default_reply=CHEAT if reply == "cheat" else NEST) as srv:
            out = cli("run", f"{CODE_TASK}@humaneval", "--data", str(data), "--model",
                      "openai/m", "--base-url", srv.base_url, "-q",
                      env={"ASSAY_HOME": str(home), "OPENAI_API_KEY": "sk-test"})
        assert out.returncode == 0, out.stderr[-3000:]
        env_home = os.environ["ASSAY_HOME"]
        os.environ["ASSAY_HOME"] = str(home)
        try:
            _, results = _stored(out.stdout.split()[1])
        finally:
            os.environ["ASSAY_HOME"] = env_home
        (r,) = results
        assert r.error is None, r.error
        assert r.scores["pass"]["value"] == 0.0, r.scores["pass"]
        assert _left(private_tmp) == []
    finally:
        shutil.rmtree(Path("/opt") / mark, ignore_errors=True)


# -- point 12: one run's totals ------------------------------------------------------------

THREE_HOLDERS = """
import os, sys
ready_r, ready_w = os.pipe()
release_r, release_w = os.pipe()
children = []
for i in range(3):
    pid = os.fork()
    if pid == 0:
        os.close(ready_r)
        block = bytearray(900 * 1024 * 1024)
        for k in range(0, len(block), 4096):  # touch every page
            block[k] = 1
        os.write(ready_w, b"h")
        os.close(ready_w)
        os.read(release_r, 1)  # hold it until the parent has counted
        os._exit(0)
    children.append(pid)
os.close(ready_w)
held = 0
while os.read(ready_r, 1):  # until every child has held its block or died
    held += 1
alive = [p for p in children if os.waitpid(p, os.WNOHANG) == (0, 0)]
print("held", held, "alive together", len(alive), flush=True)
for p in children:
    try:
        os.kill(p, 9)
    except ProcessLookupError:
        pass
"""


async def test_total_memory_of_a_run_is_bounded_not_each_process() -> None:
    limits = Limits(timeout_s=120, cpu_s=60, memory_mb=2048)
    r = await _run(THREE_HOLDERS, limits)
    assert not r.timed_out, r.stderr
    words = r.stdout.split()
    together = int(words[4]) if words[:1] == ["held"] else None
    if not _cgroups_writable():
        # nothing can bound the sum here: the run says so rather than pretend
        assert r.bounds["memory"].startswith("not bounded"), r.bounds
        assert sandbox.describe_isolation(limits)["bounds"]["memory"] == r.bounds["memory"]
        return
    if together is not None:  # the parent lived to count: at most two blocks at once
        assert together <= 2, f"{r.stdout.strip()}: 2.7 GB held against memory_mb=2048"
    else:  # the whole run was killed by the out-of-memory killer (cgroup v2 oom.group)
        assert r.exit_code != 0, r.stdout
    assert r.bounds["memory"].startswith("2048 MB"), r.bounds
    assert r.peak_memory_mb is None or r.peak_memory_mb <= 2048, r.peak_memory_mb


FILL = """
import errno, os, sys
written = 0
where = sys.argv[1] if len(sys.argv) > 1 else WHERE
os.makedirs(where, exist_ok=True)
chunk = b"x" * (1024 * 1024)
try:
    for i in range(FILES):
        with open(os.path.join(where, f"f{i}"), "wb") as f:
            for _ in range(FILE_MB):
                f.write(chunk)
                f.flush()
                written += 1
except OSError as e:
    print("stopped", errno.errorcode.get(e.errno, e.errno), written, flush=True)
    sys.exit(0)
print("wrote", written, flush=True)
"""


@pytest.mark.parametrize("where, files, file_mb", [
    ("/tmp/work", 20, 48),        # the 960 MB, in files under the per-file limit
    ("/tmp/work/deep/er", 1, 960),  # one big file, the per-file limit raised
    ("/tmp/elsewhere", 20, 48),   # the rest of /tmp
])
async def test_disk_of_a_run_is_a_capped_tmpfs_not_the_hosts(where: str, files: int,
                                                              file_mb: int) -> None:
    limits = Limits(timeout_s=120, cpu_s=60, file_mb=max(64, file_mb + 1))  # disk: 512 MB
    code = FILL.replace("WHERE", repr(where)).replace("FILES", str(files)).replace(
        "FILE_MB", str(file_mb))
    r = await _run(code, limits)
    assert r.exit_code == 0, r.stderr
    words = r.stdout.split()
    assert words[:2] == ["stopped", "ENOSPC"], r.stdout  # the tmpfs is full, not the host
    assert int(words[2]) <= 512, r.stdout  # never more than the cap
    assert r.bounds["disk"].startswith(f"{limits.disk_mb} MB"), r.bounds


COUNT = """
import os, sys, threading, time
kind = KIND
n = 0
stop = threading.Event()
while n < 200:  # a cap of the attack's own: far past the bound, short of harm
    try:
        if kind == "fork":
            pid = os.fork()
            if pid == 0:
                time.sleep(30)
                os._exit(0)
        else:
            threading.Thread(target=stop.wait, daemon=True).start()
    except (OSError, RuntimeError):
        break
    n += 1
print("started", n, flush=True)
os._exit(0)
"""


@pytest.mark.parametrize("isolation", ["bwrap", "weak"])
@pytest.mark.parametrize("kind", ["fork", "thread"])
async def test_processes_of_a_run_are_bounded_as_a_whole(kind: str, isolation: str,
                                                         tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    if isolation == "weak":  # run as root, where RLIMIT_NPROC does not apply
        empty = tmp_path / "no-bwrap"
        empty.mkdir()
        monkeypatch.setenv("PATH", str(empty))
        sandbox.bwrap_problem.cache_clear()
    limits = Limits(timeout_s=60, cpu_s=30, processes=16)
    try:
        with _allowing_weak():
            r = await _run(COUNT.replace("KIND", repr(kind)), limits)
    finally:
        sandbox.bwrap_problem.cache_clear()
    assert r.isolation == isolation
    if not _cgroups_writable() and isolation == "weak" and os.geteuid() == 0:
        # root is exempt from RLIMIT_NPROC and no cgroup can be made: the run says so
        assert r.bounds["processes"].startswith("not bounded"), r.bounds
        return
    assert r.exit_code == 0, r.stderr
    words = r.stdout.split()
    assert words[0] == "started" and int(words[1]) < limits.processes, r.stdout
    assert not r.bounds["processes"].startswith("not bounded"), r.bounds


def test_eval_code_points_run_a_few_at_a_time(tmp_path: Path) -> None:
    """Eight eval_code points of one case, each holding a process until its timeout: the
    host never sees more of them at once than the sandbox's slots. The timeout leaves a
    loaded machine time to start each sandbox, so that at least one is seen."""
    mark = f"assaymark{uuid.uuid4().hex[:12]}"
    point = {"score_point": "waits", "weight": 1, "eval_code":
             f"import subprocess, sys\nsubprocess.run([sys.executable, '-c', "
             f"'import time; time.sleep(60)', {mark!r}])"}
    cases = tmp_path / "cases"
    _case(cases, "many", [dict(point, score_point=f"waits {i}") for i in range(8)],
          workspace=False)
    slots = max(2, os.cpu_count() or 1)
    most = 0
    with _converse_server() as srv:
        proc = subprocess.Popen(
            [sys.executable, "-m", "assay", "run", "converse", "--cases", str(cases),
             "--model", "openai/agent", "--examiner-model", "openai/examiner",
             "--judge-model", "openai/judge", "--base-url", srv.base_url, "-q",
             "-T", f"examiner_base_url={srv.base_url}", "-T",
             f"judge_base_url={srv.base_url}", "-T", "eval_timeout=8"],
            env={**os.environ, "OPENAI_API_KEY": "sk-test"}, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, cwd=REPO)
        try:
            while proc.poll() is None:
                most = max(most, len([p for p in _processes_with(mark)
                                      if os.stat(f"/proc/{p}").st_uid != os.getuid()]))
                time.sleep(0.05)
            out, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 0, err[-3000:]
    assert 1 <= most <= slots, (most, slots)
    _, results = _stored(out.split()[1])
    (r,) = results
    assert r.error is None
    assert all("timeout" in p["reason"] for p in r.scores["score"]["metadata"]["points"])


# -- point 13: no bubblewrap ---------------------------------------------------------------


def test_without_bubblewrap_code_from_data_is_refused_unless_allowed(
        no_bwrap: Path, tmp_path: Path) -> None:
    ran = tmp_path / "eval-code-ran.txt"
    mark = f"assaymark{uuid.uuid4().hex[:12]}"
    daemon = (f"import os, sys, time\nopen({str(ran)!r}, 'w').write('ran')\n"
              "if os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
              f"        os.execv(sys.executable, [sys.executable, '-c', "
              f"'import time; time.sleep(120)', {mark!r}])\n    os._exit(0)\n")
    cases = tmp_path / "cases"
    _case(cases, "weak", [{"score_point": "daemon", "weight": 1, "eval_code": daemon}])
    data = tmp_path / "HumanEval.jsonl"
    data.write_text(json.dumps(HUMANEVAL_ROW) + "\n", encoding="utf-8")
    env = {"PATH": str(no_bwrap)}
    try:
        with _converse_server() as srv:
            refused = [_converse(cases, srv.base_url, "openai/agent", env=env),
                       cli("run", f"{CODE_TASK}@humaneval", "--data", str(data), "--model",
                           "openai/m", "--base-url", srv.base_url, "-q",
                           env={**env, "OPENAI_API_KEY": "sk-test"})]
            assert srv.requests == []  # refused before any model call
            assert not ran.exists()
            allowed = _converse(cases, srv.base_url, "openai/agent", "--allow-weak-sandbox",
                                env=env)
        for out in refused:
            assert out.returncode == 2, (out.stdout, out.stderr[-2000:])
            lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
            assert len(lines) == 1 and "Traceback" not in out.stderr, out.stderr
            assert "apt-get install bubblewrap" in lines[0] and "--allow-weak-sandbox" in lines[0]
        assert allowed.returncode == 0, allowed.stderr[-3000:]
        assert ran.exists()  # weak isolation: it ran, with the host's files in reach
        assert "warning" in allowed.stderr and "weak isolation" in allowed.stderr
        run, results = _stored(allowed.stdout.split()[1])
        assert run["spec"]["allow_weak_sandbox"] is True
        assert run["dataset"]["isolation"].startswith("weak")
        folder = Path(os.environ["ASSAY_HOME"]) / "runs" / run["id"]
        assert "**Weak isolation**" in (folder / "report.md").read_text(encoding="utf-8")
        assert "<strong>Weak isolation</strong>" in (folder / "report.html").read_text(
            encoding="utf-8")
        (r,) = results
        (point,) = r.scores["score"]["metadata"]["points"]
        assert r.error is None and point["is_hit"] is True
        if _cgroups_writable():  # the run's cgroup held the daemon: it is gone
            deadline = time.monotonic() + 10
            while _processes_with(mark) and time.monotonic() < deadline:
                time.sleep(0.1)
            assert _processes_with(mark) == [], "a daemon outlived the run"
    finally:
        for pid in _processes_with(mark):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, 9)


def test_a_run_that_runs_no_code_is_not_marked_weak(no_bwrap: Path, tmp_path: Path) -> None:
    """``--allow-weak-sandbox`` on a task that runs no code (qa): no warning, and the report
    does not claim that code ran outside the sandbox."""
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"id": "q1", "question": "2+2?", "answer": "4"}) + "\n",
                    encoding="utf-8")
    with FakeServer(default_reply="4") as srv:
        out = cli("run", "qa", "--data", str(data), "--model", "openai/m", "--base-url",
                  srv.base_url, "-q", "--allow-weak-sandbox",
                  env={"PATH": str(no_bwrap), "OPENAI_API_KEY": "sk-test"})
    assert out.returncode == 0, out.stderr[-2000:]
    assert "weak isolation" not in out.stderr
    run, _ = _stored(out.stdout.split()[1])
    assert run["spec"]["allow_weak_sandbox"] is True and "isolation" not in run["dataset"]
    folder = Path(os.environ["ASSAY_HOME"]) / "runs" / run["id"]
    assert "Weak isolation" not in (folder / "report.md").read_text(encoding="utf-8")
