"""GAIA from the Hugging Face Hub: the real ``huggingface_hub.snapshot_download``
against a real local HTTP server (``gaia_fixtures.FakeHub``), never the network."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from gaia_fixtures import FakeHub, default_tasks, write_gaia_fixture

from assay.data import cache, hf
from assay.errors import DatasetError
from assay.tasks.gaia.dataset import load_gaia
from assay.tasks.gaia.layouts import GAIA_REPO

SECRET = "TOP-SECRET-do-not-inline"


OFFLINE_START = "cannot reach the Hugging Face Hub to download GAIA (offline?)"


def download(repo: str, token: str | None, cache_dir: Path) -> Path:
    """The data layer's Hub snapshot as ``load_gaia`` asks for it."""
    return hf.snapshot(repo, token=token, cache=cache_dir, label="GAIA")


def test_download_offline_is_one_line(tmp_path: Path) -> None:
    # HF_HUB_OFFLINE=1 comes from the autouse fixture
    with pytest.raises(DatasetError) as e:
        download(GAIA_REPO, None, tmp_path / "cache")
    msg = str(e.value)
    assert msg.startswith(OFFLINE_START) and "--data-dir DIR" in msg and "\n" not in msg
    assert "huggingface-cli download gaia-benchmark/GAIA --repo-type dataset" in msg
    with pytest.raises(DatasetError, match=r"offline\?"):
        load_gaia()  # no data folder: download, into $ASSAY_HOME/data/hf


