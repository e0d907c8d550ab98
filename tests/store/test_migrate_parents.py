"""Schema 6 converts a store written at e063f0f in place: its ``plan`` and
``datagen_pipeline`` runs get their kind, its ``plan_session`` runs become rows of
``plan_sessions``, and all of them still list, report and resume
(tests/fixtures/store_e063f0f)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from assay.pipelines.datagen import pipeline_record
from assay.pipelines.plan import resume_plan
from assay.store.sqlite import Store
from tests.storedb import rows

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "store_e063f0f"
DONE_SESSION, PAUSED_SESSION = "20261126-082218-7a5840", "20261126-082221-0684d5"
PLAN, ALPHA, BETA = ("20261126-082223-adcba8", "20261126-082223-2f7c12",
                     "20261126-082224-866ee5")
PIPELINE = "20261126-082224-ce2d16"
STEPS = {"datagen_generate": "20261126-082224-bdea45", "datagen_judge": "20261126-082224-218670",
         "datagen_winrate": "20261126-082225-3d7805", "datagen_verify": "20261126-082225-18ab7b"}


def cli(*args: str, cwd: Path | None = None,
        stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "assay", *args], capture_output=True,
                          text=True, timeout=600, cwd=cwd, input=stdin)


@pytest.fixture
def old_store(workspace: Path) -> Path:
    """The e063f0f store as this workspace's store (a copy: the fixture stays as made)."""
    workspace.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(FIXTURE / "assay.db", workspace / "assay.db")
    return workspace / "assay.db"


def test_the_fixture_is_a_schema_5_store_with_pseudo_task_parents() -> None:
    db = FIXTURE / "assay.db"
    assert rows(db, "SELECT value FROM meta WHERE key='schema_version'") == [("5",)]
    assert "kind" not in {r[1] for r in rows(db, "PRAGMA table_info(runs)")}
    assert rows(db, "SELECT id, task, status FROM runs WHERE parent_id IS NULL ORDER BY id") == [
        (DONE_SESSION, "plan_session", "finished"), (PAUSED_SESSION, "plan_session",
                                                     "interrupted"),
        (PLAN, "plan", "finished"), (PIPELINE, "datagen_pipeline", "finished")]


def test_schema_6_gives_parents_their_kind_and_moves_sessions_to_their_table(
        old_store: Path) -> None:
    old = {r[0]: r[1:] for r in rows(FIXTURE / "assay.db",
                                     "SELECT id, status, created_at, finished_at, model, "
                                     "dataset, spec FROM runs WHERE task='plan_session'")}
    Store(old_store).close()
    assert rows(old_store, "SELECT value FROM meta WHERE key='schema_version'") == [("8",)]
    kinds = dict(rows(old_store, "SELECT id, kind FROM runs"))
    assert kinds == {PLAN: "plan", ALPHA: "task", BETA: "task", PIPELINE: "pipeline",
                     **{run: "task" for run in STEPS.values()}}
    # a plan run's engine settings are where a run's spec has them (they were in "engine")
    spec = json.loads(rows(old_store, f"SELECT spec FROM runs WHERE id='{PLAN}'")[0][0])
    assert "engine" not in spec and "plan_file" not in spec
    assert (spec["task"], spec["model"], spec.get("limit")) == ("plan", "openai/fake", None)
    assert spec["base_url"].startswith("http://127.0.0.1:") and spec["max_connections"] == 32
    sessions = {r[0]: r[1:] for r in rows(old_store, "SELECT id, status, created_at, "
                                          "finished_at, model, state, request "
                                          "FROM plan_sessions")}
    assert set(sessions) == {DONE_SESSION, PAUSED_SESSION}
    for sid, (status, created, finished, model, dataset, spec) in old.items():
        moved = sessions[sid]
        assert moved[:3] == (status, created, finished)
        assert json.loads(moved[3]) == json.loads(model)
        assert json.loads(moved[4]) == json.loads(dataset)  # the whole state, unchanged
        assert moved[5] == json.loads(spec)["request"]
    before = old_store.read_bytes()
    Store(old_store).close()
    assert old_store.read_bytes() == before  # converted once: a current store is not written


