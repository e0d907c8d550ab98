"""The agent's working folder as ``eval_code`` sees it, kept with the outcome.

``score`` may run after the folder is gone, so ``solve`` stores a bounded copy of its regular files;
those left out are, to the snippet, absent, never an error.
"""

from __future__ import annotations

import base64
import os
import stat
from pathlib import Path, PurePosixPath
from typing import Any

#: the bounds of one snapshot: one file, all of them, how many
FILE_LIMIT = 1024 * 1024
TOTAL_LIMIT = 8 * 1024 * 1024
MAX_FILES = 1000
#: names of left-out files kept (the count is kept too)
MAX_LEFT_OUT = 100
VERSION = 1


def _read(path: Path, limit: int) -> bytes | None:
    """At most ``limit + 1`` bytes of the regular file ``path``; ``None`` for anything
    else (a link or fifo put in its place is neither followed nor waited on)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return f.read(limit + 1)


def snapshot(root: Path, files: list[Path]) -> dict[str, Any]:
    """The regular files ``files`` (under ``root``, links already left out), bounded."""
    kept: list[dict[str, Any]] = []
    left_out: list[dict[str, Any]] = []
    n_left = 0
    total = 0
    for p in files:
        rel = p.relative_to(root).as_posix()
        data = _read(p, FILE_LIMIT)
        why = None
        if data is None:
            why = "not a readable regular file"
        elif len(data) > FILE_LIMIT:
            why = f"over {FILE_LIMIT} bytes"
        elif len(kept) >= MAX_FILES:
            why = f"past {MAX_FILES} files"
        elif total + len(data) > TOTAL_LIMIT:
            why = f"past {TOTAL_LIMIT} bytes in all"
        if why is not None or data is None:
            n_left += 1
            if len(left_out) < MAX_LEFT_OUT:
                left_out.append({"path": rel, "why": why})
            continue
        total += len(data)
        try:
            kept.append({"path": rel, "text": data.decode("utf-8")})
        except UnicodeDecodeError:
            kept.append({"path": rel, "base64": base64.b64encode(data).decode("ascii")})
    return {"version": VERSION, "files": kept, "bytes": total, "left_out": left_out,
            "n_left_out": n_left}


def _placeable(path: str) -> bool:
    """Whether the sandbox puts ``path`` in its scratch folder (a name such as ``~notes``
    at the top it refuses, as it would a home folder's: left out, never an error)."""
    parts = PurePosixPath(path).parts
    return bool(parts) and not path.startswith(("/", "~")) and ".." not in parts


def files_of(stored: dict[str, Any] | None) -> dict[str, str | bytes]:
    """The stored files as the sandbox takes them (relative path -> content)."""
    out: dict[str, str | bytes] = {}
    for item in (stored or {}).get("files") or []:
        path = str(item.get("path") or "")
        if not _placeable(path):
            continue
        if "base64" in item:
            out[path] = base64.b64decode(str(item["base64"]))
        else:
            out[path] = str(item.get("text") or "")
    return out


def legacy_files(listing: list[dict[str, Any]] | None) -> dict[str, str | bytes]:
    """The small text files of a listing stored before snapshots (``metadata["files"]``)."""
    return {str(f["path"]): str(f["text"]) for f in listing or []
            if _placeable(str(f.get("path") or "")) and isinstance(f.get("text"), str)}
