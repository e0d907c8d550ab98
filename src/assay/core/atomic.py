"""Writing files a reader never sees half of: a temp file in the same folder, fsynced, renamed
over the target; ``kill -9`` leaves the old file or the new, never a truncated one."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

_UMASK = os.umask(0)
os.umask(_UMASK)


@contextmanager
def atomic_open(path: str | Path, mode: str = "w", encoding: str | None = "utf-8") -> Iterator[IO]:
    """A temporary file beside ``path`` that replaces it on a clean exit (on an exception
    it is removed and ``path`` left untouched)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, 0o666 & ~_UMASK)  # mkstemp makes 0600; a report is an ordinary file
        with os.fdopen(fd, mode, encoding=None if "b" in mode else encoding) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def atomic_write_text(path: str | Path, text: str, encoding: str = "utf-8") -> Path:
    with atomic_open(path, "w", encoding=encoding) as fh:
        fh.write(text)
    return Path(path)
