"""A pipeline is a parent run whose steps are child runs; kill -9 and --resume lose nothing
and redo nothing (proven from the fake provider's request log, real HTTP, real processes)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from datagen_fakes import REFERENCE, request_key, role, scripted
from runwatch import dispositions

from assay.errors import ConfigError
from assay.pipelines.datagen import pipeline_record, resume_pipeline, run_pipeline
from assay.store.sqlite import Store
from assay.tasks.datagen.problem import load_problems, save_problems

STEPS = ["datagen_generate", "datagen_judge", "datagen_judge", "datagen_winrate",
         "datagen_verify"]


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "assay", *args], capture_output=True,
                          text=True, env=env, timeout=600)


def pipeline_args(ref: Path) -> list[str]:
    return ["datagen", "pipeline", "--n", "4", "--model", "openai/gen",
            "--judge-model", "openai/judge-a", "--judge-model", "openai/judge-b",
            "--solver-model", "openai/solver", "--reference", str(ref), "--seed", "3",
            "-c", "2", "--no-cache", "-q"]


def committed(db: Path, task: str, model: str) -> int:
    """Samples a step has committed, read straight from the database (no store handle)."""
    if not db.exists():
        return 0
    con = sqlite3.connect(db, timeout=30)
    try:
        return con.execute(
            "SELECT COUNT(*) FROM samples s JOIN runs r ON s.run_id = r.id WHERE r.task = ?"
            " AND json_extract(r.spec, '$.model') = ? AND s.error IS NULL",
            (task, model)).fetchone()[0]
    except sqlite3.OperationalError:  # the tables are not there yet
        return 0
    finally:
        con.close()


def wait_for(condition: Callable[[], bool], proc: subprocess.Popen[str], what: str) -> None:
    """Poll until ``condition`` holds; fail at once if the process ends first."""
    deadline = time.monotonic() + 300  # a safety net against a hang, not a timing assumption
    while not condition():
        if proc.poll() is not None:
            pytest.fail(f"the pipeline ended before {what}: rc {proc.returncode}\n"
                        f"{proc.stderr.read() if proc.stderr else ''}")
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"gave up waiting for {what}")
        time.sleep(0.02)


def step_scores(store: Store, pipeline_id: str) -> list[tuple[str, str, dict[str, Any]]]:
    """Every step's task, model and ``{(sample, epoch): scores}``, in the steps' order."""
    out = []
    for child in store.children(pipeline_id):
        run = store.get_run(child)
        scores = {f"{r.sample_id}#{r.epoch}": r.scores
                  for r in store.results(child, transcripts=False)}
        out.append((run["task"], run["spec"]["model"], scores))
    return out


def comparable(problems: list[Any]) -> list[dict[str, Any]]:
    """Problems without what differs between two pipelines (run ids, creation times)."""
    out = []
    for p in problems:
        d = p.to_dict()
        d["provenance"] = {k: v for k, v in d["provenance"].items()
                           if k not in ("run_id", "created_at")}
        out.append(d)
    return out


def test_pipeline_is_a_parent_run_with_its_steps_as_children(fake_server, tmp_path: Path,
                                                             workspace: Path) -> None:
    srv = fake_server(responder=scripted)
    ref = save_problems(REFERENCE, tmp_path / "ref.jsonl")
    record = run_pipeline(n=3, model="openai/gen", judge_models=["openai/judge-a",
                                                                 "openai/judge-b"],
                          solver_models=["openai/solver"], reference=str(ref), seed=5,
                          engine={"base_url": srv.base_url, "rpm": 6000})
    store = Store()
    try:
        parent = store.get_run(record["id"])
        assert parent["task"] == "datagen_pipeline" and parent["status"] == "finished"
        assert parent["parent_id"] is None
        opts = parent["spec"]["task_options"]
        assert (opts["n"], opts["seed"], opts["judge_models"], opts["solver_models"]) == (
            3, 5, ["openai/judge-a", "openai/judge-b"], ["openai/solver"])
        assert parent["spec"]["model"] == "openai/gen"
        children = [store.get_run(c) for c in store.children(record["id"])]
        assert [c["task"] for c in children] == STEPS
        assert [c["spec"]["model"] for c in children] == [
            "openai/gen", "openai/judge-a", "openai/judge-b", "openai/judge-a", "openai/solver"]
        assert all(c["parent_id"] == record["id"] and c["status"] == "finished"
                   for c in children)
        # every step is an ordinary RunSpec: the engine's defaults, the pipeline's settings
        for c in children:
            assert c["spec"]["max_connections"] == 32 and c["spec"]["rpm"] == 6000
        assert children[0]["spec"]["seed"] == 5  # the pipeline's seed seeds the generator
        # the summaries are the parent's stored metrics; the record is read from the store
        assert parent["metrics"]["n_problems"] == 3
        assert parent["metrics"]["jury"]["jury"]["overall_mean"]["value"] == 4.0
        again = pipeline_record(store, record["id"])
        assert again["judge_runs"] == record["judge_runs"] == [c["id"] for c in children[1:3]]
        assert again["verification"] == record["verification"]
    finally:
        store.close()
    # the pipeline.json beside the report is a snapshot for readers, not the state
    (Path(record["reports"]["markdown"]).parent / "pipeline.json").unlink()
    store = Store()
    try:
        sent = len(srv.requests)
        assert resume_pipeline(store, record["id"])["generate_run"] == record["generate_run"]
        assert len(srv.requests) == sent  # a finished pipeline redoes nothing
        assert len(store.children(record["id"])) == 5
    finally:
        store.close()


def test_kill_minus_nine_mid_step_then_resume_redoes_nothing(fake_server, tmp_path: Path,
                                                             workspace: Path) -> None:
    ref = save_problems(REFERENCE, tmp_path / "ref.jsonl")
    # 4 generations and 4 verdicts of judge-a are answered, then 2 of judge-b's 4; its other
    # requests are held open, so the kill lands inside the judge-b step
    answered = 10
    first = fake_server(responder=scripted, hold_after=answered)
    proc = subprocess.Popen([sys.executable, "-m", "assay", *pipeline_args(ref),
                             "--base-url", first.base_url],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=dispositions())
    db = workspace / "assay.db"
    judge_b_answered = sum(1 for b in first.requests[:answered] if b["model"] == "judge-b")

    def mid_step() -> bool:
        nonlocal judge_b_answered
        if len(first.requests) <= answered:
            return False
        judge_b_answered = sum(1 for b in first.requests[:answered] if b["model"] == "judge-b")
        return committed(db, "datagen_judge", "openai/judge-b") == judge_b_answered

    wait_for(mid_step, proc, "judge-b committed the verdicts it was given")
    os.kill(proc.pid, 9)
    proc.wait()
    assert 0 < judge_b_answered < 4, "the kill must land in the middle of the judge-b step"

    store = Store()
    try:
        pid = next(r["id"] for r in store.list_runs() if r["task"] == "datagen_pipeline")
        assert store.get_run(pid)["status"] == "interrupted"
        before = [store.get_run(c) for c in store.children(pid)]
        assert [(c["task"], c["status"]) for c in before] == [
            ("datagen_generate", "finished"), ("datagen_judge", "finished"),
            ("datagen_judge", "interrupted")]
        done_b = {sid for sid, _ in store.completed_keys(before[2]["id"])}
        problems_b = {r.sample_id: r.input for r in store.results(before[2]["id"])}
    finally:
        store.close()
    assert len(done_b) == judge_b_answered

    second = fake_server(responder=scripted)
    resumed = cli("datagen", "pipeline", "--resume", pid, "--base-url", second.base_url, "-q")
    assert resumed.returncode == 0, resumed.stderr
    assert f"pipeline {pid}: 4 problems" in resumed.stdout

    # no step is redone: nothing from the generator or judge-a's rubric step; judge-b only
    # the problems it had not judged (the jury judges the win rate, a step not started yet)
    sent = Counter((b["model"], role(b)) for b in second.requests)
    assert sent == {("judge-b", "judge"): 4 - len(done_b), ("judge-a", "winrate"): 8,
                    ("judge-b", "winrate"): 8, ("solver", "solve"): 4}
    # no committed item is sent again
    for body in second.requests:
        if body["model"] == "judge-b" and role(body) == "judge":
            assert not any(problems_b[sid].strip() in body["messages"][1]["content"]
                           for sid in done_b)

    # the same pipeline, never interrupted, in a workspace of its own
    fresh_home = tmp_path / "fresh"
    third = fake_server(responder=scripted)
    whole = cli(*pipeline_args(ref), "--base-url", third.base_url,
                env=dict(os.environ, ASSAY_HOME=str(fresh_home)))
    assert whole.returncode == 0, whole.stderr
    # together, the two interrupted sessions sent exactly what one whole pipeline sends
    sent = Counter(request_key(b) for b in [*first.requests[:answered], *second.requests])
    assert sent == Counter(request_key(b) for b in third.requests)

    store, fresh = Store(), Store(fresh_home / "assay.db")
    try:
        fid = next(r["id"] for r in fresh.list_runs() if r["task"] == "datagen_pipeline")
        mine, theirs = store.get_run(pid), fresh.get_run(fid)
        assert mine["status"] == theirs["status"] == "finished"
        assert [c["id"] for c in (store.get_run(x) for x in store.children(pid))][:3] == [
            c["id"] for c in before]  # the interrupted step was resumed, not started again
        assert step_scores(store, pid) == step_scores(fresh, fid)
        for key in ("jury", "verification", "near_duplicates", "n_problems", "n_failures"):
            assert mine["metrics"][key] == theirs["metrics"][key], key
        ours = load_problems(mine["metrics"]["outputs"]["problems"])
        assert comparable(ours) == comparable(
            load_problems(theirs["metrics"]["outputs"]["problems"]))
        assert len(ours) == 4
    finally:
        store.close()
        fresh.close()


def test_resume_refuses_what_it_cannot_continue(fake_server, tmp_path: Path,
                                                workspace: Path) -> None:
    srv = fake_server(responder=scripted)
    record = run_pipeline(n=2, model="openai/gen", judge_models=["openai/judge"],
                          reference="none", engine={"base_url": srv.base_url})
    store = Store()
    try:
        gen_run = record["generate_run"]
        with pytest.raises(ConfigError, match="not a pipeline"):
            resume_pipeline(store, gen_run)
    finally:
        store.close()
    changed = cli("datagen", "pipeline", "--resume", record["id"], "--n", "9", "-q")
    assert changed.returncode == 2
    assert changed.stderr.strip().count("\n") == 0 and "--n" in changed.stderr
    unknown = cli("datagen", "pipeline", "--resume", "nosuchpipeline", "-q")
    assert unknown.returncode == 2 and "nosuchpipeline" in unknown.stderr
    both = cli("datagen", "pipeline", "--rpm", "10", "--delay", "2", "-q")
    assert both.returncode == 2 and "--rpm or --delay" in both.stderr
    bad = cli("datagen", "pipeline", "--n", "0", "--model", "openai/gen", "-q")
    assert bad.returncode == 2 and "n" in bad.stderr and "\n" not in bad.stderr.strip()


def test_cli_steps_are_ordinary_runspecs(fake_server, tmp_path: Path, workspace: Path) -> None:
    """-c and friends keep assay run's defaults; --delay S is --rpm 60/S."""
    srv = fake_server(responder=scripted)
    out = tmp_path / "gen.jsonl"
    gen = cli("datagen", "generate", "--n", "2", "--model", "openai/gen", "--reference", "none",
              "--base-url", srv.base_url, "--delay", "0.5", "--out", str(out), "-q")
    assert gen.returncode == 0, gen.stderr
    judged = cli("datagen", "judge", str(out), "--judge-model", "openai/judge", "--base-url",
                 srv.base_url, "--rpm", "600", "-c", "3", "--timeout", "30", "-q")
    assert judged.returncode == 0, judged.stderr
    store = Store()
    try:
        runs = {r["task"]: store.get_run(r["id"]) for r in store.list_runs()}
    finally:
        store.close()
    g, j = runs["datagen_generate"]["spec"], runs["datagen_judge"]["spec"]
    assert (g["rpm"], g["max_connections"], g["timeout"], g["seed"]) == (120.0, 32, 120.0, 0)
    assert "delay" not in g["task_options"]
    assert (j["rpm"], j["max_connections"], j["timeout"], j["seed"]) == (600.0, 3, 30.0, None)
    assert runs["datagen_judge"]["parent_id"] is None


