"""The parent-run driver on its own: kinds, steps recorded, dependencies, errors, resume
(real engine runs of ``qa`` against the fake OpenAI-compatible server)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from assay.engine.runner import RunSpec
from assay.errors import ConfigError
from assay.pipelines.parent import ParentRun, StepFailed
from assay.store.sqlite import Store


def qa_data(folder: Path, name: str, *, answers: bool = True) -> str:
    path = folder / f"{name}.jsonl"
    path.write_text("".join(json.dumps({"id": f"{name}{i}", "question": f"{name} q{i}?",
                                        **({"answer": f"a{i}"} if answers else {})}) + "\n"
                            for i in range(3)))
    return str(path)


def new_parent(store: Store) -> ParentRun:
    return ParentRun.create(store, RunSpec(task="two_qa_sets", model="openai/fake"),
                            kind="pipeline", model={"model": "openai/fake"}, dataset={})


def test_steps_run_in_order_and_a_step_whose_dependency_failed_is_skipped(
        tmp_path: Path, fake_server: Any, workspace: Path) -> None:
    server = fake_server()
    engine = {"base_url": server.base_url}
    good, bad = qa_data(tmp_path, "good"), qa_data(tmp_path, "bad", answers=False)
    store = Store()
    try:
        parent = new_parent(store)

        def body(p: ParentRun) -> dict[str, Any]:
            p.step("first", "qa", "openai/fake", {"data": good}, engine=engine)
            with pytest.raises(StepFailed, match="answer"):
                p.step("second", "qa", "openai/fake", {"data": bad}, engine=engine)
            with pytest.raises(StepFailed, match="skipped, step second did not finish"):
                p.step("third", "qa", "openai/fake", {"data": good}, engine=engine,
                       needs=["first", "second"])
            return {"ran": 1}

        assert parent.drive(body) == {"ran": 1}
        record = store.get_run(parent.id)
        kids = [store.get_run(c) for c in store.children(parent.id)]
    finally:
        store.close()
    assert record["kind"] == "pipeline" and record["status"] == "failed"
    assert record["metrics"] == {"ran": 1}
    assert [(s["key"], s["status"]) for s in record["steps"]] == [
        ("first", "finished"), ("second", "failed"), ("third", "skipped")]
    assert record["steps"][0]["run"] == kids[0]["id"] and kids[0]["kind"] == "task"
    assert record["steps"][2]["run"] is None  # a skipped step never made a run
    assert len(server.requests) == 3  # the first step's three questions, nothing else


def test_a_parent_reopened_reuses_its_steps_and_refuses_another_kind_or_model(
        tmp_path: Path, fake_server: Any, workspace: Path) -> None:
    server = fake_server()
    engine = {"base_url": server.base_url}
    data = qa_data(tmp_path, "one")
    store = Store()
    try:
        parent = new_parent(store)
        first = parent.drive(lambda p: {"run": p.step("only", "qa", "openai/fake",
                                                      {"data": data}, engine=engine)})
        again = ParentRun.reopen(store, parent.id, kind="pipeline", what="pipeline")
        said: list[str] = []
        made = again.drive(lambda p: {"run": p.step(
            "only", "qa", "openai/fake", lambda: pytest.fail("options of a kept step"),
            engine=engine, echo=said.append)})
        assert made == first and len(store.children(parent.id)) == 1
        assert said == [f"only: finished before (run {first['run']}), kept"]
        assert store.get_run(parent.id)["stats"]["sessions"] == 2
        with pytest.raises(ConfigError, match="is a pipeline run .*, not a plan run"):
            ParentRun.reopen(store, parent.id, kind="plan", what="plan run")
        other = ParentRun.reopen(store, parent.id, kind="pipeline", what="pipeline")
        with pytest.raises(StepFailed, match="was run with openai/fake, not openai/other"):
            other.step("only", "qa", "openai/other", {"data": data}, engine=engine)
    finally:
        store.close()
    assert len(server.requests) == 3
