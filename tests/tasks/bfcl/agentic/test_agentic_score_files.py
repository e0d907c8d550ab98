"""``assay bfcl score`` on official agentic result files (memory and web search).

A result line is ``{"id", "result": [[step, ...]]}`` as ``bfcl generate`` writes it. The
oracle is the official ``_evaluate_single_agentic_entry`` with the official decoders
(official_agentic_oracle); the official layout's memory prerequisite files
(``BFCL_v4_memory_<backend>_prereq_result.json``) are skipped, as officially.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import official_agentic_oracle as oracle
import pytest
from memory_model import MemoryModel
from test_agentic_answer import PERTURBATIONS

from assay.engine.runner import Engine, RunSpec
from assay.errors import DatasetError
from assay.rescore import rescore
from assay.store.sqlite import Store
from assay.tasks.bfcl.agentic.data import load_agentic
from assay.tasks.bfcl.data import locate
from assay.tasks.bfcl.export import export_results
from assay.tasks.bfcl.score_files import score_results

#: shapes that hold an FC call step (a list), so an FC file reads as FC
FC_SHAPES = ("formatted", "wrong", "only_calls", "answer_then_call", "wrong_then_answer",
             "answer_then_wrong", "answer_then_empty_calls", "unparsable_fc_arguments")
#: text-only shapes (prompt mode)
PROMPT_SHAPES = ("formatted", "in_prose", "shouted", "glued", "wrong", "unknown", "only_calls",
                 "answer_then_empty_text", "answer_as_call", "wrong_then_answer")
FILES = {  # category -> (mode, folder under the model's)
    "memory_kv": ("fc", "agentic/memory/kv"), "memory_rec_sum": ("prompt", "agentic/memory/rec_sum"),
    "web_search_base": ("fc", "agentic"), "web_search_no_snippet": ("prompt", "agentic")}


def write(path: Path, rows: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def test_result_files_are_scored_as_officially(tmp_path: Path) -> None:
    oracle.load()
    root = tmp_path / "result" / "some_model"
    want: dict[str, bool | str] = {}
    for category, (mode, folder) in FILES.items():
        data = load_agentic(locate(), category)
        shapes = FC_SHAPES if mode == "fc" else PROMPT_SHAPES
        rows = []
        for i, e in enumerate(data.entries):
            gt = data.ground_truth[e["id"]]
            result = PERTURBATIONS[shapes[i % len(shapes)]](gt, mode)
            rows.append({"id": e["id"], "result": result})
            official = oracle.official_verdict(result, gt, mode, e["id"], category)
            want[e["id"]] = True if official["valid"] else official["error"]["error_type"]
        write(root / folder / f"BFCL_v4_{category}_result.json", rows)
    # a prerequisite file beside the memory results: skipped, as officially
    write(root / "agentic/memory/kv/BFCL_v4_memory_kv_prereq_result.json",
          [{"id": "memory_kv_prereq_0-customer-0", "result": [["hello"]]}])
    report = score_results(root)
    got = {v["id"]: True if v["valid"] else v["error_type"] for v in report.verdicts}
    assert got == want
    assert len(got) == 2 * 155 + 2 * 100
    assert {v for v in want.values()} == {True, "agentic:answer_not_found",
                                          "agentic:no_last_message"}
    assert not any("prereq" in f for f in report.files)
    with pytest.raises(DatasetError, match="prerequisite results are not scored"):
        score_results(root / "agentic/memory/kv/BFCL_v4_memory_kv_prereq_result.json")
    # the CLI prints the per-category table
    cli = subprocess.run([sys.executable, "-m", "assay", "bfcl", "score", "--results",
                          str(root)], capture_output=True, text=True, timeout=120)
    assert cli.returncode == 0, cli.stderr
    for category in FILES:
        assert category in cli.stdout


def test_a_runs_exported_memory_results_score_the_same(fake_server, workspace,
                                                       tmp_path) -> None:
    """The official result files a memory run exports score, with ``assay bfcl score``
    and with the official runner, as the run scored them."""
    srv = fake_server(responder=MemoryModel("memory_kv", "prompt"))
    data = load_agentic(locate(), "memory_kv")
    ids = [e["id"] for e in data.entries if e["scenario"] == "notetaker"][:3]
    store = Store()
    try:
        spec = RunSpec(task="bfcl", model="openai/fake", base_url=srv.base_url,
                       task_options={"category": "memory_kv", "mode": "prompt"},
                       sample_ids=ids)
        rid = asyncio.run(Engine(store, quiet=True).run(spec))
        results = store.results(rid)
        again = store.results(rescore(store, rid).run_id)  # from the store, no model
        assert {r.sample_id: r.scores for r in again} == {r.sample_id: r.scores
                                                          for r in results}
    finally:
        store.close()
    path, prereqs = export_results(results, tmp_path / "result", "openai/fake")
    assert path.relative_to(tmp_path) == Path(
        "result/openai_fake/agentic/memory/kv/BFCL_v4_memory_kv_result.json")
    assert prereqs.name == "BFCL_v4_memory_kv_prereq_result.json"
    # a folder holding both is scored on the questions alone (prerequisites are not scored)
    assert {v["id"] for v in score_results(path.parent).verdicts} == set(ids)
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    assert [x["id"] for x in lines] == ids
    ours = {r.sample_id: r.score_value("bfcl") == 1.0 for r in results}
    assert ours == dict.fromkeys(ids, True)
    assert {v["id"]: v["valid"] for v in score_results(path).verdicts} == ours
    for x in lines:
        assert oracle.official_verdict(x["result"], data.ground_truth[x["id"]], "prompt",
                                       x["id"])["valid"]
