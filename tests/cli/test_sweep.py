"""What the first hour's sweep found, each from a fresh folder at 80 terminal columns."""

from __future__ import annotations

import re
from pathlib import Path

from click.testing import CliRunner

from assay.cli.app import app
from assay.tasks.gallery.entry import all_entries


def run(*args: str, cwd: Path) -> str:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "80",
                                                       "ASSAY_HOME": str(cwd / "home")})
    assert result.exit_code == 0, result.output
    return result.output


def test_list_tasks_fits_80_columns_with_every_name_and_description_whole(tmp_path: Path) -> None:
    shown = run("list", "tasks", cwd=tmp_path)
    long = [line for line in shown.splitlines() if len(line) > 80]
    assert not long, long
    names = {line.split()[0] for line in shown.splitlines() if line[:1].strip()}
    assert set(all_entries()) <= names, set(all_entries()) - names
    # a built-in task's description is wrapped, never cut: its words all there, in order
    text = " ".join(shown.split())
    assert re.search(r"Berkeley Function Calling Leaderboard v4 \(single- ?turn, multi-turn, "
                     r"agentic\), official verdicts, fc or prompt mode\. \[tool_use; agent; "
                     r"data: assay data pull bfcl\]", text), text[:600]


def test_a_one_task_plan_says_1_task(tmp_path: Path) -> None:
    shown = run("plan", "evaluate grade-school math word problems", "--yes", "-o",
                str(tmp_path / "p.yaml"), cwd=tmp_path)
    assert re.search(r"^plan written to \S+p\.yaml: 1 task \(gsm8k\)$", shown, re.M), shown
