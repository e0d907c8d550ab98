"""A sibling folder whose name starts with the base folder's (issue 32): ``task2/`` beside
``task/``, ``cases-old/`` beside ``cases/``.

The text of ``/x/task2/rows.jsonl`` starts with the text of ``/x/task``, so a containment
check that compares strings (``str(target).startswith(str(base))``) would let every
file of the sibling through. Each test names a file of the sibling as a user's file does
(``..``, a link) and expects the one path policy (:mod:`assay.core.paths`) to refuse it,
directly and through the real readers: a YAML task's data file and template, a plan's
option, a conversation case's ``data_files``, the agent's file tools. The controls show
that the same readers accept a file of the base folder itself.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from assay.core.paths import copy_inside, file_value, inside, refuse_links_out
from assay.errors import AssayError, ConfigError

SECRET = "SIBLING-SECRET-7c2e91"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def folders(tmp_path: Path) -> tuple[Path, Path]:
    """``task/`` (the base, with a question file of its own) and ``task2/`` beside it
    (a sibling whose name starts with the base's, holding secrets)."""
    base, sibling = tmp_path / "task", tmp_path / "task2"
    write(base / "q.jsonl", "".join(json.dumps({"question": f"what is {i}+{i}?",
                                                "answer": str(2 * i)}) + "\n"
                                    for i in range(3)))
    write(sibling / "rows.jsonl", json.dumps({"question": f"leak {SECRET}?",
                                              "answer": "x"}) + "\n")
    write(sibling / "secret.txt", f"the password is {SECRET}\n")
    (sibling / "sub").mkdir()
    assert str(sibling / "rows.jsonl").startswith(str(base))  # the trap is set
    return base, sibling


SIBLING_NAMES = ["../task2/rows.jsonl", "../task2", "sub/../../task2/secret.txt",
                 "./../task2/sub"]


@pytest.mark.parametrize("name", SIBLING_NAMES)
def test_inside_refuses_a_file_of_a_sibling_whose_name_starts_with_the_bases(
        folders: tuple[Path, Path], name: str) -> None:
    base, _ = folders
    (base / "sub").mkdir(exist_ok=True)
    with pytest.raises(ConfigError, match="leads out of"):
        inside(base, name, what="task.yaml: data")
    # the control: the base's own file, also reached by a detour
    assert inside(base, "sub/../q.jsonl", what="x") == (base / "q.jsonl").resolve()


def test_inside_refuses_a_link_into_the_sibling(folders: tuple[Path, Path]) -> None:
    base, sibling = folders
    (base / "rows.jsonl").symlink_to(sibling / "rows.jsonl")
    (base / "linkdir").symlink_to(sibling)
    for name in ("rows.jsonl", "linkdir/secret.txt"):
        with pytest.raises(ConfigError, match="passes through a link that leads out of"):
            inside(base, name, what="task.yaml: data")


def test_file_value_and_copy_inside_refuse_the_sibling(folders: tuple[Path, Path],
                                                      tmp_path: Path) -> None:
    base, sibling = folders
    with pytest.raises(ConfigError):
        file_value("../task2/secret.txt", base, what="plan.yaml: option template")
    with pytest.raises(ConfigError):
        copy_inside(base, "../task2/secret.txt", tmp_path / "copy.txt", what="data_files")
    assert not (tmp_path / "copy.txt").exists()
    # a folder of the base holding a link into the sibling is not copied
    (base / "datadir").mkdir()
    (base / "datadir" / "leak.txt").symlink_to(sibling / "secret.txt")
    with pytest.raises(ConfigError):
        refuse_links_out(base, base / "datadir", what="data_files")
    with pytest.raises(ConfigError):
        copy_inside(base, "datadir", tmp_path / "copied", what="data_files")
    assert not (tmp_path / "copied").exists()


@pytest.mark.parametrize("field", ["data", "template", "data-link"])
def test_a_yaml_task_may_not_name_a_file_of_the_sibling(folders: tuple[Path, Path],
                                                       field: str) -> None:
    from assay.tasks.registry import resolve

    base, sibling = folders
    if field == "data":
        text = "name: t\ndata: ../task2/rows.jsonl\n"
    elif field == "template":
        text = "name: t\ndata: q.jsonl\ntemplate: ../task2/secret.txt\n"
    else:
        (base / "data.jsonl").symlink_to(sibling / "rows.jsonl")
        text = "name: t\ndata: data.jsonl\n"
    task = write(base / "task.yaml", text)
    with pytest.raises(AssayError) as e:
        resolve(str(task))
    message = str(e.value)
    assert str(task) in message and field.split("-")[0] in message, message
    assert SECRET not in message and "\n" not in message


def test_a_yaml_task_reads_its_own_folders_file(folders: tuple[Path, Path]) -> None:
    """The control for the YAML task: the same reader takes a file of its own folder."""
    from assay.tasks.registry import build_task

    base, _ = folders
    write(base / "prompt.txt", "OWN {{ question }}")
    task = write(base / "task.yaml", "name: t\ndata: q.jsonl\ntemplate: prompt.txt\n")
    assert build_task(str(task)).options["template"] == "OWN {{ question }}"


def test_a_plans_option_may_not_name_a_file_of_the_sibling(tmp_path: Path) -> None:
    from assay.plan.untrusted import task_options

    base, sibling = tmp_path / "plan", tmp_path / "plan2"
    write(base / "own.txt", "own")
    write(sibling / "secret.txt", SECRET)
    with pytest.raises(ConfigError) as e:
        task_options({"template": "../plan2/secret.txt"}, base, "plan.yaml: task 1")
    assert "plan.yaml: task 1: option template" in str(e.value)
    own = task_options({"template": "own.txt"}, base, "plan.yaml: task 1")
    assert own == {"template": str((base / "own.txt").resolve())}


def case_text(**extra: str) -> str:
    body = ('task_description: "[CASE-a] Ask the agent to say hello."\n'
            "scoring_points:\n  - score_point: The agent said hello\n    weight: 1\n"
            "max_rounds: 1\n")
    return body + "".join(f"{k}: {v}\n" for k, v in extra.items())


@pytest.mark.parametrize("name", ["../cases2/secret.txt", "../cases2", "link.txt"])
def test_a_cases_data_files_may_not_name_the_sibling(tmp_path: Path, name: str) -> None:
    from assay.tasks.converse.cases import load_cases

    base, sibling = tmp_path / "cases", tmp_path / "cases2"
    write(sibling / "secret.txt", SECRET)
    base.mkdir()
    (base / "link.txt").symlink_to(sibling / "secret.txt")
    case = write(base / "a.yaml", case_text(data_files=json.dumps([name])))
    with pytest.raises(ConfigError) as e:
        load_cases(case)
    assert "a.yaml:" in str(e.value) and "data_files" in str(e.value)
    # the control: a file of the case folder is taken
    write(base / "own.txt", "own")
    ok = write(base / "b.yaml", case_text(data_files='["own.txt"]'))
    assert load_cases(ok)


@pytest.mark.parametrize("tool", ["read_file", "write_file"])
def test_the_agents_file_tools_stay_out_of_the_sibling(tmp_path: Path, tool: str) -> None:
    from assay.tasks.converse.loop import Workspace

    root, sibling = tmp_path / "work", tmp_path / "work2"
    write(root / "mine.txt", "mine")
    write(sibling / "secret.txt", SECRET)
    ws = Workspace(root)
    args: dict[str, Any] = {"path": "../work2/secret.txt"}
    if tool == "write_file":
        args = {"path": "../work2/new.txt", "content": "escaped"}
    result = ws.call(tool, args)
    assert result.startswith("error:") and SECRET not in result, result
    assert not (sibling / "new.txt").exists()
    assert ws.call("read_file", {"path": "mine.txt"}) == "mine"
