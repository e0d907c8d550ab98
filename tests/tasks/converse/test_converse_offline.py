"""The built-in cases on the embedded model, offline: agent, examiner and judge all local.

The 135M model is a weak examiner and judge; what is checked is that the whole path runs
for real (constrained examiner JSON, the conversation, eval_code in the sandbox, the judge)
and is stored and reported, not how well the small model does.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from convfakes import WEAK_ARGS

from assay.store.sqlite import Store, workspace_dir
from assay.tasks.converse.cases import load_case
from assay.tasks.converse.task import BUILTIN_CASES


@pytest.mark.slow
def test_a_builtin_case_runs_offline_on_the_embedded_model(tmp_path):
    case, _ = load_case(BUILTIN_CASES / "json_format.yaml", BUILTIN_CASES)
    out = subprocess.run(
        [sys.executable, "-m", "assay", "run", "converse", "--model", "local",
         "--examiner-model", "local", "--judge-model", "local", "--sample-ids", "json_format",
         *WEAK_ARGS],
        capture_output=True, text=True, timeout=1800)
    assert out.returncode == 0, out.stderr
    assert "warning: the examiner model is the agent under test (local)" in out.stderr
    run_id = out.stdout.split()[1]
    store = Store()
    try:
        run = store.get_run(run_id)
        (r,) = store.results(run_id)
    finally:
        store.close()
    assert r.error is None, r.error
    meta = r.outcome["metadata"]
    conv = meta["conversation"]
    assert 1 <= conv["rounds"] <= case.max_rounds
    assert conv["ended_by"] in ("examiner", "max_rounds", "examiner_invalid", "agent_error")
    judged = r.scores["score"]["metadata"]
    assert len(judged["verdicts"]) == len(case.scoring_points)
    for point, verdict in zip(case.scoring_points, judged["verdicts"], strict=True):
        assert verdict["kind"] == ("code" if point.eval_code else "llm")
        assert verdict["reason"]
    assert meta["usage"]["examiner"]["output_tokens"] > 0
    assert judged["judge_model"] == "local"
    assert judged["judge_usage"]["output_tokens"] > 0 or not any(
        not p.eval_code for p in case.scoring_points)
    assert run["metrics"]["rounds_max"] == conv["rounds"]
    assert run["model"]["roles"]["examiner"]["model"] == "local"
    report = (workspace_dir() / "runs" / run_id / "report.html").read_text(encoding="utf-8")
    assert 'class="chat"' in report and "Case json_format" in report
    assert Path(workspace_dir() / "runs" / run_id / "report.md").is_file()
