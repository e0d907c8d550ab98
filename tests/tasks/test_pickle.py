"""Every registered task is stateless (issue 23): built with its default options, it
pickles; the copy loads the same samples and scores the run's stored outcomes as the run
did; and a run through the engine leaves the task object exactly as it was (nothing
injected into it, nothing written back from it). A task added to the registry without a
case here fails :func:`test_every_registered_task_has_a_case`."""

from __future__ import annotations

import asyncio
import copy
import json
import pickle
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from assay.core.stored import outcome_of, sample_of
from assay.engine.judging import scoring_contexts
from assay.engine.runner import Engine, RunSpec
from assay.sandbox import allow_weak_isolation, bwrap_problem
from assay.store.sqlite import Store
from assay.tasks.base import Task, score_sample
from assay.tasks.gallery import source
from assay.tasks.gallery.entry import all_entries
from assay.tasks.registry import available, build_task

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS / "tasks" / "gaia"))
sys.path.insert(0, str(TESTS / "datagen"))

from datagen_fakes import REFERENCE, scripted  # noqa: E402
from gaia_fixtures import write_gaia_fixture  # noqa: E402
from tau2_source import tau2_root  # noqa: E402

FIXTURE_WHEELS = TESTS / "gallery" / "fixtures" / "wheels"
EXAMPLE_QA = TESTS.parent / "examples" / "qa_example.jsonl"
ENTRIES = all_entries()


def _mini_wheel(name: str) -> Path:
    ws = ENTRIES[name].source.wheel
    return FIXTURE_WHEELS / f"{ws.package.replace('-', '_')}-{ws.version}-mini.whl"


def _problems(path: Path, n: int = 3) -> str:
    with open(path, "w") as f:
        for i in range(n):
            f.write(json.dumps({"problem_id": f"gen-{i}", "source": "generated",
                                "problem": f"Find the number of integers n with property {i}.",
                                "answer": str(100 + i), "solution": f"Count: {100 + i}.",
                                "provenance": {"model": "openai/gen-model"}}) + "\n")
    return str(path)


def _references(path: Path) -> str:
    with open(path, "w") as f:
        for p in REFERENCE:
            f.write(json.dumps({"problem_id": p.problem_id, "problem": p.problem,
                                "answer": p.answer}) + "\n")
    return str(path)


#: the options each built-in task is built with, over its defaults (only where it needs
#: data: the files the tests make, never the network)
BUILT_IN: dict[str, Callable[[Path], dict[str, Any]]] = {
    "qa": lambda tmp: {"data": str(EXAMPLE_QA)},
    "bfcl": lambda tmp: {},
    "gaia": lambda tmp: {"data_dir": str(write_gaia_fixture(tmp / "gaia"))},
    "converse": lambda tmp: {"examiner_model": "openai/fake", "judge_model": ["openai/fake"]},
    "tau2": lambda tmp: {"domain": "mock", "tau2_dir": str(tau2_root()),
                         "user_model": "openai/fake", "max_steps": 4},
    "datagen_generate": lambda tmp: {"n": 2, "reference": "none"},
    "datagen_judge": lambda tmp: {"data": _problems(tmp / "gen.jsonl"),
                                  "judge_model": ["openai/fake"]},
    "datagen_verify": lambda tmp: {"data": _problems(tmp / "gen.jsonl")},
    "datagen_winrate": lambda tmp: {"data": _problems(tmp / "gen.jsonl"),
                                    "reference": _references(tmp / "ref.jsonl"),
                                    "judge_model": ["openai/fake"]},
}


def options_for(name: str, tmp: Path) -> dict[str, Any]:
    """The options of ``name``'s case (a gallery entry's data comes from its fixture
    wheel)."""
    if name in BUILT_IN:
        return BUILT_IN[name](tmp)
    entry = ENTRIES[name]
    if entry.eval_type == "native":
        return BUILT_IN[entry.task or ""](tmp)
    if entry.eval_type in ("generate", "multiple_choice"):
        source.pull(entry, wheel=_mini_wheel(name))
        return {}
    return {"wheel": str(_mini_wheel(name))}


