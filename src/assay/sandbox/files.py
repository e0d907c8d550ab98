"""The sandbox's files on the host: packing inputs, removing what a run left. Nothing here
recurses (deep trees raise RecursionError), follows a link, opens a fifo or trusts a folder's
mode: what the code did must fail that sample, never the harness."""

from __future__ import annotations

import contextlib
import io
import os
import secrets
import stat
import tarfile
import tempfile
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any

from assay.errors import ConfigError

#: the top folders of the input stream: the scratch copy, and the harness's own files
WORK_DIR = "work"
SUPPORT_DIR = "assay"


class InputsTooBig(ConfigError):
    """The inputs exceed the scratch folder's size."""


class _Packer:
    """Writes the inputs as a tar stream (regular files, folders, links), within a budget."""

    def __init__(self, tar: tarfile.TarFile, budget: int) -> None:
        self.tar, self.budget, self.used = tar, budget, 0
        self.kinds: dict[str, str] = {}  # member name -> "dir", "file" or "link"

    def add(self, name: str, kind: str, mode: int = 0o755, size: int = 0, link: str = "",
            content: Any = None) -> None:
        # each member costs its size and a block of metadata (the tmpfs counts both)
        self.used += size + len(link) + 512
        if self.used > self.budget:
            raise InputsTooBig(f"the inputs need more than {self.budget // (1024 * 1024)} MB")
        info = tarfile.TarInfo(name)
        info.type = {"dir": tarfile.DIRTYPE, "link": tarfile.SYMTYPE}.get(kind, tarfile.REGTYPE)
        info.mode, info.size, info.linkname = mode & 0o7777, size, link
        self.tar.addfile(info, content)
        self.kinds[name] = kind

    def folder(self, name: str, mode: int = 0o755) -> None:
        if self.kinds.get(name) != "dir":
            self.add(name, "dir", mode)

    def file(self, name: str, path: str) -> None:
        # O_NOFOLLOW | O_NONBLOCK: a link or a fifo put in the file's place since it was
        # listed is neither followed nor waited on; fstat says what was opened
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(fd)
            if stat.S_ISREG(st.st_mode):
                self.add(name, "file", st.st_mode, st.st_size, content=_Exactly(f, st.st_size))

    def tree(self, name: str, path: str) -> None:
        """``path`` as ``name``, depth first without recursion; what cannot be read is left out."""
        todo = [(name, path)]
        while todo:
            arc, src = todo.pop()
            try:
                st = os.lstat(src)
                if stat.S_ISLNK(st.st_mode):
                    # a link is copied as a link: followed here (by the host, maybe as
                    # root) it would carry what it points to into the sandbox
                    self.add(arc, "link", 0o777, link=os.readlink(src))
                elif stat.S_ISDIR(st.st_mode):
                    names = sorted(os.listdir(src))
                    self.folder(arc, st.st_mode)
                    todo.extend((f"{arc}/{n}", os.path.join(src, n)) for n in reversed(names))
                elif stat.S_ISREG(st.st_mode):
                    self.file(arc, src)
                # fifos, sockets, devices: nothing code needs from its inputs
            except InputsTooBig:
                raise
            except (OSError, ValueError):  # unreadable, vanished, a name too long
                pass


class _Exactly(io.RawIOBase):
    """``size`` bytes of a file that may have shrunk since it was measured (zeros after)."""

    def __init__(self, f: io.BufferedReader, size: int) -> None:
        self.f, self.left = f, size

    def readable(self) -> bool:
        return True

    def read(self, n: int = -1) -> bytes:
        n = self.left if n < 0 else min(n, self.left)
        data = self.f.read(n) if n else b""
        data += b"\0" * (n - len(data))
        self.left -= n
        return data


def _member_name(rel: str) -> str:
    """``rel`` as a member name under the scratch folder, or a one-line error."""
    path = PurePosixPath(rel)
    if path.is_absolute() or ".." in path.parts or not path.parts or rel.startswith("~"):
        raise ConfigError(f"sandbox file {rel!r} would lie outside the scratch folder")
    return "/".join(path.parts)


