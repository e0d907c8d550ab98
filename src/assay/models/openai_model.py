"""``openai/<model>``: any OpenAI-compatible ``/chat/completions`` endpoint, over one pooled aiohttp
session (the SDK costs ~1.7 ms CPU per request against 0.2 ms; tests check the wire format). No
retries here: :class:`ModelCallError` carries ``transient`` and ``retry_after``."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
from email.utils import parsedate_to_datetime
from typing import Any

from assay.core.redact import parse_endpoint, scrub
from assay.core.types import (
    Continuation,
    Likelihood,
    Message,
    Reply,
    ToolCall,
    ToolSpec,
    Usage,
    content_text,
)
from assay.errors import ConfigError, ModelCallError
from assay.models.base import DEFAULT_MAX_REPLY_BYTES
from assay.models.loglikelihood import split_pair
from assay.models.pricing import runs_here
from assay.models.registry import ModelCapabilities, Provider

#: ``response_format`` is sent, but a server may ignore it: no constrained decoding
CAPABILITIES = ModelCapabilities(native_tools=True, constrained_decoding=False, logprobs=True)

_TRANSIENT_STATUS = {408, 409, 425, 429, 500, 502, 503, 504, 520, 522, 524, 529}


def message_to_openai(m: Message) -> dict[str, Any]:
    d: dict[str, Any] = {"role": m.role, "content": m.content}
    if m.tool_calls:
        d["tool_calls"] = [
            {"id": tc.id or f"call_{i}", "type": "function",
             "function": {"name": tc.name, "arguments": json.dumps(tc.arguments)}}
            for i, tc in enumerate(m.tool_calls)]
    if m.tool_call_id is not None:
        d["tool_call_id"] = m.tool_call_id
    return d


def parse_retry_after(headers: Any) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds or HTTP date)."""
    ms = headers.get("retry-after-ms")
    if ms:
        with contextlib.suppress(ValueError):
            return float(ms) / 1000.0
    ra = headers.get("retry-after")
    if not ra:
        return None
    with contextlib.suppress(ValueError):
        return float(ra)
    try:
        return max(0.0, parsedate_to_datetime(ra).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


def parse_completion(data: Any) -> Reply:
    """A chat.completion body as a :class:`Reply` (no latency). A missing
    ``choices[0].message`` is a transient error (a flaky server), a malformed one not."""
    try:
        msg = data["choices"][0]["message"]
    except (KeyError, IndexError, TypeError) as e:
        raise ModelCallError("endpoint returned a body without choices[0].message: "
                             f"{scrub(str(data)[:4096])[:200]}", transient=True) from e
    if not isinstance(msg, dict):
        raise ModelCallError(f"choices[0].message is a {type(msg).__name__}, not an object",
                             transient=False)
    calls = None
    raw_calls = msg.get("tool_calls")
    if raw_calls:
        if not isinstance(raw_calls, list):
            raw_calls = [raw_calls]
        calls = []
        for c in raw_calls:
            fn = (c.get("function") if isinstance(c, dict) else None) or {}
            if not isinstance(fn, dict):
                fn = {}
            args_text = fn.get("arguments") or "{}"
            try:
                args = json.loads(args_text) if isinstance(args_text, str) else args_text
            except (json.JSONDecodeError, RecursionError, ValueError):
                args = None
            if not isinstance(args, dict):
                # Keep the model's text: a malformed call is the model's mistake, to be scored.
                args = {"__unparsed_arguments__": args_text if isinstance(args_text, str)
                        else json.dumps(args_text, default=str)}
            name = fn.get("name")
            calls.append(ToolCall(name if isinstance(name, str) else "", args,
                                  c.get("id") if isinstance(c, dict) else None))
    usage = data.get("usage") if isinstance(data, dict) else None
    usage = usage if isinstance(usage, dict) else {}
    thought = msg.get("reasoning_content", msg.get("reasoning"))  # DeepSeek, vLLM; OpenRouter
    finish = data["choices"][0].get("finish_reason") if isinstance(
        data["choices"][0], dict) else None
    return Reply(Message("assistant", content_text(msg.get("content")), calls or None,
                         reasoning=thought if isinstance(thought, str) and thought else None),
                 Usage(_count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens")),
                       _detail(usage, "prompt_tokens_details", "cached_tokens"),
                       _detail(usage, "completion_tokens_details", "reasoning_tokens")),
                 finish_reason=finish if isinstance(finish, str) else None)


def _detail(usage: dict[str, Any], group: str, name: str) -> int | None:
    """``usage[group][name]`` as a count; ``None`` where the provider does not say."""
    details = usage.get(group)
    value = details.get(name) if isinstance(details, dict) else None
    return None if value is None else _count(value)


def reasoning_params(host: str, effort: str | None, budget: int | None) -> dict[str, Any]:
    """``--reasoning-effort`` and ``--reasoning-tokens`` as the provider at ``host`` takes them:
    OpenRouter's ``reasoning`` object, Anthropic's ``thinking`` budget, else OpenAI's
    ``reasoning_effort`` (vLLM, SGLang, Gemini, DeepSeek take it too), where a token budget has
    no field: one line says so."""
    if host.endswith("openrouter.ai"):
        return {"reasoning": {"max_tokens": budget} if budget is not None else {"effort": effort}}
    if host.endswith("anthropic.com"):
        if budget is None:
            raise ConfigError("Anthropic takes a thinking budget, not an effort: give "
                              "--reasoning-tokens N")
        return {"thinking": {"type": "enabled", "budget_tokens": budget}}
    if budget is not None:
        raise ConfigError(f"{host} takes no reasoning-token budget over the OpenAI API; give "
                          "--reasoning-effort low|medium|high")
    return {"reasoning_effort": effort}


def _count(value: Any) -> int:
    """A token count from a usage field (garbage is 0)."""
    try:
        n = int(value or 0)
    except (TypeError, ValueError, OverflowError):
        return 0
    return n if 0 <= n < 1 << 62 else 0


def _encode(body: dict[str, Any]) -> bytes:
    """The request body as JSON, refusing NaN and infinity."""
    try:
        return json.dumps(body, allow_nan=False).encode()
    except ValueError as e:
        raise ModelCallError(f"request not sent: {e} (check --temperature and --param)",
                             transient=False) from e


def echo_logprobs(data: Any, where: str) -> dict[str, list[Any]]:
    """``choices[0].logprobs`` of a ``/completions`` reply with the prompt echoed; a one-line
    error when the endpoint gives none (it cannot score log-likelihood)."""
    try:
        lp = data["choices"][0]["logprobs"]
        lists = {k: list(lp[k]) for k in ("tokens", "token_logprobs", "text_offset")}
        lists["top_logprobs"] = list(lp.get("top_logprobs") or [None] * len(lists["tokens"]))
    except (KeyError, IndexError, TypeError) as e:
        raise ModelCallError(f"{where} returned no prompt log-probs from /completions with "
                             "echo and logprobs; log-likelihood needs a server that gives "
                             "them (vLLM, SGLang, a llama.cpp server)", transient=False) from e
    if not lists["tokens"] or len({len(v) for v in lists.values()}) != 1:
        raise ModelCallError(f"{where} returned prompt log-probs of uneven lengths",
                             transient=False)
    return lists


def likelihood_from_echo(lp: dict[str, list[Any]], start: int, end: int,
                         where: str) -> Likelihood:
    """The tokens starting in ``[start, end)`` of the echoed prompt: their summed log-prob,
    and whether each was its position's top token."""
    total, greedy, n = 0.0, True, 0
    for token, value, offset, top in zip(lp["tokens"], lp["token_logprobs"], lp["text_offset"],
                                         lp["top_logprobs"], strict=True):
        if not start <= offset < end:
            continue
        if value is None:
            raise ModelCallError(f"{where} gave no log-prob for a prompt token at character "
                                 f"{offset}; the first token cannot be scored", transient=False)
        total += float(value)
        n += 1
        if top:
            greedy = greedy and max(top, key=top.get) == token
    if n == 0 and end > start:
        raise ModelCallError(f"{where} echoed no token of the continuation (text offsets end "
                             f"before character {start})", transient=False)
    return Likelihood(total, greedy, n, sum(1 for o in lp["text_offset"] if o < end))


#: the sentence whose next token checks an endpoint's prompt log-probs
ECHO_PROBE = "The capital of France is"


async def check_echo(echo: Any, where: str) -> None:
    """An endpoint's echoed prompt log-probs must be the same log-probs it gives a generated
    token: the token generated after :data:`ECHO_PROBE`, then echoed as the prompt's last,
    gets the same log-prob both ways. llama-cpp-python's server (0.3.36 and before) reads
    each echoed token's log-prob one position late for models with no BOS token."""
    generated = await echo(ECHO_PROBE, False)
    token, value = generated["tokens"][0], generated["token_logprobs"][0]
    echoed = await echo(ECHO_PROBE + token)
    last = [v for t, v, o in zip(echoed["tokens"], echoed["token_logprobs"],
                                 echoed["text_offset"], strict=True)
            if o == len(ECHO_PROBE)]
    if value is None or not last or last[0] is None or abs(float(last[0]) - float(value)) > 1e-3:
        raise ModelCallError(
            f"{where} gives prompt log-probs that disagree with its own generated ones "
            f"({token!r} after {ECHO_PROBE!r}: {value} generated, "
            f"{last[0] if last else None} echoed), so its log-likelihoods would be wrong; "
            "llama-cpp-python's server shifts them by a token for models without a BOS "
            "token: serve the model with 'python -m assay.testing.llama_server', vLLM or "
            "SGLang", transient=False)


class OpenAIModel:
    """``base_url`` defaults to ``$OPENAI_BASE_URL``, then OpenAI; ``api_key`` to
    ``$OPENAI_API_KEY`` (sent, never stored or logged). ``max_connections``: 0 is no cap
    (the engine's semaphore bounds concurrency; the pool must not be a smaller bound)."""

    cacheable = True
    capabilities = CAPABILITIES

    def __init__(self, model: str, *, base_url: str | None = None, api_key: str | None = None,
                 timeout: float = 120.0, max_connections: int = 0,
                 max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES) -> None:
        self.model = model
        self.model_id = f"openai/{model}"
        self.base_url = (base_url or os.environ.get("OPENAI_BASE_URL")
                         or "https://api.openai.com/v1").strip()
        self._endpoint = parse_endpoint(self.base_url)
        self._api_key = api_key or os.environ.get("OPENAI_API_KEY") or ""
        self.timeout = timeout
        self.max_connections = max_connections
        self.max_reply_bytes = max_reply_bytes
        self._session: Any = None
        self._url = self._endpoint.url_for("/chat/completions")
        self._completions_url = self._endpoint.url_for("/completions")
        self._echo_state: tuple[Any, Any, asyncio.Semaphore] | None = None
        self.display_url = self._endpoint.display  # no credentials, no query values
        self._secrets = [*self._endpoint.secrets, *([self._api_key] if self._api_key else [])]

    def describe(self) -> dict[str, Any]:
        """No secrets; the shown URL masks query values, so a query adds ``endpoint_id``."""
        ident = self._endpoint.identity
        return {"model": self.model_id, "base_url": self.display_url,
                **({"endpoint_id": ident} if ident else {})}

    async def preflight(self) -> None:
        """Fail fast, with one clear line, when nothing listens at ``base_url``."""
        ep = self._endpoint
        try:
            _, writer = await asyncio.wait_for(asyncio.open_connection(ep.host, ep.port),
                                               timeout=min(self.timeout, 15.0))
        except (OSError, asyncio.TimeoutError, OverflowError) as e:
            reason = ("timed out" if isinstance(e, asyncio.TimeoutError)
                      else scrub(getattr(e, "strerror", None) or str(e), self._secrets))
            raise ConfigError(f"cannot reach model endpoint {self.display_url} ({reason})",
                              hint="start the server or set --base-url / OPENAI_BASE_URL") from e
        writer.close()

    def _get_session(self) -> Any:
        if self._session is None or self._session.closed:
            import aiohttp  # startup

            headers = {"Content-Type": "application/json"}
            # user:password@ in the URL is sent as basic auth by aiohttp; a bearer
            # header beside it would conflict, so the URL's credentials win.
            if self._api_key and not self._endpoint.has_userinfo:
                headers["Authorization"] = f"Bearer {self._api_key}"
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=self.max_connections, limit_per_host=0),
                headers=headers, timeout=aiohttp.ClientTimeout(total=self.timeout))
        return self._session

    def price_ref(self) -> tuple[str, str] | None:
        """How its calls are priced: nothing where the endpoint runs here (self-hosted),
        else this name at this URL (genai-prices finds the provider from the URL)."""
        return None if runs_here(self.base_url) else (self.model, self.base_url)

    def request_body(self, messages: list[Message], *, tools: list[ToolSpec] | None = None,
                     response_schema: dict[str, Any] | None = None,
                     **params: Any) -> dict[str, Any]:
        """The ``/chat/completions`` body of a call (as sent, or as a batch's line)."""
        body: dict[str, Any] = {"model": self.model,
                                "messages": [message_to_openai(m) for m in messages]}
        if tools:
            body["tools"] = [t.to_openai() for t in tools]
        if response_schema is not None:
            body["response_format"] = {"type": "json_schema", "json_schema": {
                "name": "response", "schema": response_schema}}
        effort, budget = params.pop("reasoning_effort", None), params.pop("reasoning_tokens", None)
        body.update(params)
        if effort is not None or budget is not None:
            body.update(reasoning_params(self._endpoint.host, effort, budget))
        return body

    async def generate(self, messages: list[Message], *, tools: list[ToolSpec] | None = None,
                       response_schema: dict[str, Any] | None = None, **params: Any) -> Reply:
        body = self.request_body(messages, tools=tools, response_schema=response_schema,
                                 **params)
        start = time.perf_counter()
        reply = parse_completion(await self._post(self._url, body))
        reply.latency_s = time.perf_counter() - start
        return reply

    async def _post(self, url: str, body: dict[str, Any]) -> Any:
        """``body`` posted to ``url``; the reply's JSON. Every failure is a
        :class:`ModelCallError` (transient where a retry may help), with no secret in it."""
        import aiohttp  # startup

        session = self._get_session()
        try:
            async with session.post(url, data=_encode(body)) as resp:
                raw = await self._read_capped(resp)
                status = resp.status
                if status >= 400:
                    # scrubbed before it is cut: a secret cut in half would not match
                    detail = scrub(raw[:4096].decode("utf-8", "replace"), self._secrets)[:300]
                    raise ModelCallError(f"HTTP {status} from {self.display_url}: {detail}",
                                         transient=status in _TRANSIENT_STATUS,
                                         retry_after=parse_retry_after(resp.headers),
                                         status=status)
        except ModelCallError:
            raise
        except asyncio.TimeoutError as e:
            raise ModelCallError(f"request to {self.display_url} timed out after "
                                 f"{self.timeout:g}s", transient=True) from e
        except aiohttp.ClientConnectorError as e:
            reason = scrub(str(e.os_error or e), self._secrets)
            raise ModelCallError(f"cannot connect to {self.display_url} ({reason}); is the "
                                 "server running?", transient=True) from e
        except aiohttp.ClientError as e:
            reason = scrub(str(e), self._secrets)
            raise ModelCallError(f"connection error talking to {self.display_url}: {reason}",
                                 transient=True) from e
        try:
            return json.loads(raw)
        except (ValueError, RecursionError) as e:  # bad JSON, bad UTF-8, huge ints, deep nesting
            head = scrub(raw[:4096].decode("utf-8", "replace"), self._secrets)[:120]
            raise ModelCallError(f"endpoint {self.display_url} returned malformed JSON: "
                                 f"{head!r}", transient=True) from e

    async def loglikelihood(self, requests: list[Continuation]) -> list[Likelihood]:
        """Each continuation scored by ``/completions`` with ``echo`` and ``logprobs``
        (vLLM, SGLang, llama.cpp servers): the prompt is context + continuation, and the
        continuation's tokens are those starting at or after the context's end (the
        context's trailing whitespace moved over first, as lm-eval). The endpoint's
        prompt log-probs are checked once first (:func:`check_echo`)."""
        await self._echo_checked()
        return list(await asyncio.gather(*(self._likelihood(split_pair(r.context, r.continuation))
                                           for r in requests)))

    async def loglikelihood_rolling(self, texts: list[str]) -> list[Likelihood]:
        """Each text's log-likelihood from its echoed prompt: every token after the first
        (which an endpoint gives no log-prob); ``tokens`` counts those scored."""
        await self._echo_checked()
        return list(await asyncio.gather(*(self._likelihood(("", t), start=1) for t in texts)))

    async def _echo(self, prompt: str, echo: bool = True) -> Any:
        async with self._per_loop()[1]:
            try:
                data = await self._post(self._completions_url, {
                    "model": self.model, "prompt": prompt, "max_tokens": 1, "temperature": 0,
                    "echo": echo, "logprobs": 1})
            except ModelCallError as e:
                if e.status not in (404, 405):
                    raise
                raise ModelCallError(f"{self.display_url} does not serve /completions (HTTP "
                                     f"{e.status}); log-likelihood needs a server that does, "
                                     "with echo and logprobs (vLLM, SGLang, a llama.cpp "
                                     "server)", transient=False, status=e.status) from e
        return echo_logprobs(data, self.display_url)

    async def _likelihood(self, pair: tuple[str, str], start: int | None = None) -> Likelihood:
        context, continuation = pair
        lp = await self._echo(context + continuation)
        return likelihood_from_echo(lp, len(context) if start is None else start,
                                    len(context + continuation), self.display_url)

    def _per_loop(self) -> tuple[Any, asyncio.Semaphore]:
        """This event loop's endpoint check (a task every caller awaits) and request slots
        (log-likelihood requests in flight at once: a server queues the rest anyway)."""
        loop = asyncio.get_running_loop()
        if self._echo_state is None or self._echo_state[0] is not loop:
            self._echo_state = (loop, asyncio.ensure_future(
                check_echo(self._echo, self.display_url)), asyncio.Semaphore(16))
        return self._echo_state[1], self._echo_state[2]

    async def _echo_checked(self) -> None:
        await self._per_loop()[0]

    async def _read_capped(self, resp: Any) -> bytes:
        cap = self.max_reply_bytes
        length = resp.content_length
        if length is not None:
            if length > cap:
                raise ModelCallError(self._too_big(f"{length:,} bytes"), transient=False)
            if not resp.headers.get("Content-Encoding"):  # compressed: may inflate past the cap
                return await resp.read()  # the common case: a declared, acceptable length
        chunks: list[bytes] = []
        size = 0
        async for chunk in resp.content.iter_chunked(1 << 16):
            size += len(chunk)
            if size > cap:
                raise ModelCallError(self._too_big(f"more than {cap:,} bytes"), transient=False)
            chunks.append(chunk)
        return b"".join(chunks)

    def _too_big(self, size: str) -> str:
        return (f"reply from {self.display_url} is too large ({size}; the cap is "
                f"{self.max_reply_bytes:,} bytes, raise it with --max-reply-bytes)")

    async def aclose(self) -> None:
        if self._session is not None and not self._session.closed:
            await self._session.close()
        self._session = None


def _build(name: str, *, base_url: str | None = None, api_key: str | None = None,
           timeout: float = 120.0, max_reply_bytes: int | None = None,
           **options: Any) -> OpenAIModel:
    return OpenAIModel(name, base_url=base_url, api_key=api_key, timeout=timeout,
                       max_reply_bytes=max_reply_bytes or DEFAULT_MAX_REPLY_BYTES)


PROVIDER = Provider(
    build=_build, capabilities=CAPABILITIES,
    forms=(("openai/<model>", "any OpenAI-compatible endpoint (--base-url)"),))
