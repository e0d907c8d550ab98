"""Leftovers of issue 34 on the command line: a multi-model run has one label everywhere
(``assay.reports.models.models_label``), and the help says how the workspace is found.

The real CLI in subprocesses; the multi-model run goes over real HTTP to the fake
OpenAI-compatible server into a real store, read back by ``assay list runs``, its report
and the viewer's runs list.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.request
from pathlib import Path

from assay.reports.models import models_label
from assay.store.sqlite import Store
from assay.testing import FakeServer
from assay.web.server import serve
from tests.browser import ServedInThread


def cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    p = subprocess.run([sys.executable, "-m", "assay", *args], capture_output=True, text=True,
                       timeout=300, cwd=home.parent,
                       env=dict(os.environ, ASSAY_HOME=str(home), COLUMNS="120", NO_COLOR="1"))
    assert p.returncode == 0, (p.stdout, p.stderr)
    return p


def test_a_multi_model_run_has_one_label_in_the_list_its_report_and_the_viewer(
        tmp_path: Path, workspace: Path) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"id": "a", "question": "What is 2 + 3?", "answer": "5"}) + "\n")
    with FakeServer(default_reply="Answer: 5") as srv:
        cli(workspace, "run", "qa", "--data", str(data), "--base-url", srv.base_url,
            "--model", "openai/a", "--model", "openai/b", "--model", "openai/c", "-q")
    store = Store(workspace / "assay.db", readonly=True)
    try:
        parent = next(store.get_run(r["id"]) for r in store.list_runs(-1)
                      if r["kind"] == "pipeline")
    finally:
        store.close()
    label = models_label(parent)
    assert label == "qa on 3 models"
    listed = cli(workspace, "list", "runs").stdout
    row = next(line for line in listed.splitlines() if line.startswith(parent["id"]))
    assert re.search(rf"{parent['id']}\s+{label}\s+finished", row), row
    report = cli(workspace, "report", parent["id"]).stdout
    md = Path(re.search(r"^markdown: (.+)$", report, re.M).group(1)).read_text()
    assert md.startswith(f"# {label}\n")
    site = ServedInThread(serve(store_path=workspace / "assay.db"))
    try:
        with urllib.request.urlopen(f"{site.base}/run/{parent['id']}", timeout=60) as r:  # noqa: S310
            page = r.read().decode()
    finally:
        site.close()
    assert f'<dd id="run-task">{label}</dd>' in page


def test_the_help_says_the_workspace_is_found_as_git_finds_its_folder(tmp_path: Path) -> None:
    home = tmp_path / "assay-runs"  # never made: help reads no workspace
    for command in (("run", "--help"), ("view", "--help")):
        text = " ".join(cli(home, *command).stdout.split())
        assert "./assay-runs, or $ASSAY_HOME" not in text
        assert "$ASSAY_HOME/assay.db" not in text
        assert ("found as git finds .git: $ASSAY_HOME if set, else the nearest assay-runs/ "
                "holding assay.db in this folder or one above") in text, text
