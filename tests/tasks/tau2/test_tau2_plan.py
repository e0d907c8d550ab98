"""Plans reach τ²-bench: for a customer-service agent described by its use, and for a request
that names tau-bench or τ² in any common spelling; once, as the gallery's ``tau2_bench``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml


@pytest.mark.parametrize("request_text", [
    "evaluate my customer service agent that handles airline bookings under a policy",
    "run tau-bench on my model",
    "how does my agent do on τ²-bench (retail)?",
    "我想用 tau2 评测我的客服智能体",
])
def test_a_plan_picks_tau2_bench(request_text: str, tmp_path: Path, workspace: Path) -> None:
    out = tmp_path / "plan.yaml"
    done = subprocess.run([sys.executable, "-m", "assay", "plan", request_text, "--yes", "-o",
                           str(out)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    tasks = [t["task"] for t in yaml.safe_load(out.read_text())["tasks"]]
    assert tasks.count("tau2_bench") == 1 and "tau2" not in tasks, tasks
