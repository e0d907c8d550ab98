"""``--batch``: a run in rounds. Each round runs the samples not done; a model call the cache
cannot answer is kept for the model's provider batch and its sample put off (:class:`Deferred`);
the round's batches are submitted (their ids stored with the run), awaited, and their answers
written to the response cache, so the next round's samples read them there. A call whose line
the provider failed is that sample's error; ``--resume`` resubmits it. The process may exit
while a batch runs: ``--resume`` collects it."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from assay.core.atomic import atomic_write_text
from assay.core.types import Message, ToolSpec
from assay.errors import ConfigError, ModelCallError
from assay.models.openai_batch import client_for


class Deferred(BaseException):
    """A sample's call went to this round's batch: the sample runs again next round (a
    BaseException, so a task's or agent's ``except Exception`` does not swallow it)."""


class BatchRound:
    """One model's calls for its provider batch, this round; and what the last batch said:
    the keys it answered (each counted once as a paid call, at the batch price) and failed."""

    def __init__(self, store: Any) -> None:
        self.store = store
        #: the call states reading this model's answers (the model under test and a judge
        #: of the same model have one each)
        self.shared: list[Any] = []
        self.requests: dict[str, dict[str, Any]] = {}
        self.agent: Any = None
        self._answers: dict[str, str] = {}
        self.failed: dict[str, ModelCallError] = {}

    def defer(self, agent: Any, key: str, messages: list[Message], tools: list[ToolSpec] | None,
              response_schema: dict[str, Any] | None, params: dict[str, Any]) -> None:
        """Keep the call for the batch and put its sample off; a call the last batch failed
        is the sample's error. An agent that cannot build a batch line is called directly."""
        if key in self.failed:
            raise self.failed[key]
        build = getattr(agent, "request_body", None)
        if build is None:
            return
        self.agent = agent
        self.requests[key] = build(messages, tools=tools, response_schema=response_schema,
                                   **params)
        raise Deferred

    def answer(self, key: str) -> str | None:
        """The reply the batch gave ``key``, the first time it is read (the call it paid
        for; later reads are the cache's); ``None`` otherwise."""
        return self._answers.pop(key, None)

    def unread(self, read: list[tuple[str, str]]) -> None:
        """Answers read by a sample put off to the next round: its next run pays for them."""
        self._answers.update(read)

    def take(self, answers: dict[str, Any], model_id: str) -> None:
        """A batch's answers: replies into the cache, failures kept for their samples."""
        for key, answer in answers.items():
            if isinstance(answer, ModelCallError):
                self.failed[key] = answer
            else:
                self._answers[key] = json.dumps(answer.to_dict())
                self.store.cache_put(key, model_id, self._answers[key])
                for shared in self.shared:
                    shared.cached_keys.add(key)


async def submit(store: Any, run_id: str, model_id: str,
                 batch: BatchRound) -> dict[str, Any] | None:
    """The round's calls of one model as a provider batch; its record (stored by the caller)
    and its keys in the run folder, so a later process collects it."""
    if not batch.requests:
        return None
    client = client_for(batch.agent)
    try:
        batch_id = await client.submit(list(batch.requests.items()),
                                       metadata={"assay_run": run_id})
    finally:
        await client.aclose()
    keys = store.runs_dir / run_id / "batches" / f"{batch_id}.json"
    keys.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(keys, json.dumps(sorted(batch.requests)))
    record = {"id": batch_id, "model": model_id, "endpoint": batch.agent.display_url,
              "requests": len(batch.requests), "status": "submitted"}
    batch.requests.clear()
    return record


async def collect(store: Any, run_id: str, record: dict[str, Any], agent: Any,
                  batch: BatchRound | None, poll: float, quiet: bool) -> None:
    """Wait for one stored batch and hand its answers to ``batch``; a line it did not
    answer (a failed, expired or cancelled batch) is its sample's error."""
    if batch is None or not callable(getattr(agent, "request_body", None)):
        raise ConfigError(f"batch {record['id']} was sent to {record['model']}, which this "
                          "run no longer calls; resume with the model it started with")
    client = client_for(agent)

    def said(b: dict[str, Any]) -> None:
        if not quiet:
            counts = b.get("request_counts") or {}
            print(f"batch {b.get('id')}: {b.get('status')} ({counts.get('completed', 0)}/"
                  f"{counts.get('total', record['requests'])} done)", file=sys.stderr)
    why = f"batch {record['id']} ended without answering this request"
    try:
        final = await client.wait(record["id"], initial=poll, max_wait=600.0, on_poll=said)
        try:
            answers = await client.results(final)
        except ModelCallError as e:  # a failed batch answered nothing: each line says why
            if final.get("status") != "failed":
                raise
            answers, why = {}, str(e)
    finally:
        await client.aclose()
    keys = json.loads(Path(store.runs_dir / run_id / "batches" / f"{record['id']}.json")
                      .read_text(encoding="utf-8"))
    for key in keys:
        answers.setdefault(key, ModelCallError(why, transient=True))
    record.update(status=final.get("status"), counts=final.get("request_counts"))
    batch.take(answers, record["model"])
