"""``assay list runs`` fits 80 columns, on a terminal and piped, one line per run (issue 34,
point 3): the run's id, status and counts whole (never "finis…", issue 24, point 8), a long
model name cut in its middle; it shows each run's headline, marks a failed run, and prints
JSON as one array (``--json``) or one object per line (``--jsonl``), names whole. The real
CLI in a subprocess over runs made against a real fake OpenAI-compatible server.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from assay.testing import Rule

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "qa_example.jsonl"
LONG_MODEL = "openai/meta-llama/Llama-3.3-70B-Instruct-Turbo-Free"
CAPITALS = [Rule(r"capital of France", "Answer: Paris"), Rule(r"capital of Italy", "Answer: Rome"),
            Rule(r"capital of Japan", "Answer: Kyoto"),
            Rule(r"capital of Germany", "Answer: Munich")]


def cli(*args: str, columns: str | None = "80") -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    if columns is not None:
        env["COLUMNS"] = columns
    return subprocess.run([sys.executable, "-m", "assay", *args], capture_output=True,
                          text=True, timeout=300, cwd=REPO, env=dict(env, NO_COLOR="1"))


@pytest.fixture
def two_runs(fake_server, workspace) -> tuple[str, str]:
    """A finished run of a long model name (normalized_match 0.5) and a failed run (HTTP 404)."""
    srv = fake_server(rules=CAPITALS)
    ids = []
    for model, url in ((LONG_MODEL, srv.base_url),
                       ("openai/fake", srv.base_url.removesuffix("/v1"))):
        p = cli("run", "qa", "--data", str(EXAMPLE), "--model", model, "--base-url", url,
                "--limit", "4", "--max-retries", "0", "-q")
        ids.append(p.stdout.split()[1])
    return ids[0], ids[1]


@pytest.mark.parametrize("columns", ["80", None])  # a terminal of 80 columns; a pipe
def test_the_table_fits_80_columns_one_line_per_run(two_runs, columns):
    finished, failed = two_runs
    p = cli("list", "runs", columns=columns)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines), "\n".join(lines)
    header = lines[0]
    assert header.split() == ["run", "task", "/", "model", "status", "n", "err", "cost",
                              "headline"]
    assert [line.split()[0] for line in lines[1:3]] == [failed, finished], p.stdout
    row = {line.split()[0]: line for line in lines[1:3]}
    # a server on this machine costs nothing: $0 (a run's price unknown reads "unknown")
    assert row[failed].split()[1:] == ["qa", "openai/fake", "failed", "4", "4", "$0", "-"]
    task, model, *rest = row[finished].split()[1:]
    assert (task, rest[:4], rest[5:]) == ("qa", ["finished", "4", "0", "$0"], ["0.500"]), \
        row[finished]
    # the metric's registered name, read from its start: cut at its end where 80 columns
    # leave no room
    assert rest[4] == "normalized_match" or (
        rest[4].endswith("…") and "normalized_match".startswith(rest[4][:-1])
        and len(rest[4]) >= 8), row[finished]
    # the model's name cut in its middle: its provider's start and its end kept (beside a
    # metric's registered name, normalized_match, and the cost column, the model gets
    # fewer characters than beside the old "accuracy")
    head, tail = model.split("…")
    assert LONG_MODEL.startswith(head) and LONG_MODEL.endswith(tail) and len(tail) >= 5, model


def test_json_is_one_array_and_jsonl_one_object_per_line(two_runs):
    finished, failed = two_runs
    p = cli("list", "runs", "--json")
    assert p.returncode == 0, p.stderr
    runs = json.loads(p.stdout)
    assert [r["id"] for r in runs] == [failed, finished]
    assert runs[1]["model"] == LONG_MODEL and runs[1]["status"] == "finished"
    assert runs[1]["headline"]["metric"] == "normalized_match" and runs[1]["headline"]["value"] == 0.5
    assert runs[0]["status"] == "failed" and runs[0]["headline"] is None
    assert "HTTP 404" in runs[0]["error"] and runs[0]["resumable"] is True
    assert runs[0]["cost_usd"] == runs[1]["cost_usd"] == 0  # free: a server on this machine
    lines = cli("list", "runs", "--jsonl").stdout.splitlines()
    assert [json.loads(line) for line in lines] == runs