@pytest.fixture
def online(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """Undo the autouse offline switch and hide any stored login; returns a hub pointer."""
    from huggingface_hub import constants

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setattr(constants, "HF_TOKEN_PATH", str(tmp_path / "no-stored-token"))
    monkeypatch.delenv("HF_HUB_DISABLE_PROGRESS_BARS", raising=False)

    def point_at(url: str) -> None:
        # huggingface_hub reads HF_ENDPOINT once, at import (constants.ENDPOINT and the
        # resolve-URL template); download() reads it at call time and passes endpoint=, so
        # the environment variable alone must be enough: the constants are left alone.
        monkeypatch.setenv("HF_ENDPOINT", url)

    return point_at


@pytest.mark.parametrize("gated", ["file", "api"])
async def test_download_gated_without_token(tmp_path: Path, online, gated: str) -> None:
    repo = write_gaia_fixture(tmp_path / "repo", "parquet")
    async with FakeHub(repo, gated=gated) as hub:
        online(hub.url)
        with pytest.raises(DatasetError) as e:
            await asyncio.to_thread(download, GAIA_REPO, None, tmp_path / "cache")
    msg = str(e.value)
    assert msg == ("GAIA is gated: no HF_TOKEN is set; request access at "
                   "https://huggingface.co/datasets/gaia-benchmark/GAIA, then set HF_TOKEN "
                   "(or pass --data-dir to a local copy)")
    assert hub.requests  # the fake Hub was really asked
    assert all(auth is None for _, _, auth in hub.requests)


@pytest.mark.parametrize("gated", ["file", "api"])
async def test_download_gated_with_token_never_shows_it(tmp_path: Path, online,
                                                        monkeypatch: pytest.MonkeyPatch,
                                                        gated: str) -> None:
    repo = write_gaia_fixture(tmp_path / "repo", "parquet")
    monkeypatch.setenv("HF_TOKEN", "hf_secret_value")
    async with FakeHub(repo, gated=gated) as hub:
        online(hub.url)
        with pytest.raises(DatasetError) as e:
            await asyncio.to_thread(download, GAIA_REPO, None, tmp_path / "cache")
    msg = str(e.value)
    assert msg == ("GAIA is gated: request access at "
                   "https://huggingface.co/datasets/gaia-benchmark/GAIA, then set HF_TOKEN "
                   "(or pass --data-dir to a local copy)")
    assert "hf_secret_value" not in msg and "hf_secret_value" not in repr(e.value.args)
    # the token was sent (403 "not in the authorized list"), just never shown
    assert ("Bearer hf_secret_value" in {auth for _, _, auth in hub.requests})


async def test_download_from_fake_hub_then_offline_cache(tmp_path: Path, online,
                                                         monkeypatch: pytest.MonkeyPatch,
                                                         workspace: Path) -> None:
    from huggingface_hub import constants

    repo = write_gaia_fixture(tmp_path / "repo", "parquet")
    write_gaia_fixture(tmp_path / "repo", "parquet", split="test")
    async with FakeHub(repo) as hub:
        online(hub.url)
        ds = await asyncio.to_thread(load_gaia, token="hf_abc")
    assert len(ds) == 11 and ds.layout == "parquet"
    info = ds.source_info()
    assert info["source"] == "gaia:hub"
    snapshot = Path(info["root"])
    assert snapshot.is_relative_to(workspace / "data" / "hf")
    assert snapshot.name == FakeHub.SHA
    assert sum(t.has_file for t in ds.tasks) == 9
    by_id = {t["task_id"]: t for t in default_tasks()}
    for t in ds.tasks:
        if t.file_path is not None:
            assert t.file_path.read_bytes() == by_id[t.task_id]["_attachment"]
    gets = {p for m, p, _ in hub.requests if m == "GET" and "/resolve/" in p}
    assert any(p.endswith("2023/test/metadata.parquet") for p in gets)
    assert {a for _, _, a in hub.requests} == {"Bearer hf_abc"}
    # the server is gone; offline, the cached snapshot is used
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    again = load_gaia(split="test")
    assert again.root == snapshot and again.answers_public is False
    item = cache.lookup("hub", GAIA_REPO, FakeHub.SHA)  # the manifest records the snapshot
    assert item is not None and item.source == "hf" and Path(item.path) == snapshot
    assert len(item.sha256) == 64 and len(item.files) == len(cache.tree_files(snapshot))
    # a snapshot an older assay kept in data/gaia is moved into the Hub cache and read
    repo_folder = snapshot.parents[1]
    old = workspace / "data" / "gaia" / repo_folder.name
    old.parent.mkdir(parents=True)
    repo_folder.rename(old)
    moved = load_gaia(split="test")
    assert moved.root == snapshot and not old.exists() and len(moved) == len(again)


async def test_download_connection_refused_is_offline_message(tmp_path: Path, online) -> None:
    repo = write_gaia_fixture(tmp_path / "repo", "jsonl")
    async with FakeHub(repo) as hub:
        url = hub.url
    online(url)  # nothing listens there any more
    with pytest.raises(DatasetError) as e:
        await asyncio.to_thread(download, GAIA_REPO, None, tmp_path / "cache")
    assert str(e.value).startswith(OFFLINE_START) and "HF_HUB_OFFLINE" not in str(e.value)


async def test_download_unknown_repo(tmp_path: Path, online) -> None:
    repo = write_gaia_fixture(tmp_path / "repo", "jsonl")
    async with FakeHub(repo) as hub:
        online(hub.url)
        with pytest.raises(DatasetError, match="someone/not-gaia was not found"):
            await asyncio.to_thread(download, "someone/not-gaia", "hf_x", tmp_path / "c")


async def test_hub_snapshot_with_attachment_outside_is_refused(tmp_path: Path, online,
                                                               workspace: Path) -> None:
    secret = tmp_path / "x" / "secret.txt"
    secret.parent.mkdir(parents=True)
    secret.write_text(SECRET + "\n", encoding="utf-8")
    tasks = default_tasks()
    # relative to the snapshot root, this climbs out of $ASSAY_HOME/data/hf
    tasks[0]["file_path"] = "../" * 6 + "x/secret.txt"  # snapshots/<sha> -> tmp_path
    tasks[2]["file_path"] = "/etc/hostname"
    repo = write_gaia_fixture(tmp_path / "repo", "parquet", tasks=tasks)
    async with FakeHub(repo) as hub:
        online(hub.url)
        with pytest.raises(DatasetError) as e:
            await asyncio.to_thread(load_gaia)
    msg = str(e.value)
    assert "\n" not in msg and tasks[0]["task_id"] in msg and "file_path" in msg
    assert "outside the dataset folder" in msg and SECRET not in msg
    snapshots = list((workspace / "data" / "hf").glob("datasets--*/snapshots/*"))
    assert [s.name for s in snapshots] == [FakeHub.SHA]  # downloaded, then refused
