"""The planner proposes GAIA with the reference agent for a general assistant that searches
the web and reads attachments, says which agent and tools, and the plan runs it so (issue 36):
the real planner (rules), the real CLI, the scripted model over real HTTP."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import yaml

from assay.testing.fake_server import FakeServer
from tests.agents.test_gaia_agent import DATA, scripted

REQUEST = ("I am building a general assistant that searches the web and reads Excel and PDF "
           "attachments; how good is it?")


def cli(folder: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "assay", *args], capture_output=True,
                          text=True, timeout=600, cwd=folder,
                          env=dict(os.environ, ASSAY_HOME=str(folder / "home"), COLUMNS="100",
                                   **env))


def test_a_general_assistant_gets_gaia_with_the_reference_agent(tmp_path: Path) -> None:
    # GAIA can run where a token (or a cached copy) is at hand: an offline planner leaves it
    # out and says why (tests/plan); here a token is set, never used (--no-hub: no search)
    p = cli(tmp_path, "plan", REQUEST, "--yes", "--no-hub", "-o", "plan.yaml",
            HF_TOKEN="hf_never_sent", HF_HUB_OFFLINE="0")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "runs with the react agent (tools: files, python, calculator)" in p.stdout
    plan = yaml.safe_load((tmp_path / "plan.yaml").read_text())
    (gaia,) = [t for t in plan["tasks"] if t["task"] == "gaia"]
    assert gaia["agent"] == {"name": "react", "tools": ["files", "python", "calculator"]}
    # the plan run: GAIA's child is the model with this agent
    shutil.copytree(DATA, tmp_path / "gaia")
    gaia["options"] = {"data_dir": "gaia"}
    plan["tasks"] = [gaia]
    (tmp_path / "plan.yaml").write_text(yaml.safe_dump(plan, sort_keys=False))
    with FakeServer(responder=scripted) as server:
        run = cli(tmp_path, "run", "plan.yaml", "--model", "openai/script", "--base-url",
                  server.base_url, "-q", OPENAI_API_KEY="k")
    assert run.returncode == 0, run.stdout + run.stderr
    con = sqlite3.connect(tmp_path / "home" / "assay.db")
    (spec, metrics), = con.execute(
        "SELECT spec, metrics FROM runs WHERE parent_id IS NOT NULL").fetchall()
    con.close()
    assert json.loads(spec)["model"] == (
        "agent/react?model=openai/script&tools=files,python,calculator")
    assert json.loads(metrics)["exact_match_rate"]["value"] == 1.0
    con = sqlite3.connect(tmp_path / "home" / "assay.db")
    (plan_run,), = con.execute("SELECT id FROM runs WHERE kind = 'plan'").fetchall()
    con.close()
    report = tmp_path / "home" / "runs" / plan_run / "report.md"
    assert "run with the react agent (tools: files, python, calculator)" in report.read_text()
