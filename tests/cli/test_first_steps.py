"""What a newcomer meets in a fresh folder with the commands around ``assay run``: ``-h``,
reading commands that find no store, arguments the help explains, plain output. The real
CLI, in a subprocess, from an empty folder.
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


@pytest.mark.parametrize("args", [[], ["run", "qa"], ["list", "runs"], ["datagen", "judge"]])
def test_dash_h_is_help(args: list[str], tmp_path: Path) -> None:
    p = assay(*args, "-h", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith(f"Usage: {' '.join(['assay', *args])}"), p.stdout[:200]
    assert "-h, --help" in p.stdout


@pytest.mark.parametrize("command", ["report", "score"])
def test_a_reading_command_without_a_store_creates_none(command: str, tmp_path: Path,
                                                        workspace: Path) -> None:
    p = assay(command, "20260101-000000-abcdef", cwd=tmp_path)
    assert p.returncode == 2
    assert p.stderr.splitlines() == [
        f"error: no run '20260101-000000-abcdef': there is no store at "
        f"{workspace / 'assay.db'} yet, so 'assay list runs' lists none; run something first "
        "('assay run ...'), or set ASSAY_HOME to the workspace that holds assay.db"], p.stderr
    assert not workspace.exists()  # nothing made as a side effect


@pytest.mark.parametrize("command", [["review"], ["datagen", "judge"], ["datagen", "winrate"],
                                     ["datagen", "verify"]])
def test_the_help_says_what_data_is(command: list[str], tmp_path: Path) -> None:
    p = assay(*command, "--help", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "[OPTIONS] DATA" in p.stdout
    assert "DATA: a problems file, JSON or JSONL, as 'assay datagen generate' writes it" in (
        " ".join(p.stdout.split())), p.stdout


@pytest.mark.parametrize("command", [["datagen", "generate"], ["datagen", "pipeline"],
                                     ["gaia", "score"]])
def test_the_help_names_no_unexplained_book(command: list[str], tmp_path: Path) -> None:
    text = " ".join(assay(*command, "--help", cwd=tmp_path).stdout.split())
    assert "the book's" not in text, text


def test_list_metrics_on_a_narrow_terminal_pads_no_lines(tmp_path: Path) -> None:
    p = assay("list", "metrics", cwd=tmp_path, columns=80)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    descriptions = [line for line in lines if line.startswith("    ")]
    assert len(descriptions) > 20, p.stdout  # the narrow layout: a block per metric
    padded = [line for line in descriptions if line != line.rstrip()]
    assert not padded, padded[:3]
    assert all(len(line) <= 80 for line in lines), p.stdout
