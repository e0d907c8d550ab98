"""Memory categories end to end: the engine drives a model over real HTTP (the fake
OpenAI-compatible server) through the official ``MemoryAPI_kv`` / ``MemoryAPI_rec_sum``.

The model (memory_model.MemoryModel) stores one note per prerequisite and answers a
question right only when the memory it reads back holds the notes of the whole chain of
its scenario. What the server saw shows that each scenario's chain ran once, in order,
each prerequisite starting from the memory the previous ones built (its system prompt
holds the core memory dump), and before any question of the scenario; the questions'
verdicts show they started from the chain's final snapshot. The runs use ``--no-cache``
where a re-sent request must be visible.
"""

from __future__ import annotations

import asyncio
import gc
import json
from pathlib import Path
from typing import Any

import official_oracle as oracle
import pytest
from memory_model import CORE_SIZE, MemoryModel, is_results, queries

from assay.engine.runner import Engine, RunSpec
from assay.store.sqlite import Store
from assay.tasks.bfcl.agentic.data import load_agentic
from assay.tasks.bfcl.agentic.prompts import AGENTIC_FORMAT_PROMPT, add_memory_instruction
from assay.tasks.bfcl.data import locate

pytestmark = pytest.mark.skipif(not oracle.available(), reason=oracle.NOT_INSTALLED)

SCENARIOS = {"finance": 3, "notetaker": 2}  # scenario -> questions run (short chains)


@pytest.fixture
def store(workspace: Path):
    s = Store()
    yield s
    s.close()


def picked(category: str, scenarios: dict[str, int] = SCENARIOS) -> list[str]:
    data = load_agentic(locate(), category)
    return [e["id"] for s, n in scenarios.items()
            for e in [e for e in data.entries if e["scenario"] == s][:n]]


def spec(base_url: str, category: str, mode: str, ids: list[str], **kw: Any) -> RunSpec:
    return RunSpec(task="bfcl", model="openai/fake", base_url=base_url,
                   task_options={"category": category, "mode": mode}, sample_ids=ids,
                   **kw)


def dump(backend: str, scenario: str, k: int) -> str:
    """The memory the fake model built with prerequisites ``0..k-1``, as the official
    backend dumps it into the system prompt."""
    if backend == "rec_sum":
        text = "".join(f"[{scenario}-{j}]" for j in range(k))
        return text or "There is no content in the memory at this point."
    core = {f"note_{j}": f"{scenario}-{j}" for j in range(min(k, CORE_SIZE))}
    return json.dumps(core, indent=4) if core else \
        "There is no content in the core memory at this point."


def memory_prompt(category: str, scenario: str, k: int) -> str:
    """The official memory system prompt over that memory (without what follows it)."""
    return add_memory_instruction([[{"role": "user", "content": ""}]], category, scenario,
                                  dump(category.removeprefix("memory_"), scenario, k))[0][0][
        "content"]


def classify(model: MemoryModel, body: dict[str, Any]) -> tuple[str, str, int, bool]:
    """(kind, scenario, prerequisite place or -1, opens a prerequisite) of a request."""
    turns = queries(body["messages"])
    first = turns[0]["content"]
    if first in model.prereq:
        scenario, k = model.prereq[first]
        opens = len(turns) == 1 and not is_results(body["messages"][-1])
        return "prereq", scenario, k, opens
    return "question", model.question[turns[-1]["content"]][0], -1, False


def run(store: Store, s: RunSpec) -> str:
    return asyncio.run(Engine(store, quiet=True).run(s))


@pytest.mark.parametrize(("category", "mode"), [("memory_kv", "fc"), ("memory_kv", "prompt"),
                                                ("memory_rec_sum", "fc"),
                                                ("memory_rec_sum", "prompt")])
