"""Official BFCL v4 data without the official package's dependencies, found in order:
``--bfcl-data-dir`` (a gorilla clone), an installed ``bfcl_eval`` (never imported), then the data
cache that ``assay data pull bfcl`` fills from the pinned wheel. Runs record source and hash.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from assay.data import cache
from assay.data.wheels import check_version, extract, fetch_wheel, wheel_names
from assay.errors import DatasetError
from assay.tasks.bfcl.categories import is_relevance

BFCL_EVAL_VERSION = "2026.3.23"
_PROBE = "BFCL_v4_simple_python.json"


@dataclass(frozen=True)
class DataSource:
    """A folder holding ``BFCL_v4_*.json`` and ``possible_answer/``."""

    path: Path
    kind: str  # "dir" | "installed" | "cache"
    version: str

    def describe(self) -> dict[str, Any]:
        return {"source": f"bfcl:{self.kind}", "path": str(self.path), "version": self.version}


PACKAGE = "bfcl-eval"
_HINT = "pass --wheel FILE or --bfcl-data-dir to a gorilla clone"


def cache_root() -> Path:
    """Where ``assay data pull bfcl`` puts the data: ``<data root>/bfcl``."""
    return cache.data_root() / "bfcl"


def _find_data_dir(root: Path) -> Path | None:
    for cand in (root, root / "bfcl_eval" / "data", root / "data",
                 root / "berkeley-function-call-leaderboard" / "bfcl_eval" / "data"):
        if (cand / _PROBE).is_file():
            return cand
    return None


def _git_version(path: Path) -> str:
    try:
        out = subprocess.run(["git", "-C", str(path), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return f"git:{out.stdout.strip()}" if out.returncode == 0 and out.stdout.strip() else "unknown"


def installed_package_dir() -> Path | None:
    """Folder of an installed ``bfcl_eval`` (found without importing it)."""
    spec = importlib.util.find_spec("bfcl_eval")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def _installed_version() -> str:
    try:
        return metadata.version(PACKAGE)
    except metadata.PackageNotFoundError:
        return "unknown"


def locate(data_dir: str | Path | None = None) -> DataSource:
    """Find the data (see the module docstring); a clear error says how to get it."""
    if data_dir:
        root = Path(data_dir).expanduser()
        found = _find_data_dir(root)
        if found is None:
            raise DatasetError(
                f"no BFCL data under {root} (looked for {_PROBE}); give the gorilla clone, "
                "its berkeley-function-call-leaderboard folder or bfcl_eval/data"
            )
        return DataSource(found, "dir", _git_version(root))
    pkg = installed_package_dir()
    if pkg is not None and (pkg / "data" / _PROBE).is_file():
        return DataSource(pkg / "data", "installed", _installed_version())
    item = cache.lookup("bfcl", "bfcl")
    if item is not None and (Path(item.path) / _PROBE).is_file():
        return DataSource(Path(item.path), "cache", item.version)
    root = cache_root()  # a folder pulled before the cache had a manifest
    versions = sorted((p for p in root.iterdir() if not p.name.startswith(".")
                       and (p / _PROBE).is_file()), reverse=True) if root.is_dir() else []
    if versions:
        return DataSource(versions[0], "cache", versions[0].name)
    raise DatasetError(
        "BFCL data not found; run 'assay data pull bfcl' (downloads the bfcl-eval wheel from "
        "PyPI and extracts its data) or pass --bfcl-data-dir to a gorilla clone"
    )


#: the package files the simulators import (the ``__init__`` files are empty; not
#: ``model_config``, which imports every model handler)
SIM_FILES = ("bfcl_eval/__init__.py", "bfcl_eval/eval_checker/__init__.py",
             "bfcl_eval/eval_checker/multi_turn_eval/__init__.py", "bfcl_eval/utils.py",
             "bfcl_eval/constants/__init__.py", "bfcl_eval/constants/category_mapping.py",
             "bfcl_eval/constants/default_prompts.py", "bfcl_eval/constants/eval_config.py",
             "bfcl_eval/constants/executable_backend_config.py")
SIM_DIR = "bfcl_eval/eval_checker/multi_turn_eval/func_source_code/"
#: where, beside the data, the simulators' sources are kept
CODE_DIR = "_code"


def _wheel_target(name: str) -> str | None:
    """Where a wheel member goes under the version's folder (data, or a simulator source
    under ``_code``); ``None`` for the rest."""
    if name.startswith("bfcl_eval/data/") and not name.endswith("/"):
        return name.removeprefix("bfcl_eval/data/")
    if name in SIM_FILES or (name.startswith(SIM_DIR) and name.endswith(".py")):
        return f"{CODE_DIR}/{name}"
    return None


def copy_simulators(package_dir: Path, dest: Path) -> None:
    """The simulators' sources of an installed ``bfcl_eval`` into ``dest/_code``."""
    for rel in (*SIM_FILES, *(f"{SIM_DIR}{p.name}" for p in
                              (package_dir / SIM_DIR.removeprefix("bfcl_eval/")).glob("*.py"))):
        src = package_dir.parent / rel
        if src.is_file():
            target = dest / CODE_DIR / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, target)