def pack(out: Path, *, copy: list[Path], files: dict[str, str | bytes],
         support: dict[str, str | bytes], budget_bytes: int) -> list[str]:
    """Write one run's inputs to the tar ``out``: ``copy`` (links as links, unreadable or
    special entries left out), then ``files`` (never through a copied link) in the scratch
    folder and ``support`` beside it; returns the scratch files' names."""
    with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as tar:
        p = _Packer(tar, budget_bytes)
        p.folder(WORK_DIR)
        for src in copy:
            p.tree(f"{WORK_DIR}/{src.name}", str(src))
        for top, given in ((WORK_DIR, files), (SUPPORT_DIR, support)):
            if given:
                p.folder(top)
            for rel, content in given.items():
                parts = _member_name(rel).split("/")
                for i in range(1, len(parts) + 1):
                    name = "/".join([top, *parts[:i]])
                    kind = p.kinds.get(name)
                    last = i == len(parts)
                    if kind == "link" or (kind == "dir" and last):
                        # a file written through a copied link would land where it points
                        raise ConfigError(f"sandbox file {rel!r} would lie outside the "
                                          "scratch folder (a link or a folder is in its place)")
                    if not last and kind is None:
                        p.folder(name)
                data = content.encode("utf-8") if isinstance(content, str) else content
                p.add("/".join([top, *parts]), "file", 0o644, len(data), content=io.BytesIO(data))
    prefix = WORK_DIR + "/"
    return sorted(n[len(prefix):] for n, k in p.kinds.items()
                  if k != "dir" and n.startswith(prefix))[:200]


def remove_tree(path: str | Path) -> bool:
    """Remove ``path`` whatever its depth or modes (folders are moved up to the top
    before they are emptied; links never followed); never raises; whether it is gone."""
    path = str(path)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    try:
        if not stat.S_ISDIR(st.st_mode):
            os.unlink(path)
            return True
        top = _open_folder(path, None)
    except OSError:
        return False
    try:
        _empty(top)
    finally:
        os.close(top)
    try:
        os.rmdir(path)
    except OSError:
        return False
    return True


def _open_folder(name: str, dir_fd: int | None) -> int:
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    try:
        fd = os.open(name, flags, dir_fd=dir_fd)
    except PermissionError:  # a folder made unreadable: it is ours to open again
        os.chmod(name, 0o700, dir_fd=dir_fd)
        fd = os.open(name, flags, dir_fd=dir_fd)
    try:
        os.fchmod(fd, 0o700)
    except OSError:
        pass
    return fd


def _empty(top: int) -> None:
    while True:
        try:
            names = os.listdir(top)
        except OSError:
            return
        if not names:
            return
        progress = False
        for name in names:
            try:
                progress |= _remove_entry(top, name)
            except OSError:
                pass
        if not progress:
            return  # what is left cannot be removed by this user


def _remove_entry(top: int, name: str) -> bool:
    """Remove ``name`` from ``top``: a folder's sub-folders move up into ``top`` (for
    a later round), its other entries are unlinked; whether anything changed."""
    st = os.stat(name, dir_fd=top, follow_symlinks=False)
    if not stat.S_ISDIR(st.st_mode):
        os.unlink(name, dir_fd=top)
        return True
    changed = False
    fd = _open_folder(name, top)
    try:
        for child in os.listdir(fd):
            try:
                cst = os.stat(child, dir_fd=fd, follow_symlinks=False)
                if stat.S_ISDIR(cst.st_mode):
                    with contextlib.suppress(OSError):  # moving a folder rewrites its "..":
                        os.chmod(child, 0o700, dir_fd=fd)  # it must be writable
                    os.rename(child, f".assay-rm-{secrets.token_hex(8)}", src_dir_fd=fd,
                              dst_dir_fd=top)
                else:
                    os.unlink(child, dir_fd=fd)
                changed = True
            except OSError:
                pass
    finally:
        os.close(fd)
    try:
        os.rmdir(name, dir_fd=top)
    except OSError:
        return changed
    return True


@contextlib.contextmanager
def scratch_folder(prefix: str = "assay-") -> Iterator[str]:
    """A fresh temporary folder, removed by :func:`remove_tree`; never raises."""
    path = tempfile.mkdtemp(prefix=prefix)
    try:
        yield path
    finally:
        remove_tree(path)
