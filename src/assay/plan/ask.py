"""The planner model: one JSON answer under a schema (``None`` if not one JSON object: the
caller keeps its rules' answer); with a ``store``, answers are cached so replanning is free."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from assay.core.types import Message, Reply
from assay.engine.calls import cache_key, call_identity
from assay.errors import ModelCallError
from assay.models.base import get_subject
from assay.models.pricing import Pricer


class Asker:
    """Ask the planner model for JSON; ``ask(prompt, schema) -> dict | None``."""

    def __init__(self, spec: str, *, base_url: str | None = None, max_tokens: int = 200,
                 timeout: float = 120.0, store: Any = None) -> None:
        self.spec = spec
        #: the workspace store whose response cache keeps the answers (``None``: none)
        self.store = store
        self.base_url = base_url
        self.max_tokens = max_tokens
        self.timeout = timeout
        self.calls: list[dict[str, Any]] = []
        self._subject: Any = None
        self._pricer: Pricer | None = None
        self._loop: Any = None

    def _run(self, coro: Any) -> Any:
        """Run ``coro`` on this asker's one loop (a provider's pooled connections stay valid)."""
        if self._loop is None:
            self._loop = asyncio.new_event_loop()
        return self._loop.run_until_complete(coro)

    def _model(self) -> Any:
        if self._subject is None:
            self._subject = get_subject(self.spec, base_url=self.base_url, timeout=self.timeout)
            self._pricer = Pricer(self._subject)
        return self._subject.session()

    def __call__(self, prompt: str, schema: dict[str, Any]) -> dict[str, Any] | None:
        model = self._model()
        started = time.perf_counter()
        record: dict[str, Any] = {"model": self.spec, "prompt": prompt}
        messages = [Message("user", prompt)]
        params = {"temperature": 0, "max_tokens": self.max_tokens}
        key = hit = None
        if self.store is not None and getattr(model, "cacheable", False):
            # the engine's response cache: planning the same request again asks nothing
            identity = call_identity(self._subject)
            key = cache_key(identity, messages, None, schema, params, 0)
            hit = self.store.cache_get(key)
        if hit is not None:
            reply = Reply.from_dict(json.loads(hit))
            record["cached"] = True
        else:
            try:
                reply = self._run(model.generate(messages, response_schema=schema, **params))
            except ModelCallError as e:
                record.update(error=str(e), reply=None,
                              seconds=round(time.perf_counter() - started, 3))
                self.calls.append(record)
                return None
            if key is not None:
                self.store.cache_put(key, model.model_id, json.dumps(reply.to_dict()))
                self.store.commit()
            # what the planner's call took and cost (a cached answer costs nothing)
            record.update(input_tokens=reply.usage.input_tokens,
                          output_tokens=reply.usage.output_tokens,
                          cost_usd=self._pricer.cost(reply.usage) if self._pricer else None)
        text = reply.message.content if isinstance(reply.message.content, str) else ""
        record.update(reply=text, seconds=round(time.perf_counter() - started, 3))
        self.calls.append(record)
        try:
            data = json.loads((text or "").strip(), strict=False)
        except ValueError:
            return None
        return data if isinstance(data, dict) else None

    def close(self) -> None:
        """Release the model (loaded weights, connections)."""
        if self._subject is not None:
            self._run(self._subject.aclose())
            self._subject = None
        if self._loop is not None:
            self._loop.close()
            self._loop = None
