"""``assay list runs`` fits 80 columns, on a terminal and piped, cuts nothing ("opena…",
"finis…"), shows each run's headline, marks a failed run, and prints JSON as one array
(``--json``) or one object per line (``--jsonl``) (issue 24, point 8). The real CLI in a
subprocess over runs made against a real fake OpenAI-compatible server.
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
    """A finished run of a long model name (accuracy 0.5) and a failed run (HTTP 404)."""
    srv = fake_server(rules=CAPITALS)
    ids = []
    for model, url in ((LONG_MODEL, srv.base_url),
                       ("openai/fake", srv.base_url.removesuffix("/v1"))):
        p = cli("run", "qa", "--data", str(EXAMPLE), "--model", model, "--base-url", url,
                "--limit", "4", "--max-retries", "0", "-q")
        ids.append(p.stdout.split()[1])
    return ids[0], ids[1]


def column(lines: list[str], header: str, name: str, run_id: str) -> str:
    """The text of one column over the lines of one run's row (a wrapped cell joined)."""
    start = header.index(name)
    later = [i for i in (header.find(h, start + 1) for h in ("status",)) if i > 0]
    end = min(later) if later else None  # the last column runs to the line's end
    first = next(i for i, line in enumerate(lines) if line.startswith(run_id))
    cell = [lines[first][start:end].strip()]
    for line in lines[first + 1:]:
        if line[:len(run_id)].strip():  # the next run's row
            break
        cell.append(line[start:end].strip())
    return "".join(cell)


@pytest.mark.parametrize("columns", ["80", None])  # a terminal of 80 columns; a pipe
def test_the_table_fits_80_columns_and_cuts_nothing(two_runs, columns):
    finished, failed = two_runs
    p = cli("list", "runs", columns=columns)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines), "\n".join(lines)
    assert "…" not in p.stdout, p.stdout
    header = lines[0]
    assert header.split() == ["run", "task", "/", "model", "status", "n", "err", "headline"]
    row = {line.split()[0]: line for line in lines[1:] if line[:1].strip()}
    assert row[failed].split()[1:] == ["qa", "failed", "4", "4", "-"], row[failed]
    assert row[finished].split()[1:5] == ["qa", "finished", "4", "0"], row[finished]
    # the model's whole name, wrapped over the row's lines
    assert column(lines, header, "task / model", finished) == "qa" + LONG_MODEL
    assert column(lines, header, "headline", finished).replace(" ", "") == "accuracy0.500"


def test_json_is_one_array_and_jsonl_one_object_per_line(two_runs):
    finished, failed = two_runs
    p = cli("list", "runs", "--json")
    assert p.returncode == 0, p.stderr
    runs = json.loads(p.stdout)
    assert [r["id"] for r in runs] == [failed, finished]
    assert runs[1]["model"] == LONG_MODEL and runs[1]["status"] == "finished"
    assert runs[1]["headline"]["metric"] == "accuracy" and runs[1]["headline"]["value"] == 0.5
    assert runs[0]["status"] == "failed" and runs[0]["headline"] is None
    assert "HTTP 404" in runs[0]["error"] and runs[0]["resumable"] is True
    lines = cli("list", "runs", "--jsonl").stdout.splitlines()
    assert [json.loads(line) for line in lines] == runs
