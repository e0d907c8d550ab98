"""The embedded model runs the reference agent on two GAIA fixture tasks, offline (issue
36): the real model, the real loop, the real tools and sandbox. The 135M model is not
expected to solve them; what is checked is that the whole path runs for real: tool calls
made and answered, each sample ended with a recorded reason, the run stored and reported."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from assay.agents.loop import ENDED

DATA = Path(__file__).resolve().parents[1] / "fixtures" / "gaia_agent" / "data"


@pytest.mark.slow
def test_the_embedded_model_runs_the_reference_agent_offline(tmp_path: Path) -> None:
    home = tmp_path / "home"
    p = subprocess.run(
        [sys.executable, "-m", "assay", "run", "gaia", "--data-dir", str(DATA), "--model",
         "agent/react?model=local&tools=files,python&max_steps=3", "--max-tokens", "96",
         "--limit", "2", "-q"], capture_output=True, text=True, timeout=1800, cwd=tmp_path,
        env=dict(os.environ, ASSAY_HOME=str(home), HF_HUB_OFFLINE="1"))
    assert p.returncode == 0, p.stdout + p.stderr
    con = sqlite3.connect(home / "assay.db")
    rows = con.execute("SELECT transcript, outcome, error FROM samples").fetchall()
    (metrics,) = con.execute("SELECT metrics FROM runs").fetchone()
    con.close()
    assert len(rows) == 2 and all(err is None for *_, err in rows), rows
    loops = [json.loads(o)["metadata"]["agent"] for _, o, _ in rows]
    assert all(a["ended"] in ENDED and 1 <= a["steps"] <= 3 for a in loops), loops
    # the model called a tool and its result came back into the conversation
    transcripts = [json.loads(t) for t, _, _ in rows]
    assert any(m["role"] == "tool" for t in transcripts for m in t), transcripts
    assert json.loads(metrics)["agent"]["samples"] == 2
