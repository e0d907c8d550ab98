"""Checkpoints: answers through the real CLI (stdin), state in the store, --resume."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from assay.plan.checkpoint import interpret, read_rules
from assay.plan.schema import read_plan

REQUEST = "evaluate tool calling and grade-school math"


def plan_cli(*args: str, stdin: str = "", cwd: Path, env: dict[str, str] | None = None
             ) -> subprocess.CompletedProcess[str]:
    import os

    return subprocess.run([sys.executable, "-m", "assay", "plan", *args], input=stdin,
                          capture_output=True, text=True, cwd=cwd, timeout=120,
                          env={**os.environ, **(env or {})})


def session_state(workspace: Path) -> dict[str, Any]:
    """The one planning session's stored state, read from SQLite directly."""
    con = sqlite3.connect(workspace / "assay.db")
    try:
        rows = con.execute("SELECT state, status FROM plan_sessions"
                           ).fetchall()
    finally:
        con.close()
    assert len(rows) == 1
    state = json.loads(rows[0][0])
    state["_status"] = rows[0][1]
    return state


def session_id(out: str) -> str:
    return next(line.split()[-1] for line in out.splitlines()
                if line.startswith("planning session "))


@pytest.mark.parametrize("answer", ["blah", "yes please maybe", "approve?? no", "", "  "])
def test_an_unreadable_answer_is_asked_again_and_never_approved(
        answer: str, tmp_path: Path, workspace: Path) -> None:
    out = tmp_path / "p.yaml"
    done = plan_cli(REQUEST, "-o", str(out), stdin=f"{answer}\n{answer}\n", cwd=tmp_path)
    assert done.returncode == 3, done.stderr
    # asked again after each answer; the input ran out: paused, nothing approved
    assert done.stdout.count("checkpoint 1/3: plan") == 1
    assert done.stdout.count("[approve / edit / drop TASK / add TASK / back] > ") == 3
    if answer.strip():
        assert done.stdout.count("not understood") == 2
    assert "paused: no answer at checkpoint 'plan'; nothing was approved" in done.stderr
    assert not out.exists()
    state = session_state(workspace)
    assert state["stage"] == "checkpoint:plan"
    answers = [a for step in state["trace"] if step["step"] == "checkpoint"
               for a in step["answers"]]
    assert all(a["action"] is None for a in answers)


