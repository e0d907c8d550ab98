"""Hostile input to GAIA and to the review page, through the real ``assay`` CLI.

Each attack runs ``python -m assay ...`` in a subprocess with its own ``ASSAY_HOME``
and expects what a user error gives: exit status 2 and ONE line on stderr that
starts with ``error:`` and names the problem, never a traceback; and nothing the
attack aimed at (a secret file's text, an export file) ends up written anywhere.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tasks" / "gaia"))
import gaia_fixtures as fx  # noqa: E402

SECRET = "TOP-SECRET-attack-payload"
TIMEOUT = 120


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "HF_TOKEN", "HF_ENDPOINT")}
    env.update(ASSAY_HOME=str(home), HF_HUB_OFFLINE="1", PYTHONUNBUFFERED="1", **extra)
    return env


def _cli(home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "assay", *args], capture_output=True,
                          text=True, env=_env(home, **env), timeout=TIMEOUT)


def _assert_one_line_error(out: subprocess.CompletedProcess[str] | tuple[int, str],
                           *needles: str) -> str:
    rc, err = (out.returncode, out.stderr) if not isinstance(out, tuple) else out
    assert "Traceback" not in err, err
    assert rc == 2, (rc, err)
    assert err.count("\n") == 1 and err.startswith("error: "), err
    for needle in needles:
        assert needle in err, (needle, err)
    return err


def _nothing_leaked(home: Path) -> None:
    for p in home.rglob("*") if home.exists() else []:
        if p.is_file():
            assert SECRET.encode() not in p.read_bytes(), p


def _secret(tmp_path: Path) -> Path:
    out = tmp_path / "x" / "secret.txt"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(SECRET + "\n", encoding="utf-8")
    return out


# ---------------------------------------------------------------------------------------------
# GAIA: attachments that point outside the dataset folder


def _txt_task(**kw: object) -> list[dict]:
    t = fx.default_tasks()[0]  # a .txt attachment: inlined into the prompt if read
    t.update(kw)
    return [t]


def _run_gaia(home: Path, root: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return _cli(home, "run", "gaia", "--data-dir", str(root), "--model", "openai/x", "-q",
                **env)


@pytest.mark.parametrize("attack", ["dotdot", "absolute", "parquet_etc_hostname",
                                    "parquet_absolute_secret", "symlink", "parquet_symlink"])
def test_gaia_attachment_outside_the_dataset_is_refused(tmp_path: Path, attack: str) -> None:
    secret = _secret(tmp_path)
    home = tmp_path / "home"
    root = tmp_path / "gaia"
    layout, field = "jsonl", "file_name"
    if attack == "dotdot":  # root/2023/validation/../../../x/secret.txt
        tasks = _txt_task(file_name="../../../x/secret.txt", _attachment=None)
    elif attack == "absolute":
        tasks = _txt_task(file_name=str(secret), _attachment=None)
    elif attack.startswith("parquet_") and attack != "parquet_symlink":
        layout, field = "parquet", "file_path"
        target = "/etc/hostname" if attack == "parquet_etc_hostname" else str(secret)
        tasks = _txt_task(file_path=target)  # a decoy beside the metadata changes nothing
    else:
        layout = "parquet" if attack == "parquet_symlink" else "jsonl"
        field = "file_path" if layout == "parquet" else "file_name"
        tasks = _txt_task(_attachment=None)
    fx.write_gaia_fixture(root, layout, tasks=tasks)
    if "symlink" in attack:
        (root / "2023" / "validation" / tasks[0]["file_name"]).symlink_to(secret)
    out = _run_gaia(home, root)
    err = _assert_one_line_error(out, tasks[0]["task_id"], field, "outside the dataset folder")
    assert SECRET not in err and SECRET not in out.stdout
    _nothing_leaked(home)


def test_gaia_attachment_in_a_subfolder_is_still_inlined(tmp_path: Path, fake_server) -> None:
    tasks = fx.default_tasks()[:1]  # the server log, answer 17
    tasks[0]["file_name"] = "files/" + tasks[0]["file_name"]
    (tmp_path / "gaia" / "2023" / "validation" / "files").mkdir(parents=True)
    root = fx.write_gaia_fixture(tmp_path / "gaia", "jsonl", tasks=tasks)
    srv = fake_server(responder=lambda body: "FINAL ANSWER: 17")
    out = _cli(tmp_path / "home", "run", "gaia", "--data-dir", str(root), "--model",
               "openai/fake", "--base-url", srv.base_url, "-q")
    assert out.returncode == 0, out.stderr
    prompt = srv.requests[0]["messages"][1]["content"]
    assert "worker-1 step 1" in prompt and tasks[0]["file_name"].split("/")[1] in prompt


async def test_gaia_hub_snapshot_attachment_outside_is_refused(tmp_path: Path) -> None:
    _secret(tmp_path)
    home = tmp_path / "home"
    tasks = fx.default_tasks()
    # from $ASSAY_HOME/data/hf/datasets--gaia-benchmark--GAIA/snapshots/<sha>: up to tmp_path
    tasks[0]["file_path"] = "../" * 6 + "x/secret.txt"
    repo = fx.write_gaia_fixture(tmp_path / "repo", "parquet", tasks=tasks)
    async with fx.FakeHub(repo) as hub:
        # no download progress bar on stderr: the error line is what is checked here
        env = _env(home, HF_ENDPOINT=hub.url, HF_HOME=str(tmp_path / "hf"),
                   HF_HUB_DISABLE_PROGRESS_BARS="1")
        env.pop("HF_HUB_OFFLINE")
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "assay", "run", "gaia", "--model", "openai/x", "-q",
            env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        stdout, stderr = await asyncio.wait_for(proc.communicate(), TIMEOUT)
    assert any("/resolve/" in path for _, path, _ in hub.requests)  # really downloaded
    err = _assert_one_line_error((proc.returncode or 0, stderr.decode()),
                                 tasks[0]["task_id"], "file_path",
                                 "outside the dataset folder")
    assert SECRET not in err and SECRET not in stdout.decode()
    assert (home / "data" / "hf").is_dir()
    _nothing_leaked(home)


# ---------------------------------------------------------------------------------------------
# GAIA: metadata that cannot be decoded or parsed (read by assay.data.files.read_jsonl)


@pytest.mark.parametrize("bad", [
    pytest.param(b'{"task_id": "t-2", "Question": "caf\xff", "Level": 1, "Final answer": "4"}',
                 id="invalid-utf8"),
    pytest.param(b'{"task_id": "t-2", "Question": ' + b"[" * 100_000 + b"]" * 100_000
                 + b', "Level": 1, "Final answer": "4"}', id="nested-100000"),
    pytest.param(b'{"task_id": "t-2", "Question": "q", "Level": ' + b"7" * 5000
                 + b', "Final answer": "4"}', id="int-5000-digits"),
])
def test_gaia_undecodable_metadata_is_one_line(tmp_path: Path, bad: bytes) -> None:
    split = tmp_path / "gaia" / "2023" / "validation"
    split.mkdir(parents=True)
    good = json.dumps({"task_id": "t-1", "Question": "2+2?", "Level": 1,
                       "Final answer": "4"}).encode()
    meta = split / "metadata.jsonl"
    meta.write_bytes(good + b"\n" + bad + b"\n")
    out = _run_gaia(tmp_path / "home", tmp_path / "gaia")
    _assert_one_line_error(out, f"{meta}:2")


# ---------------------------------------------------------------------------------------------
# The review page


def _problems_file(tmp_path: Path, name: str = "problems.json") -> Path:
    from assay.tasks.datagen.problem import Problem, save_problems

    return save_problems([Problem(problem_id=f"p{i}", problem=f"Compute {i} + {i}.",
                                  answer=str(2 * i)) for i in range(1, 4)], tmp_path / name)


@pytest.mark.parametrize("suffix", [".json", ".jsonl"])
def test_review_data_with_invalid_utf8_is_one_line(tmp_path: Path, suffix: str) -> None:
    data = _problems_file(tmp_path, "problems" + suffix)
    raw = data.read_bytes().replace(b"Compute 2", b"Comp\xffute 2")
    data.write_bytes(raw)
    line = raw[:raw.index(b"\xff")].count(b"\n") + 1
    assert line > 1
    out = _cli(tmp_path / "home", "review", str(data), "--reviewer", "x", "--no-browser")
    _assert_one_line_error(out, f"{data}:{line}")


def test_review_port_in_use_is_one_line(tmp_path: Path) -> None:
    data = _problems_file(tmp_path)
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        out = _cli(tmp_path / "home", "review", str(data), "--reviewer", "x", "--no-browser",
                   "--port", str(port))
    _assert_one_line_error(out, f"port {port} on 127.0.0.1 is in use", "--port")


@pytest.mark.parametrize("port", ["-1", "70000"])
def test_review_port_out_of_range_is_one_line(tmp_path: Path, port: str) -> None:
    data = _problems_file(tmp_path)
    out = _cli(tmp_path / "home", "review", str(data), "--no-browser", "--port", port)
    _assert_one_line_error(out, "--port must be 0-65535")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _request(url: str, method: str = "GET", body: bytes | None = None,
             headers: dict[str, str] | None = None) -> int:
    req = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def test_review_server_export_only_on_a_same_origin_post(tmp_path: Path) -> None:
    data = _problems_file(tmp_path)
    home = tmp_path / "home"
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "assay", "review", str(data), "--reviewer",
                             "alice", "--no-browser", "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=_env(home))
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("Review page: http://127.0.0.1:"), (line, proc.poll())
        root = f"http://127.0.0.1:{port}"
        base = root + "/review"  # the review page's place in the local web app
        exported = data.with_name("problems_verifications.json")
        # the cross-site <img src=".../api/export?reviewer=x"> attack
        for query in ("", "?reviewer=x", "?reviewer=x&download=1"):
            assert _request(base + "/api/export" + query) == 405
        # cross-origin POSTs, JSON or form-like
        for headers in ({"Origin": "http://evil.example", "Content-Type": "application/json"},
                        {"Sec-Fetch-Site": "cross-site", "Content-Type": "application/json"},
                        {"Origin": "http://evil.example", "Content-Type": "text/plain"}):
            assert _request(base + "/api/export", "POST", b"{}", headers) in (403, 415)
            assert _request(base + "/api/review", "POST", json.dumps(
                {"problem_id": "p1", "reviewer": "mallory", "status": "rejected"}).encode(),
                headers) in (403, 415)
        time.sleep(0.2)
        assert not exported.exists()
        assert not list(tmp_path.glob("*_verifications*"))
        # the page's own origin
        own = {"Origin": root, "Content-Type": "application/json"}
        assert _request(base + "/api/export", "POST", b"{}", own) == 200
        assert exported.is_file()
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
    from assay.store.review import ReviewStore

    with ReviewStore(home / "assay.db") as store:
        assert store._query("SELECT * FROM reviews WHERE reviewer='mallory'") == []
