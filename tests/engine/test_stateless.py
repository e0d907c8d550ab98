"""The engine loads a task's data once and keeps it: nothing is injected into the task or
written back from it; the run's generation parameters reach it through the context; the
options stored with a run are the ones given, resolved by ``load()``."""

from __future__ import annotations

import asyncio
import textwrap
from pathlib import Path
from typing import Any

from assay.core.types import Outcome, Sample, Score
from assay.engine.runner import Engine, RunSpec
from assay.rescore import rescore
from assay.store.sqlite import Store
from assay.tasks.base import LoadedData, Task


class Counting(Task):
    """Three samples; counts its loads and sends what ``generation_params(ctx)`` gives."""

    def __init__(self) -> None:
        super().__init__(generation={"max_tokens": 7, "temperature": 0.3})
        self.loads = [0]  # a list: the count is seen through pickles and copies alike

    def read(self) -> LoadedData:
        self.loads[0] += 1
        return LoadedData([Sample(str(i), f"Say {i}", str(i)) for i in range(3)],
                          {"source": "counting"}, {"resolved": True})

    async def solve(self, sample: Sample, agent: Any) -> Outcome:
        params = self.generation_params(agent)
        reply = await agent.generate(self.build_messages(sample), **params)
        return Outcome(output=reply.message.content or "", metadata={"params": params})

    def score(self, sample: Sample, outcome: Outcome) -> list[Score]:
        return [Score("score", float(outcome.output.strip() == str(sample.target)),
                      outcome.output, "")]


def test_load_once_params_through_the_context_and_nothing_written(fake_server: Any) -> None:
    srv = fake_server(responder=lambda body: body["messages"][-1]["content"].split()[-1])
    task = Counting()
    before = dict(vars(task))
    spec = RunSpec(task="counting", model="openai/fake", base_url=srv.base_url, seed=11,
                   params={"temperature": 0.0}, max_connections=2)
    store = Store()
    try:
        run_id = asyncio.run(Engine(store, quiet=True).run(spec, task=task))
        run = store.get_run(run_id)
        results = store.results(run_id)
    finally:
        store.close()
    assert task.loads == [1]  # loaded once for the whole run
    assert vars(task) == before and "run_params" not in vars(task)
    # the run's parameters over the task's defaults, as every request shows
    assert {(r["max_tokens"], r["temperature"], r["seed"]) for r in srv.requests} == {
        (7, 0.0, 11)}
    assert all(r.metadata == {} for r in results)  # the samples as loaded
    assert run["dataset"] == {"source": "counting", "selected": 3}
    assert run["spec"]["task_options"] == {"resolved": True}  # what load() resolved


def test_a_task_files_options_are_stored_and_rebuilt(workspace: Path, tmp_path: Path,
                                                     fake_server: Any) -> None:
    """A ``@task`` factory's task holds no options of its own: the run keeps the ones it
    was given (``-T n=2``), so 'assay score' rebuilds the same task."""
    (tmp_path / "sums.py").write_text(textwrap.dedent("""\
        from assay import Sample, Task, task

        @task
        def sums(n: int = 5) -> Task:
            return Task(samples=[Sample(str(i), f"{i}+{i}?", str(2 * i)) for i in range(n)],
                        scorer="numeric")
        """))
    srv = fake_server(responder=lambda body: "Answer: 2")
    from assay.api import evaluate

    result = evaluate(str(tmp_path / "sums.py@sums"), model="openai/fake",
                      base_url=srv.base_url, n=2)
    store = Store()
    try:
        run = store.get_run(result.run_id)
        assert run["spec"]["task_options"] == {"n": 2}
        assert [r.sample_id for r in store.results(result.run_id)] == ["0", "1"]
        again = rescore(store, result.run_id)
        assert store.get_run(again.run_id)["spec"]["task_options"] == {"n": 2}
        assert again.rescored == 2 and again.metrics["numeric_match"]["value"] == 0.5
    finally:
        store.close()
