"""Finding one's way (issue 24, point 10): a misplaced or misspelt command or ``-T`` key is
answered with the nearest names, help texts read as plain words, and the example
``assay --help`` starts with works from any folder. The real CLI, in a subprocess.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from assay.testing import FakeServer

ASSAY = str(Path(sys.executable).parent / "assay")
#: reStructuredText that click would print raw
RST = re.compile(r"``|:(func|class|mod|meth|attr|ref):`")


def assay(*args: str, cwd: Path, env: dict[str, str] | None = None,
          timeout: float = 120) -> subprocess.CompletedProcess[str]:
    full = dict(os.environ, COLUMNS="100", NO_COLOR="1")
    full.update(env or {})
    return subprocess.run([ASSAY, *args], capture_output=True, text=True, env=full, cwd=cwd,
                          timeout=timeout)


def error_line(p: subprocess.CompletedProcess[str]) -> str:
    """The one ``error:`` line of a usage error (after the usage line)."""
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    line = p.stderr.splitlines()[-1]
    assert line.startswith("error: "), p.stderr
    return line


def test_datagen_review_points_at_assay_review(tmp_path: Path) -> None:
    line = error_line(assay("datagen", "review", "problems.jsonl", cwd=tmp_path))
    assert "no command 'review' in 'assay datagen'" in line, line
    assert "did you mean 'assay review'?" in line, line
    # a name no group has gets none of that
    line = error_line(assay("datagen", "frobnicate", cwd=tmp_path))
    assert "did you mean" not in line and "generate, judge, pipeline, verify, winrate" in line


@pytest.mark.parametrize(("args", "name", "suggestion"), [
    (["list", "task"], "task", "did you mean 'tasks'?"),
    (["list", "run"], "run", "did you mean 'runs' or 'assay run'?"),
    (["data", "pul", "gsm8k"], "pul", "did you mean 'pull'?"),
    (["veiw"], "veiw", "did you mean 'view'"),
])
def test_an_unknown_command_suggests_the_nearest(args: list[str], name: str, suggestion: str,
                                                 tmp_path: Path) -> None:
    line = error_line(assay(*args, cwd=tmp_path))
    assert f"no command {name!r}" in line and suggestion in line, line


def test_an_unknown_task_option_suggests_the_nearest(tmp_path: Path) -> None:
    line = error_line(assay("run", "qa", "-T", "scorrer=includes", "--data", "d.jsonl",
                            cwd=tmp_path))
    assert "unknown option scorrer for task qa (did you mean scorer?)" in line, line
    assert "valid options: " in line and "data" in line.split("valid options: ")[1]
    line = error_line(assay("run", "qa", "-T", "qzx=1", "--data", "d.jsonl", cwd=tmp_path))
    assert "unknown option qzx" in line and "did you mean" not in line, line


#: every command whose help text lives in the modules of the cli helper, with its groups
OWN_HELP = [[], ["run"], ["data"], ["datagen"], ["bfcl"], ["gaia"], ["review"], ["report"],
            ["score"], ["plan"], ["view"], ["list", "metrics"], ["data", "pull"],
            ["data", "list"], ["datagen", "generate"], ["datagen", "judge"],
            ["datagen", "winrate"], ["datagen", "verify"], ["datagen", "pipeline"],
            ["bfcl", "score"], ["gaia", "score"]]


@pytest.mark.parametrize("command", OWN_HELP, ids=lambda c: " ".join(c) or "assay")
def test_help_reads_as_plain_words(command: list[str], tmp_path: Path) -> None:
    p = assay(*command, "--help", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    found = RST.search(p.stdout)
    assert found is None, p.stdout[max(found.start() - 80, 0):found.end() + 80]


def test_the_start_example_works_from_any_folder(tmp_path: Path) -> None:
    """The commands ``assay --help`` suggests, run in order from an empty folder, each in
    80 columns; the model is swapped for the fake server (the embedded model is tested
    elsewhere) and BFCL's data pulled from the installed checker (no network)."""
    folder = tmp_path / "anywhere"
    folder.mkdir()
    env = {"ASSAY_HOME": str(tmp_path / "home"), "COLUMNS": "80"}
    shown = assay("--help", cwd=folder, env=env).stdout
    start = shown.split("Start with:", 1)[1].split("Options:", 1)[0]
    assert all(len(line) <= 80 for line in start.splitlines()), start
    commands = [line.split("#")[0].strip() for line in start.splitlines()
                if line.strip().startswith("assay ")]
    runs = [c for c in commands if c.startswith("assay run ")]
    assert len(runs) == 1 and commands.index(runs[0]) <= 1, shown  # first, or after a pull
    for command in commands[:commands.index(runs[0])]:
        pulled = assay(*shlex.split(command)[1:], cwd=folder, env=env)
        assert pulled.returncode == 0, pulled.stderr
    args = shlex.split(runs[0])[1:]
    assert "--model" in args, args
    model_at = args.index("--model")
    assert args[model_at + 1] == "local", args  # the embedded model: no server, no key
    task = args[1]
    with FakeServer(default_reply="Answer: A") as server:
        args[model_at:model_at + 2] = ["--model", "openai/fake", "--base-url", server.base_url]
        p = assay(*args, "-q", cwd=folder, env=env, timeout=300)
    assert p.returncode == 0, p.stderr
    assert re.search(r"^run \S+ finished", p.stdout, re.M), p.stdout
    assert re.search(r"^samples 5 · scored 5 · errors 0", p.stdout, re.M), p.stdout
    for later in commands[commands.index(runs[0]) + 1:]:
        if later.split()[1] == "view":
            continue  # a web server (tested in tests/view)
        q = assay(*shlex.split(later)[1:], cwd=folder, env=env)
        assert q.returncode == 0 and task in q.stdout, (later, q.stdout, q.stderr)
