"""One model served at several endpoints (replicas behind different URLs): each call goes
to the healthy endpoint with the fewest calls in flight; an endpoint that fails its health
check, or keeps failing (connection errors, timeouts, 5xx), is taken out for a while and
its calls go to the others. The run's retries (``CallContext``) carry a failed call to
another endpoint; a rate limit (429) is the provider's word, not a sign of ill health."""

from __future__ import annotations

import sys
import time
from typing import Any

from assay.core.types import Continuation, Likelihood, Message, Reply, ToolSpec
from assay.errors import AssayError, ModelCallError

#: failures in a row after which an endpoint is taken out, and for how long (seconds)
FAILURES_OUT = 3
OUT_S = 30.0


class EndpointPool:
    """Calls spread over ``models`` (one per endpoint, the same model at each)."""

    def __init__(self, models: list[Any]) -> None:
        self.models = models
        self.model_id = models[0].model_id
        n = len(models)
        self.in_flight, self.calls, self.failures = [0] * n, [0] * n, [0] * n
        #: ``time.monotonic()`` before which an endpoint gets no call (0: in the pool)
        self.out_until = [0.0] * n

    def describe(self) -> dict[str, Any]:
        """The first endpoint's identity (what the cache and fingerprint key on: replicas
        serve one model) and every endpoint, as shown (no credentials)."""
        return {**self.models[0].describe(),
                "endpoints": [m.describe().get("base_url") for m in self.models]}

    async def preflight(self) -> None:
        """Each endpoint checked; one that does not answer is taken out (said on stderr),
        all of them down is the run's one-line error."""
        problems: list[AssayError] = []
        for i, model in enumerate(self.models):
            check = getattr(model, "preflight", None)
            try:
                if check is not None:
                    await check()
            except AssayError as e:
                problems.append(e)
                self.out_until[i] = time.monotonic() + OUT_S
        if len(problems) == len(self.models):
            raise problems[0]
        for e in problems:
            print(f"warning: {e.problem}; its calls go to the other endpoints", file=sys.stderr)

    def _pick(self) -> int:
        now = time.monotonic()
        up = [i for i, until in enumerate(self.out_until) if until <= now]
        if not up:
            raise ModelCallError(f"every endpoint of {self.model_id} is out after failing "
                                 f"{FAILURES_OUT} times in a row; retrying", transient=True)
        return min(up, key=lambda i: (self.in_flight[i], self.calls[i]))

    async def generate(self, messages: list[Message], *, tools: list[ToolSpec] | None = None,
                       response_schema: dict[str, Any] | None = None, **params: Any) -> Reply:
        return await self._call("generate", messages, tools=tools,
                                response_schema=response_schema, **params)

    async def loglikelihood(self, requests: list[Continuation]) -> list[Likelihood]:
        return await self._call("loglikelihood", requests)

    async def loglikelihood_rolling(self, texts: list[str]) -> list[Likelihood]:
        return await self._call("loglikelihood_rolling", texts)

    async def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        i = self._pick()
        self.in_flight[i] += 1
        self.calls[i] += 1
        try:
            reply = await getattr(self.models[i], method)(*args, **kwargs)
        except ModelCallError as e:
            if e.transient and e.status != 429:
                self.failures[i] += 1
                if self.failures[i] >= FAILURES_OUT:
                    self.failures[i] = 0
                    self.out_until[i] = time.monotonic() + OUT_S
            raise
        finally:
            self.in_flight[i] -= 1
        self.failures[i] = 0
        return reply

    async def aclose(self) -> None:
        for model in self.models:
            close = getattr(model, "aclose", None)
            if close is not None:
                await close()
