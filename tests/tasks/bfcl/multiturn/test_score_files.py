"""``assay bfcl score`` on official multi-turn result files.

A result line is ``{"id", "result"}`` where ``result`` holds, per turn, every step's raw
reply: ``[{name: json_args}]`` (FC) or text (prompt mode), as ``bfcl generate`` writes it.
The oracle is the official pipeline end to end: the official decoders
(``convert_to_function_call``, ``default_decode_execute_prompting``) and the official
``multi_turn_checker`` (through official_mt_oracle).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import official_mt_oracle as mt
import official_oracle as oracle
import pytest
import trajectories as tj
from test_loop import named_call

from assay.tasks.bfcl.score_files import multi_turn_mode, score_results

pytestmark = pytest.mark.skipif(not oracle.available(), reason=oracle.NOT_INSTALLED)

ENTRIES = 30


def raw_step(calls: list[str], involved: list[str], mode: str) -> Any:
    named = [named_call(c, involved) for c in calls]
    if mode == "fc":
        return [{n: json.dumps(a)} for n, a in named]
    return "[" + ", ".join(f"{n}({', '.join(f'{k}={v!r}' for k, v in a.items())})"
                           for n, a in named) + "]"


def raw_result(traj: Any, involved: list[str], mode: str) -> Any:
    """A decoded trajectory as a result line's raw replies, each turn closed by text. Every
    other turn opens with a chatty step and an empty one, which the official runner skips
    (they do not end the turn there: only inference does)."""
    out = []
    for t, turn in enumerate(traj):
        steps = [raw_step(step, involved, mode) for step in turn]
        if t % 2 == 0:
            steps = ["Let me look at that first.", [] if mode == "fc" else "[]", *steps]
        out.append([*steps, "Done."])
    return out


def official(raw: Any, entry: dict[str, Any], gt: list[list[str]], category: str,
             mode: str) -> dict[str, Any]:
    """The official runner's decoding of every step, then the official checker."""
    oracle.load()
    from bfcl_eval.model_handler.utils import (
        convert_to_function_call,
        default_decode_execute_prompting,
    )

    decode = convert_to_function_call if mode == "fc" else default_decode_execute_prompting
    decoded = []
    for turn in raw:
        steps = []
        for step in turn:
            try:
                calls = decode(step)
            except Exception:  # noqa: BLE001 - as the official runner: skip the step
                continue
            if calls and not (len(calls) == 1 and not calls[0]):
                steps.append(calls)
        decoded.append(steps)
    return mt.official_verdict(decoded, entry, gt, category)


@pytest.mark.parametrize("mode", ["fc", "prompt"])
@pytest.mark.parametrize("category", ["multi_turn_base", "multi_turn_miss_param"])
def test_result_files_are_scored_as_officially(tmp_path: Path, mode: str,
                                               category: str) -> None:
    questions, truth = mt.entries(category)
    lines, expected = [], {}
    perturb = [tj.ground_truth, tj.wrong_argument, tj.dropped_call, tj.wrong_turn]
    for i, entry in enumerate(questions[:ENTRIES]):
        gt = truth[entry["id"]]
        traj = perturb[i % len(perturb)](entry, gt) or tj.ground_truth(entry, gt)
        raw = raw_result(traj, entry["involved_classes"], mode)
        lines.append({"id": entry["id"], "result": raw})
        expected[entry["id"]] = official(raw, entry, gt, category, mode)
    path = tmp_path / f"BFCL_v4_{category}_result.json"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    verdicts = {v["id"]: v for v in score_results(path).verdicts}
    assert set(verdicts) == set(expected)
    for eid, want in expected.items():
        got = verdicts[eid]
        assert got["valid"] == want["valid"], eid
        assert (got["error_type"] or "") == (want.get("error_type") or ""), eid
    # the perturbations bite: not everything passes, not everything fails
    assert 0 < sum(v["valid"] for v in verdicts.values()) < len(verdicts)
    assert {multi_turn_mode(x["result"]) for x in lines} == {mode}


def test_cli_scores_a_multi_turn_result_folder(tmp_path: Path) -> None:
    questions, truth = mt.entries("multi_turn_base")
    folder = tmp_path / "result" / "some_model"
    (folder / "multi_turn").mkdir(parents=True)
    rows = [{"id": e["id"], "result": raw_result(tj.ground_truth(e, truth[e["id"]]),
                                                 e["involved_classes"], "fc")}
            for e in questions[:4]]
    rows.append({"id": questions[4]["id"], "result": [[]]})  # force-terminated
    (folder / "multi_turn" / "BFCL_v4_multi_turn_base_result.json").write_text(
        "".join(json.dumps(r) + "\n" for r in rows))
    p = subprocess.run([sys.executable, "-m", "assay", "bfcl", "score", "--results",
                        str(tmp_path / "result")],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "multi_turn_base" in p.stdout and "(4/5)" in p.stdout
