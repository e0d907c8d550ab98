"""The one data cache, under ``$ASSAY_DATA_DIR`` else ``$ASSAY_HOME/data``: ``manifest.json``,
``wheels/`` (never installed), ``hf/`` and what sources extracted. The manifest is rewritten
atomically under a lock; :func:`lookup` checks each file's recorded size and sha256."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from assay.core.atomic import atomic_write_text
from assay.errors import DatasetError
from assay.store.sqlite import workspace_dir

ENV = "ASSAY_DATA_DIR"
MANIFEST = "manifest.json"


def data_root() -> Path:
    """The cache's folder, resolved (a link to another disk is followed once here)."""
    return Path(os.environ.get(ENV) or workspace_dir() / "data").expanduser().resolve()


def sha256_files(files: list[Path], base: Path | None = None) -> str:
    """SHA-256 over the files in order: one file alone (no ``base``) is its bytes' hash;
    else each file's name (relative to ``base``, else its name) then bytes."""
    h = hashlib.sha256()
    for p in files:
        if base is not None or len(files) > 1:
            h.update(str(p.relative_to(base) if base else p.name).encode() + b"\0")
        with open(p, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()


_hashed: dict[tuple[Any, ...], str] = {}


def cached_sha256(files: list[Path], base: Path | None = None) -> str:
    """:func:`sha256_files`, once per process while no file's size or mtime moves (never
    kept across processes: a rewrite restoring the mtime is caught next run)."""
    key = (base, *((str(f), (st := f.stat()).st_size, st.st_mtime_ns) for f in files))
    if key not in _hashed:
        _hashed[key] = sha256_files(files, base)
    return _hashed[key]


def tree_files(folder: Path) -> list[Path]:
    return sorted((p for p in folder.rglob("*") if p.is_file()),
                  key=lambda p: p.relative_to(folder).as_posix())


@dataclass(frozen=True)
class Item:
    """One fetched item as the manifest records it: ``owner`` is the puller that keeps it
    (``gallery``, ``bfcl``, ``hub``, ...), ``name`` what it calls it; ``source`` is
    ``wheel``, ``hf`` or ``file``; ``origin`` e.g. ``bfcl-eval==2026.3.23``; ``version`` a
    package version or Hub commit; ``sums`` each file's size and sha256 (older: empty)."""

    owner: str
    name: str
    source: str
    origin: str
    version: str
    sha256: str
    path: str
    files: list[str] = field(default_factory=list)
    fetched_at: float = 0.0
    detail: dict[str, Any] = field(default_factory=dict)
    sums: list[tuple[int, str]] = field(default_factory=list)

    @property
    def key(self) -> str:
        return f"{self.owner}:{self.name}@{self.version}"

    def present(self) -> bool:
        return Path(self.path).exists() and all(Path(f).is_file() for f in self.files)

    def size(self) -> int:
        return sum(Path(f).stat().st_size for f in self.files if Path(f).is_file())

    def changed(self) -> str | None:
        """The first file whose size or sha256 is not as recorded (an older record: the
        item's path, when the hash over all differs)."""
        files = [Path(f) for f in self.files]
        if not self.sums:
            base = Path(self.path) if Path(self.path).is_dir() else None
            return self.path if files and cached_sha256(files, base) != self.sha256 else None
        if len(self.sums) != len(files):
            return self.path
        return next((str(f) for f, (size, sha) in zip(files, self.sums, strict=True)
                     if f.stat().st_size != size or cached_sha256([f]) != sha), None)


@contextmanager
def _locked() -> Iterator[Path]:
    root = data_root()
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".manifest.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield root / MANIFEST
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _read(path: Path) -> dict[str, dict[str, Any]]:
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise DatasetError(f"{path}: the data cache's manifest cannot be read ({e}); "
                           "delete it and pull the data again") from None
    return data.get("items", {}) if isinstance(data, dict) else {}


def record(owner: str, name: str, *, source: str, origin: str, version: str, path: Path,
           files: list[Path], detail: dict[str, Any] | None = None) -> Item:
    base = path if path.is_dir() else None
    item = Item(owner=owner, name=name, source=source, origin=origin, version=version,
                sha256=cached_sha256(files, base) if files else "", path=str(path),
                files=[str(f) for f in files], fetched_at=time.time(),
                detail=dict(detail or {}),
                sums=[(f.stat().st_size, cached_sha256([f])) for f in files])
    root = data_root().resolve()
    stored = {**asdict(item), "path": _relative(path, root),
              "files": [_relative(f, root) for f in files]}
    with _locked() as manifest:
        found = _read(manifest)
        found[item.key] = stored
        atomic_write_text(manifest, json.dumps({"items": found}, indent=1, sort_keys=True))
    return item


def _relative(path: Path, root: Path) -> str:
    """``path`` relative to the cache root when inside it (a moved cache still holds)."""
    full = Path(path).resolve()
    return full.relative_to(root).as_posix() if full.is_relative_to(root) else str(full)


_FIELDS = set(Item.__dataclass_fields__)


def items() -> list[Item]:
    root = data_root()
    out = []
    for _, v in sorted(_read(root / MANIFEST).items()):
        v = {k: x for k, x in v.items() if k in _FIELDS}
        v["path"] = str(root / v.get("path", ""))  # an absolute path stays as it is
        v["files"] = [str(root / f) for f in v.get("files", [])]
        out.append(Item(**v))
    return out


def lookup(owner: str, name: str, version: str | None = None) -> Item | None:
    """The record of ``owner``'s ``name`` (at ``version``, else the last fetched) whose files
    are all there; a file not as pulled is a DatasetError saying how to fetch it again."""
    mine = [i for i in items() if (i.owner, i.name) == (owner, name)
            and (version is None or i.version == version) and i.present()]
    item = max(mine, key=lambda i: i.fetched_at) if mine else None
    bad = item.changed() if item is not None else None
    if item is not None and bad is not None:
        again = f", or run: assay data pull {name} --force" if owner in _PULLED else ""
        raise DatasetError(f"{Path(bad).resolve()}: not the file the data cache fetched from "
                           f"{item.origin} (its size or sha256 differs from the manifest's); "
                           f"delete it to fetch it again{again}")
    return item


#: the owners whose item names are names ``assay data pull`` takes
_PULLED = ("gallery", "bfcl", "datagen", "tau2")