def reply(body: dict[str, Any]) -> str:
    """One deterministic reply for any task: the datagen steps' JSON where a schema is
    asked for, else an answer line, a judge's rating and a code block at once."""
    if body.get("response_format") or "[Problem 2]" in body["messages"][-1]["content"]:
        return scripted(body)
    return ("Answer: A\nFINAL ANSWER: 3\nRating: [[7]]\n"
            "```python\ndef nothing():\n    return None\n```")


def _plain(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str, ensure_ascii=False))


#: a judge's bookkeeping in a score's metadata: its calls, which the response cache
#: answers when the same verdicts are asked again (the verdicts themselves must be equal)
USAGE_KEYS = {"judge_usage", "usage"}


def _verdicts(value: Any) -> Any:
    """``value`` as plain JSON, without the judge's call bookkeeping."""
    if isinstance(value, dict):
        return {k: _verdicts(v) for k, v in value.items() if k not in USAGE_KEYS}
    if isinstance(value, list):
        return [_verdicts(v) for v in value]
    return value


def test_every_registered_task_has_a_case() -> None:
    missing = [n for n in available() if n not in BUILT_IN and n not in ENTRIES]
    assert not missing, f"add a case for {missing}"


@pytest.mark.parametrize("name", sorted(available()))
def test_a_task_pickles_loads_the_same_and_a_run_leaves_it_unchanged(
        name: str, tmp_path: Path, fake_server: Any) -> None:
    entry = ENTRIES.get(name)
    if entry is not None and entry.eval_type == "code":
        if bwrap_problem():
            pytest.skip(bwrap_problem())  # names apt-get install bubblewrap
    options = options_for(name, tmp_path)
    task = build_task(name, options)
    twin: Task = pickle.loads(pickle.dumps(task))
    assert type(twin) is type(task) and twin.options == task.options
    assert twin.opts == task.opts
    before = copy.deepcopy(vars(task))
    with allow_weak_isolation(bwrap_problem() is not None):  # as the run below allows
        loaded = task.load()
        again = twin.load()
    assert loaded.samples, name
    assert again.samples == loaded.samples  # the copy loads the very same samples
    assert _plain(again.options) == _plain(loaded.options)
    assert vars(task) == before, "load() changed the task"

    srv = fake_server(responder=reply)
    spec = RunSpec(task=name, model="openai/fake", base_url=srv.base_url,
                   task_options=options, limit=2, max_connections=1, seed=3,
                   params={"temperature": 0.0},
                   # converse's built-in cases hold eval_code: weak isolation where bwrap is
                   # missing, as its own tests do (tests/tasks/converse/convfakes.py)
                   allow_weak_sandbox=bwrap_problem() is not None)
    store = Store()
    try:
        run_id = asyncio.run(Engine(store, quiet=True).run(spec, task=task))
        after = vars(task)
        changed = sorted(k for k in {*before, *after} if before.get(k) != after.get(k))
        assert not changed, f"the run changed the task's {changed}"
        rows = list(store.iter_results(run_id))
        scored = [r for r in rows if r.error is None]
        assert scored, [r.error for r in rows]

        async def rescore() -> list[dict[str, Any]]:
            if not twin.judged():
                return [{s.name: s.to_dict() for s in
                         await score_sample(twin, sample_of(r), outcome_of(r), None)}
                        for r in scored]
            async with scoring_contexts(store, twin, spec, "openai/fake") as make:
                return [{s.name: s.to_dict() for s in
                         await score_sample(twin, sample_of(r), outcome_of(r), make(r.epoch))}
                        for r in scored]

        # the copy (another process's task) gives the stored verdicts
        with allow_weak_isolation(bwrap_problem() is not None):
            got = _verdicts(_plain(asyncio.run(rescore())))
        assert got == [_verdicts(_plain(r.scores)) for r in scored]
    finally:
        store.close()
