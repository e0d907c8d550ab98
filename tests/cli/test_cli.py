"""The ``assay`` console script, run for real in a subprocess.

The autouse ``workspace`` fixture sets ASSAY_HOME (and clears OPENAI_*) in os.environ, so
every subprocess here writes into the test's own workspace.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from assay import __version__
from assay.testing import Rule

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "qa_example.jsonl"
_BIN = Path(sys.executable).parent / "assay"
ASSAY = str(_BIN) if _BIN.exists() else shutil.which("assay")

# capitals right for France and Italy, wrong for Japan and Germany
CAPITAL_RULES = [
    Rule(r"capital of France", "Answer: Paris"),
    Rule(r"capital of Italy", "The capital is Rome.\nAnswer: Rome"),
    Rule(r"capital of Japan", "Answer: Kyoto"),
    Rule(r"capital of Germany", "Answer: Munich"),
]


def assay(*args: str, env: dict[str, str] | None = None, timeout: float = 60,
          cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    assert ASSAY, "the assay console script is not installed"
    full_env = dict(os.environ, COLUMNS="200", NO_COLOR="1")
    full_env.update(env or {})
    return subprocess.run([ASSAY, *args], capture_output=True, text=True, env=full_env,
                          timeout=timeout, cwd=cwd or REPO)


def assert_user_error(p: subprocess.CompletedProcess[str], *needles: str) -> str:
    """Exit status 2 and exactly one stderr line, ``error: ...``, containing every needle."""
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    lines = p.stderr.splitlines()
    assert len(lines) == 1, p.stderr
    line = lines[0]
    assert line.startswith("error: "), line
    for n in needles:
        assert n in line, (n, line)
    assert "Traceback" not in p.stdout
    return line


def run_id_of(stdout: str) -> str:
    m = re.search(r"^run (\S+) finished", stdout, re.M)
    assert m, stdout
    return m.group(1)


def fake_run_args(base_url: str, *extra: str) -> list[str]:
    return ["run", "qa", "--data", str(EXAMPLE), "--model", "openai/fake", "--base-url",
            base_url, "--limit", "4", "-q", *extra]


# --------------------------------------------------------------------------- info commands


def test_version():
    p = assay("--version")
    assert p.returncode == 0
    assert p.stdout.strip() == f"assay {__version__}"


def test_help_texts_mention_the_key_options():
    p = assay("--help")
    assert p.returncode == 0, p.stderr
    for word in ("run", "report", "list", "--version"):
        assert word in p.stdout
    p = assay("run", "--help")
    assert p.returncode == 0, p.stderr
    assert "qa" in p.stdout
    p = assay("run", "qa", "--help")
    assert p.returncode == 0, p.stderr
    for opt in ("--data", "--model", "--base-url", "--limit", "--scorer", "--answer-key",
                "--question-key", "--template", "--max-connections", "--resume", "--no-cache",
                "--quiet"):
        assert opt in p.stdout, opt


def test_list_tasks_and_models():
    p = assay("list", "tasks")
    assert p.returncode == 0, p.stderr
    for name in ("qa", "bfcl", "gaia", "datagen_judge"):
        assert re.search(rf"^{name}\s+built-in\s+\S", p.stdout, re.M), p.stdout
    p = assay("list", "models")
    assert p.returncode == 0, p.stderr
    for spec in ("local", "openai/<model>", "python/<module>:<factory>"):
        assert spec in p.stdout


# --------------------------------------------------------------------------- user errors


def test_malformed_jsonl_line(tmp_path):
    data = tmp_path / "bad.jsonl"
    data.write_text('{"question": "q1", "answer": "a"}\n{"question": "q2", "answer": "b"}\n'
                    '{"question": "q3", "answer": \n', encoding="utf-8")
    p = assay("run", "qa", "--data", str(data), "--model", "openai/x", "-q")
    assert_user_error(p, f"{data}:3", "invalid JSON")


def test_row_missing_explicit_answer_key(tmp_path):
    data = tmp_path / "rows.jsonl"
    data.write_text('{"question": "q1", "gold": "a"}\n{"question": "q2", "answer": "b"}\n',
                    encoding="utf-8")
    p = assay("run", "qa", "--data", str(data), "--answer-key", "gold", "--model", "openai/x",
              "-q")
    assert_user_error(p, f"{data}:2", "'gold'", "--answer-key")


def test_unknown_model_spec():
    p = assay("run", "qa", "--data", str(EXAMPLE), "--model", "foo/bar", "-q")
    assert_user_error(p, "'foo/bar'")


def test_unreachable_endpoint_fails_fast():
    """The preflight refuses before the run is made, so no call is made or retried."""
    url = "http://127.0.0.1:9/v1"  # discard port: nothing listens
    p = assay("run", "qa", "--data", str(EXAMPLE), "--model", "openai/x", "--base-url", url,
              "-q", timeout=120)
    line = assert_user_error(p, url)
    assert "cannot reach model endpoint" in line  # the preflight's error, not a call's
    # nothing was recorded as a run
    assert "openai/x" not in assay("list", "runs").stdout


def test_unknown_scorer():
    p = assay("run", "qa", "--data", str(EXAMPLE), "--scorer", "bogus", "--model", "openai/x",
              "-q")
    line = assert_user_error(p, "'bogus'")
    assert "normalized" in line  # lists the valid choices


def test_report_for_unknown_run():
    p = assay("report", "NOSUCHRUN")
    assert_user_error(p, "NOSUCHRUN", "assay list runs")


def test_missing_data():
    p = assay("run", "qa", "--model", "openai/x", "-q")
    assert_user_error(p, "--data")


def test_missing_data_file(tmp_path):
    p = assay("run", "qa", "--data", str(tmp_path / "nope.jsonl"), "--model", "openai/x", "-q")
    assert_user_error(p, "not found", "nope.jsonl")


# --------------------------------------------------------------------------- real runs


def test_run_report_and_cached_rerun(fake_server, workspace):
    srv = fake_server(rules=CAPITAL_RULES)
    p = assay(*fake_run_args(srv.base_url))
    assert p.returncode == 0, p.stderr
    rid = run_id_of(p.stdout)
    assert re.search(r"^normalized_match: 0\.500 \[0\.\d{3}, 0\.\d{3}\] \(2/4\)$", p.stdout,
                     re.M), p.stdout
    assert "samples 4 · scored 4 · errors 0 · model calls 4 (cache hits 0)" in p.stdout
    assert srv.stats["requests"] == 4

    out = workspace / "runs" / rid
    files = {name: (out / name).read_bytes() for name in
             ("report.md", "report.html", "results.jsonl")}
    lines = files["results.jsonl"].decode().splitlines()
    assert [json.loads(x)["sample_id"] for x in lines] == [
        "capital-france", "capital-japan", "capital-italy", "capital-germany"]

    # `assay report` rebuilds the same files from the store alone (prefix lookup)
    for name in files:
        (out / name).unlink()
    p = assay("report", rid[:-2])
    assert p.returncode == 0, p.stderr
    for name, content in files.items():
        assert (out / name).read_bytes() == content, name
    assert str(out / "report.html") in p.stdout

    # --out writes elsewhere
    other = workspace.parent / "elsewhere"
    p = assay("report", rid, "--out", str(other))
    assert p.returncode == 0, p.stderr
    assert (other / "results.jsonl").read_bytes() == files["results.jsonl"]

    # an identical rerun is served from the cache: no new request reaches the server
    p = assay(*fake_run_args(srv.base_url))
    assert p.returncode == 0, p.stderr
    assert run_id_of(p.stdout) != rid
    assert "model calls 4 (cache hits 4)" in p.stdout
    assert re.search(r"^normalized_match: 0\.500 .*\(2/4\)$", p.stdout, re.M)
    assert srv.stats["requests"] == 4

    # --no-cache goes to the server again
    p = assay(*fake_run_args(srv.base_url, "--no-cache"))
    assert p.returncode == 0, p.stderr
    assert "(cache hits 0)" in p.stdout
    assert srv.stats["requests"] == 8

    listing = assay("list", "runs")
    assert listing.returncode == 0
    assert rid in listing.stdout


def test_api_key_is_sent_but_never_written(fake_server, workspace):
    secret = "sk-secret-123"
    srv = fake_server(rules=CAPITAL_RULES, require_api_key=secret)
    p = assay(*fake_run_args(srv.base_url), env={"OPENAI_API_KEY": secret})
    assert p.returncode == 0, p.stderr
    assert "scored 4 · errors 0" in p.stdout  # the server answers only with the key
    assert srv.stats["completed"] == 4
    rid = run_id_of(p.stdout)
    assert secret not in p.stdout + p.stderr

    run_dir = workspace / "runs" / rid
    for name in ("report.md", "report.html", "results.jsonl"):
        assert (run_dir / name).is_file()
    written = [f for f in workspace.rglob("*") if f.is_file()]
    assert workspace / "assay.db" in written
    for f in written:  # the db (and any -wal file), reports, results
        assert secret.encode() not in f.read_bytes(), f
    # and the run record itself holds no key, through SQLite too
    db = sqlite3.connect(workspace / "assay.db")
    try:
        dump = "\n".join(db.iterdump())
    finally:
        db.close()
    assert secret not in dump


@pytest.mark.slow
def test_local_model_smoke(workspace):
    p = assay("run", "qa", "--data", "examples/qa_example.jsonl", "--model", "local",
              "--limit", "3", "--scorer", "includes", "-q", timeout=300)
    assert p.returncode == 0, p.stderr
    rid = run_id_of(p.stdout)
    assert "samples 3" in p.stdout
    for name in ("report.md", "report.html", "results.jsonl"):
        assert (workspace / "runs" / rid / name).is_file(), name
    assert len((workspace / "runs" / rid / "results.jsonl").read_text().splitlines()) == 3
    listing = assay("list", "runs")
    assert listing.returncode == 0
    assert rid in listing.stdout