def test_sigterm_marks_the_pipeline_and_its_step_interrupted(fake_server, tmp_path: Path,
                                                            workspace: Path) -> None:
    ref = save_problems(REFERENCE, tmp_path / "ref.jsonl")
    srv = fake_server(responder=scripted, hold_after=5)  # 4 generations, then 1 verdict
    proc = subprocess.Popen([sys.executable, "-m", "assay", *pipeline_args(ref),
                             "--base-url", srv.base_url],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=dispositions())
    wait_for(lambda: len(srv.requests) > 5, proc, "a judge request was held")
    proc.terminate()
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    store = Store()
    try:
        pid = next(r["id"] for r in store.list_runs() if r["task"] == "datagen_pipeline")
        assert f"assay datagen pipeline --resume {pid}" in err
        parent = store.get_run(pid)
        steps = [store.get_run(c) for c in store.children(pid)]
    finally:
        store.close()
    # recorded as interrupted by the process itself (no owner left to ask about)
    assert parent["status"] == "interrupted" and "owner" not in parent["stats"]
    assert [(s["task"], s["status"]) for s in steps] == [
        ("datagen_generate", "finished"), ("datagen_judge", "interrupted")]
    # the parent recorded which step each child is, and how each ended
    assert parent["kind"] == "pipeline"
    assert [(s["key"], s["task"], s["run"], s["status"]) for s in parent["steps"]] == [
        ("generate", "datagen_generate", steps[0]["id"], "finished"),
        ("judge 1", "datagen_judge", steps[1]["id"], "interrupted")]
