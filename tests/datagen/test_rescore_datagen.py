"""Datagen samples are self-contained and their products are stored with the outcome:
``assay score RUN`` reproduces every verdict of a stored run with no model call, and a
task built afresh (no ``samples()`` call) prompts a stored sample exactly as the run did."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from datagen_fakes import REFERENCE, scripted

from assay.core.stored import sample_of
from assay.store.sqlite import Store
from assay.tasks.datagen.judge import JudgeTask
from assay.tasks.datagen.problem import save_problems
from assay.tasks.datagen.winrate import WinRateTask

DIMS = ["correctness", "clarity", "difficulty_match", "completeness"]


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "assay", *args], capture_output=True,
                          text=True, timeout=600)


def write_problems(path: Path, n: int = 6) -> Path:
    with open(path, "w") as f:
        for i in range(n):
            f.write(json.dumps({
                "problem_id": f"gen-{i}", "source": "generated",
                "problem": f"Find the number of integers n with property {i}.",
                "answer": str(100 + i), "solution": f"Count them: {100 + i}.",
                "provenance": {"model": "openai/gen-model"}}) + "\n")
    return path


def judge_responder(body: dict[str, Any]) -> str:
    """Valid verdicts, a reply recovered on the retry, and one never valid."""
    user = body["messages"][1]["content"]
    i = int(re.search(r"property (\d+)", user).group(1))
    retry = len(body["messages"]) > 2
    if i == 4:
        return '{"rationale": "r", "scores": {"correctness": 9}}'  # invalid, twice
    if i == 5 and not retry:
        return "I think it is fine."
    return json.dumps({"rationale": f"verdict {i}",
                       "scores": {d: 1 + (i + k) % 5 for k, d in enumerate(DIMS)}})


def stored_scores(store: Store, run_id: str) -> dict[tuple[str, int], dict[str, Any]]:
    return {(r.sample_id, r.epoch): r.scores for r in store.results(run_id)}


def rescore(run_id: str) -> str:
    p = cli("score", run_id)
    assert p.returncode == 0, p.stderr
    m = re.search(r"^run (\S+) scores run (\S+) again", p.stdout, re.M)
    assert m and m.group(2) == run_id, p.stdout
    return m.group(1)


def test_assay_score_reproduces_every_judge_verdict_with_no_request(
        fake_server, tmp_path: Path, workspace: Path) -> None:
    srv = fake_server(responder=judge_responder)
    data = write_problems(tmp_path / "gen.jsonl")
    ref = save_problems(REFERENCE[:1], tmp_path / "ref.jsonl")
    p = cli("run", "datagen_judge", "--data", str(data), "--reference", str(ref), "--model",
            "openai/judge", "--base-url", srv.base_url, "-q", "--no-cache")
    assert p.returncode == 0, p.stderr
    run_id = re.search(r"^run (\S+) finished", p.stdout, re.M).group(1)
    sent = len(srv.requests)
    assert sent == 6 + 2  # a retry for gen-4 and gen-5

    new_id = rescore(run_id)
    assert len(srv.requests) == sent  # re-scoring asked the model nothing
    store = Store()
    try:
        before, after = stored_scores(store, run_id), stored_scores(store, new_id)
        assert store.get_run(new_id)["parent_id"] == run_id
        m_before = store.get_run(run_id)["metrics"]
        m_after = store.get_run(new_id)["metrics"]
    finally:
        store.close()
    assert len(before) == 6 and after == before  # every verdict, invalid ones included
    assert before[("gen-4", 0)]["rubric"]["value"] is None
    assert before[("gen-5", 0)]["rubric"]["metadata"]["attempts"] == 2
    assert before[("gen-0", 0)]["rubric"]["metadata"]["generator_model"] == "openai/gen-model"
    for key in ("overall_mean", "pass_rate", "invalid_rate", "n_invalid", "dimensions"):
        assert m_after[key] == m_before[key], key


def test_assay_score_reproduces_generation_and_winrate_runs(fake_server, tmp_path: Path,
                                                            workspace: Path) -> None:
    srv = fake_server(responder=scripted)
    out = tmp_path / "gen.jsonl"
    ref = save_problems(REFERENCE, tmp_path / "ref.jsonl")
    gen = cli("datagen", "generate", "--n", "3", "--model", "openai/gen", "--reference",
              str(ref), "--base-url", srv.base_url, "--out", str(out), "-q")
    assert gen.returncode == 0, gen.stderr
    win = cli("datagen", "winrate", str(out), "--reference", str(ref), "--judge-model",
              "openai/judge", "--base-url", srv.base_url, "-q")
    assert win.returncode == 0, win.stderr
    store = Store()
    try:
        runs = {r["task"]: r["id"] for r in store.list_runs()}
    finally:
        store.close()
    sent = len(srv.requests)
    rescored = {task: rescore(runs[task]) for task in ("datagen_generate", "datagen_winrate")}
    assert len(srv.requests) == sent
    store = Store()
    try:
        for task, new_id in rescored.items():
            assert stored_scores(store, new_id) == stored_scores(store, runs[task]), task
        # the generated problem is the solve's product, kept with the outcome
        for r in store.results(runs["datagen_generate"]):
            assert r.outcome["metadata"]["problem"]["problem"] == r.scores["valid"]["answer"]
    finally:
        store.close()


def test_a_fresh_task_prompts_a_stored_sample_as_the_run_did(fake_server, tmp_path: Path,
                                                             workspace: Path) -> None:
    """No per-sample state on the task: the sample alone carries the prompt's content."""
    srv = fake_server(responder=scripted)
    data = write_problems(tmp_path / "gen.jsonl", 3)
    ref = save_problems(REFERENCE, tmp_path / "ref.jsonl")
    for task, extra in (("datagen_judge", ["--reference", str(ref)]),
                        ("datagen_winrate", ["--reference", str(ref), "-T", "seed=4"])):
        p = cli("run", task, "--data", str(data), *extra, "--model", "openai/judge",
                "--base-url", srv.base_url, "-q", "--no-cache")
        assert p.returncode == 0, p.stderr
    sent = [body["messages"] for body in srv.requests]
    store = Store()
    try:
        runs = {r["task"]: store.get_run(r["id"]) for r in store.list_runs()}
        judged = store.results(runs["datagen_judge"]["id"])
        paired = store.results(runs["datagen_winrate"]["id"])
    finally:
        store.close()
    judge = JudgeTask(**runs["datagen_judge"]["spec"]["task_options"])
    for r in judged:
        messages = [m.to_dict() for m in judge.build_messages(sample_of(r))]
        assert messages in sent
        assert "Reference problem (score 5)" in messages[1]["content"]
    winrate = WinRateTask(**runs["datagen_winrate"]["spec"]["task_options"])
    for r in paired:
        for order in ("A", "B"):
            assert [m.to_dict() for m in winrate.order_messages(sample_of(r), order)] in sent
    assert len(sent) == 3 + 2 * 3
