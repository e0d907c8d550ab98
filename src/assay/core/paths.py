"""One path policy for every file that a task, plan, case or wheel names.

A file of that kind comes from someone else (a shared task, a downloaded plan, a case
folder, a wheel from an index), so every name it holds is read the same way: relative
to the folder it belongs to (its *base*), and resolved inside that folder, links
included. An absolute path, a ``..`` that climbs out, a link that leads out, an empty
name or a NUL byte is refused with one line naming the file and the field.

The check resolves first and compares resolved paths second: comparing the text of a
path misses links (``data/x.csv -> /etc/shadow``), and resolving only the base misses
``..`` inside links. :func:`inside` is the one function that does it; everything else
here is built on it.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path, PurePosixPath, PureWindowsPath

from assay.errors import ConfigError


def _refuse(what: str, name: object, why: str) -> ConfigError:
    shown = repr(name) if isinstance(name, str) and len(name) <= 200 else \
        repr(str(name)[:200] + "...")
    return ConfigError(f"{what}: {shown} {why}")


def inside(base: Path, name: str, *, what: str) -> Path:
    """``name`` (relative to ``base``) resolved inside ``base``, links included.

    ``what`` names the file and the field for the error (``"cases/a.yaml:7: data_files"``).
    Refused, each as one :class:`ConfigError` line: a name that is not text or is empty,
    holds a NUL byte, is absolute (``/x``, ``~/x``, ``C:\\x``, ``\\\\server\\x``), climbs
    out with ``..``, or passes through a link that leads out of ``base``. The returned
    path is absolute and resolved; it need not exist.
    """
    if not isinstance(name, str) or not name.strip():
        raise _refuse(what, name, "is not a file name; give a path relative to "
                      f"{base}")
    if "\x00" in name:
        raise _refuse(what, name, "holds a NUL byte")
    if name.startswith("~") or PurePosixPath(name).is_absolute() \
            or PureWindowsPath(name).is_absolute() or PureWindowsPath(name).drive:
        raise _refuse(what, name, f"is an absolute path; name a file relative to {base}")
    root = Path(base).resolve()
    try:
        target = (root / name).resolve()
    except (OSError, RuntimeError) as e:  # a link loop, a name too long
        raise _refuse(what, name, f"cannot be resolved ({e})") from None
    if not target.is_relative_to(root):
        lexical = Path(os.path.normpath(root / name))
        why = ("passes through a link that leads out of" if lexical.is_relative_to(root)
               else "leads out of")
        raise _refuse(what, name, f"{why} {root}; files are named relative to it and "
                      "stay inside it")
    return target


#: longer values, or values on several lines, are text (as ``--template`` reads them)
_MAX_PATH = 4096


def _exists(p: Path) -> bool:
    try:
        return p.exists() or p.is_symlink()
    except (OSError, ValueError):
        return True  # an unreadable name is treated as a file: it is checked


def _is_file(p: Path) -> bool:
    try:
        return p.is_file() or (p.is_symlink() and not p.is_dir())
    except (OSError, ValueError):
        return True


def file_value(value: str, base: Path, *, what: str) -> str:
    """A value from a file that a task may read as a file name (``template: FILE``):
    passed on unchanged when it names nothing on disk (it is text), rewritten to the
    absolute path of the file it names inside ``base`` (see :func:`inside`), or refused in
    one line naming ``what``: an absolute or ``~`` path that exists, a relative one that
    leads out of ``base``, or one that is not in ``base`` but names a file in the current
    folder (which the task would read instead).

    A plain name that is a folder only in the current folder is left as text (a split
    called ``test``); values on several lines or of 4,096 characters or more are text,
    as ``--template`` reads them."""
    if "\x00" in value:
        raise ConfigError(f"{what}: the value holds a NUL byte")
    if "\n" in value or len(value) >= _MAX_PATH or not value.strip():
        return value
    absolute = value.startswith("~") or PurePosixPath(value).is_absolute() \
        or PureWindowsPath(value).is_absolute()
    if absolute:
        if _exists(Path(value).expanduser()):
            inside(base, value, what=what)  # raises: files are named relative to ``base``
        return value
    parts = PurePosixPath(value.replace("\\", "/")).parts
    path_like = value.startswith(".") or "/" in value or "\\" in value
    in_base = base / value
    if ".." in parts or (_exists(in_base) and (path_like or _is_file(in_base))):
        return str(inside(base, value, what=what))
    here = Path(value)
    if (path_like and _exists(here)) or _is_file(here):
        if not (here.resolve() if _exists(here) else here.absolute()).is_relative_to(
                base.resolve()):
            raise ConfigError(f"{what}: {value[:200]!r} is not in {base} but names a file in "
                              f"the current folder; files are named relative to {base} and "
                              "stay inside it")
    return value


def refuse_links_out(base: Path, folder: Path, *, what: str) -> None:
    """Refuse (one line) a link under ``folder`` that resolves outside ``base``, or that
    names a folder.

    A folder named by a data file is copied with its links followed, so each link to a
    file must lead somewhere inside ``base`` (checked with :func:`inside`); a link to a
    folder is refused outright, as one could lead back to where it is (a copy without
    end) or to a folder whose own links were never checked.
    """
    root = Path(base).resolve()
    for dirpath, dirnames, filenames in os.walk(folder):  # does not enter linked folders
        for entry in [*dirnames, *filenames]:
            p = Path(dirpath) / entry
            if not p.is_symlink():
                continue
            target = inside(root, os.path.relpath(p, root), what=what)
            if target.is_dir():
                raise _refuse(what, os.path.relpath(p, root), "is a link to a folder; "
                              "copy the folder there instead")


def copy_inside(base: Path, name: str, dest: Path, *, what: str) -> Path:
    """Copy the file or folder ``name`` (relative to ``base``, see :func:`inside`) to
    ``dest``; links are copied as what they point to only when that lies inside
    ``base``, and a link leading out is refused. Returns ``dest``."""
    src = inside(base, name, what=what)
    if src.is_dir():
        refuse_links_out(base, src, what=what)
        shutil.copytree(src, dest, dirs_exist_ok=True)
    elif src.is_file():
        shutil.copy2(src, dest)
    else:
        raise _refuse(what, name, "does not exist (paths are relative to "
                      f"{Path(base).resolve()})")
    return dest