def test_resume_continues_at_the_checkpoint_where_it_stopped(tmp_path: Path,
                                                             workspace: Path) -> None:
    out = tmp_path / "p.yaml"
    first = plan_cli(REQUEST, "-o", str(out), stdin="approve\n", cwd=tmp_path)
    assert first.returncode == 3
    assert "checkpoint 2/3: resolution" in first.stdout
    assert session_state(workspace)["stage"] == "checkpoint:resolution"
    sid = session_id(first.stdout)
    import os

    listed = subprocess.run([sys.executable, "-m", "assay", "list", "runs"], text=True,
                            capture_output=True, cwd=tmp_path, env=dict(os.environ))
    # a session is not a run: it is listed after the runs, as a session to continue
    assert f"planning session {sid} (interrupted)" in listed.stdout
    assert "continue a planning session with: assay plan --resume <session>" in listed.stdout
    assert sid not in listed.stdout.split("planning session")[0]
    again = plan_cli("--resume", sid, stdin="ok\nlgtm\n", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    # the first checkpoint is not asked again; the next two are
    assert "checkpoint 1/3" not in again.stdout
    assert "checkpoint 2/3: resolution" in again.stdout and "checkpoint 3/3: metrics" in again.stdout
    plan = read_plan(out)
    assert [t.task for t in plan.tasks] == ["gsm8k", "bfcl"]
    state = session_state(workspace)
    assert state["stage"] == "done" and state["_status"] == "finished"
    answered = [a["answer"] for s in plan.trace if s["step"] == "checkpoint"
                for a in s["answers"]]
    assert answered == ["approve", "ok", "lgtm"]
    finished = plan_cli("--resume", sid, cwd=tmp_path)
    assert finished.returncode == 2 and "is finished" in finished.stderr


def test_drop_add_and_back(tmp_path: Path) -> None:
    out = tmp_path / "p.yaml"
    answers = ["drop bfcl", "add mmlu", "add nosuchbench", "drop humaneval", "approve",
               "back", "approve", "approve", "approve"]
    done = plan_cli(REQUEST, "-o", str(out), stdin="\n".join(answers) + "\n", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "dropped bfcl" in done.stdout and "added mmlu" in done.stdout
    assert "unknown task 'nosuchbench'" in done.stdout
    assert "not in the plan: humaneval" in done.stdout
    plan = read_plan(out)
    # back from the resolution checkpoint returns to the plan as it was approved
    assert [t.task for t in plan.tasks] == ["gsm8k", "mmlu"]
    assert done.stdout.count("checkpoint 1/3: plan") >= 2
    mmlu = plan.tasks[1]
    assert mmlu.primary == "choice_accuracy" and mmlu.why["selected"] == "added by the human"


def test_edit_opens_the_editor_and_validates_what_comes_back(tmp_path: Path) -> None:
    # an "editor" that sets the first task's limit, and one that writes a broken plan
    good = tmp_path / "good_editor.py"
    good.write_text("import sys, pathlib\np = pathlib.Path(sys.argv[1])\n"
                    "t = p.read_text().replace('\\n  limit: null', '\\n  limit: 7', 1)\n"
                    "p.write_text(t)\n")
    bad = tmp_path / "bad_editor.py"
    bad.write_text("import sys, pathlib\np = pathlib.Path(sys.argv[1])\n"
                   "t = p.read_text().replace('role: primary', 'role: secondary')\n"
                   "p.write_text(t)\n")
    out = tmp_path / "p.yaml"
    typo = tmp_path / "typo_editor.py"
    typo.write_text("import sys, pathlib\np = pathlib.Path(sys.argv[1])\n"
                    "t = p.read_text().replace('options: {}', 'options: {fewshots: 3}', 1)\n"
                    "p.write_text(t)\n")
    done = plan_cli(REQUEST, "-o", str(out), stdin="edit\napprove\napprove\napprove\n",
                    cwd=tmp_path, env={"EDITOR": f"{sys.executable} {typo}"})
    assert done.returncode == 0, done.stderr
    assert "fewshots" in done.stdout and "the plan is unchanged" in done.stdout
    assert read_plan(out).tasks[0].options == {}
    done = plan_cli(REQUEST, "-o", str(out), stdin="approve\napprove\nedit\napprove\n",
                    cwd=tmp_path, env={"EDITOR": f"{sys.executable} {bad}"})
    assert done.returncode == 0, done.stderr
    assert "exactly one metric has role primary (found 0" in done.stdout
    assert "the plan is unchanged" in done.stdout
    assert read_plan(out).tasks[0].limit is None
    out2 = tmp_path / "p2.yaml"
    done = plan_cli(REQUEST, "-o", str(out2), stdin="approve\nedit\napprove\napprove\n",
                    cwd=tmp_path, env={"EDITOR": f"{sys.executable} {good}"})
    assert done.returncode == 0, done.stderr
    assert "plan edited: 2 tasks" in done.stdout
    assert read_plan(out2).tasks[0].limit == 7


def test_yes_approves_every_checkpoint_and_the_trace_says_so(tmp_path: Path) -> None:
    out = tmp_path / "p.yaml"
    done = plan_cli(REQUEST, "--yes", "-o", str(out), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    plan = read_plan(out)
    steps = [s["step"] for s in plan.trace]
    assert steps == ["intent", "select", "checkpoint", "resolve", "checkpoint", "metrics",
                     "checkpoint"]
    assert [s["answers"][0]["answer"] for s in plan.trace if s["step"] == "checkpoint"] == \
        ["--yes"] * 3
    select = plan.trace[1]
    assert select["candidates"] and all("score" in c and "reason" in c
                                        for c in select["candidates"])


@pytest.mark.parametrize(("answer", "action"), [
    ("approve", "approve"), ("LGTM.", "approve"), ("y", "approve"), ("back", "back"),
    ("edit", "edit"), ("drop mmlu", "drop"), ("add gsm8k and bfcl", "add"),
    ("blah", None), ("approve and drop mmlu", None), ("", None), ("yes but", None),
])
def test_answers_read_by_the_rules(answer: str, action: str | None) -> None:
    got = read_rules(answer)
    assert (got.action if got else None) == action


def test_a_model_never_approves_and_reads_only_drops_and_adds_the_answer_names() -> None:
    def says(reply: Any) -> Any:
        return lambda _p, _s: reply

    # "blah" read as approve by a (bad) planner model: still not approved
    action, calls = interpret("blah", ask=says({"action": "approve", "targets": []}),
                              tasks=["gsm8k"])
    assert action is None and calls[0]["accepted"] is False
    for reply in ({"action": "back", "targets": []}, {"action": "edit", "targets": []},
                  "approve", None, {"action": "drop"}, {"action": "drop", "targets": ["gsm8k"]}):
        assert interpret("blah", ask=says(reply), tasks=["gsm8k"])[0] is None
    action, calls = interpret("I don't want the gsm8k one any more",
                              ask=says({"action": "drop", "targets": ["gsm8k"]}),
                              tasks=["gsm8k", "bfcl"])
    assert action is not None and action.action == "drop" and action.targets == ["gsm8k"]
    assert action.by == "model" and calls[0]["accepted"] is True


def test_a_plan_file_that_is_there_is_kept_not_lost(tmp_path: Path) -> None:
    out = tmp_path / "p.yaml"
    out.write_text("# my edited plan\n")
    done = plan_cli(REQUEST, "--yes", "-o", str(out), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "p.yaml.bak").read_text() == "# my edited plan\n"
    assert f"the plan that was at {out} is kept as {out}.bak" in done.stdout
    assert read_plan(out).tasks


def test_kill_minus_nine_at_a_checkpoint_then_resume(tmp_path: Path, workspace: Path) -> None:
    import os

    from tests.runwatch import kill9

    out = tmp_path / "p.yaml"
    proc = subprocess.Popen([sys.executable, "-m", "assay", "plan", REQUEST, "-o", str(out)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=tmp_path,
                            env=dict(os.environ))
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write("drop bfcl\napprove\n")
    proc.stdin.flush()
    seen = ""
    while "checkpoint 2/3: resolution" not in seen:
        line = proc.stdout.readline()
        assert line, "the planner exited early"
        seen += line
    sid = session_id(seen)
    kill9(proc)
    state = session_state(workspace)
    assert state["stage"] == "checkpoint:resolution" and state["_status"] == "running"
    done = plan_cli("--resume", sid, stdin="approve\napprove\n", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "checkpoint 1/3" not in done.stdout
    plan = read_plan(out)
    assert [t.task for t in plan.tasks] == ["gsm8k"]  # the drop before the kill is kept