def test_migrated_parents_list_and_sessions_are_not_runs(old_store: Path) -> None:
    listed = cli("list", "runs", "--json")
    assert listed.returncode == 0, listed.stderr
    runs = {r["id"]: r for r in json.loads(listed.stdout)}  # --json: one array
    assert DONE_SESSION not in runs and PAUSED_SESSION not in runs
    assert (runs[PLAN]["kind"], runs[PIPELINE]["kind"], runs[ALPHA]["kind"]) == (
        "plan", "pipeline", "task")
    assert runs[ALPHA]["parent"] == PLAN
    table = cli("list", "runs")
    assert f"planning session {PAUSED_SESSION} (interrupted): tool calling and trivia" \
        in table.stdout
    assert DONE_SESSION not in table.stdout  # a finished session has nothing to continue


def test_a_migrated_planning_session_continues_where_it_paused(old_store: Path,
                                                               tmp_path: Path) -> None:
    done = cli("plan", "--resume", PAUSED_SESSION[:17], "--yes", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "checkpoint 1/3" in done.stdout  # paused at the first checkpoint: asked there
    assert (tmp_path / "paused.yaml").is_file()
    store = Store()
    try:
        session = store.get_plan_session(PAUSED_SESSION)
    finally:
        store.close()
    assert session["status"] == "finished" and session["state"]["stage"] == "done"
    again = cli("plan", "--resume", DONE_SESSION, cwd=tmp_path)
    assert again.returncode == 2 and "is finished; its plan is planned.yaml" in again.stderr


def test_migrated_parent_runs_report_from_the_store(old_store: Path, tmp_path: Path) -> None:
    plan = cli("report", PLAN, "--out", str(tmp_path / "plan"))
    assert plan.returncode == 0, plan.stderr
    summary = json.loads((tmp_path / "plan" / "summary.json").read_text())
    assert [t["run_id"] for t in summary["tasks"]] == [ALPHA, BETA]
    pipeline = cli("report", PIPELINE, "--out", str(tmp_path / "pipeline"))
    assert pipeline.returncode == 0, pipeline.stderr
    report = (tmp_path / "pipeline" / "report.md").read_text()
    assert all(run in report for run in STEPS.values())
    summarized = cli("report", PIPELINE, "--summary")
    assert summarized.returncode == 2 and "is a pipeline run" in summarized.stderr
    rescored = cli("score", PLAN)  # no pseudo-task is built to read a parent run
    assert rescored.returncode == 2 and f"run {PLAN} is a plan run, with no samples" \
        in rescored.stderr
    store = Store()
    try:  # an old pipeline recorded no steps: they are read from its children
        record = pipeline_record(store, PIPELINE)
    finally:
        store.close()
    assert (record["generate_run"], record["judge_runs"], record["winrate_run"],
            record["verify_runs"]) == (STEPS["datagen_generate"], [STEPS["datagen_judge"]],
                                       STEPS["datagen_winrate"], [STEPS["datagen_verify"]])


def test_a_migrated_plan_run_resumes_keeping_its_children(old_store: Path,
                                                          tmp_path: Path) -> None:
    """Its children were stored before parents recorded their steps: the driver takes
    them up by task, and runs nothing again (there is no endpoint to run anything on)."""
    plan = tmp_path / "plan.yaml"
    shutil.copyfile(FIXTURE / "plan.yaml", plan)
    said: list[str] = []
    store = Store()
    try:
        done = resume_plan(store, PLAN, path=plan, echo=said.append)
        parent = store.get_run(PLAN)
    finally:
        store.close()
    assert done.children == [ALPHA, BETA] and not done.failures
    assert said == [f"[1/2] qa: finished before (run {ALPHA}), kept",
                    f"[2/2] qa: finished before (run {BETA}), kept"]
    assert [(s["key"], s["run"], s["status"]) for s in parent["steps"]] == [
        ("task 1", ALPHA, "finished"), ("task 2", BETA, "finished")]
    assert parent["status"] == "finished" and parent["stats"]["sessions"] == 2
