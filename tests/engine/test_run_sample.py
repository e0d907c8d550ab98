"""One sample through ``run_sample``: score reaches the judge and never the model under
test, the sample timeout covers solve and score, every role's usage is recorded, and the
typed result goes into the store as it comes back."""

from __future__ import annotations

import asyncio
from typing import Any

from assay.core.spec import RunSpec
from assay.core.types import Message, Outcome, Sample, Score
from assay.engine.calls import CallShared, RetryPolicy
from assay.engine.runner import Engine
from assay.engine.sample import RunCalls, SampleJob, run_sample
from assay.models.base import get_subject
from assay.store.sqlite import Store
from assay.tasks.base import LoadedData, RoleModel, Task


class Judged(Task):
    """Two samples; the subject answers in solve, the judge (a role) grades in score."""

    def __init__(self, judge_url: str, *, sneaky: bool = False, slow: float = 0.0) -> None:
        super().__init__()
        self.judge_url, self.sneaky, self.slow = judge_url, sneaky, slow

    def read(self) -> LoadedData:
        return LoadedData([Sample(str(i), f"Say {i}", str(i)) for i in range(2)], {}, {})

    def roles(self, model: str) -> dict[str, RoleModel]:
        return {"judge": RoleModel("openai/judge", self.judge_url)}

    async def solve(self, sample: Sample, agent: Any) -> Outcome:
        if self.slow:  # no model call: the solve is done at once, the score is slow
            return Outcome(output=str(sample.target))
        reply = await agent.generate(self.build_messages(sample))
        return Outcome(output=reply.message.content or "")

    async def score(self, sample: Sample, outcome: Outcome, ctx: Any) -> list[Score]:
        if self.slow:
            await asyncio.sleep(self.slow)
        asker = ctx if self.sneaky else ctx.roles["judge"]
        verdict = await asker.generate([Message("user", f"Is {outcome.output} right?")])
        return [Score("score", float("yes" in (verdict.message.content or "")),
                      outcome.output, "")]


def _run(task: Task, spec: RunSpec) -> tuple[dict[str, Any], list[Any]]:
    store = Store()
    try:
        run_id = asyncio.run(Engine(store, quiet=True).run(spec, task=task))
        return store.get_run(run_id), store.results(run_id)
    finally:
        store.close()


def test_score_gets_the_judge_and_its_usage_is_recorded(workspace, fake_server) -> None:
    subject = fake_server(responder=lambda body: body["messages"][-1]["content"].split()[-1])
    judge = fake_server(responder=lambda body: "yes")
    run, results = _run(Judged(judge.base_url),
                        RunSpec(task="judged", model="openai/fake", base_url=subject.base_url))
    assert [r.score_value() for r in results] == [1.0, 1.0]
    assert len(subject.requests) == 2 and len(judge.requests) == 2
    for r in results:  # the judge's tokens per sample, as the subject's are in their columns
        used = r.outcome["role_usage"]["judge"]
        assert used["calls"] == 1 and used["input_tokens"] > 0 and used["output_tokens"] > 0
        assert r.input_tokens > 0
    total = run["stats"]["role_calls"]["judge"]
    assert total["calls"] == 2
    assert total["input_tokens"] == sum(r.outcome["role_usage"]["judge"]["input_tokens"]
                                        for r in results)


def test_score_cannot_call_the_model_under_test(workspace, fake_server) -> None:
    subject = fake_server(responder=lambda body: "0")
    judge = fake_server(responder=lambda body: "yes")
    _, results = _run(Judged(judge.base_url, sneaky=True),
                      RunSpec(task="judged", model="openai/fake", base_url=subject.base_url))
    assert len(subject.requests) == 2  # the solves' calls, none from score
    assert all("score calls no model under test" in (r.error or "") for r in results)
    assert [r.output for r in results] == ["0", "0"]  # what the solve gave is kept


def test_the_sample_timeout_covers_scoring(workspace, fake_server) -> None:
    judge = fake_server(responder=lambda body: "yes")
    _, results = _run(Judged(judge.base_url, slow=60.0),
                      RunSpec(task="judged", model="openai/fake", base_url=judge.base_url,
                              sample_timeout=1.0))
    assert [r.error for r in results] == ["sample timed out after 1s"] * 2
    assert [r.output for r in results] == ["0", "1"]  # the finished solve is kept
    assert not judge.requests


def test_run_sample_returns_the_typed_record_the_store_keeps(workspace, fake_server) -> None:
    subject = fake_server(responder=lambda body: "1")
    judge = fake_server(responder=lambda body: "yes")
    task = Judged(judge.base_url)
    sample = task.load().samples[1]
    store = Store()

    async def one() -> Any:
        def shared(model_id: str) -> CallShared:
            return CallShared(store, max_connections=2, policy=RetryPolicy(max_retries=0),
                              use_cache=False, seed=None, model_id=model_id)
        subj = get_subject("openai/fake", base_url=subject.base_url)
        role = get_subject("openai/judge", base_url=judge.base_url)
        try:
            run = RunCalls(shared(subj.model_id), "subject",
                           {"judge": (role, "judge", shared(role.model_id))})
            return await run_sample(task, sample, subj, SampleJob(seq=1, epoch=0, run=run))
        finally:
            await subj.aclose()
            await role.aclose()

    try:
        result = asyncio.run(one())
        assert (result.sample_id, result.seq, result.output, result.error) == ("1", 1, "1", None)
        assert result.scores["score"]["value"] == 1.0 and result.prediction == "1"
        run_id = store.create_run(task="judged", spec={}, model={}, dataset={},
                                  package_version="test")
        result.run_id = run_id
        store.record(run_id, result)
        (back,) = store.iter_results(run_id)
        read_back = ("sample_id", "epoch", "input", "target", "output", "prediction", "scores",
                     "error", "latency_s", "input_tokens", "output_tokens", "transcript",
                     "metadata", "model_s", "wait_s", "sample", "outcome")
        assert {f: getattr(back, f) for f in read_back} == {
            f: getattr(result, f) for f in read_back}
        assert result.outcome["role_usage"]["judge"]["calls"] == 1
    finally:
        store.close()


def test_the_engine_runs_its_samples_through_the_executor_it_is_given(workspace,
                                                                      fake_server) -> None:
    """The seam a Ray executor plugs into: the engine hands the work to its executor and
    commits what comes back, in any order; the store keeps the dataset's order."""
    subject = fake_server(responder=lambda body: body["messages"][-1]["content"].split()[-1])
    judge = fake_server(responder=lambda body: "yes")
    handed: list[list[tuple[int, str, int]]] = []

    class Backwards:
        async def execute(self, task, subj, work, run, commit, workers) -> None:
            handed.append([(seq, s.id, epoch) for seq, s, epoch in work])
            for seq, s, epoch in reversed(work):
                commit(await run_sample(task, s, subj, SampleJob(seq, epoch, run)))

    store = Store()
    try:
        spec = RunSpec(task="judged", model="openai/fake", base_url=subject.base_url, epochs=2)
        run_id = asyncio.run(Engine(store, quiet=True, executor=Backwards()).run(
            spec, task=Judged(judge.base_url)))
        results = store.results(run_id)
        status = store.get_run(run_id)["status"]
    finally:
        store.close()
    assert handed == [[(0, "0", 0), (1, "1", 0), (0, "0", 1), (1, "1", 1)]]
    assert status == "finished"
    assert [(r.sample_id, r.epoch) for r in results] == [("0", 0), ("0", 1), ("1", 0), ("1", 1)]
    assert all(r.score_value() == 1.0 for r in results)