def test_the_chain_runs_once_in_order_before_the_questions(fake_server, store, workspace,
                                                           category, mode) -> None:
    model = MemoryModel(category, mode)
    srv = fake_server(responder=model)
    ids = picked(category)
    rid = run(store, spec(srv.base_url, category, mode, ids, cache=False, max_connections=4))
    results = store.results(rid)
    assert sorted(r.sample_id for r in results) == sorted(ids)
    assert all(r.error is None for r in results), [r.error for r in results]
    assert [r.score_value("bfcl") for r in results] == [1.0] * len(ids), [
        r.scores["bfcl"]["explanation"] for r in results]

    data = load_agentic(locate(), category)
    seen = [classify(model, b) for b in srv.requests]
    for scenario in SCENARIOS:
        chain = data.prereqs[scenario]
        mine = [(i, c) for i, c in enumerate(seen) if c[1] == scenario]
        opened = [c[2] for _, c in mine if c[3]]
        assert opened == list(range(len(chain)))  # each prerequisite once, in chain order
        last_prereq = max(i for i, c in mine if c[0] == "prereq")
        first_question = min(i for i, c in mine if c[0] == "question")
        assert last_prereq < first_question
        # one store call per prerequisite plus one reply per user turn, nothing re-sent
        assert sum(c[0] == "prereq" for _, c in mine) == len(chain) + sum(
            len(e["question"]) for e in chain)
        # each prerequisite starts from the memory the ones before it flushed
        for i, c in mine:
            body = srv.requests[i]
            system = body["messages"][0]["content"]
            if c[3]:
                assert system.endswith(memory_prompt(category, scenario, c[2]))
                assert AGENTIC_FORMAT_PROMPT not in system
            if c[0] == "question":
                assert system.endswith(memory_prompt(category, scenario, len(chain)) + "\n\n"
                                       + AGENTIC_FORMAT_PROMPT)
        if mode == "fc":
            assert {t["function"]["name"] for t in srv.requests[mine[0][0]]["tools"]} == {
                d["name"] for d in chain[0]["function"]}
    # the question that ran its scenario's chain keeps the transcripts and the snapshot
    by_scenario: dict[str, list[Any]] = {}
    for r in results:
        by_scenario.setdefault(r.metadata["scenario"], []).append(r)
    for scenario, rs in by_scenario.items():
        memories = [r.outcome["metadata"]["memory"] for r in rs]
        ran = [m for m in memories if m["chain"] == "ran here"]
        assert len(ran) == 1 and {m["chain"] for m in memories} == {"ran here", "reused"}
        chain = data.prereqs[scenario]
        assert [p["id"] for p in ran[0]["prereqs"]] == [e["id"] for e in chain]
        assert [len(p["result"]) for p in ran[0]["prereqs"]] == [len(e["question"])
                                                                 for e in chain]
        assert len({m["snapshot_sha256"] for m in memories}) == 1
        n = len(chain)
        if category == "memory_rec_sum":
            assert ran[0]["snapshot"] == {"memory": dump("rec_sum", scenario, n)}
        else:
            assert ran[0]["snapshot"]["core_memory"] == json.loads(dump("kv", scenario, n))
            assert set(ran[0]["snapshot"]["archival_memory"]) == {
                f"note_{j}" for j in range(CORE_SIZE, n)}
    for r in results:
        meta = r.scores["bfcl"]["metadata"]
        assert meta["raw"] == r.outcome["metadata"]["agentic"] and meta["mode"] == mode
        assert len(meta["raw"]) == 1 and len(meta["raw"][0]) == 2  # read, then answer
    gc.collect()  # the task is gone: its snapshot folders too
    assert not list((workspace / "tmp").glob("bfcl-memory-*/*"))


def test_a_model_that_stores_nothing_answers_nothing(fake_server, store) -> None:
    """The break the test above guards against: without the chain's memory the same model
    does not know the answers."""

    class Forgetful(MemoryModel):
        def _store(self, scenario: str, k: int) -> Any:
            return "I will remember that."

    srv = fake_server(responder=Forgetful("memory_kv", "fc"))
    ids = picked("memory_kv", {"notetaker": 2})
    results = store.results(run(store, spec(srv.base_url, "memory_kv", "fc", ids)))
    assert [r.score_value("bfcl") for r in results] == [0.0, 0.0]
    assert {r.scores["bfcl"]["metadata"]["error_type"] for r in results} == {
        "agentic:answer_not_found"}


