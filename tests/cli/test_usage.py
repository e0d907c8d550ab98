"""Usage errors and help, as a newcomer meets them (issue 24, point 1).

A group given no command prints its help (stdout, exit 2 as click does); a usage error is
the command's short usage line and one ``error:`` line that points at its ``--help``, never
the whole help as an error; ``assay run --help`` lists each task on one line. Run for real
in a subprocess, from a folder outside the repository.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ASSAY = str(Path(sys.executable).parent / "assay")


def assay(*args: str, cwd: Path, columns: int = 100) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, COLUMNS=str(columns), NO_COLOR="1")
    return subprocess.run([ASSAY, *args], capture_output=True, text=True, env=env, cwd=cwd,
                          timeout=120)


@pytest.mark.parametrize("args", [[], ["run"], ["list"], ["datagen"]])
def test_a_group_without_a_command_prints_its_help(args: list[str], tmp_path: Path) -> None:
    p = assay(*args, cwd=tmp_path)
    assert p.returncode == 2, (p.returncode, p.stderr)  # click's status for a missing command
    assert p.stderr == "", p.stderr  # the help is not an error line
    assert p.stdout.startswith(f"Usage: {' '.join(['assay', *args])} "), p.stdout[:200]
    assert "\nCommands:\n" in p.stdout and "--help" in p.stdout


@pytest.mark.parametrize(("args", "usage", "see", "needles"), [
    (["list", "task"], "Usage: assay list [OPTIONS] COMMAND", "assay list", ("'task'",)),
    (["report"], "Usage: assay report [OPTIONS] RUN_ID", "assay report",
     ("Missing argument 'RUN_ID'",)),
    (["list", "runs", "surplus"], "Usage: assay list runs [OPTIONS]", "assay list runs",
     ("surplus",)),
    (["run", "qa", "--bogus"], "Usage: assay run qa [OPTIONS]", "assay run qa",
     ("--bogus", "--data")),
    (["--bogus"], "Usage: assay [OPTIONS] COMMAND", "assay", ("--bogus",)),
])
def test_a_usage_error_is_the_usage_and_one_line(args: list[str], usage: str, see: str,
                                                  needles: tuple[str, ...],
                                                  tmp_path: Path) -> None:
    p = assay(*args, cwd=tmp_path)
    assert p.returncode == 2, (p.returncode, p.stderr)
    lines = p.stderr.splitlines()
    assert len(lines) == 2, p.stderr
    assert lines[0].startswith(usage), lines
    assert lines[1].startswith("error: ") and lines[1].endswith(f" (see '{see} --help')"), lines
    assert "Commands:" not in p.stderr and "Options:" not in p.stderr, p.stderr  # no help
    for needle in needles:
        assert needle in lines[1], (needle, lines[1])
    assert p.stdout == "" and "Traceback" not in p.stderr


def test_a_bad_value_or_task_is_one_line(tmp_path: Path) -> None:
    p = assay("run", "qa", "--max-connections", "abc", cwd=tmp_path)
    assert p.returncode == 2
    assert p.stderr.splitlines() == [
        "error: Invalid value for '--max-connections' / '-c': 'abc' is not a valid integer. "
        "(see 'assay run qa --help')"], p.stderr
    p = assay("run", "gsm8kk", cwd=tmp_path)
    assert p.returncode == 2 and len(p.stderr.splitlines()) == 1, p.stderr
    assert p.stderr.startswith("error: unknown task 'gsm8kk' (did you mean 'gsm8k'?)")


def _listing(help_text: str) -> list[str]:
    """The lines of a help's Commands section."""
    section = help_text.split("\nCommands:\n", 1)[1]
    return section.split("\n\n", 1)[0].splitlines()


@pytest.mark.parametrize("columns", [60, 100])
def test_run_help_lists_each_task_on_one_line(columns: int, tmp_path: Path) -> None:
    p = assay("run", "--help", cwd=tmp_path, columns=columns)
    assert p.returncode == 0, p.stderr
    rows = _listing(p.stdout)
    names = [row.split()[0] for row in rows]
    # every row starts with a task name: no description wraps onto a line of its own
    assert all(re.match(r"  [a-z][a-z0-9_]+ {2,}\S", row) for row in rows), rows
    for name in ("qa", "bfcl", "gsm8k", "humaneval", "datagen_judge"):
        assert name in names, names
    assert all(len(line) <= columns for line in p.stdout.splitlines()), p.stdout
    # HEAD printed 316 lines and 22.5 KB at 200 columns (every task's whole paragraph)
    assert len(p.stdout.splitlines()) < len(rows) + 20, p.stdout
    assert p.stdout.rstrip().splitlines()[-1].startswith("See 'assay run TASK --help'"), (
        p.stdout[-300:])


def test_every_group_help_ends_pointing_at_a_commands_help(tmp_path: Path) -> None:
    for group in ([], ["list"], ["data"], ["datagen"], ["bfcl"], ["gaia"]):
        p = assay(*group, "--help", cwd=tmp_path)
        assert p.returncode == 0, p.stderr
        path = " ".join(["assay", *group])
        assert p.stdout.rstrip().endswith(f"See '{path} COMMAND --help' for a command's "
                                          "options."), p.stdout
        assert all(len(line) <= 100 for line in p.stdout.splitlines()), p.stdout
