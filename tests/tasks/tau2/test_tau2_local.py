"""The embedded model plays both the agent and the user on two mock tasks, offline: the
official runner, the real model through the bridge, the official evaluator. The 135M model
is not expected to earn anything; what is checked is that the whole path runs for real and
each trial ends with an official termination reason, scored and reported."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.slow
def test_the_embedded_model_plays_agent_and_user_offline(tau2_root: Path,
                                                         tmp_path: Path) -> None:
    home = tmp_path / "home"
    p = subprocess.run(
        [sys.executable, "-m", "assay", "run", "tau2", "--domain", "mock", "--limit", "2",
         "--model", "local", "--user-model", "local", "--tau2-dir", str(tau2_root)],
        capture_output=True, text=True, timeout=1800, cwd=tmp_path,
        env=dict(os.environ, ASSAY_HOME=str(home), HF_HUB_OFFLINE="1"))
    assert p.returncode == 0, p.stdout + p.stderr
    assert "user local:" in p.stdout  # the user simulator's calls, apart from the agent's
    con = sqlite3.connect(home / "assay.db")
    rows = con.execute("SELECT outcome, scores, error FROM samples").fetchall()
    con.close()
    assert len(rows) == 2 and all(err is None for *_, err in rows), rows
    for outcome, scores, _ in rows:
        meta = json.loads(outcome)["metadata"]
        sim = meta["simulation"]
        assert meta["max_steps"] == 10  # a small local model's default
        assert sim["termination_reason"] in ("user_stop", "agent_stop", "max_steps",
                                             "too_many_errors", "agent_error", "user_error")
        assert [m["role"] for m in sim["messages"][:2]] == ["assistant", "user"]
        assert json.loads(outcome)["role_usage"]["user"]["calls"] >= 1
        reward = json.loads(scores)["reward"]
        assert reward["value"] in (0.0, 1.0)
        assert reward["metadata"]["user_model"] == "local"
    report = next((home / "runs").glob("*/report.md")).read_text()
    assert "## τ²-bench" in report and "| user simulator | local |" in report
