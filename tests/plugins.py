"""Installing a plugin the way pip does, for tests: its module(s) plus a ``dist-info`` whose
``entry_points.txt`` registers it, in a folder put on ``PYTHONPATH``."""

from __future__ import annotations

import os
from pathlib import Path


def install_dist(site: Path, dist: str, modules: dict[str, str], entry_points: str
                 ) -> dict[str, str]:
    """Write ``modules`` (a path under ``site`` -> source) and a dist-info for ``dist``
    (version 1.0) with ``entry_points`` (the text of entry_points.txt); returns an
    environment with ``site`` first on ``PYTHONPATH``."""
    for rel, source in modules.items():
        path = site / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source)
    info = site / f"{dist.replace('-', '_')}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(entry_points)
    return dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(site), *filter(None, [os.environ.get("PYTHONPATH")])]))
