"""``assay report RUN --csv`` (issue 34, point 8): samples.csv, one row per sample, quoted by
the stdlib csv module, with text cells a spreadsheet would run as formulas defused.

A real run by the CLI in a subprocess against the fake OpenAI-compatible server (real
HTTP); the file read back with Python's own csv reader.
"""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from assay.testing import FakeServer, Rule

#: (id, question, answer) rows: formulas in every column a spreadsheet would run, quotes,
#: commas and a line break, and a plain one
ROWS = [("plain", "What is 2 + 3?", "5"),
        ("=cmd", '=HYPERLINK("http://evil.invalid","click")', "+1"),
        ("quoted", 'He said "hi", then\nleft', "-5"),
        ("@sum", "@SUM(A1:A2)", "\tx"),
        ("boom", "Please boom", "x")]
REPLIES = [Rule(r"2 \+ 3", "Answer: 5"), Rule(r"HYPERLINK", "Answer: =1+1"),
           Rule(r"He said", "Answer: -5"), Rule(r"SUM", "Answer: @x"),
           Rule(r"boom", {"status": 500, "error": "upstream down"})]


def cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "assay", *args], capture_output=True,
                          text=True, timeout=300, cwd=home.parent,
                          env=dict(os.environ, ASSAY_HOME=str(home)))


def test_report_csv_writes_one_quoted_row_per_sample_with_formulas_defused(
        tmp_path: Path, workspace: Path) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps({"id": i, "question": q, "answer": a}) + "\n"
                            for i, q, a in ROWS))
    with FakeServer(rules=REPLIES) as srv:
        p = cli(workspace, "run", "qa", "--data", str(data), "--model", "openai/fake",
                "--base-url", srv.base_url, "--scorer", "exact", "--max-retries", "0", "-q")
    assert p.returncode == 0, p.stderr
    run = re.search(r"^run (\S+) finished", p.stdout, re.M).group(1)
    p = cli(workspace, "report", run, "--csv")
    assert p.returncode == 0, p.stderr
    path = workspace / "runs" / run / "samples.csv"
    assert p.stdout == f"csv: {path}\n"
    with path.open(newline="", encoding="utf-8") as f:
        table = list(csv.reader(f))
    head, body = table[0], table[1:]
    score = next(h for h in head if h.startswith("score:"))
    assert head == ["sample_id", "epoch", "input", "target", "output", "answer", score,
                    "error", "latency_s", "input_tokens", "output_tokens", "cost_usd"]
    assert len(body) == len(ROWS)
    got = {r[0]: dict(zip(head, r, strict=True)) for r in body}
    assert list(got) == ["plain", "'=cmd", "quoted", "'@sum", "boom"]  # dataset order
    # plain text and numbers as they are
    plain = got["plain"]
    assert (plain["input"], plain["target"], plain["answer"]) == ("What is 2 + 3?", "5", "5")
    assert plain["output"] == "Answer: 5" and plain["epoch"] == "0"
    assert float(plain[score]) == 1.0 and int(plain["input_tokens"]) > 0
    assert float(plain["latency_s"]) >= 0 and plain["error"] == ""
    assert plain["cost_usd"] == "0.0"  # a server on this machine: free, said as 0 (not blank)
    # formulas defused with a leading quote: input, target, output and answer alike
    assert got["'=cmd"]["input"] == "'" + ROWS[1][1]
    assert got["'=cmd"]["target"] == "'+1" and got["'=cmd"]["answer"] == "'=1+1"
    assert got["'@sum"]["input"] == "'@SUM(A1:A2)" and got["'@sum"]["target"] == "'\tx"
    assert got["'@sum"]["answer"] == "'@x"
    # quotes, a comma and a line break come back whole; a text "-5" is defused too
    assert got["quoted"]["input"] == 'He said "hi", then\nleft'
    assert got["quoted"]["target"] == "'-5" and got["quoted"]["answer"] == "'-5"
    assert float(got["quoted"][score]) == 1.0  # a number we computed is never prefixed
    # the errored sample: its error, no score, no answer
    boom = got["boom"]
    assert "HTTP 500" in boom["error"] and "upstream down" in boom["error"]
    assert boom[score] == "" and boom["answer"] == ""
    # raw file: the stdlib's quoting (doubled quotes inside a quoted field)
    raw = path.read_text(encoding="utf-8")
    assert '"He said ""hi"", then\nleft"' in raw
    # --out elsewhere; a parent run has no samples of its own: one line, exit 2
    out = tmp_path / "elsewhere"
    assert cli(workspace, "report", run, "--csv", "--out", str(out)).returncode == 0
    assert (out / "samples.csv").read_bytes() == path.read_bytes()
    both = cli(workspace, "report", run, "--csv", "--summary")
    assert both.returncode == 2 and "give --summary or --csv, not both" in both.stderr
    # the help says what the file holds and how formulas are defused
    helped = " ".join(cli(workspace, "report", "--help").stdout.split())
    assert "--csv Write only samples.csv: one row per sample" in helped
    assert ("a text cell that begins with = + - @, a tab or a carriage return gets a "
            "leading ' so it is never run as a formula (OWASP's advice)") in helped


def test_csv_of_a_parent_run_is_refused_in_one_line(tmp_path: Path, workspace: Path) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"id": "a", "question": "What is 2 + 3?", "answer": "5"}) + "\n")
    with FakeServer(rules=REPLIES) as srv:
        p = cli(workspace, "run", "qa", "--data", str(data), "--base-url", srv.base_url,
                "--model", "openai/a", "--model", "openai/b", "-q")
    assert p.returncode == 0, p.stderr
    parent = re.search(r"\b(\d{8}-\d{6}-[0-9a-f]{6})\b", p.stdout).group(1)
    import sqlite3

    con = sqlite3.connect(workspace / "assay.db")
    try:
        (kind,), = con.execute("SELECT kind FROM runs WHERE id = ?", (parent,)).fetchall()
    finally:
        con.close()
    assert kind == "pipeline", p.stdout
    q = cli(workspace, "report", parent, "--csv")
    assert q.returncode == 2 and "Traceback" not in q.stderr
    assert f"run {parent} is a pipeline run, with no samples of its own" in q.stderr
    assert not (workspace / "runs" / parent / "samples.csv").exists()
