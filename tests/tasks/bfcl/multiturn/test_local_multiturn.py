"""The embedded model through a BFCL multi-turn entry, offline, with the real CLI.

``assay run bfcl --category multi_turn_base --model local`` must complete and store the
per-turn transcript: every step's reply in the official result form, the calls it decoded
to and their results from the official simulators. (The issue's own command uses
``--limit 5``; one entry keeps the suite's time down: the 135M model tends to call
functions until the 21-step limit, about a minute per entry on 2 cores.)
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import official_oracle as oracle
import pytest

pytestmark = pytest.mark.skipif(not oracle.available(), reason=oracle.NOT_INSTALLED)


def test_embedded_model_completes_a_multi_turn_entry(workspace: Path) -> None:
    p = subprocess.run([sys.executable, "-m", "assay", "run", "bfcl", "--category",
                        "multi_turn_base", "--limit", "1", "--model", "local", "-q"],
                       capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stderr
    run_dir = next((workspace / "runs").iterdir())
    rows = [json.loads(x) for x in (run_dir / "results.jsonl").read_text().splitlines()]
    assert len(rows) == 1 and rows[0]["error"] is None
    row = rows[0]
    meta = row["outcome"]["metadata"]
    assert meta["mode"] == "fc" and meta["multi_turn"], meta
    steps = [s for t in meta["turn_log"] for s in t["steps"]]
    assert steps and all("reply" in s for s in steps)
    executed = [s for s in steps if s.get("calls")]
    for s in executed:  # each decoded call has the simulator's result
        assert len(s["results"]) == len(s["calls"])
    verdict = row["scores"]["bfcl"]
    assert verdict["value"] in (0.0, 1.0)
    assert len(verdict["metadata"]["turn_verdicts"]) == len(row["target"])
    # the official result file, in the multi-turn layout
    exported = run_dir / "result" / "local" / "multi_turn" / "BFCL_v4_multi_turn_base_result.json"
    line = json.loads(exported.read_text().splitlines()[0])
    assert line["id"] == row["sample_id"] and line["result"] == meta["multi_turn"]
    assert "Multi-turn" in (run_dir / "report.md").read_text() or verdict["value"] == 1.0