def extract_wheel(wheel: Path, dest: Path) -> int:
    """Extract ``bfcl_eval/data/`` (and the simulators' sources, into ``dest/_code``) from a
    wheel, every path checked inside ``dest``; returns the file count."""
    targets = {n: t for n in wheel_names(wheel) if (t := _wheel_target(n)) is not None}
    extract(wheel, targets, dest, what=f"{wheel.name}: member")
    if not (dest / _PROBE).is_file():
        raise DatasetError(f"{wheel} has no bfcl_eval/data/{_PROBE}; is it a bfcl-eval wheel?")
    return len(targets)


def pull(version: str = BFCL_EVAL_VERSION, *, wheel: str | Path | None = None,
         force: bool = False) -> DataSource:
    """Fill the data cache with the official data of ``bfcl-eval==version``: from an
    installed ``bfcl_eval`` of that version, else the ``wheel`` given or fetched, extracting
    only the data and the simulators' sources (nothing is installed)."""
    dest = cache_root() / check_version(version, what="BFCL version")  # a folder name
    if (dest / _PROBE).is_file() and (dest / CODE_DIR).is_dir() and not force \
            and cache.lookup("bfcl", "bfcl", version) is not None:  # kept only as pulled
        return DataSource(dest, "cache", version)
    cache_root().mkdir(parents=True, exist_ok=True)
    tmp_dest = Path(tempfile.mkdtemp(prefix=".pull-", dir=cache_root()))
    try:
        pkg = installed_package_dir()
        detail: dict[str, Any] = {}
        if wheel is None and pkg is not None and _installed_version() == version \
                and (pkg / "data" / _PROBE).is_file():
            shutil.copytree(pkg / "data", tmp_dest, dirs_exist_ok=True)
            copy_simulators(pkg, tmp_dest)
            detail["installed"] = str(pkg)
        else:
            wheel_path = fetch_wheel(PACKAGE, version, wheel=wheel or None, hint=_HINT)
            extract_wheel(wheel_path, tmp_dest)
            detail.update(wheel=wheel_path.name, wheel_sha256=cache.sha256_files([wheel_path]))
        if dest.exists():
            shutil.rmtree(dest)
        shutil.move(str(tmp_dest), dest)
    finally:
        shutil.rmtree(tmp_dest, ignore_errors=True)
    cache.record("bfcl", "bfcl", source="wheel", origin=f"{PACKAGE}=={version}", version=version,
                 path=dest, files=cache.tree_files(dest), detail=detail)
    return DataSource(dest, "cache", version)



def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Official files are JSON Lines despite ``.json`` (last line often without ``\\n``)."""
    out = []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError as e:
                raise DatasetError(f"{path}:{lineno}: invalid JSON ({e.msg})") from e
    return out


@dataclass
class CategoryData:
    """Questions (and ground truth for AST categories) of one category."""

    category: str
    entries: list[dict[str, Any]]
    ground_truth: dict[str, list[dict[str, Any]]]
    files: list[Path]


def load_category(source: DataSource, category: str) -> CategoryData:
    """Load one category; answers are matched to questions by id."""
    qpath = source.path / f"BFCL_v4_{category}.json"
    if not qpath.is_file():
        raise DatasetError(f"{qpath} is missing; is {source.path} a complete BFCL v4 data folder?")
    entries = read_jsonl(qpath)
    files = [qpath]
    gt: dict[str, list[dict[str, Any]]] = {}
    if not is_relevance(category):
        apath = source.path / "possible_answer" / f"BFCL_v4_{category}.json"
        if not apath.is_file():
            raise DatasetError(f"{apath} is missing (ground truth for {category})")
        files.append(apath)
        gt = {a["id"]: a["ground_truth"] for a in read_jsonl(apath)}
        missing = [e["id"] for e in entries if e["id"] not in gt]
        if missing:
            raise DatasetError(f"{apath}: no ground truth for {', '.join(missing[:3])}")
    return CategoryData(category, entries, gt, files)


def content_hash(files: list[Path]) -> str:
    """SHA-256 over the names and bytes of the files read, in order."""
    h = hashlib.sha256()
    for f in files:
        h.update(f.name.encode())
        h.update(f.read_bytes())
    return h.hexdigest()


def pull_line(*, version: str | None = None, wheel: str | Path | None = None,
              force: bool = False) -> str:
    """``assay data pull bfcl``: the official data from the bfcl-eval wheel; one line."""
    src = pull(version or BFCL_EVAL_VERSION, wheel=wheel, force=force)
    n = len(list(src.path.glob("BFCL_v4_*.json")))
    return f"bfcl-eval {src.version} data: {n} category files in {src.path}"


def is_present() -> bool:
    """Whether BFCL's data is installed or cached here (a plan pulls it otherwise)."""
    try:
        locate()
    except DatasetError:
        return False
    return True
