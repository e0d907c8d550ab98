"""Model calls as the engine makes them: each sample's :class:`CallContext` checks the
response cache, takes a slot under the run's limits, retries transient failures with
backoff and jitter (honouring ``Retry-After``) and tallies the sample's usage."""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import json
import random
import time
from dataclasses import dataclass
from typing import Any

from assay.core.redact import content_secrets, scrub, scrub_known, scrub_known_tree, secrets_version
from assay.core.types import Continuation, Likelihood, Message, Reply, ToolSpec, Usage
from assay.engine.ratelimit import RateLimiter
from assay.errors import ModelCallError
from assay.models.pricing import Pricer, load_pricing


@dataclass(slots=True)
class RetryPolicy:
    """Attempt ``k`` (0-based) waits ``min(max_wait, initial * 2**k)`` times a jitter in
    [0.5, 1], or the server's ``Retry-After`` when it asks for longer."""

    max_retries: int = 5
    initial: float = 1.0
    max_wait: float = 60.0

    def wait(self, attempt: int, retry_after: float | None, rng: random.Random) -> float:
        """Seconds to sleep before retry number ``attempt + 1``."""
        backoff = min(self.max_wait, self.initial * (2**attempt)) * rng.uniform(0.5, 1.0)
        if retry_after is not None:
            return max(retry_after, backoff * 0.1)
        return backoff


def call_identity(subject: Any) -> str:
    """What a model's cache keys start with: its identity as it describes itself (no secrets);
    every place that calls a model (a run, a Ray worker, re-judging, planning) keys alike."""
    return json.dumps(subject.describe(), sort_keys=True)


