"""Model calls as the engine makes them: cached, rate-limited and retried.

Each sample gets a :class:`CallContext` wrapping its agent. The context checks
the response cache, takes a slot from the endpoint's semaphore, retries
transient failures with exponential backoff and jitter (honouring
``Retry-After``) and tallies usage for the sample.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
import time
from dataclasses import dataclass
from typing import Any

from assay.core.redact import (
    content_secrets,
    scrub,
    scrub_known,
    scrub_known_tree,
    secrets_version,
)
from assay.core.types import Message, Reply, ToolSpec, Usage
from assay.engine.ratelimit import RateLimiter
from assay.errors import ModelCallError


@dataclass(slots=True)
class RetryPolicy:
    """How transient failures are retried.

    Attempt ``k`` (0-based) waits ``min(max_wait, initial * 2**k)`` scaled by a
    random factor in [0.5, 1] (jitter), or the server's ``Retry-After`` when it
    asks for longer.
    """

    max_retries: int = 5
    initial: float = 1.0
    max_wait: float = 60.0

    def wait(self, attempt: int, retry_after: float | None, rng: random.Random) -> float:
        """Seconds to sleep before retry number ``attempt + 1``."""
        backoff = min(self.max_wait, self.initial * (2**attempt)) * rng.uniform(0.5, 1.0)
        if retry_after is not None:
            return max(retry_after, backoff * 0.1)
        return backoff


def cache_key(
    model_identity: str,
    messages: list[Message],
    tools: list[ToolSpec] | None,
    response_schema: dict[str, Any] | None,
    params: dict[str, Any],
    epoch: int,
) -> str:
    """Stable key over everything that determines a reply (model, input, tools, params, epoch)."""
    payload = [
        model_identity,
        [m.to_dict() for m in messages],
        [t.to_openai() for t in tools] if tools else None,
        response_schema,
        params,
        epoch,
    ]
    raw = json.dumps(payload, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(raw.encode()).hexdigest()


class CallShared:
    """State shared by every sample of a run: store, limiter, policy, cache switch."""

    def __init__(self, store: Any, *, max_connections: int, policy: RetryPolicy,
                 use_cache: bool, seed: int | None, model_id: str = "",
                 max_reply_bytes: int | None = None, rpm: float | None = None) -> None:
        self.store = store
        #: spaces call starts to at most ``rpm`` per minute (``None``: no limit)
        self.limiter = RateLimiter(rpm)
        #: replies with more text than this become the sample's error (any agent, not only HTTP)
        self.max_reply_bytes = max_reply_bytes
        self.semaphore = asyncio.Semaphore(max_connections)
        self.policy = policy
        self.use_cache = use_cache
        self.rng = random.Random(seed)
        #: keys already in the cache for this model (read once, kept up to date)
        self.cached_keys: set[str] = store.cache_keys(model_id) if use_cache else set()
        self._secrets = (secrets_version(), content_secrets())

    def secrets(self) -> list[str]:
        """The secrets the run knows (read once per run, again when one is added)."""
        if self._secrets[0] != secrets_version():
            self._secrets = (secrets_version(), content_secrets())
        return self._secrets[1]


def mask_reply(reply: Reply, secrets: list[str]) -> None:
    """Mask the run's known secrets in a reply, in place, before anything reads it.

    A server that echoes the credentials it received, or an agent that answers with an
    environment's key, must not get them into the transcript, the scores (a scorer's
    normalised copy of the answer, cut short, would escape a later scrub) or the cache.
    No correct answer contains the run's own API key, so no score can change.
    """
    msg = reply.message
    if msg.content and any(s in msg.content for s in secrets):
        msg.content = scrub_known(msg.content, secrets)
    for tc in msg.tool_calls or ():
        tc.name = scrub_known(tc.name, secrets) if tc.name else tc.name
        tc.arguments = scrub_known_tree(tc.arguments, secrets)


MAX_CALL_EVENTS = 200
"""Model calls kept per sample in its call log (later ones are counted, not kept)."""

_MAX_EVENT_TEXT = 300


def _round(value: float) -> float:
    return round(value, 4)


class CallContext:
    """The agent as one sample sees it: same ``generate`` protocol, plus bookkeeping."""

    __slots__ = ("_agent", "_shared", "_identity", "_cacheable", "epoch", "usage", "calls",
                 "cache_hits", "model_id", "text_only", "model_s", "wait_s", "roles",
                 "params", "run_state", "events", "events_dropped", "_t0")

    def __init__(self, agent: Any, shared: CallShared, identity: str, epoch: int, *,
                 params: dict[str, Any] | None = None,
                 run_state: dict[str, Any] | None = None) -> None:
        self._agent = agent
        self._shared = shared
        self._identity = identity
        self._cacheable = getattr(agent, "cacheable", False)
        self.model_id = agent.model_id
        #: the agent reads and writes text only (no native tools): benchmarks fall back
        #: to their text protocol
        self.text_only = getattr(agent, "text_only", False)
        self.epoch = epoch
        self.usage = Usage()
        self.calls = 0
        self.cache_hits = 0
        #: seconds the model spent on this sample's calls, and seconds they waited first
        #: (for a slot under --max-connections, or in the model's own queue)
        self.model_s = 0.0
        self.wait_s = 0.0
        #: the other models of a task that needs more than the one under test (an
        #: examiner, a judge): role name -> its own context, with its own cache and usage
        self.roles: dict[str, CallContext] = {}
        #: the run's generation parameters (``--param``, ``--seed``): a task's
        #: ``generation_params(ctx)`` lays them over its defaults
        self.params: dict[str, Any] = dict(params or {})
        #: what the samples of one run share (one dict per run, e.g. BFCL's memory
        #: chains): the task keeps nothing of a run itself
        self.run_state: dict[str, Any] = {} if run_state is None else run_state
        #: one event per model call (see :meth:`_event`), at most :data:`MAX_CALL_EVENTS`
        self.events: list[dict[str, Any]] = []
        self.events_dropped = 0
        self._t0 = time.perf_counter()

    @property
    def agent(self) -> Any:
        """The agent this context wraps (e.g. to hand a Python agent its working folder)."""
        return self._agent

    async def generate(
        self,
        messages: list[Message],
        *,
        tools: list[ToolSpec] | None = None,
        response_schema: dict[str, Any] | None = None,
        **params: Any,
    ) -> Reply:
        """Cached, limited, retried call to the underlying agent."""
        shared = self._shared
        key = None
        if self._cacheable and shared.use_cache:  # --no-cache: no key to compute
            key = cache_key(self._identity, messages, tools, response_schema, params, self.epoch)
            if key in shared.cached_keys:
                hit = shared.store.cache_get(key)
                if hit is not None:
                    reply = Reply.from_dict(json.loads(hit))
                    reply.cached = True
                    self.calls += 1
                    self.cache_hits += 1
                    self.usage.add(reply.usage)
                    self._event(time.perf_counter(), 0.0, 0.0, reply=reply, params=params)
                    return reply
        policy = shared.policy
        attempt = 0
        first_asked = time.perf_counter()
        errors: list[str] = []
        waited = 0.0
        while True:
            asked = time.perf_counter()
            try:
                if shared.limiter.interval:
                    await shared.limiter.wait()
                async with shared.semaphore:
                    started = time.perf_counter()
                    try:
                        reply = await self._agent.generate(
                            messages, tools=tools, response_schema=response_schema, **params
                        )
                    finally:
                        wall = time.perf_counter() - started
                        self.wait_s += started - asked
                        waited += started - asked
                # the model reports its own service time where it queues calls itself
                # (the embedded model); the rest of the call's wall time was a wait
                service = reply.latency_s if 0 < reply.latency_s <= wall else wall
                self.model_s += service
                self.wait_s += wall - service
                waited += wall - service
                break
            except ModelCallError as e:
                errors.append(scrub(str(e))[:_MAX_EVENT_TEXT])  # as the error column is
                if not e.transient or attempt >= policy.max_retries:
                    self._event(first_asked, time.perf_counter() - first_asked, waited,
                                params=params, errors=errors)
                    if attempt:
                        raise ModelCallError(
                            f"{e} (gave up after {attempt + 1} attempts)", transient=False,
                            status=e.status,
                        ) from e
                    raise
                await asyncio.sleep(policy.wait(attempt, e.retry_after, shared.rng))
                attempt += 1
        self.calls += 1
        self.usage.add(reply.usage)
        self._event(first_asked, time.perf_counter() - first_asked, waited, reply=reply,
                    params=params, errors=errors)
        secrets = shared.secrets()
        if secrets:
            mask_reply(reply, secrets)
        cap = shared.max_reply_bytes
        content = reply.message.content
        if cap and content and len(content) > cap // 4:  # only then can it pass the cap
            size = len(content.encode("utf-8", "replace"))
            if size > cap:
                raise ModelCallError(
                    f"reply too large ({size:,} bytes; the cap is {cap:,} bytes, raise it "
                    "with --max-reply-bytes)", transient=False)
        if key is not None and shared.use_cache:
            shared.store.cache_put(key, self.model_id, json.dumps(reply.to_dict()))
            shared.cached_keys.add(key)
        return reply

    def _event(self, asked: float, duration: float, waited: float, *,
               reply: Reply | None = None, params: dict[str, Any] | None = None,
               errors: list[str] | None = None) -> None:
        """Log one model call: when it was asked for (seconds since the sample began), how
        long it took in all and how much of that was waiting, its tokens, whether the
        cache answered it, the retries it needed and their errors, and the parameters it
        was sent with where they differ from the previous call's."""
        if len(self.events) >= MAX_CALL_EVENTS:
            self.events_dropped += 1
            return
        event: dict[str, Any] = {"start_s": _round(asked - self._t0),
                                 "duration_s": _round(duration), "wait_s": _round(waited)}
        if reply is not None:
            event.update(input_tokens=reply.usage.input_tokens,
                         output_tokens=reply.usage.output_tokens, cached=bool(reply.cached))
        else:
            event["failed"] = True
        if errors:
            event["retries"] = len(errors) - (1 if reply is None else 0)
            event["errors"] = errors[-3:]
        if params and self._params_changed(params):
            event["params"] = {k: v for k, v in params.items()
                               if isinstance(v, (str, int, float, bool, type(None)))}
        self.events.append(event)

    def _params_changed(self, params: dict[str, Any]) -> bool:
        for e in reversed(self.events):
            if "params" in e:
                return e["params"] != {k: v for k, v in params.items()
                                       if isinstance(v, (str, int, float, bool, type(None)))}
        return True

    def call_log(self) -> dict[str, Any] | None:
        """This sample's model calls, its roles' too (an examiner's, a judge's), as stored
        with the sample (``{"calls": [...], "dropped": n}``, each role's calls marked with
        its name); None when no call was made."""
        calls = [dict(e, role="subject") for e in self.events]
        dropped = self.events_dropped
        for name, role in self.roles.items():
            calls += [dict(e, role=name) for e in role.events]
            dropped += role.events_dropped
        if not calls:
            return None
        calls.sort(key=lambda e: e["start_s"])
        return {"calls": calls, "dropped": dropped} if dropped else {"calls": calls}

