"""What the first hour's sweep found, each from a fresh folder at 80 terminal columns."""

from __future__ import annotations

import json
import re
from pathlib import Path

from click.testing import CliRunner

from assay.cli.app import app
from assay.tasks.gallery.entry import all_entries
from assay.testing import FakeServer, Rule


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


def test_compare_and_list_runs_fit_80_columns_and_say_every_column_whole(
        tmp_path: Path) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps({"id": f"a_rather_long_sample_identifier_{i}",
                                        "question": f"Say w{i}", "answer": f"w{i}"}) + "\n"
                            for i in range(12)))
    runs = []
    with FakeServer(default_reply="Answer: w1") as first, \
            FakeServer(default_reply="Answer: nothing") as second:
        for server in (first, second):
            shown = run("run", "qa", "--data", str(data), "--model", "openai/fake",
                        "--base-url", server.base_url, "-q", cwd=tmp_path)
            runs.append(re.search(r"^run (\S+) finished", shown, re.M).group(1))
    compared = run("compare", *runs, cwd=tmp_path)
    assert "broken by B (1): a_rather_long_sample_identifier_1" in compared, compared
    # every line but the written files' paths (whole, to be copied)
    long = [line for line in compared.splitlines()
            if len(line) > 80 and not Path(line.split(": ", 1)[-1]).exists()]
    assert not long, long
    # a wrapped line goes on under itself: the configuration's fingerprints, both headlines
    assert re.search(r"^    \S", compared, re.M), compared
    history = run("history", "qa", "--all", cwd=tmp_path)
    assert "a_rather" not in history and runs[0] in history, history
    long = [line for line in history.splitlines()
            if len(line) > 80 and not Path(line.split(": ", 1)[-1]).exists()]
    assert not long, long
    listed = run("list", "runs", cwd=tmp_path).splitlines()
    assert listed[0].split() == ["run", "task", "/", "model", "status", "n", "err", "cost",
                                 "headline"]
    assert all(len(line) <= 80 and line == line.rstrip() for line in listed), listed


def test_an_unknown_subcommand_is_one_sentence_naming_the_commands(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["store", "info"], prog_name="assay",
                                env={"ASSAY_HOME": str(tmp_path)})
    assert result.exit_code == 2
    assert "no command 'info' in 'assay store'; its commands: migrate\n" in result.output, \
        result.output


def test_a_run_with_errors_and_hints_says_them_in_80_columns(tmp_path: Path) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps({"id": f"q{i}", "question": f"Say w{i}",
                                        "answer": f"w{i}"}) + "\n" for i in range(4)))
    boom = Rule(r"Say w0", {"status": 500, "error": "upstream down " + "and out " * 12})
    with FakeServer(rules=[boom], default_reply="Answer: w1") as server:
        result = CliRunner().invoke(app, [
            "run", "qa", "--data", str(data), "--model", "openai/fake", "--base-url",
            server.base_url, "--max-retries", "0"],
            env={"COLUMNS": "80", "ASSAY_HOME": str(tmp_path / "home")})
    shown = result.output
    assert re.search(r"^error \(1 sample\): HTTP 500", shown, re.M), shown
    long = [line for line in shown.splitlines()
            if len(line) > 80 and not Path(line.split(": ", 1)[-1]).exists()]
    assert not long, long


def test_a_plan_is_shown_in_80_columns_its_reasons_under_themselves(tmp_path: Path) -> None:
    shown = run("plan", "evaluate tool calling and grade-school math", "--yes", "-o",
                str(tmp_path / "p.yaml"), cwd=tmp_path)
    lines = shown.splitlines()
    long = [line for line in lines if len(line) > 80 and str(tmp_path) not in line]
    assert not long, long
    why = next(i for i, line in enumerate(lines) if line.startswith("     why: canonical"))
    assert lines[why + 1].startswith("         ") and lines[why + 1].strip(), lines
