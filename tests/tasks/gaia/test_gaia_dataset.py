"""GAIA's core loader: both layouts, validation of rows and attachments (Hub: test_gaia_hub).

``load_gaia`` yields plain :class:`GAIAQuestion` records; the book's dict items are
tested with the compat class in ``tests/compat``.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import sys
from pathlib import Path

import pytest
from gaia_fixtures import default_tasks, expected_answers, task_id, write_gaia_fixture

from assay.data import hf
from assay.errors import DatasetError
from assay.tasks.gaia import dataset, layouts
from assay.tasks.gaia.dataset import GAIAData, GAIAQuestion, load_gaia
from assay.tasks.gaia.layouts import locate_metadata

LAYOUTS = ["jsonl", "parquet"]


def _load(root: Path, **kw) -> GAIAData:
    return load_gaia(root, **kw)


def _comparable(task: GAIAQuestion) -> dict:
    out = {k: v for k, v in vars(task).items() if k not in ("raw", "file_path")}
    out["file_path"] = task.file_path.name if task.file_path else ""
    return out


# ---------------------------------------------------------------------------------------------
# Loading


def test_both_layouts_load_the_same_tasks(tmp_path: Path) -> None:
    j = _load(write_gaia_fixture(tmp_path / "j", "jsonl"))
    p = _load(write_gaia_fixture(tmp_path / "p", "parquet"))
    assert j.layout == "jsonl" and p.layout == "parquet"
    assert len(j) == len(p) == 11
    assert [_comparable(t) for t in j.tasks] == [_comparable(t) for t in p.tasks]
    assert all(isinstance(t, GAIAQuestion) for t in p.tasks)
    assert {t.task_id: t.final_answer for t in j.tasks} == expected_answers()
    assert [t.task_id for t in iter(p)] == [t["task_id"] for t in default_tasks()]
    # each record keeps its row exactly as the file holds it
    rows = [json.loads(x) for x in (j.metadata_file.read_text().splitlines())]
    assert [t.raw for t in j.tasks] == rows


@pytest.mark.parametrize("layout", LAYOUTS)
def test_level_is_an_int_whether_written_as_1_or_quoted(tmp_path: Path, layout: str) -> None:
    ds = _load(write_gaia_fixture(tmp_path, layout))
    raw_levels = {type(t.raw["Level"]) for t in ds.tasks}
    assert raw_levels == ({int, str} if layout == "jsonl" else {str})
    assert [t.level for t in ds.tasks] == [1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3]
    assert all(type(t.level) is int for t in ds.tasks)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_level_filter_and_level_configs(tmp_path: Path, layout: str) -> None:
    root = write_gaia_fixture(tmp_path, layout)
    for level, n in ((1, 4), (2, 4), (3, 3)):
        assert [t.level for t in _load(root, level=level).tasks] == [level] * n
        assert len(_load(root, level=str(level))) == n
        by_config = _load(root, config=f"2023_level{level}")
        assert [t.level for t in by_config.tasks] == [level] * n
    if layout == "parquet":
        meta, _ = locate_metadata(root, "validation", "2023_level2")
        assert meta.name == "metadata.level2.parquet"
    ds = _load(root)
    assert ds.level_distribution() == {1: 4, 2: 4, 3: 3}
    assert _load(root, level=2, config="2023_level1").tasks == []


@pytest.mark.parametrize("layout", LAYOUTS)
def test_attachments_are_resolved_and_exist(tmp_path: Path, layout: str) -> None:
    root = write_gaia_fixture(tmp_path, layout)
    ds = _load(root)
    by_id = {t["task_id"]: t for t in default_tasks()}
    exts = set()
    for t in ds.tasks:
        src = by_id[t.task_id]
        if src["_attachment"] is None:
            assert t.file_name == "" and t.file_path is None
            continue
        assert t.file_path is not None and t.file_path.is_file()
        assert t.file_path.parent == root / "2023" / "validation"
        assert t.file_path.read_bytes() == src["_attachment"]
        exts.add(t.file_path.suffix)
    assert exts == {".txt", ".csv", ".json", ".py", ".xml", ".md", ".jsonl", ".png", ".pdf"}
    png = next(t for t in ds.tasks if t.file_name.endswith(".png"))
    assert png.file_path is not None and png.file_path.read_bytes().startswith(b"\x89PNG")


def test_annotator_metadata_steps_and_tools(tmp_path: Path) -> None:
    for layout in LAYOUTS:
        ds = _load(write_gaia_fixture(tmp_path / layout, layout))
        first = ds.tasks[0]
        assert first.annotator_metadata["Number of steps"] == "2"
        assert first.annotator_metadata["How long did this take?"] == "3 minutes"
        assert first.steps == 2
        assert ds.tasks[1].tools == ["Web browser", "Search engine"]
        assert ds.tasks[9].tools == ["Text editor", "Python interpreter", "Calculator"]
        assert ds.tasks[9].steps == 6


@pytest.mark.parametrize("layout", LAYOUTS)
def test_source_info(tmp_path: Path, layout: str) -> None:
    ds = _load(write_gaia_fixture(tmp_path, layout))
    assert ds.source == "gaia:local" and ds.answers_public is True
    assert sum(t.has_file for t in ds.tasks) == 9
    info = ds.source_info()
    meta = ds.metadata_file
    assert meta is not None
    assert info["source"] == "gaia:local" and info["layout"] == layout
    assert info["path"] == str(meta.resolve())
    assert info["content_hash"] == hashlib.sha256(meta.read_bytes()).hexdigest()
    assert info["split"] == "validation" and info["config"] == "2023_all"
    assert info["answers_public"] is True


@pytest.mark.parametrize("layout", LAYOUTS)
def test_test_split_answers_are_private(tmp_path: Path, layout: str) -> None:
    root = write_gaia_fixture(tmp_path, layout, split="test")
    ds = _load(root, split="test")
    assert {t.final_answer for t in ds.tasks} == {"?"}
    assert {t.task_id for t in ds.tasks} == set(expected_answers("test"))
    assert ds.answers_public is False
    assert ds.source_info()["answers_public"] is False
    assert sum(not t.answer_public for t in ds.tasks) == 11
    assert all(t.steps is None for t in ds.tasks)
    with pytest.raises(DatasetError, match="no GAIA metadata for split 'validation'"):
        _load(root)  # only the test split was written


def test_data_dir_may_be_the_split_or_2023_folder(tmp_path: Path) -> None:
    root = write_gaia_fixture(tmp_path, "jsonl")
    for d in (root / "2023" / "validation", root / "2023"):
        ds = _load(d)
        assert len(ds) == 11 and all(t.file_path is None or t.file_path.is_file()
                                     for t in ds.tasks)
    proot = write_gaia_fixture(tmp_path / "p", "parquet")
    ds = _load(proot / "2023" / "validation")  # file_path is relative to the repo root
    assert ds.layout == "parquet" and sum(t.file_path is not None for t in ds.tasks) == 9


# ---------------------------------------------------------------------------------------------
# Errors


def _write_jsonl(root: Path, rows: list) -> Path:
    d = root / "2023" / "validation"
    d.mkdir(parents=True, exist_ok=True)
    lines = [r if isinstance(r, str) else json.dumps(r) for r in rows]
    (d / "metadata.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return d / "metadata.jsonl"


def _row(**kw) -> dict:
    row = {"task_id": "t-1", "Question": "2+2?", "Level": 1, "Final answer": "4",
           "file_name": "", "Annotator Metadata": {}}
    row.update(kw)
    return row


def test_malformed_line_names_file_and_line(tmp_path: Path) -> None:
    meta = _write_jsonl(tmp_path, [_row(), '{"task_id": "t-2", "Question": ', _row(task_id="t3")])
    with pytest.raises(DatasetError) as e:
        _load(tmp_path)
    assert str(e.value).startswith(f"{meta}:2: invalid JSON (")
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("name", ["task_id", "Question", "Level", "Final answer"])
def test_missing_required_field(tmp_path: Path, name: str) -> None:
    bad = _row(task_id="t-2")
    del bad[name]
    meta = _write_jsonl(tmp_path, [_row(), bad])
    with pytest.raises(DatasetError) as e:
        _load(tmp_path)
    msg = str(e.value)
    assert msg.startswith(f"{meta}:2: missing required field {name!r}")
    if name != "task_id":
        assert "t-2" in msg


@pytest.mark.parametrize("level", ["x", 4, 0, 1.5, True, "", None])
def test_bad_level_names_row_and_task(tmp_path: Path, level: object) -> None:
    meta = _write_jsonl(tmp_path, [_row(), _row(task_id="t-9", Level=level)])
    with pytest.raises(DatasetError) as e:
        _load(tmp_path)
    assert str(e.value).startswith(f"{meta}:2:")
    if level is not None:
        assert "t-9" in str(e.value) and "Level" in str(e.value)


def test_bad_level_in_parquet_names_the_row(tmp_path: Path) -> None:
    tasks = default_tasks()
    tasks[3]["Level"] = "L2"
    root = write_gaia_fixture(tmp_path, "parquet", tasks=tasks)
    with pytest.raises(DatasetError) as e:
        _load(root)
    assert "metadata.parquet[row 3]" in str(e.value) and tasks[3]["task_id"] in str(e.value)


def test_duplicate_task_id(tmp_path: Path) -> None:
    _write_jsonl(tmp_path, [_row(), _row()])
    with pytest.raises(DatasetError, match=r"metadata.jsonl:2: duplicate task_id t-1 .*:1\)"):
        _load(tmp_path)


def test_numeric_answer_in_a_hand_made_copy_becomes_a_string(tmp_path: Path) -> None:
    _write_jsonl(tmp_path, [_row(**{"Final answer": 17, "Level": "2"})])
    ds = _load(tmp_path)
    assert ds.tasks[0].final_answer == "17" and ds.tasks[0].level == 2


@pytest.mark.parametrize("layout", LAYOUTS)
def test_missing_attachment(tmp_path: Path, layout: str) -> None:
    root = write_gaia_fixture(tmp_path, layout)
    victim = default_tasks()[2]
    (root / "2023" / "validation" / victim["file_name"]).unlink()
    with pytest.raises(DatasetError) as e:
        _load(root)
    expected = root / "2023" / "validation" / victim["file_name"]
    assert str(e.value) == (f"{victim['task_id']}: attachment {expected} is missing; "
                            "re-download GAIA or fix --data-dir")
    ds = _load(root, check_attachments=False)
    t = next(t for t in ds.tasks if t.task_id == victim["task_id"])
    assert t.file_path is None and t.file_name == victim["file_name"]
    assert sum(t.has_file and t.file_path is None for t in ds.tasks) == 1


def test_parquet_falls_back_to_file_name_beside_the_metadata(tmp_path: Path) -> None:
    tasks = default_tasks()
    tasks[0]["file_path"] = "somewhere/else/" + tasks[0]["file_name"]
    root = write_gaia_fixture(tmp_path, "parquet", tasks=tasks)
    t = _load(root).tasks[0]
    assert t.file_path == root / "2023" / "validation" / tasks[0]["file_name"]


def test_locate_metadata_errors(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="does not exist"):
        locate_metadata(tmp_path / "nope", "validation", "2023_all")
    (tmp_path / "empty").mkdir()
    with pytest.raises(DatasetError) as e:
        locate_metadata(tmp_path / "empty", "validation", "2023_level2")
    msg = str(e.value)
    for looked in ("2023/validation/metadata.jsonl", "2023/validation/metadata.level2.parquet",
                   "2023/validation/metadata.parquet", "metadata.jsonl", "--data-dir"):
        assert looked in msg
    with pytest.raises(DatasetError, match="unknown GAIA config '2023_level4'"):
        locate_metadata(tmp_path, "validation", "2023_level4")
    with pytest.raises(DatasetError, match="unknown GAIA split 'dev'"):
        locate_metadata(tmp_path, "dev", "2023_all")
    with pytest.raises(DatasetError, match="unknown GAIA split"):
        load_gaia(tmp_path, split="train")
    f = tmp_path / "file.txt"
    f.write_text("x")
    with pytest.raises(DatasetError, match="is a file"):
        locate_metadata(f, "validation", "2023_all")


def test_locate_prefers_jsonl_and_handles_both_layouts(tmp_path: Path) -> None:
    root = write_gaia_fixture(tmp_path, "parquet")
    assert locate_metadata(root, "validation", "2023_all")[1] == "parquet"
    write_gaia_fixture(tmp_path, "jsonl")
    assert locate_metadata(root, "validation", "2023_all")[1] == "jsonl"


def test_parquet_without_pyarrow_says_what_to_install(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    root = write_gaia_fixture(tmp_path, "parquet")
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(DatasetError, match=r"pip install 'assay\[hf\]'"):
        _load(root)


def test_unreadable_parquet(tmp_path: Path) -> None:
    d = tmp_path / "2023" / "validation"
    d.mkdir(parents=True)
    (d / "metadata.parquet").write_bytes(b"not parquet at all")
    with pytest.raises(DatasetError, match="not a readable parquet file"):
        _load(tmp_path)


def test_gaia_modules_never_import_datasets() -> None:
    for src in (Path(dataset.__file__ or "").read_text(), Path(layouts.__file__ or "").read_text(),
                inspect.getsource(hf.snapshot)):  # the Hub download GAIA uses
        assert "import datasets" not in src and "from datasets" not in src


def test_task_ids_are_stable() -> None:
    assert task_id("validation", 1) == default_tasks()[0]["task_id"]
    assert task_id("validation", 1) != task_id("test", 1)


def test_level_argument_is_checked(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="GAIA level must be 1, 2 or 3, got 4"):
        load_gaia(tmp_path, level=4)
    root = write_gaia_fixture(tmp_path, "jsonl")
    assert len(_load(root, level="2")) == 4
    with pytest.raises(DatasetError, match="GAIA level must be"):
        _load(root, level="two")


# ---------------------------------------------------------------------------------------------
# Attachments must stay inside the dataset folder

SECRET = "TOP-SECRET-do-not-inline"


def _secret(tmp_path: Path) -> Path:
    """A text file outside any dataset folder (what an attacker wants inlined)."""
    out = tmp_path / "x" / "secret.txt"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(SECRET + "\n", encoding="utf-8")
    return out


def _one_task(**kw) -> list[dict]:
    t = default_tasks()[0]  # the .txt task
    t.update(kw)
    return [t]


def _assert_refused(e: pytest.ExceptionInfo, tid: str, field: str) -> None:
    msg = str(e.value)
    assert "\n" not in msg and tid in msg and field in msg
    assert "outside the dataset folder" in msg and SECRET not in msg


@pytest.mark.parametrize("check", [True, False])
def test_file_name_climbing_out_with_dotdot_is_refused(tmp_path: Path, check: bool) -> None:
    _secret(tmp_path)
    root = tmp_path / "gaia"
    # root/2023/validation/../../../x/secret.txt == tmp_path/x/secret.txt
    tasks = _one_task(file_name="../../../x/secret.txt", _attachment=None)
    write_gaia_fixture(root, "jsonl", tasks=tasks)
    assert (root / "2023" / "validation" / tasks[0]["file_name"]).resolve().is_file()
    with pytest.raises(DatasetError) as e:
        _load(root, check_attachments=check)
    _assert_refused(e, tasks[0]["task_id"], "file_name")
    assert "metadata.jsonl:1" in str(e.value)


def test_absolute_file_name_is_refused(tmp_path: Path) -> None:
    secret = _secret(tmp_path)
    tasks = _one_task(file_name=str(secret), _attachment=None)
    root = write_gaia_fixture(tmp_path / "gaia", "jsonl", tasks=tasks)
    with pytest.raises(DatasetError) as e:
        _load(root)
    _assert_refused(e, tasks[0]["task_id"], "file_name")


@pytest.mark.parametrize("file_path", ["/etc/hostname", "ABS_SECRET", "../x/secret.txt",
                                       "2023/validation/../../../x/secret.txt"])
def test_parquet_file_path_outside_is_refused(tmp_path: Path, file_path: str) -> None:
    secret = _secret(tmp_path)
    if file_path == "ABS_SECRET":
        file_path = str(secret)
    # a real attachment beside the metadata must not make the bad file_path acceptable
    tasks = _one_task(file_path=file_path)
    root = write_gaia_fixture(tmp_path / "gaia", "parquet", tasks=tasks)
    with pytest.raises(DatasetError) as e:
        _load(root)
    _assert_refused(e, tasks[0]["task_id"], "file_path")
    assert "metadata.parquet[row 0]" in str(e.value)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_symlink_inside_the_folder_pointing_outside_is_refused(tmp_path: Path,
                                                               layout: str) -> None:
    secret = _secret(tmp_path)
    tasks = _one_task(_attachment=None)
    root = write_gaia_fixture(tmp_path / "gaia", layout, tasks=tasks)
    link = root / "2023" / "validation" / tasks[0]["file_name"]
    link.symlink_to(secret)
    with pytest.raises(DatasetError) as e:
        _load(root)
    field = "file_name" if layout == "jsonl" else "file_path"
    _assert_refused(e, tasks[0]["task_id"], field)


def test_symlinked_data_dir_and_links_within_it_still_work(tmp_path: Path) -> None:
    root = write_gaia_fixture(tmp_path / "real", "jsonl")
    alias = tmp_path / "alias"
    alias.symlink_to(root, target_is_directory=True)
    ds = _load(alias)
    assert sum(t.file_path is not None for t in ds.tasks) == 9
    # a link that stays inside the folder is fine
    tasks = _one_task(file_name="link.txt", _attachment=None)
    root2 = write_gaia_fixture(tmp_path / "g2", "jsonl", tasks=tasks)
    store = root2 / "blobs" / "log.txt"
    store.parent.mkdir()
    store.write_text("17 errors\n", encoding="utf-8")
    (root2 / "2023" / "validation" / "link.txt").symlink_to(store)
    assert _load(root2).tasks[0].file_path.read_text() == "17 errors\n"


@pytest.mark.parametrize("layout", LAYOUTS)
def test_attachment_in_a_subfolder_is_read(tmp_path: Path, layout: str) -> None:
    tasks = default_tasks()[:3]
    tasks[0]["file_name"] = "files/nested/" + tasks[0]["file_name"]
    (tmp_path / "gaia" / "2023" / "validation" / "files" / "nested").mkdir(parents=True)
    root = write_gaia_fixture(tmp_path / "gaia", layout, tasks=tasks)
    t = _load(root).tasks[0]
    expected = root / "2023" / "validation" / tasks[0]["file_name"]
    assert t.file_path == expected and t.file_path.read_bytes() == tasks[0]["_attachment"]
    # and inside the folder a tidy ../ is fine too
    tasks2 = default_tasks()[:1]
    (tmp_path / "g2" / "2023" / "validation" / "sub").mkdir(parents=True)
    root2 = write_gaia_fixture(tmp_path / "g2", "jsonl", tasks=tasks2)
    rows = [json.loads(x) for x in (root2 / "2023" / "validation" / "metadata.jsonl")
            .read_text().splitlines()]
    rows[0]["file_name"] = "sub/../" + rows[0]["file_name"]
    _write_jsonl(root2, rows)
    assert _load(root2).tasks[0].file_path.read_bytes() == tasks2[0]["_attachment"]


# ---------------------------------------------------------------------------------------------
# Metadata that cannot be decoded or parsed (read by assay.data.files.read_jsonl)


def _raw_metadata(root: Path, lines: list[bytes]) -> Path:
    d = root / "2023" / "validation"
    d.mkdir(parents=True, exist_ok=True)
    (d / "metadata.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    return d / "metadata.jsonl"


def _good_line(tid: str = "t-1") -> bytes:
    return json.dumps(_row(task_id=tid)).encode()


@pytest.mark.parametrize("bad", [
    pytest.param(b'{"task_id": "t-2", "Question": "caf\xff", "Level": 1, "Final answer": "4"}',
                 id="invalid-utf8"),
    pytest.param(b"[" * 100_000 + b"]" * 100_000, id="nested-100000"),
    pytest.param(b'{"task_id": "t-2", "Question": "q", "Level": ' + b"7" * 5000
                 + b', "Final answer": "4"}', id="int-5000-digits"),
])
def test_undecodable_metadata_line_is_one_line_error(tmp_path: Path, bad: bytes) -> None:
    meta = _raw_metadata(tmp_path, [_good_line(), bad, _good_line("t-3")])
    with pytest.raises(DatasetError) as e:
        _load(tmp_path)
    msg = str(e.value)
    assert msg.startswith(f"{meta}:2:") and "\n" not in msg


# ---------------------------------------------------------------------------------------------
# The gaia task builds its samples from the core records


@pytest.mark.parametrize("layout", LAYOUTS)
def test_task_samples_come_from_the_core_records(tmp_path: Path, layout: str,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from assay.tasks.registry import build_task

    root = write_gaia_fixture(tmp_path, layout)
    monkeypatch.setitem(sys.modules, "assay.compat", None)  # the book's classes are not used
    samples = build_task("gaia", {"data_dir": str(root)}).samples()
    records = load_gaia(root).tasks
    assert [s.id for s in samples] == [t.task_id for t in records]
    for s, t in zip(samples, records, strict=True):
        assert s.row == t.raw and s.row["task_id"] == t.task_id  # the row as the file has it
        assert "raw_item" not in s.row and "final_answer" not in s.row  # not a book item
        assert (s.input, s.target) == (t.question, t.final_answer)
        assert s.files == ([str(t.file_path)] if t.file_path else None)
        assert s.metadata == {"level": t.level, "steps": t.steps,
                              "file_name": t.file_name or None}
