"""``assay run plan.yaml``: child runs under one parent, resume after kill -9, errors."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from assay.store.sqlite import Store
from tests.runwatch import kill9, wait_for

HERE = Path(__file__).resolve().parent


def cli(*args: str, cwd: Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "assay", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=600, env=dict(os.environ))
    if check:
        assert done.returncode == 0, done.stdout + done.stderr
    return done


def qa_file(folder: Path, name: str, n: int = 4) -> Path:
    path = folder / f"{name}.jsonl"
    path.write_text("".join(json.dumps({"id": f"{name}{i}", "question": f"{name} q{i}?",
                                        "answer": f"a{i}"}) + "\n" for i in range(n)))
    return path


def qa_plan(folder: Path, names: list[str], **extra: Any) -> Path:
    """A hand-written plan of qa tasks over local files (relative to the plan)."""
    tasks = [{"task": "qa", "source": "builtin", "options": {"data": f"{n}.jsonl"},
              "metrics": [{"name": "exact_match", "role": "primary"}]} for n in names]
    for n in names:
        qa_file(folder, n)
    plan = {"assay_plan": 1, "request": "three small qa sets", "tasks": tasks, **extra}
    path = folder / "plan.yaml"
    path.write_text(json.dumps(plan))  # JSON is YAML
    return path


def test_a_plan_runs_every_task_as_a_child_of_one_parent(tmp_path: Path, fake_server: Any,
                                                        workspace: Path) -> None:
    server = fake_server(rules=[], default_reply=None)  # echoes: never the answer
    plan = qa_plan(tmp_path, ["alpha", "beta"])
    done = cli("run", str(plan), "--model", "openai/fake", "--base-url", server.base_url,
               "--limit", "3", "-q", cwd=tmp_path)
    assert "[1/2] qa: running (limit 3)" in done.stdout
    store = Store()
    try:
        parent = next(r for r in store.list_runs() if r["kind"] == "plan")
        assert parent["status"] == "finished"
        children = [store.get_run(c) for c in store.children(parent["id"])]
        assert [c["status"] for c in children] == ["finished", "finished"]
        assert [c["metrics"]["n_samples"] for c in children] == [3, 3]
        # the data paths were read relative to the plan file
        assert [Path(c["spec"]["task_options"]["data"]).name for c in children] == [
            "alpha.jsonl", "beta.jsonl"]
        summary = store.get_run(parent["id"])["metrics"]
        assert [t["primary"] for t in summary["tasks"]] == ["exact_match", "exact_match"]
        assert summary["status"] == "finished"
    finally:
        store.close()
    assert len(server.requests) == 6
    report = workspace / "runs" / parent["id"] / "report.html"
    assert report.is_file() and "three small qa sets" in report.read_text()


def test_kill_minus_nine_then_resume_redoes_no_finished_task(tmp_path: Path, fake_server: Any,
                                                            workspace: Path) -> None:
    plan = qa_plan(tmp_path, ["one", "two", "three"])
    # the first task's 4 requests and 2 of the second's are answered; the rest hang
    first = fake_server(hold_after=6)
    proc = subprocess.Popen([sys.executable, "-m", "assay", "run", str(plan), "--model",
                             "openai/fake", "--base-url", first.base_url, "-q",
                             "--max-connections", "1"],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    db = workspace / "assay.db"

    def second_task_has_two() -> bool:
        if not db.exists():
            return False
        con = sqlite3.connect(db)
        try:
            rows = con.execute(
                "SELECT s.sample_id FROM samples s JOIN runs r ON r.id = s.run_id "
                "WHERE json_extract(r.spec, '$.task_options.data') LIKE '%two.jsonl' "
                "AND s.error IS NULL").fetchall()
        except sqlite3.OperationalError:
            return False
        finally:
            con.close()
        return len(rows) == 2

    wait_for("the second task committed 2 samples", second_task_has_two, proc)
    kill9(proc)
    store = Store()
    try:
        parent = next(r for r in store.list_runs() if r["kind"] == "plan")
        assert parent["status"] == "interrupted"
        before = [store.get_run(c) for c in store.children(parent["id"])]
        kept = {sid for sid, _ in store.completed_keys(before[1]["id"])}
    finally:
        store.close()
    assert [c["status"] for c in before] == ["finished", "interrupted"]
    assert len(kept) == 2

    second = fake_server()
    done = cli("run", str(plan), "--resume", parent["id"], "--base-url", second.base_url,
               "-q", cwd=tmp_path)
    assert f"finished before (run {before[0]['id']}), kept" in done.stdout
    sent = [b["messages"][-1]["content"].splitlines()[0] for b in second.requests]
    assert not any(s.startswith("one q") for s in sent), "a finished task was sent again"
    # only the second task's two uncommitted samples, then the whole third task
    assert sorted(s for s in sent if s.startswith("two q")) == sorted(
        f"two q{i}?" for i in range(4) if f"two{i}" not in kept)
    assert sum(s.startswith("three q") for s in sent) == 4
    store = Store()
    try:
        after = [store.get_run(c) for c in store.children(parent["id"])]
        assert store.get_run(parent["id"])["status"] == "finished"
    finally:
        store.close()
    assert [c["id"] for c in after[:2]] == [c["id"] for c in before]
    assert [c["status"] for c in after] == ["finished"] * 3
    assert [c["metrics"]["n_samples"] for c in after] == [4, 4, 4]


def test_resume_refuses_a_plan_file_that_changed(tmp_path: Path, fake_server: Any) -> None:
    server = fake_server()
    plan = qa_plan(tmp_path, ["one"])
    cli("run", str(plan), "--model", "openai/fake", "--base-url", server.base_url, "-q",
        cwd=tmp_path)
    store = Store()
    try:
        pid = next(r["id"] for r in store.list_runs() if r["kind"] == "plan")
    finally:
        store.close()
    plan.write_text(plan.read_text().replace("three small qa sets", "changed"))
    done = cli("run", str(plan), "--resume", pid, cwd=tmp_path, check=False)
    assert done.returncode == 2
    assert "has changed since plan run" in done.stderr and len(done.stderr.splitlines()) == 1


@pytest.mark.parametrize(("tasks", "message"), [
    ([{"task": "qa", "options": {"data": "x.jsonl"},
       "metrics": [{"name": "exact_match", "role": "primary"},
                   {"name": "token_f1", "role": "primary"}]}],
     "exactly one metric has role primary (found 2: exact_match, token_f1)"),
    ([{"task": "qa", "options": {"data": "x.jsonl"},
       "metrics": [{"name": "vibes", "role": "primary"}]}], "unknown metric 'vibes'"),
    ([{"task": "gsm8k", "metrics": [{"name": "bleu", "role": "primary"}]}],
     "metric bleu is not computed by this task; choose from numeric_match"),
    ([{"task": "gsm8k", "metrics": []}], "no metrics; give it exactly one with role primary"),
    ([{"task": "gsm9k", "metrics": [{"name": "exact_match", "role": "primary"}]}],
     "gsm9k"),
    ([{"task": "gsm8k", "options": {"fewshots": 3},
       "metrics": [{"name": "numeric_match", "role": "primary"}]}], "fewshots"),
    ([], "the plan has no tasks"),
])
def test_a_bad_plan_is_one_line_that_says_what_to_fix(tasks: list[dict[str, Any]],
                                                      message: str, tmp_path: Path) -> None:
    path = tmp_path / "plan.yaml"
    path.write_text(json.dumps({"assay_plan": 1, "request": "r", "tasks": tasks}))
    done = cli("run", str(path), "--model", "openai/fake", cwd=tmp_path, check=False)
    assert done.returncode == 2, done.stdout + done.stderr
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_an_unknown_key_or_a_duplicated_key_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "plan.yaml"
    path.write_text("assay_plan: 1\nrequest: r\ntasks:\n- task: gsm8k\n  limt: 3\n")
    done = cli("run", str(path), cwd=tmp_path, check=False)
    assert done.returncode == 2
    assert "plan.yaml:5: tasks.0: unknown key 'limt' (did you mean 'limit'?" in done.stderr
    path.write_text("assay_plan: 1\nrequest: r\nrequest: s\ntasks: []\n")
    done = cli("run", str(path), cwd=tmp_path, check=False)
    assert done.returncode == 2 and "plan.yaml:3: invalid YAML: key 'request' is given twice" \
        in done.stderr


def test_a_task_that_fails_is_recorded_and_the_others_still_run(
        tmp_path: Path, fake_server: Any, workspace: Path) -> None:
    server = fake_server()
    plan = qa_plan(tmp_path, ["one", "two"])
    (tmp_path / "one.jsonl").write_text('{"id": "x", "question": "q"}\n')  # no answer
    done = cli("run", str(plan), "--model", "openai/fake", "--base-url", server.base_url, "-q",
               cwd=tmp_path, check=False)
    assert done.returncode == 1
    assert "task 1 failed" in done.stderr
    store = Store()
    try:
        parent = next(r for r in store.list_runs() if r["kind"] == "plan")
        assert parent["status"] == "failed"
        failures = store.get_run(parent["id"])["metrics"]["failures"]
        assert list(failures) == ["0"] and "answer" in failures["0"]
        kids = [store.get_run(c) for c in store.children(parent["id"])]
        steps = store.get_run(parent["id"])["steps"]
    finally:
        store.close()
    assert [k["metrics"]["n_samples"] for k in kids if k["status"] == "finished"] == [4]
    # each step's status is recorded with the parent, the failure's reason with it
    assert [(s["key"], s["task"], s["status"]) for s in steps] == [
        ("task 1", "qa", "failed"), ("task 2", "qa", "finished")]
    assert "answer" in steps[0]["error"] and steps[1]["run"] == kids[-1]["id"]
    # the plan's report shows each task's own run, as its step recorded it
    cli("report", parent["id"], "--out", str(tmp_path / "report"), cwd=tmp_path)
    shown = json.loads((tmp_path / "report" / "summary.json").read_text())["tasks"]
    assert [t["run_id"] for t in shown] == [steps[0]["run"], steps[1]["run"]]
    # once the data is mended, a resume runs task 1 and keeps task 2's run: the finished
    # child of the same task is task 2's, not the failed task's
    qa_file(tmp_path, "one")
    again = cli("run", str(plan), "--resume", parent["id"], "--base-url", server.base_url,
                "-q", cwd=tmp_path)
    assert f"[2/2] qa: finished before (run {steps[1]['run']}), kept" in again.stdout
    store = Store()
    try:
        after = store.get_run(parent["id"])
    finally:
        store.close()
    assert after["status"] == "finished"
    assert [(s["status"], s["error"]) for s in after["steps"]] == [("finished", None)] * 2
    assert after["steps"][1]["run"] == steps[1]["run"] != after["steps"][0]["run"]


def test_bfcl_data_is_pulled_before_its_run_when_none_is_here(
        monkeypatch: pytest.MonkeyPatch, real_wheel: Any, workspace: Path) -> None:
    from assay.pipelines.plan import prepare
    from assay.plan.schema import PlanTask
    from assay.tasks.bfcl import data as bfcl_data

    real = real_wheel("bfcl-eval", bfcl_data.BFCL_EVAL_VERSION)
    monkeypatch.setattr(bfcl_data, "installed_package_dir", lambda: None)
    downloads: list[str] = []

    def download(package: str, version: str, *, wheel: Any = None, hint: str) -> Path:
        assert (package, wheel) == (bfcl_data.PACKAGE, None)  # fetched, not given
        downloads.append(version)
        return real  # PyPI's wheel, fetched once per test session

    monkeypatch.setattr(bfcl_data, "fetch_wheel", download)
    with pytest.raises(Exception, match="BFCL data not found"):
        bfcl_data.locate()
    said: list[str] = []
    task = PlanTask(task="bfcl", metrics=[{"name": "bfcl_accuracy", "role": "primary"}])
    prepare(task, said.append)
    assert downloads == [bfcl_data.BFCL_EVAL_VERSION]
    assert bfcl_data.locate().kind == "cache"
    assert said == ["BFCL v4's official data, from the bfcl-eval wheel on PyPI: not found "
                    "here, pulling it (assay data pull bfcl)"]
    prepare(task, said.append)  # now it is here: nothing more
    assert downloads == [bfcl_data.BFCL_EVAL_VERSION] and len(said) == 1


def test_running_a_plan_again_reuses_the_cache_and_report_regenerates(
        tmp_path: Path, fake_server: Any, workspace: Path) -> None:
    server = fake_server()
    plan = qa_plan(tmp_path, ["one", "two"])
    args = ("run", str(plan), "--model", "openai/fake", "--base-url", server.base_url, "-q")
    cli(*args, cwd=tmp_path)
    assert len(server.requests) == 8
    cli(*args, cwd=tmp_path)  # a new plan run: every reply comes from the response cache
    assert len(server.requests) == 8
    store = Store()
    try:
        runs = [r for r in store.list_runs() if r["kind"] == "plan"]
        assert len(runs) == 2
        latest = runs[0]["id"]
        kids = [store.get_run(c) for c in store.children(latest)]
    finally:
        store.close()
    assert [k["stats"]["cache_hits"] for k in kids] == [4, 4]
    folder = workspace / "runs" / latest
    for name in ("report.md", "report.html", "summary.json"):
        (folder / name).unlink()
    done = cli("report", latest, cwd=tmp_path)
    assert all((folder / name).is_file() for name in ("report.md", "report.html",
                                                      "summary.json")), done.stdout


def test_endpoint_credentials_never_reach_the_store(tmp_path: Path, fake_server: Any,
                                                    workspace: Path) -> None:
    from assay.pipelines.plan import resume_plan, start_plan
    from assay.plan.planner import Settings, plan_request

    server = fake_server()
    port = server.base_url.split(":")[2].split("/")[0]
    secret_url = f"http://user:hunter2secret@127.0.0.1:{port}/v1"
    plan = qa_plan(tmp_path, ["one"])
    store = Store()
    try:
        done = start_plan(store, plan, model="openai/fake",
                          engine={"base_url": secret_url}, echo=lambda _t: None)
        plan_request(store, "grade-school math", Settings(output=str(tmp_path / "p.yaml"),
                                                          embeddings="emb",
                                                          base_url=secret_url),
                     prompt=lambda _t: None, echo=lambda _t: None, yes=True)
        store.set_run_status(done.run_id, "interrupted")
        with pytest.raises(Exception, match="resume with --base-url giving the full URL"):
            resume_plan(store, done.run_id, echo=lambda _t: None)
        again = resume_plan(store, done.run_id, overrides={"base_url": secret_url},
                            echo=lambda _t: None)
    finally:
        store.close()
    assert again.children == done.children
    assert server.embedding_requests, "the embeddings were asked with the credentials"
    raw = (workspace / "assay.db").read_bytes()
    for wal in workspace.glob("assay.db-wal"):
        raw += wal.read_bytes()
    assert b"hunter2secret" not in raw
    assert b"hunter2secret" not in (tmp_path / "p.yaml").read_bytes()


def test_the_plans_judge_goes_to_every_task_with_a_judge_role() -> None:
    from assay.pipelines.plan import child_options
    from assay.plan.schema import Models, Plan, PlanTask

    def task(name: str, **options: Any) -> PlanTask:
        return PlanTask(task=name, options=options)

    plan = Plan(request="r", models=Models(judge="openai/judge"))
    assert child_options(task("mtbench"), plan)["judge_model"] == "openai/judge"
    conv = child_options(task("converse"), plan)
    assert conv["judge_model"] == conv["examiner_model"] == "openai/judge"
    assert child_options(task("mtbench", judge_model="openai/mine"), plan)["judge_model"] == \
        "openai/mine"
    assert "judge_model" not in child_options(task("gsm8k"), plan)
    assert "judge_model" not in child_options(task("mtbench"), Plan(request="r"))