def test_resume_after_an_interruption_replays_the_chain_from_the_cache(fake_server,
                                                                       store) -> None:
    """Interrupted while the second question of a scenario waits on the model: the resumed
    session runs the chain again inside that question, every prerequisite call answered
    from the response cache (the server sees only the question's own requests), and the
    question starts from the same memory as the first one."""
    category = "memory_kv"
    model = MemoryModel(category, "fc")
    ids = picked(category, {"notetaker": 2})
    chain = load_agentic(locate(), category).prereqs["notetaker"]
    chain_requests = len(chain) + sum(len(e["question"]) for e in chain)
    srv = fake_server(responder=model, hold_after=chain_requests + 2)

    async def first_session() -> str:
        engine = Engine(store, quiet=True)
        task = asyncio.ensure_future(engine.run(spec(srv.base_url, category, "fc", ids,
                                                     max_connections=1)))
        for _ in range(2000):
            await asyncio.sleep(0.005)
            if len(srv.requests) > chain_requests + 2 and engine.current_run_id:
                break
        assert len(srv.requests) == chain_requests + 3  # the third question request is held
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert engine.current_run_id is not None
        return engine.current_run_id

    rid = asyncio.run(first_session())
    assert [r.sample_id for r in store.results(rid)] == ids[:1]
    assert store.get_run(rid)["status"] == "interrupted"
    before = len(srv.requests)
    srv.hold_after = None
    asyncio.run(Engine(store, quiet=True).run(None, resume=rid))
    again = [classify(model, b) for b in srv.requests[before:]]
    assert [c[0] for c in again] == ["question", "question"]  # the chain: all cache hits
    results = {r.sample_id: r for r in store.results(rid)}
    assert [results[i].score_value("bfcl") for i in ids] == [1.0, 1.0]
    memories = [results[i].outcome["metadata"]["memory"] for i in ids]
    assert [m["chain"] for m in memories] == ["ran here", "ran here"]
    assert memories[0]["snapshot"] == memories[1]["snapshot"]
    assert memories[0]["snapshot_sha256"] == memories[1]["snapshot_sha256"]
    # every call of the replayed chain was a cache hit; the question's two were not
    assert store.sample_totals(rid)["cache_hits"] == chain_requests


def test_a_failed_chain_fails_its_questions_once(fake_server, store) -> None:
    """A prerequisite whose model call fails (not retryable) makes every question of the
    scenario an error naming it, and the chain is not tried again in the session; the
    other scenario is not affected."""
    category = "memory_kv"

    class Broken(MemoryModel):
        def __call__(self, body: dict[str, Any]) -> Any:
            first = queries(body["messages"])[0]["content"]
            if self.prereq.get(first) == ("notetaker", 1):
                return {"status": 400, "error": "this prompt is not allowed"}
            return super().__call__(body)

    model = Broken(category, "fc")
    srv = fake_server(responder=model)
    ids = picked(category, {"notetaker": 3, "finance": 1})
    rid = run(store, spec(srv.base_url, category, "fc", ids, cache=False, max_connections=4))
    results = {r.sample_id: r for r in store.results(rid)}
    for i in ids[:3]:
        assert results[i].error is not None
        assert "memory prerequisites of 'notetaker' failed" in results[i].error
        assert "this prompt is not allowed" in results[i].error
    assert results[ids[3]].error is None and results[ids[3]].score_value("bfcl") == 1.0
    opened = [c[2] for c in (classify(model, b) for b in srv.requests)
              if c[1] == "notetaker" and c[3]]
    assert opened == [0, 1]  # prerequisite 1 failed once; nothing after it, no retry


def test_the_prerequisite_conversations_are_exported_as_officially(fake_server, store,
                                                                   workspace) -> None:
    """The official harness writes each backend's prerequisite results beside its memory
    results (``BFCL_v4_memory_<backend>_prereq_result.json``); so does the export, from the
    question that ran each chain."""
    from assay.reports.render import write_reports

    srv = fake_server(responder=MemoryModel("memory_kv", "fc"))
    ids = picked("memory_kv", {"notetaker": 2})
    rid = run(store, spec(srv.base_url, "memory_kv", "fc", ids))
    paths = write_reports(store, rid)
    pre = Path(paths["bfcl_result:BFCL_v4_memory_kv_prereq_result.json"])
    assert pre.parent == Path(paths["bfcl_result:BFCL_v4_memory_kv_result.json"]).parent
    assert pre.parent.parts[-3:] == ("agentic", "memory", "kv")
    rows = [json.loads(x) for x in pre.read_text().splitlines()]
    chain = load_agentic(locate(), "memory_kv").prereqs["notetaker"]
    assert [r["id"] for r in rows] == [e["id"] for e in chain]
    assert all(isinstance(r["result"], list) and r["result"] for r in rows)
