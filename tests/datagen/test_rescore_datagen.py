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


def store_metrics(run_id: str) -> dict[str, Any]:
    store = Store()
    try:
        return store.get_run(run_id)["metrics"]
    finally:
        store.close()


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
            "openai/judge", "--base-url", srv.base_url, "-q")
    assert p.returncode == 0, p.stderr
    run_id = re.search(r"^run (\S+) finished", p.stdout, re.M).group(1)
    sent = len(srv.requests)
    assert sent == 6 + 2  # a retry for gen-4 and gen-5

    new_id = rescore(run_id)
    # judging is scoring: the same judge answers again from the response cache
    assert len(srv.requests) == sent
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


def pair_judge(body: dict[str, Any]) -> str:
    """judge-a and judge-b: the datagen script (position-led here: every pair a tie);
    judge-c: prefers the generated problem wherever it is shown."""
    if body["model"] != "judge-c":
        return scripted(body)
    first = body["messages"][-1]["content"].split("[Problem 2]")[0]
    return json.dumps({"reason": "c", "winner": "1" if "property" in first else "2"})


def test_winrate_takes_a_jury_and_assay_score_rejudges_it_with_another_judge(
        fake_server, tmp_path: Path, workspace: Path) -> None:
    """``assay datagen winrate --judge-model A --judge-model B``: both judges vote on both
    orders of every pair; ``assay score RUN --judge-model C``: only C is asked (never the
    generator, never A or B), and the verdicts follow C."""
    srv = fake_server(responder=pair_judge)
    data = write_problems(tmp_path / "gen.jsonl", 3)
    ref = save_problems(REFERENCE, tmp_path / "ref.jsonl")
    win = cli("datagen", "winrate", str(data), "--reference", str(ref), "--judge-model",
              "openai/judge-a", "--judge-model", "openai/judge-b", "--base-url", srv.base_url,
              "-q")
    assert win.returncode == 0, win.stderr
    assert sorted(b["model"] for b in srv.requests) == ["judge-a"] * 6 + ["judge-b"] * 6
    store = Store()
    try:
        (run,) = store.list_runs()
        before = stored_scores(store, run["id"])
    finally:
        store.close()
    assert {s["winrate"]["answer"] for s in before.values()} == {"tie"}
    meta = next(iter(before.values()))["winrate"]["metadata"]
    assert meta["judge_models"] == ["openai/judge-a", "openai/judge-b"]
    assert [v["judge"] for v in meta["judgments"]["A"]["votes"]] == ["openai/judge-a",
                                                                    "openai/judge-b"]
    sent = len(srv.requests)
    p = cli("score", run["id"], "--judge-model", "openai/judge-c", "--judge-base-url",
            srv.base_url)
    assert p.returncode == 0, p.stderr
    new_id = re.search(r"^run (\S+) scores run", p.stdout, re.M).group(1)
    assert [b["model"] for b in srv.requests[sent:]] == ["judge-c"] * 6  # 3 pairs, 2 orders
    store = Store()
    try:
        after = stored_scores(store, new_id)
    finally:
        store.close()
    assert {s["winrate"]["answer"] for s in after.values()} == {"win"}
    assert {s["winrate"]["metadata"]["judge_model"] for s in after.values()} == {
        "openai/judge-c"}


def test_the_rubric_judge_takes_a_jury_and_averages_it_per_dimension(
        fake_server, tmp_path: Path, workspace: Path) -> None:
    srv = fake_server(responder=lambda body: json.dumps({
        "rationale": body["model"],
        "scores": dict.fromkeys(DIMS, 4 if body["model"] == "judge-a" else 2)}))
    data = write_problems(tmp_path / "gen.jsonl", 2)
    p = cli("run", "datagen_judge", "--data", str(data), "--model", "openai/judge-a",
            "--judge-model", "openai/judge-a", "--judge-model", "openai/judge-b",
            "--base-url", srv.base_url, "--judge-base-url", srv.base_url, "-q")
    assert p.returncode == 0, p.stderr
    assert sorted(b["model"] for b in srv.requests) == ["judge-a"] * 2 + ["judge-b"] * 2
    store = Store()
    try:
        (run,) = store.list_runs()
        scores = stored_scores(store, run["id"])
    finally:
        store.close()
    for s in scores.values():
        rubric = s["rubric"]
        assert rubric["value"] == 3.0 and rubric["metadata"]["scores"] == dict.fromkeys(DIMS, 3)
        assert rubric["metadata"]["agreement"] == 0.5
        assert [v["judge"] for v in rubric["metadata"]["votes"]] == ["openai/judge-a",
                                                                     "openai/judge-b"]
    m = store_metrics(run["id"])
    assert m["judge_models"] == ["openai/judge-a", "openai/judge-b"]
    assert m["judge_agreement"] == 0.5 and m["overall_mean"]["value"] == 3.0
    # 'assay score RUN' keeps the whole jury (both from the cache: no request, same means)
    sent = len(srv.requests)
    p = cli("score", run["id"])
    assert p.returncode == 0, p.stderr
    again = re.search(r"^run (\S+) scores run", p.stdout, re.M).group(1)
    assert len(srv.requests) == sent
    assert store_metrics(again)["overall_mean"]["value"] == 3.0
    # a repeated --judge-model re-judges with a new jury: only its two judges are asked
    p = cli("score", run["id"], "--judge-model", "openai/judge-b", "--judge-model",
            "openai/judge-c", "--judge-base-url", srv.base_url)
    assert p.returncode == 0, p.stderr
    jury = re.search(r"^run (\S+) scores run", p.stdout, re.M).group(1)
    assert sorted(b["model"] for b in srv.requests[sent:]) == ["judge-c"] * 2
    m = store_metrics(jury)
    assert m["judge_models"] == ["openai/judge-b", "openai/judge-c"]
    assert m["overall_mean"]["value"] == 2.0


def test_datagen_judge_takes_judge_samples(fake_server, tmp_path: Path,
                                           workspace: Path) -> None:
    """``assay datagen judge --judge-samples 3``: three sampled verdicts per problem."""
    srv = fake_server(responder=lambda body: json.dumps({
        "rationale": "r", "scores": dict.fromkeys(DIMS, 2 + body["seed"])}))
    data = write_problems(tmp_path / "gen.jsonl", 1)
    p = cli("datagen", "judge", str(data), "--judge-model", "openai/judge-a",
            "--judge-samples", "3", "--base-url", srv.base_url, "-q")
    assert p.returncode == 0, p.stderr
    assert sorted(b["seed"] for b in srv.requests) == [0, 1, 2]
    assert {b["temperature"] for b in srv.requests} == {0.7}
    store = Store()
    try:
        (run,) = store.list_runs()
        (s,) = stored_scores(store, run["id"]).values()
    finally:
        store.close()
    assert s["rubric"]["value"] == 3.0 and s["rubric"]["metadata"]["agreement"] == 1 / 3
