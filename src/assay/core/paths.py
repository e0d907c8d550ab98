"""One path policy for every file a task, plan, case or wheel names: resolved inside its folder,
links included; absolute paths, ``..`` or links leading out, empty names and NUL are refused.
:func:`inside` resolves before comparing: comparing text misses links, resolving only the base
misses ``..`` in links. Also where the workspace is (:func:`find_workspace`)."""

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
    """``name`` resolved inside ``base`` (absolute; it need not exist), or a ConfigError
    naming ``what`` (``"cases/a.yaml:7: data_files"``) for an empty name, a NUL byte, an
    absolute path (``/x``, ``~/x``, ``C:\\x``, ``\\\\server\\x``), or leading out."""
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
    """A value a task may read as a file name (``template: FILE``): unchanged when it names
    nothing on disk (text; so are multi-line or 4,096+ character values, and a plain name
    that is a folder only here, like a split ``test``), else the absolute path inside
    ``base``; refused: an existing absolute or ``~`` path, one leading out of ``base``, or
    one not in ``base`` but naming a file in the current folder (read instead)."""
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
    """Refuse a link under ``folder`` that resolves outside ``base`` (the folder is copied
    with links followed), or that names a folder (it could lead back, a copy without end,
    or to a folder whose own links were never checked)."""
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
    """Copy the file or folder ``name`` inside ``base`` to ``dest``, links followed only
    where they stay inside ``base``."""
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


#: the workspace folder's name, looked for in the current folder and above it
WORKSPACE = "assay-runs"


def find_workspace() -> tuple[Path, str]:
    """The workspace and how it was found, as git finds ``.git``: ``"env"`` ($ASSAY_HOME);
    ``"above"`` (the nearest ``assay-runs/`` holding ``assay.db`` in a folder above the
    current one, absolute); ``"here"`` (``./assay-runs``, which may not exist yet)."""
    home = os.environ.get("ASSAY_HOME")
    if home:
        return Path(home), "env"
    try:
        cwd = Path.cwd()
    except OSError:  # the current folder was deleted
        return Path(WORKSPACE), "here"
    for folder in (cwd, *cwd.parents):
        if (folder / WORKSPACE / "assay.db").is_file():
            return (Path(WORKSPACE), "here") if folder == cwd else (folder / WORKSPACE, "above")
    return Path(WORKSPACE), "here"


def workspace_dir() -> Path:
    """The workspace folder (see :func:`find_workspace`)."""
    return find_workspace()[0]


def workspace_note() -> str | None:
    """One line saying where the workspace is when it is in a folder above this one."""
    path, how = find_workspace()
    return f"workspace: {path} (found above this folder)" if how == "above" else None
