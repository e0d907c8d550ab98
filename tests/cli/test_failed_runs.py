"""A run whose samples all failed (or too many of them) ends ``failed`` and exits 1 with
its most common error and a hint; nothing is lost, and ``--resume`` redoes the errored
samples (issue 24, point 2). The real CLI in a subprocess, a real fake OpenAI-compatible
server over HTTP, the real store read with its own SQLite connection.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from assay import evaluate
from assay.testing import Rule
from tests.storedb import rows

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "qa_example.jsonl"

# France and Italy right; Japan and Germany wrong
CAPITALS = [Rule(r"capital of France", "Answer: Paris"), Rule(r"capital of Italy", "Answer: Rome"),
            Rule(r"capital of Japan", "Answer: Kyoto"),
            Rule(r"capital of Germany", "Answer: Munich")]


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "assay", *args], capture_output=True,
                          text=True, timeout=300, cwd=REPO,
                          env=dict(os.environ, COLUMNS="80", NO_COLOR="1"))


def qa(base_url: str, *extra: str) -> list[str]:
    return ["run", "qa", "--data", str(EXAMPLE), "--model", "openai/fake", "--base-url",
            base_url, "--limit", "4", "--max-retries", "0", "-q", *extra]


def status_of(workspace: Path) -> list[tuple[str, str]]:
    return rows(workspace / "assay.db", "SELECT id, status FROM runs ORDER BY created_at")


def test_a_base_url_without_v1_fails_the_run_with_a_hint_and_resume_redoes_it(
        fake_server, workspace):
    srv = fake_server(rules=CAPITALS)
    no_v1 = srv.base_url.removesuffix("/v1")  # every call: HTTP 404
    p = cli(*qa(no_v1))
    assert p.returncode == 1, (p.stdout, p.stderr)
    assert "Traceback" not in p.stderr
    assert "4 of 4 samples failed" in p.stderr and "HTTP 404" in p.stderr, p.stderr
    assert "(4x)" in p.stderr, p.stderr  # the most common error, with its count
    assert "does --base-url end in /v1?" in p.stderr, p.stderr
    (run_id, status), = status_of(workspace)
    assert status == "failed"
    assert p.stdout.startswith(f"run {run_id} failed"), p.stdout
    listed = cli("list", "runs")
    row = next(line for line in listed.stdout.splitlines() if line.startswith(run_id))
    assert "failed" in row, listed.stdout  # shown failed; the footer says how to resume it
    assert "resume a run that failed" in listed.stdout
    # nothing lost: the four errored samples are stored, then redone with the right URL
    assert rows(workspace / "assay.db", "SELECT COUNT(*) FROM samples WHERE error IS NOT "
                "NULL") == [(4,)]
    again = cli("run", "qa", "--resume", run_id, "--base-url", srv.base_url, "-q")
    assert again.returncode == 0, again.stderr
    assert "normalized_match: 0.500" in again.stdout and "errors 0" in again.stdout, again.stdout
    assert status_of(workspace) == [(run_id, "finished")]
    assert srv.stats["requests"] == 4


def test_a_rejected_key_hints_at_the_api_key(fake_server, workspace):
    srv = fake_server(rules=CAPITALS, require_api_key="sk-right")
    p = cli(*qa(srv.base_url))
    assert p.returncode == 1, (p.stdout, p.stderr)
    assert "HTTP 401" in p.stderr and "set the API key" in p.stderr, p.stderr
    assert [s for _, s in status_of(workspace)] == ["failed"]


def test_max_error_rate_fails_a_run_with_some_errors(fake_server, workspace):
    # one sample of four answers HTTP 400: an error rate of 0.25
    rules = [Rule(r"capital of Japan", {"status": 400, "error": "bad request"}), *CAPITALS]
    srv = fake_server(rules=rules)
    p = cli(*qa(srv.base_url))  # the default, 1.0: only a run where all failed fails
    assert p.returncode == 0, p.stderr
    # a finished run with errors says what they were and how to redo them (1194102 said
    # only "errors 1")
    (run_id, _), = status_of(workspace)
    assert "errors 1" in p.stdout, p.stdout
    assert "error (1 sample): HTTP 400 from" in p.stdout and "bad request" in p.stdout, p.stdout
    assert f"the errored samples run again with: assay run qa --resume {run_id}" in p.stdout
    strict = cli(*qa(srv.base_url, "--max-error-rate", "0.2"))
    assert strict.returncode == 1, (strict.stdout, strict.stderr)
    assert "1 of 4 samples failed" in strict.stderr and "HTTP 400" in strict.stderr
    lenient = cli(*qa(srv.base_url, "--max-error-rate", "0.25"))  # not passed: finished
    assert lenient.returncode == 0, lenient.stderr
    assert [s for _, s in status_of(workspace)] == ["finished", "failed", "finished"]
    bad = cli(*qa(srv.base_url, "--max-error-rate", "2"))
    assert bad.returncode == 2 and "--max-error-rate" in bad.stderr, bad.stderr


def test_the_python_api_returns_a_failed_run_with_its_error(fake_server, workspace):
    srv = fake_server(rules=CAPITALS)
    result = evaluate("qa", model="openai/fake", data=str(EXAMPLE), limit=2,
                            base_url=srv.base_url.removesuffix("/v1"), max_retries=0)
    assert result.status == "failed"
    assert result.error.startswith("2 of 2 samples failed; most common error (2x): HTTP 404")
    assert status_of(workspace) == [(result.run_id, "failed")]
