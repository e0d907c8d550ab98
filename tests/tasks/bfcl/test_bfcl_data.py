"""BFCL data: locate, pull from a wheel (directly and through a real ``pip download``), load."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import official_oracle as oracle
import pytest

from assay.compat import BFCLDataset
from assay.data import cache
from assay.errors import ConfigError, DatasetError
from assay.tasks.bfcl import data as bfcl_data
from assay.tasks.bfcl.categories import (
    AST,
    MULTI_TURN,
    RELEVANCE,
    SINGLE_TURN,
    SUPPORTED,
    expand,
)

pytestmark = pytest.mark.skipif(not oracle.available(), reason=oracle.NOT_INSTALLED)


def make_wheel(dest: Path, version: str = "2099.1.1", categories=("simple_python",)) -> Path:
    """A minimal bfcl-eval wheel carrying real official data files."""
    src = oracle.data_dir()
    wheel = dest / f"bfcl_eval-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("bfcl_eval/__init__.py", "")
        zf.writestr(f"{bfcl_data.SIM_DIR}math_api.py", "SIMULATOR = 1\n")
        zf.writestr("bfcl_eval/model_handler/base_handler.py", "import torch\n")
        for cat in categories:
            zf.write(src / f"BFCL_v4_{cat}.json", f"bfcl_eval/data/BFCL_v4_{cat}.json")
            ans = src / "possible_answer" / f"BFCL_v4_{cat}.json"
            if ans.exists():
                zf.write(ans, f"bfcl_eval/data/possible_answer/BFCL_v4_{cat}.json")
        zf.writestr(f"bfcl_eval-{version}.dist-info/METADATA",
                    f"Metadata-Version: 2.1\nName: bfcl-eval\nVersion: {version}\n")
        zf.writestr(f"bfcl_eval-{version}.dist-info/WHEEL",
                    "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                    "Tag: py3-none-any\n")
        zf.writestr(f"bfcl_eval-{version}.dist-info/RECORD", "")
    return wheel


def test_installed_package_is_found_without_importing_it() -> None:
    sys.modules.pop("bfcl_eval", None)
    src = bfcl_data.locate()
    assert src.kind == "installed" and src.path == oracle.data_dir()
    assert src.version == "2026.3.23"
    assert "bfcl_eval" not in sys.modules


def test_pull_from_a_wheel_file_extracts_only_data_and_simulators(tmp_path: Path,
                                                                 workspace: Path) -> None:
    wheel = make_wheel(tmp_path, categories=("simple_python", "irrelevance"))
    src = bfcl_data.pull("2099.1.1", wheel=wheel)
    assert src.path == workspace / "data" / "bfcl" / "2099.1.1"
    assert sorted(p.name for p in src.path.glob("*.json")) == [
        "BFCL_v4_irrelevance.json", "BFCL_v4_simple_python.json"]
    # the multi-turn simulators' sources go beside the data, and no other code
    assert sorted(str(p.relative_to(src.path)) for p in src.path.rglob("*.py")) == [
        "_code/bfcl_eval/__init__.py", f"_code/{bfcl_data.SIM_DIR}math_api.py"]
    # a second pull is served from the cache
    assert bfcl_data.pull("2099.1.1").path == src.path
    item = cache.lookup("bfcl", "bfcl", "2099.1.1")  # the data cache's manifest records it
    assert item is not None and item.origin == "bfcl-eval==2099.1.1"
    assert sorted(Path(f).relative_to(src.path).as_posix() for f in item.files) == sorted(
        p.relative_to(src.path).as_posix() for p in src.path.rglob("*") if p.is_file())
    assert item.detail["wheel"] == wheel.name and len(item.sha256) == 64


@pytest.mark.parametrize("member", ["bfcl_eval/data/../../../../../escaped.json",
                                    f"{bfcl_data.SIM_DIR}../../../../../../../../escaped.py"])
def test_a_wheel_member_that_climbs_out_is_refused_before_anything_is_written(
        tmp_path: Path, workspace: Path, member: str) -> None:
    wheel = make_wheel(tmp_path)
    with zipfile.ZipFile(wheel, "a") as zf:
        zf.writestr(member, "x")
    with pytest.raises(ConfigError, match="member") as e:
        bfcl_data.pull("2099.1.1", wheel=wheel)
    assert "\n" not in str(e.value)
    assert not list(tmp_path.rglob("escaped.*")) and not (workspace / "data" / "bfcl" /
                                                          "2099.1.1").exists()


def test_pull_through_pip_download_offline(tmp_path: Path, workspace: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    links = tmp_path / "links"
    links.mkdir()
    make_wheel(links, version="2099.2.2")
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(links))
    src = bfcl_data.pull("2099.2.2")
    assert (src.path / "BFCL_v4_simple_python.json").is_file()
    assert src.version == "2099.2.2"


def test_pull_failure_is_one_clear_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(empty))
    with pytest.raises(DatasetError, match=r"could not download bfcl-eval==2099\.9\.9") as e:
        bfcl_data.pull("2099.9.9")
    assert "\n" not in str(e.value) and "--bfcl-data-dir" in str(e.value)


def test_cli_data_pull(tmp_path: Path, workspace: Path) -> None:
    wheel = make_wheel(tmp_path, version="2099.3.3")
    out = subprocess.run([sys.executable, "-m", "assay", "data", "pull", "bfcl", "--version",
                          "2099.3.3", "--wheel", str(wheel)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "bfcl-eval 2099.3.3 data: 1 category files" in out.stdout


def test_gorilla_clone_layout(tmp_path: Path) -> None:
    clone = tmp_path / "gorilla"
    data = clone / "berkeley-function-call-leaderboard" / "bfcl_eval" / "data"
    shutil.copytree(oracle.data_dir(), data, ignore=shutil.ignore_patterns("multi_turn*",
                                                                           "unused*", "memory*"))
    for root in (clone, clone / "berkeley-function-call-leaderboard", data):
        assert bfcl_data.locate(root).path == data
    with pytest.raises(DatasetError, match="no BFCL data under"):
        bfcl_data.locate(tmp_path)


def test_book_dataset_api() -> None:
    ds = BFCLDataset(category="simple_python")
    items = ds.load()
    assert len(items) == len(ds) == 400
    first = ds.get_sample(0)
    assert first["id"] == "simple_python_0" and first["category"] == "simple_python"
    assert first["ground_truth"] == ds.ground_truth["simple_python_0"]
    assert "calculate_triangle_area" in first["ground_truth"][0]
    assert set(ds.get_available_categories()) == set(SINGLE_TURN)
    assert BFCLDataset(category="irrelevance").get_ground_truth("irrelevance_0") == []


def test_corpus_sizes_are_pinned_for_every_category() -> None:
    """Exact entry counts for bfcl-eval 2026.3.23: a shrunk or missing file fails here (and
    in every oracle test, through ``oracle.entries``) instead of quietly testing less."""
    assert set(oracle.CORPUS_SIZES) == set(SINGLE_TURN)
    assert oracle.NO_GROUND_TRUTH == set(RELEVANCE)
    source = bfcl_data.locate()
    for category, size in oracle.CORPUS_SIZES.items():
        questions, answers = oracle.entries(category)  # the official files, as pinned
        ours = bfcl_data.load_category(source, category)  # assay's loader drops nothing
        assert [e["id"] for e in ours.entries] == [q["id"] for q in questions], category
        assert len(ours.entries) == size
        assert len(ours.ground_truth) == (0 if answers is None else size), category


def test_loading_is_robust_to_missing_trailing_newline(tmp_path: Path) -> None:
    d = tmp_path / "data"
    (d / "possible_answer").mkdir(parents=True)
    q = {"id": "simple_python_0", "question": [[{"role": "user", "content": "x"}]],
         "function": []}
    (d / "BFCL_v4_simple_python.json").write_text(json.dumps(q))  # no final newline
    (d / "possible_answer" / "BFCL_v4_simple_python.json").write_text(
        json.dumps({"id": "simple_python_0", "ground_truth": []}))
    cd = bfcl_data.load_category(bfcl_data.locate(d), "simple_python")
    assert [e["id"] for e in cd.entries] == ["simple_python_0"]


def test_category_groups_and_unsupported() -> None:
    assert expand("non_live")[:2] == ["simple_python", "simple_java"]
    assert set(expand("all_single_turn")) == set(SINGLE_TURN)
    assert expand("multi_turn") == list(MULTI_TURN) and set(MULTI_TURN) < set(SUPPORTED)
    assert set(expand("ast")) == set(AST) and not set(AST) & set(RELEVANCE)
    assert expand("simple_python,multiple,simple_python") == ["simple_python", "multiple"]
    with pytest.raises(ConfigError, match="not supported yet"):
        expand("format_sensitivity")
    with pytest.raises(ConfigError, match="unknown BFCL category 'nope'"):
        expand("nope")
