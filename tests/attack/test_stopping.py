"""Stopping a run with ``kill`` (SIGTERM) whatever signal dispositions it inherited.

A background job of a non-interactive shell (``assay run … &`` from a script, ``nohup``),
some CI runners and service managers start a process with SIGINT ignored. A SIGTERM handler
that only re-raises SIGINT is then a no-op and the run goes on until ``kill -9``. Each case
starts the CLI with explicit dispositions (never pytest's own), holds the run inside a model
call, sends SIGTERM and expects what Ctrl-C gives in a terminal: exit 130, the run marked
interrupted, the finished samples kept and a resume line.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from runwatch import DEADLINE_S, dispositions, the_run, wait_for

from assay.testing import FakeServer, Rule

TOKEN_RULE = Rule(r"token-(\d+)", r"Answer: token-\1")


def _data(path: Path, n: int) -> Path:
    path.write_text("".join(json.dumps({"id": f"t{i}", "question": f"Repeat token-{i}",
                                        "answer": f"token-{i}"}) + "\n" for i in range(n)))
    return path


@pytest.mark.parametrize("inherited", [
    {"sigint_ignored": True},                          # `assay run … &` from a script
    {"sigint_ignored": True, "sigterm_ignored": True},  # a parent that ignores both
    {},                                                # a terminal's foreground job
], ids=["sigint-ignored", "both-ignored", "defaults"])
def test_sigterm_stops_a_run_whatever_it_inherited(tmp_path: Path, workspace: Path,
                                                   inherited: dict[str, bool]) -> None:
    data = _data(tmp_path / "d.jsonl", 5)
    with FakeServer(rules=[TOKEN_RULE], hold_after=2) as srv:
        proc = subprocess.Popen(
            [sys.executable, "-m", "assay", "run", "qa", "--data", str(data), "--model",
             "openai/fake", "--base-url", srv.base_url, "-q", "--no-cache", "-c", "1"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env=dict(os.environ, NO_COLOR="1"), preexec_fn=dispositions(**inherited))
        wait_for("the third (held) request", lambda: srv.stats["requests"] >= 3, proc)
        proc.send_signal(signal.SIGTERM)
        try:
            _, err = proc.communicate(timeout=DEADLINE_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise AssertionError("SIGTERM did not stop the run") from None
    assert proc.returncode == 130, err
    assert "Resume with: assay run qa --resume" in err
    run_id, status, _ = the_run(workspace / "assay.db")
    assert status == "interrupted", status
