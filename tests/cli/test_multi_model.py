"""``assay run TASK --model A --model B``: one child run per model under one parent run,
a comparison table with each model's headline and the paired test, resumable; and the
ambiguous input that was accepted silently before: a repeated ``--model`` kept the last,
and ``assay run gsm8k --resume <a qa run>`` resumed the qa run (issue 24, points 4 and 9).
The real CLI in a subprocess, a real fake OpenAI-compatible server, the real store.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from assay.testing.fake_replies import last_user_text
from tests.storedb import rows

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "qa_example.jsonl"
ANSWERS = {row["question"]: row["answer"]
           for row in map(json.loads, EXAMPLE.read_text().splitlines())}


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "assay", *args], capture_output=True,
                          text=True, timeout=300, cwd=REPO,
                          env=dict(os.environ, COLUMNS="80", NO_COLOR="1"))


def qa(base_url: str, *extra: str) -> list[str]:
    return ["run", "qa", "--data", str(EXAMPLE), "--base-url", base_url, "--limit", "6",
            "--max-retries", "0", "-q", *extra]


def capitals(down: set[str]) -> Any:
    """``openai/good`` answers every question right, ``openai/bad`` every one wrong; a
    model named in ``down`` gets HTTP 503 (the set may change during the test)."""
    def reply(body: dict[str, Any]) -> Any:
        if body["model"] in down:
            return {"status": 503, "error": "model is loading"}
        question = next(q for q in ANSWERS if q in last_user_text(body))
        return f"Answer: {ANSWERS[question]}" if body["model"] == "good" else "Answer: Atlantis"
    return reply


def test_two_models_run_as_children_of_one_parent_with_a_paired_test(fake_server, workspace):
    srv = fake_server(responder=capitals(set()))
    p = cli(*qa(srv.base_url, "--model", "openai/good", "--model", "openai/bad"))
    assert p.returncode == 0, (p.stdout, p.stderr)
    db = workspace / "assay.db"
    (parent, kind, task), = rows(db, "SELECT id, kind, task FROM runs WHERE parent_id IS NULL")
    assert (kind, task) == ("pipeline", "multi_model")
    children = rows(db, "SELECT id, json_extract(spec, '$.model'), status FROM runs WHERE "
                    f"parent_id = '{parent}' ORDER BY created_at")
    assert [(m, s) for _, m, s in children] == [("openai/good", "finished"),
                                                ("openai/bad", "finished")]
    good, bad = children[0][0], children[1][0]
    assert sorted(m["model"] for m in srv.requests) == ["bad"] * 6 + ["good"] * 6
    lines = p.stdout.splitlines()
    table = lines[lines.index(next(x for x in lines if x.startswith("model "))):]
    assert table[0].split()[:3] == ["model", "run", "normalized_match"], p.stdout
    assert table[1].split()[:3] == ["openai/good", good, "1.000"], p.stdout
    assert table[2].split()[:3] == ["openai/bad", bad, "0.000"], p.stdout
    assert "[0.610, 1.000] (6/6)" in table[1]  # the headline's interval and counts
    # McNemar's exact test on the 6 shared samples, all 6 discordant: p = 2 * 0.5**6
    test = next(x for x in table if "openai/bad vs openai/good" in x)
    assert "-1.000" in test and "p=0.0312" in test and "n=6" in test, test
    report = (workspace / "runs" / parent / "report.md").read_text()
    assert "| openai/good |" in report and "p=0.0312" in report
    page = (workspace / "runs" / parent / "report.html").read_text()
    assert "<td>openai/good</td>" in page and "p=0.0312" in page
    listed = cli("list", "runs").stdout
    assert "qa on 2 models" in listed, listed


def test_a_failed_model_is_resumed_and_the_finished_one_kept(fake_server, workspace):
    down = {"bad"}
    srv = fake_server(responder=capitals(down))
    p = cli(*qa(srv.base_url, "--model", "openai/good", "--model", "openai/bad"))
    assert p.returncode == 1, (p.stdout, p.stderr)
    assert "openai/bad failed" in p.stderr and "HTTP 503" in p.stderr, p.stderr
    parent = p.stdout.split()[2]
    assert rows(workspace / "assay.db", f"SELECT status FROM runs WHERE id = '{parent}'") \
        == [("failed",)]
    down.clear()
    srv.reset()
    again = cli("run", "qa", "--resume", parent, "-q")
    assert again.returncode == 0, (again.stdout, again.stderr)
    assert "openai/good: finished before" in again.stdout, again.stdout
    assert [m["model"] for m in srv.requests] == ["bad"] * 6  # only the failed child's
    assert rows(workspace / "assay.db", "SELECT status, COUNT(*) FROM runs GROUP BY status") \
        == [("finished", 3)]
    wrong = cli("run", "gsm8k", "--resume", parent)
    assert wrong.returncode == 2 and "assay run qa --resume" in wrong.stderr, wrong.stderr


def test_a_model_given_twice_is_refused(fake_server, workspace):
    srv = fake_server(responder=capitals(set()))
    same = cli(*qa(srv.base_url, "--model", "openai/good", "--model", "openai/good"))
    assert same.returncode == 2, (same.stdout, same.stderr)
    assert same.stderr.strip() == ("error: --model openai/good is given more than once; give "
                                   "each model once")
    assert not (workspace / "assay.db").exists() or rows(
        workspace / "assay.db", "SELECT COUNT(*) FROM runs") == [(0,)]


def test_a_resume_of_another_tasks_run_is_refused(fake_server, workspace):
    srv = fake_server(responder=capitals(set()))
    p = cli(*qa(srv.base_url, "--model", "openai/good"))
    assert p.returncode == 0, p.stderr
    run_id = p.stdout.split()[1]
    wrong = cli("run", "gsm8k", "--resume", run_id, "--base-url", srv.base_url)
    assert wrong.returncode == 2, (wrong.stdout, wrong.stderr)
    assert wrong.stderr.strip() == (f"error: run {run_id} is a qa run; resume it with "
                                    f"assay run qa --resume {run_id}")
    assert rows(workspace / "assay.db", "SELECT COUNT(*) FROM samples") == [(6,)]
    assert len(srv.requests) == 6  # nothing was sent for the refused resume


def test_a_model_that_cannot_start_is_recorded_and_the_others_still_run(fake_server,
                                                                         workspace):
    srv = fake_server(responder=capitals(set()))
    p = cli(*qa(srv.base_url, "--model", "python/no_such_agent_module:make", "--model",
                "openai/good"))
    assert p.returncode == 1, (p.stdout, p.stderr)
    assert "python/no_such_agent_module:make failed: " in p.stderr, p.stderr
    assert "no_such_agent_module" in p.stderr and "Traceback" not in p.stderr
    statuses = rows(workspace / "assay.db", "SELECT kind, status FROM runs ORDER BY created_at")
    assert statuses == [("pipeline", "failed"), ("task", "finished")]
    assert [m["model"] for m in srv.requests] == ["good"] * 6
    assert "no pair to test" in p.stdout, p.stdout
