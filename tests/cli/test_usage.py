"""Usage errors and help, as a newcomer meets them (issue 24, point 1).

A group given no command prints its help (stdout, exit 2 as click does); a usage error is
the command's short usage line and one ``error:`` line that points at its ``--help``, never
the whole help as an error; ``assay run --help`` shows the options of every task and
the task names. Run for real
in a subprocess, from a folder outside the repository.
"""

from __future__ import annotations

import os
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
    listing = "\nTasks (" if args == ["run"] else "\nCommands:\n"
    assert listing in p.stdout and "--help" in p.stdout


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


def _section(help_text: str, title: str) -> str:
    """The text of a help section, from its title line to the next blank line."""
    return help_text.split(f"\n{title}", 1)[1].split("\n\n", 1)[0]


@pytest.mark.parametrize("columns", [60, 80])
def test_run_help_shows_the_options_of_every_task_and_every_task_name(
        columns: int, tmp_path: Path) -> None:
    """``assay run --help`` is what a newcomer reads first: it names --model and --limit
    (1194102 showed neither), lists the task names whole (not descriptions cut mid-word),
    with datagen's pipeline steps apart, fits the terminal, and imports no task."""
    p = assay("run", "--help", cwd=tmp_path, columns=columns)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("Usage: assay run TASK [--model M] [--limit N] [OPTIONS]")
    options = _section(p.stdout, "Options of every task")
    for flag in ("--model", "--limit", "--base-url", "--epochs", "--resume", "--no-cache"):
        assert flag in options, options
    tasks = _section(p.stdout, "Tasks (").split()
    steps = _section(p.stdout, "Steps of 'assay datagen'").split()
    for name in ("qa", "bfcl", "gsm8k", "humaneval", "arc_easy", "mtbench"):
        assert name in tasks, tasks
    assert not [t for t in tasks if t.startswith("datagen_")], tasks
    assert "datagen_judge" in steps and "datagen_generate" in steps, steps
    assert all(len(line) <= columns for line in p.stdout.splitlines()), p.stdout
    assert "..." not in p.stdout, p.stdout
    assert p.stdout.rstrip().endswith("lists its own\noptions.") or p.stdout.rstrip(
    ).endswith("lists its own options."), p.stdout[-200:]
    code = ("import sys\nsys.argv = ['assay', 'run', '--help']\n"
            "from assay.cli.main import main\ntry:\n    main()\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in sys.modules if m.startswith('assay.tasks.')"
            " and m.count('.') > 2 and not m.startswith('assay.tasks.gallery.')),"
            " file=sys.stderr)")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            cwd=tmp_path, timeout=120).stderr.strip().splitlines()[-1]
    assert loaded == "[]", loaded  # the gallery lists its names; 1194102 imported every task


def test_every_group_help_ends_pointing_at_a_commands_help(tmp_path: Path) -> None:
    for group in ([], ["list"], ["data"], ["datagen"], ["bfcl"], ["gaia"]):
        p = assay(*group, "--help", cwd=tmp_path)
        assert p.returncode == 0, p.stderr
        path = " ".join(["assay", *group])
        assert p.stdout.rstrip().endswith(f"See '{path} COMMAND --help' for a command's "
                                          "options."), p.stdout
        assert all(len(line) <= 100 for line in p.stdout.splitlines()), p.stdout