def cache_key(model_identity: str, messages: list[Message], tools: list[ToolSpec] | None,
              response_schema: dict[str, Any] | None, params: dict[str, Any], epoch: int) -> str:
    """Stable key over everything that determines a reply (model, input, tools, params, epoch)."""
    payload = [model_identity, [m.to_dict() for m in messages],
               [t.to_openai() for t in tools] if tools else None, response_schema, params, epoch]
    raw = json.dumps(payload, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(raw.encode()).hexdigest()


def likelihood_key(model_identity: str, kind: str, item: tuple[str, str]) -> str:
    """The cache key of one log-likelihood answer (``kind``: ``pair`` or ``rolling``); no
    epoch: the answer is the model's, whatever the sampling."""
    raw = json.dumps([model_identity, "loglikelihood", kind, *item], ensure_ascii=False)
    return hashlib.sha256(raw.encode()).hexdigest()


#: log-likelihood requests sent to a model in one call at most (a batch across samples)
MAX_LIKELIHOOD_BATCH = 256


class CallShared:
    """State shared by every sample of a run: store, limiter, policy, cache switch."""

    def __init__(self, store: Any, *, max_connections: int, policy: RetryPolicy,
                 use_cache: bool, seed: int | None, model_id: str = "",
                 max_reply_bytes: int | None = None, rpm: float | None = None,
                 pricer: Pricer | None = None,
                 reasoning_tags: list[list[str]] | None = None) -> None:
        self.store, self.policy, self.use_cache = store, policy, use_cache
        #: the model's price (``None``: unknown, so its calls' cost is too)
        self.pricer = pricer
        #: the marker pairs that wrap a reply's reasoning in its text (``<think>…</think>``)
        self.reasoning_tags = [tuple(t) for t in (reasoning_tags or DEFAULT_REASONING_TAGS)]
        #: ``--batch``: the model's calls this round, sent as one provider batch (``None``: direct)
        self.batch: Any = None
        #: spaces call starts to at most ``rpm`` per minute (``None``: no limit)
        self.limiter = RateLimiter(rpm)
        #: replies with more text than this become the sample's error (any agent, not only HTTP)
        self.max_reply_bytes = max_reply_bytes
        self.semaphore = asyncio.Semaphore(max_connections)
        self.rng = random.Random(seed)
        #: keys already in the cache for this model (read once, kept up to date)
        self.cached_keys: set[str] = store.cache_keys(model_id) if use_cache else set()
        self._secrets = (secrets_version(), content_secrets())
        #: log-likelihood requests waiting for the model: (agent, kind, items, future)
        self._pending: list[tuple[Any, str, list[tuple[str, str]], asyncio.Future[Any]]] = []
        self._draining: asyncio.Task[None] | None = None

    @classmethod
    def for_spec(cls, store: Any, spec: Any, model: Any, **overrides: Any) -> CallShared:
        """The state of one model's calls under a run's limits (one cache per model);
        ``overrides``: what differs where it runs (a Ray worker's share of connections)."""
        settings: dict[str, Any] = dict(
            max_connections=spec.max_connections,
            policy=RetryPolicy(max_retries=spec.max_retries, initial=spec.retry_initial),
            use_cache=spec.cache, seed=spec.seed, model_id=model.model_id,
            max_reply_bytes=spec.max_reply_bytes, rpm=spec.rpm,
            pricer=Pricer(model, load_pricing(spec.pricing)), reasoning_tags=spec.reasoning_tags)
        return cls(store, **{**settings, **overrides})

    async def likelihoods(self, agent: Any, kind: str,
                          items: list[tuple[str, str]]) -> list[Likelihood]:
        """``items`` answered in a batch with whatever other samples asked meanwhile: one
        drain sends what is waiting, deduplicated, while new requests wait for the next."""
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending.append((agent, kind, items, future))
        if self._draining is None or self._draining.done():
            self._draining = asyncio.ensure_future(self._drain())
        return await future

    async def _drain(self) -> None:
        while self._pending:
            await asyncio.sleep(0)  # the samples woken with this one add theirs first
            agent, kind = self._pending[0][0], self._pending[0][1]
            taken, size = [], 0
            for entry in list(self._pending):
                if entry[1] != kind or (taken and size + len(entry[2]) > MAX_LIKELIHOOD_BATCH):
                    continue
                taken.append(entry)
                size += len(entry[2])
                self._pending.remove(entry)
            unique = list(dict.fromkeys(item for e in taken for item in e[2]))
            try:
                answers = dict(zip(unique, await self._likelihood_call(agent, kind, unique),
                                   strict=True))
            except Exception as e:  # each waiting sample gets the error as its own
                for *_, future in taken:
                    if not future.done():
                        future.set_exception(e)
                continue
            for _, _, items, future in taken:
                if not future.done():  # a sample that timed out no longer waits
                    future.set_result([answers[item] for item in items])

    async def _likelihood_call(self, agent: Any, kind: str,
                               items: list[tuple[str, str]]) -> list[Likelihood]:
        """One model call under the run's limits, retried like a reply."""
        attempt = 0
        while True:
            try:
                if self.limiter.interval:
                    await self.limiter.wait()
                async with self.semaphore:
                    if kind == "rolling":
                        return list(await agent.loglikelihood_rolling([t for _, t in items]))
                    return list(await agent.loglikelihood([Continuation(*i) for i in items]))
            except ModelCallError as e:
                if not e.transient or attempt >= self.policy.max_retries:
                    if attempt:
                        raise ModelCallError(f"{e} (gave up after {attempt + 1} attempts)",
                                             transient=False, status=e.status) from e
                    raise
                await asyncio.sleep(self.policy.wait(attempt, e.retry_after, self.rng))
                attempt += 1

    def secrets(self) -> list[str]:
        """The secrets the run knows (read once per run, again when one is added)."""
        if self._secrets[0] != secrets_version():
            self._secrets = (secrets_version(), content_secrets())
        return self._secrets[1]


def mask_reply(reply: Reply, secrets: list[str]) -> None:
    """Mask the run's known secrets in a reply, in place, before anything reads it: an echoed
    key must not reach the transcript, the scores (a scorer's cut copy would escape a later
    scrub) or the cache. No correct answer holds the run's own key, so no score changes."""
    msg = reply.message
    if msg.content and any(s in msg.content for s in secrets):
        msg.content = scrub_known(msg.content, secrets)
    for tc in msg.tool_calls or ():
        tc.name = scrub_known(tc.name, secrets) if tc.name else tc.name
        tc.arguments = scrub_known_tree(tc.arguments, secrets)


#: the markers that wrap a reply's reasoning in its text by default (``--reasoning-tags``)
DEFAULT_REASONING_TAGS = [["<think>", "</think>"]]


def split_reasoning(message: Message, tags: list[tuple[str, ...]]) -> bool:
    """Move a reply's reasoning blocks out of its text into ``message.reasoning`` (after any
    the provider sent apart, ``reasoning_content``), in place: the scorer reads the rest. A
    block opened and never closed is all reasoning (a reply cut off while thinking): True."""
    text = message.content
    if not text:
        return False
    found = [message.reasoning] if message.reasoning else []
    for opening, closing in tags:
        while opening in text:
            before, _, after = text.partition(opening)
            inside, closed, rest = after.partition(closing)
            found.append(inside.strip())
            text = before + rest if closed else before
            if not closed:
                message.reasoning, message.content = "\n\n".join(found), text.strip()
                return True
        if closing in text and not found:  # the opening marker was in the prompt (Qwen3, R1)
            inside, _, text = text.partition(closing)
            found.append(inside.strip())
    if len(found) > (1 if message.reasoning else 0):
        message.reasoning = "\n\n".join(f for f in found if f)
        message.content = text.strip()
    return False


def _finished(reply: Reply) -> Reply:
    """The reply, unless it ended inside its reasoning: then no answer was given, and the
    sample's error says so (it is not scored as a wrong answer)."""
    msg = reply.message
    cut = reply.finish_reason == "length" and not (msg.content or "").strip() and not (
        msg.tool_calls) and bool(msg.reasoning)
    if cut:
        used = reply.usage.reasoning_tokens
        raise ModelCallError(
            "reply truncated inside its reasoning"
            + (f" ({used:,} reasoning tokens)" if used is not None else "")
            + ": no answer to score; raise --param max_tokens or lower --reasoning-effort",
            transient=False)
    return reply


#: model calls kept per sample in its call log (later ones are counted, not kept)
MAX_CALL_EVENTS = 200

_MAX_EVENT_TEXT = 300


def _scalars(params: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in params.items() if isinstance(v, (str, int, float, bool, type(None)))}


class CallContext:
    """The agent as one sample sees it: same ``generate`` protocol, plus bookkeeping."""

    __slots__ = ("_agent", "_shared", "_identity", "_cacheable", "epoch", "usage", "calls",
                 "cache_hits", "model_id", "text_only", "model_s", "wait_s", "roles",
                 "params", "run_state", "events", "events_dropped", "_t0", "billed", "cost",
                 "meter", "batch_read")

    def __init__(self, agent: Any, shared: CallShared, identity: str, epoch: int, *,
                 params: dict[str, Any] | None = None,
                 run_state: dict[str, Any] | None = None) -> None:
        self._agent, self._shared, self._identity = agent, shared, identity
        self._cacheable = getattr(agent, "cacheable", False)
        self.model_id = agent.model_id
        #: the agent has no native tools: benchmarks fall back to their text protocol
        self.text_only = getattr(agent, "text_only", False)
        self.epoch = epoch
        self.usage = Usage()
        self.calls = self.cache_hits = 0
        #: seconds the model worked on this sample's calls, and waited first (slot or queue)
        self.model_s = self.wait_s = 0.0
        #: the task's other models (an examiner, a judge): role name -> its own context
        self.roles: dict[str, CallContext] = {}
        #: the run's ``--param``/``--seed``; ``generation_params(ctx)`` lays them over defaults
        self.params: dict[str, Any] = dict(params or {})
        #: what the samples of one run share (BFCL's memory chains): tasks keep no run state
        self.run_state: dict[str, Any] = {} if run_state is None else run_state
        #: one event per model call (see :meth:`_event`), at most :data:`MAX_CALL_EVENTS`
        self.events: list[dict[str, Any]] = []
        self.events_dropped = 0
        self._t0 = time.perf_counter()
        #: the tokens and USD of the calls paid for (not cache hits); cost None: price unknown
        self.billed = Usage()
        self.cost: float | None = 0.0
        #: called with each paid call's (cost, tokens): the sample's limits (SampleMeter)
        self.meter: Any = None
        #: the batch answers this context read (and paid for): given back if its sample is
        #: put off to the next round, where it reads and pays for them again
        self.batch_read: list[tuple[str, str]] = []

    @property
    def agent(self) -> Any:
        """The agent this context wraps (e.g. to hand a Python agent its working folder)."""
        return self._agent

    async def generate(self, messages: list[Message], *, tools: list[ToolSpec] | None = None,
                       response_schema: dict[str, Any] | None = None, **params: Any) -> Reply:
        """Cached, limited, retried call to the underlying agent."""
        shared = self._shared
        key = None
        if self._cacheable and shared.use_cache:  # --no-cache: no key to compute
            key = cache_key(self._identity, messages, tools, response_schema, params, self.epoch)
            if key in shared.cached_keys:
                # an answer of this run's batch is the call it paid for, not a cache hit
                billed = shared.batch.answer(key) if shared.batch is not None else None
                hit = billed or shared.store.cache_get(key)
                if inspect.isawaitable(hit):  # a cache on another process (Ray's workers)
                    hit = await hit
                if hit is not None:
                    reply = Reply.from_dict(json.loads(hit))
                    reply.cached = not billed
                    self.calls += 1
                    self.cache_hits += not billed
                    self.usage.add(reply.usage)
                    self._event(time.perf_counter(), 0.0, 0.0, reply=reply, params=params)
                    if billed is not None:
                        self.batch_read.append((key, billed))
                        self._bill(reply.usage, batch=True)
                    return _finished(reply)
        if shared.batch is not None and key is not None:  # --batch: this round's batch answers
            shared.batch.defer(self._agent, key, messages, tools, response_schema, params)
        policy, attempt, waited = shared.policy, 0, 0.0
        first_asked = time.perf_counter()
        errors: list[str] = []
        while True:
            asked = time.perf_counter()
            try:
                if shared.limiter.interval:
                    await shared.limiter.wait()
                async with shared.semaphore:
                    started = time.perf_counter()
                    try:
                        reply = await self._agent.generate(
                            messages, tools=tools, response_schema=response_schema, **params)
                    finally:
                        wall = time.perf_counter() - started
                        self.wait_s += started - asked
                        waited += started - asked
                # service time as the model reports it where it queues calls; the rest waited
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
                        raise ModelCallError(f"{e} (gave up after {attempt + 1} attempts)",
                                             transient=False, status=e.status) from e
                    raise
                await asyncio.sleep(policy.wait(attempt, e.retry_after, shared.rng))
                attempt += 1
        self.calls += 1
        self.usage.add(reply.usage)
        self._event(first_asked, time.perf_counter() - first_asked, waited, reply=reply,
                    params=params, errors=errors)
        if split_reasoning(reply.message, shared.reasoning_tags):
            reply.finish_reason = "length"  # its reasoning never closed: cut off while thinking
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
        self._bill(reply.usage)
        return _finished(reply)

    def unread_batch(self) -> None:
        """Its sample was put off (``--batch``): the batch answers it read go back, to be
        read and paid for by the sample's next run."""
        if self.batch_read:
            self._shared.batch.unread(self.batch_read)
            self.batch_read = []

    def _bill(self, usage: Usage, batch: bool = False) -> None:
        """A call the run paid for: its cost (``None`` once any price is unknown) and tokens,
        to the sample's meter (limits) as well."""
        pricer = self._shared.pricer
        cost = pricer.cost(usage, batch) if pricer is not None else None
        self.billed.add(usage)
        self.cost = None if cost is None or self.cost is None else self.cost + cost
        if self.meter is not None:
            self.meter(cost, usage.input_tokens + usage.output_tokens)

    def usage_record(self) -> dict[str, Any]:
        """This context's paid-for usage and cost as a sample stores it (``cost_usd`` None:
        a price unknown; the reasoning and cached counts only where the provider gave them)."""
        u = self.billed
        out: dict[str, Any] = {"input_tokens": u.input_tokens, "output_tokens": u.output_tokens,
                               "cost_usd": None if self.cost is None else round(self.cost, 10)}
        if u.cached_input_tokens is not None:
            out["cached_input_tokens"] = u.cached_input_tokens
        if u.reasoning_tokens is not None:
            out["reasoning_tokens"] = u.reasoning_tokens
        return out

    async def loglikelihood(self, requests: list[Continuation]) -> list[Likelihood]:
        """Each continuation's log-likelihood: cached, batched with other samples' requests
        (:meth:`CallShared.likelihoods`), limited and retried like :meth:`generate`."""
        return await self._likelihoods("pair", [(r.context, r.continuation) for r in requests])

    async def loglikelihood_rolling(self, texts: list[str]) -> list[Likelihood]:
        """Each text's log-likelihood (for perplexity), as :meth:`loglikelihood`."""
        return await self._likelihoods("rolling", [("", t) for t in texts])

    async def _likelihoods(self, kind: str, items: list[tuple[str, str]]) -> list[Likelihood]:
        shared = self._shared
        if not callable(getattr(self._agent, "loglikelihood", None)):
            raise ModelCallError(f"{self.model_id} cannot score log-likelihood (it gives no "
                                 "log-probs); use a model that does, or --mc generate",
                                 transient=False)
        asked = time.perf_counter()
        out: list[Likelihood | None] = [None] * len(items)
        keys: list[str | None] = [None] * len(items)
        if self._cacheable and shared.use_cache:
            for i, item in enumerate(items):
                key = keys[i] = likelihood_key(self._identity, kind, item)
                if key in shared.cached_keys:
                    hit = shared.store.cache_get(key)
                    if inspect.isawaitable(hit):  # a cache on another process (Ray's workers)
                        hit = await hit
                    if hit is not None:
                        out[i] = Likelihood.from_list(json.loads(hit))
        todo = [i for i, r in enumerate(out) if r is None]
        if todo:
            try:
                answers = await shared.likelihoods(self._agent, kind, [items[i] for i in todo])
            except ModelCallError as e:
                self._event(asked, time.perf_counter() - asked, 0.0, errors=[scrub(str(e))[
                    :_MAX_EVENT_TEXT]])
                raise
            for i, answer in zip(todo, answers, strict=True):
                out[i] = answer
                if keys[i] is not None:
                    shared.store.cache_put(keys[i], self.model_id, json.dumps(answer.to_list()))
                    shared.cached_keys.add(keys[i])  # type: ignore[arg-type]
        # tokens as a cached reply counts its own: what the answers took to compute
        used = Usage(sum(a.input_tokens for a in out if a is not None), 0)
        self.calls += 1
        self.cache_hits += not todo
        self.usage.add(used)
        if todo:
            self._bill(Usage(sum(out[i].input_tokens for i in todo), 0))  # type: ignore[union-attr]
        duration = time.perf_counter() - asked
        self.model_s += duration
        self._event(asked, duration, 0.0, reply=Reply(Message("assistant", ""), used,
                                                      cached=not todo))
        return out  # type: ignore[return-value]

    def _event(self, asked: float, duration: float, waited: float, *, reply: Reply | None = None,
               params: dict[str, Any] | None = None, errors: list[str] | None = None) -> None:
        """Log one model call: its start (since the sample began), duration and wait, tokens,
        cache hit, retries and their errors, and its params where they changed."""
        if len(self.events) >= MAX_CALL_EVENTS:
            self.events_dropped += 1
            return
        event: dict[str, Any] = {"start_s": round(asked - self._t0, 4),
                                 "duration_s": round(duration, 4), "wait_s": round(waited, 4)}
        if reply is not None:
            u = reply.usage
            event.update(input_tokens=u.input_tokens, output_tokens=u.output_tokens,
                         cached=bool(reply.cached))
            if u.cached_input_tokens is not None:
                event["cached_input_tokens"] = u.cached_input_tokens
            if u.reasoning_tokens is not None:
                event["reasoning_tokens"] = u.reasoning_tokens
        else:
            event["failed"] = True
        if errors:
            event["retries"] = len(errors) - (1 if reply is None else 0)
            event["errors"] = errors[-3:]
        if params and next((e["params"] for e in reversed(self.events) if "params" in e),
                           None) != _scalars(params):
            event["params"] = _scalars(params)
        self.events.append(event)

    def call_log(self) -> dict[str, Any] | None:
        """This sample's calls and its roles' (each marked with its name), as stored:
        ``{"calls": [...], "dropped": n}``; None when no call was made."""
        calls = [dict(e, role="subject") for e in self.events]
        dropped = self.events_dropped
        for name, role in self.roles.items():
            calls += [dict(e, role=name) for e in role.events]
            dropped += role.events_dropped
        if not calls:
            return None
        calls.sort(key=lambda e: e["start_s"])
        return {"calls": calls, "dropped": dropped} if dropped else {"calls": calls}

