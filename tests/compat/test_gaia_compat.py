"""The book's GAIA classes (``assay.compat``): dict items over the core loader, the
evaluators' result keys, and agents handled as the core handles them (a factory per
sample, a copy of an object per sample, resumable runs)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import gaia_fixtures as fx
import pytest

from assay.compat import GAIADataset, GAIAEvaluationTool, GAIAEvaluator
from assay.errors import DatasetError, ModelSpecError
from assay.store.sqlite import Store
from assay.tasks.gaia.layouts import OFFICIAL_COUNTS
from assay.tasks.gaia.task import GAIA_SYSTEM_PROMPT

BOOK_KEYS = {"task_id", "question", "level", "final_answer", "file_name", "file_path",
             "annotator_metadata", "steps", "tools", "raw_item"}
ANSWERS = fx.expected_answers("validation")
BY_QUESTION = {t["Question"]: t["task_id"] for t in fx.default_tasks("validation")}


def gaia_answer(prompt: str) -> str:
    """The right answer to the fixture task the prompt asks."""
    assert prompt.startswith(GAIA_SYSTEM_PROMPT)
    question = next(q for q in BY_QUESTION if q in prompt)
    return f"FINAL ANSWER: {ANSWERS[BY_QUESTION[question]]}"


class BookAgent:
    """A SimpleAgent-style agent that answers right only with an empty memory."""

    name = "book-agent"

    def __init__(self) -> None:
        self.memory: list[str] = []

    def run(self, prompt: str) -> str:
        self.memory.append(prompt)
        return gaia_answer(prompt) if len(self.memory) == 1 else "FINAL ANSWER: stale"


def _results(run_id: str) -> dict:
    store = Store()
    try:
        return {r.sample_id: r for r in store.results(run_id)}
    finally:
        store.close()


# ---------------------------------------------------------------------------------------------
# GAIADataset: the book's dict items


def test_dataset_returns_book_items_over_the_core_records(tmp_path: Path) -> None:
    j = GAIADataset(local_data_dir=fx.write_gaia_fixture(tmp_path / "j", "jsonl"))
    p = GAIADataset(local_data_dir=fx.write_gaia_fixture(tmp_path / "p", "parquet"))
    assert len(j.load()) == len(p) == 11
    assert all(set(item) == BOOK_KEYS for item in j.data)
    assert [item["task_id"] for item in iter(p)] == [t["task_id"] for t in fx.default_tasks()]
    assert {i["task_id"]: i["final_answer"] for i in j.data} == ANSWERS
    assert all(type(i["level"]) is int for i in p.data)
    assert [i["raw_item"] for i in j.data] == [t.raw for t in j.tasks]
    no_file = next(i for i in j.data if not i["file_name"])
    assert no_file["file_path"] == ""
    with_file = next(i for i in j.data if i["file_name"])
    assert Path(with_file["file_path"]).is_file()
    assert [i["level"] for i in j.get_by_level(3)] == [3, 3, 3]
    assert len(j.get_by_level("2")) == 4 and j.get_level_distribution() == {1: 4, 2: 4, 3: 3}


def test_dataset_statistics(tmp_path: Path) -> None:
    root = fx.write_gaia_fixture(tmp_path, "jsonl")
    ds = GAIADataset(local_data_dir=root)
    stats = ds.get_statistics()  # loads on first use
    assert stats["total_samples"] == 11 and stats["level_distribution"] == {1: 4, 2: 4, 3: 3}
    assert stats["samples_with_files"] == 9 and stats["missing_attachments"] == 0
    assert stats["answers_public"] is True and stats["hidden_answers"] == 0
    assert stats["split"] == "validation" and stats["source"] == "gaia:local"
    assert stats["official_counts"] == OFFICIAL_COUNTS["validation"]
    assert stats["matches_official_counts"] is False  # a fixture, not the real 165
    level1 = GAIADataset(local_data_dir=root, level=1).get_statistics()
    assert level1["matches_official_counts"] is None
    assert ds.source_info()["source"] == "gaia:local" and ds.layout == "jsonl"
    test = GAIADataset(local_data_dir=fx.write_gaia_fixture(tmp_path / "t", "jsonl",
                                                            split="test"), split="test")
    assert test.answers_public is False and test.get_statistics()["hidden_answers"] == 11


def test_dataset_arguments_are_checked(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="unknown GAIA split 'train'"):
        GAIADataset(split="train")
    with pytest.raises(DatasetError, match="GAIA level must be 1, 2 or 3, got 4"):
        GAIADataset(local_data_dir=tmp_path, level=4)
    with pytest.raises(DatasetError, match="unknown GAIA config"):
        GAIADataset(config="2024_all")
    ds = GAIADataset(local_data_dir=fx.write_gaia_fixture(tmp_path, "jsonl"))
    with pytest.raises(DatasetError, match="GAIA level must be"):
        ds.get_by_level("two")
    with pytest.raises(DatasetError, match=r"offline\?"):
        GAIADataset().load()  # no local_data_dir: a download, and the tests are offline


# ---------------------------------------------------------------------------------------------
# The evaluators


def test_book_api(tmp_path: Path, workspace: Path) -> None:
    root = fx.write_gaia_fixture(tmp_path / "gaia")
    ds = GAIADataset(level=1, local_data_dir=str(root))
    assert len(ds.load()) == 4
    assert ds.get_statistics()["total_samples"] == 4
    evaluator = GAIAEvaluator(dataset=ds, level=1)
    results = evaluator.evaluate(BookAgent(), max_samples=3)
    assert results["total_samples"] == 3 and results["exact_matches"] == 3
    assert results["exact_match_rate"] == 1.0 and results["partial_match_rate"] == 1.0
    assert results["level_metrics"]["Level_1"]["exact_match_rate"] == 1.0
    assert results["agent_name"] == "book-agent"
    path = evaluator.export_to_gaia_format(results, tmp_path / "sub.jsonl", include_reasoning=False)
    assert [set(json.loads(x)) for x in path.read_text().splitlines()] == [
        {"task_id", "model_answer"}] * 3
    tool = GAIAEvaluationTool(local_data_path=str(root), output_dir=tmp_path / "out")
    out = tool.run(agent=BookAgent(), level=2, max_samples=2)
    assert {"exact_match_rate", "partial_match_rate", "exact_matches", "total_samples",
            "level_metrics"} <= set(out)
    assert Path(out["result_file"]).is_file() and Path(out["submission_guide"]).is_file()
    assert Path(out["report_file"]).is_file()


def test_a_zero_argument_factory_works(tmp_path: Path) -> None:
    root = fx.write_gaia_fixture(tmp_path / "gaia")
    made: list[BookAgent] = []

    def make_agent() -> BookAgent:  # the book's pattern: build a fresh SimpleAgent
        made.append(BookAgent())
        return made[-1]

    results = GAIAEvaluator(local_data_dir=str(root)).evaluate(make_agent)
    assert results["total_samples"] == 11 and results["exact_matches"] == 11
    assert not any("error" in d for d in results["detailed_results"])
    assert len(made) == 11 and all(len(a.memory) == 1 for a in made)
    assert results["agent_name"] == "make_agent"


def test_one_agent_object_is_copied_for_every_sample(tmp_path: Path) -> None:
    root = fx.write_gaia_fixture(tmp_path / "gaia")
    agent = BookAgent()
    results = GAIAEvaluator(local_data_dir=str(root)).evaluate(agent)
    stale = [d["task_id"] for d in results["detailed_results"] if d["predicted"] == "stale"]
    assert stale == [] and results["exact_matches"] == 11
    assert agent.memory == []  # the object itself was never run: every sample had a copy


def test_an_agent_that_cannot_be_copied_is_refused(tmp_path: Path, workspace: Path) -> None:
    root = fx.write_gaia_fixture(tmp_path / "gaia")
    agent = BookAgent()
    agent.client_lock = threading.Lock()  # type: ignore[attr-defined]  # like an HTTP client
    with pytest.raises(ModelSpecError) as e:
        GAIAEvaluator(local_data_dir=str(root)).evaluate(agent)
    assert "\n" not in str(e.value) and "pass a factory instead" in str(e.value)
    store = Store()
    try:
        assert store.list_runs() == []  # refused before any run was created
    finally:
        store.close()


# ---------------------------------------------------------------------------------------------
# Resume

DYING_AGENT = """
import json
import os
import signal
import time


