"""The sandbox's files on the host: packing the inputs, and removing what a run left.

Whatever the code under test (or an agent before it) did to its folders must end as a fail
of that sample, never as an error of the harness. So nothing here recurses (a tree 1,500
folders deep makes ``shutil.rmtree`` and ``os.walk`` raise ``RecursionError`` on Python
3.11), follows a link, opens a fifo, or trusts a folder's mode: an entry that cannot be
read is left out of the inputs, and a tree is removed whatever its depth or modes.
"""

from __future__ import annotations

import contextlib
import io
import os
import secrets
import stat
import tarfile
from pathlib import Path, PurePosixPath

from assay.errors import ConfigError

__all__ = ["InputsTooBig", "pack", "remove_tree"]

#: the top folders of the input stream: the scratch copy, and the harness's own files
WORK_DIR = "work"
SUPPORT_DIR = "assay"


class InputsTooBig(Exception):
    """The inputs exceed the scratch folder's size."""


class _Packer:
    """Writes the inputs as a tar stream (regular files, folders, links), within a budget."""

    def __init__(self, tar: tarfile.TarFile, budget: int) -> None:
        self.tar = tar
        self.budget = budget
        self.used = 0
        #: member name -> "dir", "file" or "link"
        self.kinds: dict[str, str] = {}
        self.skipped = 0

    def _charge(self, size: int) -> None:
        # each member costs its size and a block of metadata (the tmpfs counts both)
        self.used += size + 512
        if self.used > self.budget:
            raise InputsTooBig(f"the inputs need more than {self.budget // (1024 * 1024)} MB")

    def folder(self, name: str, mode: int = 0o755) -> None:
        if self.kinds.get(name) == "dir":
            return
        info = tarfile.TarInfo(name)
        info.type = tarfile.DIRTYPE
        info.mode = mode & 0o7777
        self._charge(0)
        self.tar.addfile(info)
        self.kinds[name] = "dir"

    def data(self, name: str, content: bytes, mode: int = 0o644) -> None:
        info = tarfile.TarInfo(name)
        info.size = len(content)
        info.mode = mode & 0o7777
        self._charge(info.size)
        self.tar.addfile(info, io.BytesIO(content))
        self.kinds[name] = "file"

    def link(self, name: str, target: str) -> None:
        info = tarfile.TarInfo(name)
        info.type = tarfile.SYMTYPE
        info.linkname = target
        self._charge(len(target))
        self.tar.addfile(info)
        self.kinds[name] = "link"

    def file(self, name: str, path: str) -> None:
        # O_NOFOLLOW | O_NONBLOCK: a link or a fifo put in the file's place since it was
        # listed is neither followed nor waited on; fstat says what was opened
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                self.skipped += 1
                return
            info = tarfile.TarInfo(name)
            info.size = st.st_size
            info.mode = st.st_mode & 0o7777
            info.mtime = int(st.st_mtime)
            self._charge(info.size)
            self.tar.addfile(info, _Exactly(f, info.size))
        self.kinds[name] = "file"

    def tree(self, name: str, path: str) -> None:
        """``path`` (a file, folder or link) as ``name``: depth first, with a list of its
        own rather than recursion; what cannot be read is left out."""
        todo = [(name, path)]
        while todo:
            arc, src = todo.pop()
            try:
                st = os.lstat(src)
                if stat.S_ISLNK(st.st_mode):
                    # a link is copied as a link: followed here (by the host, maybe as
                    # root) it would carry what it points to into the sandbox
                    self.link(arc, os.readlink(src))
                elif stat.S_ISDIR(st.st_mode):
                    names = sorted(os.listdir(src))
                    self.folder(arc, st.st_mode)
                    todo.extend((f"{arc}/{n}", os.path.join(src, n)) for n in reversed(names))
                elif stat.S_ISREG(st.st_mode):
                    self.file(arc, src)
                else:  # fifos, sockets, devices: nothing code needs from its inputs
                    self.skipped += 1
            except InputsTooBig:
                raise
            except (OSError, ValueError):  # unreadable, vanished, a name too long
                self.skipped += 1


class _Exactly(io.RawIOBase):
    """``size`` bytes of a file that may have shrunk since it was measured (zeros after)."""

    def __init__(self, f: io.BufferedReader, size: int) -> None:
        self.f = f
        self.left = size

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
    """Write the inputs of one run to the tar file ``out``; returns the scratch files.

    ``copy``: files and folders put in the scratch folder under their own names (links
    kept as links, special files and unreadable entries left out); ``files``: relative
    path -> content, written after them (never through a link they brought); ``support``:
    the harness's own files, in a folder of their own beside the scratch folder, so that
    nothing in ``copy`` can take their place. Raises :class:`InputsTooBig` past
    ``budget_bytes``.
    """
    with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as tar:
        p = _Packer(tar, budget_bytes)
        p.folder(WORK_DIR, 0o755)
        for src in copy:
            p.tree(f"{WORK_DIR}/{src.name}", str(src))
        for top, given in ((WORK_DIR, files), (SUPPORT_DIR, support)):
            if given:
                p.folder(top, 0o755)
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
                        p.folder(name, 0o755)
                data = content.encode("utf-8") if isinstance(content, str) else content
                p.data("/".join([top, *parts]), data)
    prefix = WORK_DIR + "/"
    return sorted(n[len(prefix):] for n, k in p.kinds.items()
                  if k != "dir" and n.startswith(prefix))[:200]


def remove_tree(path: str | Path) -> bool:
    """Remove ``path`` and everything under it; never raises. Returns whether it is gone.

    No recursion and no path longer than two names: every folder met is moved up to the
    top folder before it is emptied, so the depth of the tree never matters. Folders are
    made ``0700`` before they are read; links are removed, never followed.
    """
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
    """Remove everything in the folder open as ``top``."""
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
    """Remove ``name`` from ``top``; a folder's sub-folders are moved up into ``top``
    (to be removed in a later round) and its other entries unlinked. Returns whether
    anything changed."""
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
