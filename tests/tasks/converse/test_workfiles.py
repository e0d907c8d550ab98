"""The working folder kept with a converse outcome: bounded, links left out, and enough for
eval_code to run again in the real sandbox once the folder is gone."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

from assay.tasks.converse import workfiles
from assay.tasks.converse.evalcode import run_eval_code
from assay.tasks.converse.loop import Workspace

SECRET = "outside-secret-7c1f"


def folder(tmp_path: Path) -> Path:
    out = tmp_path / "outside"
    out.mkdir()
    (out / "secret.txt").write_text(SECRET)
    root = tmp_path / "work"
    (root / "sub" / "deeper").mkdir(parents=True)
    (root / "notes.txt").write_text("héllo\n", encoding="utf-8")
    (root / "sub" / "deeper" / "n.json").write_text('{"n": 3}')
    (root / "raw.bin").write_bytes(b"\x00\xff\xfe")
    (root / "big.txt").write_bytes(b"x" * (workfiles.FILE_LIMIT + 1))
    (root / "~home.txt").write_text("tilde")
    (root / "link.txt").symlink_to(out / "secret.txt")
    (root / "linkdir").symlink_to(out)
    return root


def test_the_snapshot_keeps_regular_files_within_bounds_and_follows_no_link(
        tmp_path: Path) -> None:
    root = folder(tmp_path)
    ws = Workspace(root)
    kept = workfiles.snapshot(ws.root, ws.files())
    assert SECRET not in json.dumps(kept)
    by_path = {f["path"]: f for f in kept["files"]}
    assert sorted(by_path) == ["notes.txt", "raw.bin", "sub/deeper/n.json", "~home.txt"]
    assert by_path["notes.txt"]["text"] == "héllo\n"
    assert kept["left_out"] == [{"path": "big.txt",
                                 "why": f"over {workfiles.FILE_LIMIT} bytes"}]
    assert kept["n_left_out"] == 1
    files = workfiles.files_of(json.loads(json.dumps(kept)))  # as read back from the store
    # a top-level "~" name the sandbox would refuse is left out, never an error
    assert files == {"notes.txt": "héllo\n", "raw.bin": b"\x00\xff\xfe",
                     "sub/deeper/n.json": '{"n": 3}'}


def test_the_total_and_the_count_are_bounded(tmp_path: Path, monkeypatch) -> None:
    root = tmp_path / "work"
    root.mkdir()
    for i in range(5):
        (root / f"f{i}.txt").write_text("x" * 10)
    monkeypatch.setattr(workfiles, "MAX_FILES", 3)
    ws = Workspace(root)
    kept = workfiles.snapshot(ws.root, ws.files())
    assert [f["path"] for f in kept["files"]] == ["f0.txt", "f1.txt", "f2.txt"]
    assert kept["n_left_out"] == 2
    monkeypatch.setattr(workfiles, "MAX_FILES", 100)
    monkeypatch.setattr(workfiles, "TOTAL_LIMIT", 25)
    kept = workfiles.snapshot(ws.root, ws.files())
    assert [f["path"] for f in kept["files"]] == ["f0.txt", "f1.txt"]
    assert kept["bytes"] == 20


def test_eval_code_runs_on_the_stored_files_once_the_folder_is_gone(tmp_path: Path) -> None:
    root = folder(tmp_path)
    ws = Workspace(root)
    stored = json.loads(json.dumps(workfiles.snapshot(ws.root, ws.files())))
    shutil.rmtree(root)
    code = ("assert Path('notes.txt').read_text(encoding='utf-8') == 'héllo\\n'\n"
            "assert json.loads(Path('sub/deeper/n.json').read_text())['n'] == 3\n"
            "assert Path('raw.bin').read_bytes() == b'\\x00\\xff\\xfe'\n"
            "assert not Path('big.txt').exists() and not Path('link.txt').exists()\n")
    verdict = asyncio.run(run_eval_code(code, [], None, files=workfiles.files_of(stored),
                                        allow_weak=True))
    assert verdict["is_hit"] is True, verdict
    miss = asyncio.run(run_eval_code("assert Path('notes.txt').read_text() == 'bye'", [], None,
                                     files=workfiles.files_of(stored), allow_weak=True))
    assert miss["is_hit"] is False