class Agent:
    def run(self, prompt):
        with open(os.environ["AGENT_LOG"], "a", encoding="utf-8") as f:
            f.write(json.dumps(prompt) + "\\n")
        with open(os.environ["AGENT_LOG"], encoding="utf-8") as f:
            calls = len(f.read().splitlines())
        if calls >= int(os.environ.get("AGENT_DIE_AT") or 10**9):
            time.sleep(0.5)  # let the finished samples be committed, then die hard
            os.kill(os.getpid(), signal.SIGKILL)
        return "FINAL ANSWER: 42"


def make():
    return Agent()
"""

BOOK_SCRIPT = """
import sys

import dying_gaia_agent
from assay.compat import GAIAEvaluator

GAIAEvaluator(local_data_dir=sys.argv[1]).evaluate(dying_gaia_agent.make)
"""


def _asked(log: Path) -> list[str]:
    prompts = [json.loads(x) for x in log.read_text().splitlines()]
    return [BY_QUESTION[next(q for q in BY_QUESTION if q in p)] for p in prompts]


def test_a_book_run_of_an_importable_factory_resumes_from_the_cli(tmp_path: Path,
                                                                  workspace: Path) -> None:
    root = fx.write_gaia_fixture(tmp_path / "gaia")
    mods = tmp_path / "mods"
    mods.mkdir()
    (mods / "dying_gaia_agent.py").write_text(DYING_AGENT, encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(mods), os.environ.get(
        "PYTHONPATH", "")]), AGENT_LOG=str(tmp_path / "first.log"), AGENT_DIE_AT="4")
    first = subprocess.run([sys.executable, "-c", BOOK_SCRIPT, str(root)], env=env,
                           capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert first.returncode == -9, first.stderr  # killed by the agent at its 4th call
    store = Store()
    try:
        (listed,) = store.list_runs()
        run = store.get_run(listed["id"])
        assert run["spec"]["model"] == "python/dying_gaia_agent:make"
    finally:
        store.close()
    done = set(_results(run["id"]))
    assert 1 <= len(done) < 11

    env.update(AGENT_LOG=str(tmp_path / "resumed.log"), AGENT_DIE_AT="")
    resumed = subprocess.run([sys.executable, "-m", "assay", "run", "gaia", "--resume",
                              run["id"], "-q"], env=env, capture_output=True, text=True,
                             timeout=300, cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert sorted(_asked(tmp_path / "resumed.log")) == sorted(set(ANSWERS) - done)
    final = _results(run["id"])
    assert set(final) == set(ANSWERS) and all(r.error is None for r in final.values())


def test_a_book_run_of_an_object_resumes_from_python_not_the_cli(tmp_path: Path,
                                                                 workspace: Path) -> None:
    root = fx.write_gaia_fixture(tmp_path / "gaia")
    evaluator = GAIAEvaluator(local_data_dir=str(root))
    first = evaluator.evaluate(BookAgent(), max_samples=3)
    store = Store()
    try:
        spec = store.get_run(first["run_id"])["spec"]
    finally:
        store.close()
    assert spec["model"].startswith("python/<object>:") and spec["model"].endswith("BookAgent")
    out = subprocess.run([sys.executable, "-m", "assay", "run", "gaia", "--resume",
                          first["run_id"], "-q"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 2 and out.stderr.count("\n") == 1
    assert "cannot be rebuilt from the store" in out.stderr and "resume=RUN_ID" in out.stderr
    again = evaluator.evaluate(BookAgent(), resume=first["run_id"])
    assert again["run_id"] == first["run_id"] and again["exact_matches"] == 3
