"""``openai/<model>``: any OpenAI-compatible chat-completions endpoint.

OpenAI, vLLM, Ollama, llama.cpp server, LM Studio and friends all speak the
same ``POST /chat/completions`` wire format. We speak it directly over one
pooled aiohttp session rather than through the ``openai`` SDK: measured on a
2-core machine at 100 concurrent requests, the SDK (even on its aiohttp
transport) spends about 1.7 ms of CPU per request against 0.2 ms for a plain
aiohttp post, which is the difference between 2.9 s and 0.7 s for 1,000
requests (``bench/runner_overhead.py``). The wire format is checked against
the official SDK in the tests.

Retries are not done here: a failed call raises :class:`ModelCallError` with
``transient`` and ``retry_after`` set, and the engine's retry policy decides.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

from assay.core.redact import redact_url
from assay.core.types import Message, Reply, ToolCall, ToolSpec, Usage
from assay.errors import ModelCallError

_TRANSIENT_STATUS = {408, 409, 425, 429, 500, 502, 503, 504, 520, 522, 524, 529}


def message_to_openai(m: Message) -> dict[str, Any]:
    """Our :class:`Message` in the OpenAI chat wire format."""
    d: dict[str, Any] = {"role": m.role, "content": m.content}
    if m.tool_calls:
        d["tool_calls"] = [
            {
                "id": tc.id or f"call_{i}",
                "type": "function",
                "function": {"name": tc.name, "arguments": json.dumps(tc.arguments)},
            }
            for i, tc in enumerate(m.tool_calls)
        ]
    if m.tool_call_id is not None:
        d["tool_call_id"] = m.tool_call_id
    return d


def parse_retry_after(headers: Any) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds or HTTP date)."""
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return float(ms) / 1000.0
        except ValueError:
            pass
    ra = headers.get("retry-after")
    if not ra:
        return None
    try:
        return float(ra)
    except ValueError:
        from email.utils import parsedate_to_datetime

        try:
            return max(0.0, parsedate_to_datetime(ra).timestamp() - time.time())
        except (TypeError, ValueError):
            return None


def parse_completion(data: Any) -> Reply:
    """Decode a chat.completion body into a :class:`Reply` (latency filled by the caller).

    Raises :class:`ModelCallError` (transient) when the body is not a completion.
    """
    try:
        choice = data["choices"][0]
        msg = choice["message"]
    except (KeyError, IndexError, TypeError) as e:
        raise ModelCallError(
            f"endpoint returned a body without choices[0].message: {str(data)[:200]}",
            transient=True,
        ) from e
    calls = None
    raw_calls = msg.get("tool_calls")
    if raw_calls:
        calls = []
        for c in raw_calls:
            fn = c.get("function") or {}
            args_text = fn.get("arguments") or "{}"
            try:
                args = json.loads(args_text) if isinstance(args_text, str) else dict(args_text)
            except json.JSONDecodeError:
                # Keep the model's text: a malformed call is the model's mistake, to be scored.
                args = {"__unparsed_arguments__": args_text}
            calls.append(ToolCall(fn.get("name", ""), args, c.get("id")))
    usage = data.get("usage") or {}
    return Reply(
        Message("assistant", msg.get("content"), calls or None),
        Usage(int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)),
    )


class OpenAIModel:
    """A model behind an OpenAI-compatible endpoint.

    ``base_url`` defaults to ``OPENAI_BASE_URL`` then ``https://api.openai.com/v1``;
    ``api_key`` to ``OPENAI_API_KEY`` (the key is sent, never stored or logged).
    ``max_connections`` caps the pool (0: no cap; the engine's semaphore bounds
    concurrency, so the pool must not be a second, smaller bound).
    """

    cacheable = True

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 120.0,
        max_connections: int = 0,
    ) -> None:
        self.model = model
        self.model_id = f"openai/{model}"
        self.base_url = (
            base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
        ).rstrip("/")
        self._api_key = api_key or os.environ.get("OPENAI_API_KEY") or ""
        self.timeout = timeout
        self.max_connections = max_connections
        self._session: Any = None
        self._url = self.base_url + "/chat/completions"
        #: the URL as shown in errors, reports and the store: no credentials
        self.display_url = redact_url(self.base_url) or ""

    def describe(self) -> dict[str, Any]:
        """Identity recorded with the run and used in cache keys (no secrets)."""
        return {"model": self.model_id, "base_url": self.display_url}

    async def preflight(self) -> None:
        """Fail fast, with one clear line, when nothing listens at ``base_url``."""
        import asyncio
        from urllib.parse import urlsplit

        from assay.errors import ConfigError

        parts = urlsplit(self.base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigError(f"invalid base URL {self.display_url!r}; expected http(s)://host[:port]/v1")
        port = parts.port or (443 if parts.scheme == "https" else 80)
        try:
            _, writer = await asyncio.wait_for(
                asyncio.open_connection(parts.hostname, port), timeout=min(self.timeout, 15.0)
            )
        except (OSError, asyncio.TimeoutError) as e:
            reason = "timed out" if isinstance(e, asyncio.TimeoutError) else (e.strerror or str(e))
            raise ConfigError(
                f"cannot reach model endpoint {self.display_url} ({reason}); start the server or "
                "set --base-url / OPENAI_BASE_URL"
            ) from e
        writer.close()

    def _get_session(self) -> Any:
        if self._session is None or self._session.closed:
            import aiohttp

            headers = {"Content-Type": "application/json"}
            # user:password@ in the URL is sent as basic auth by aiohttp; a bearer
            # header beside it would conflict, so the URL's credentials win.
            if self._api_key and self.display_url == self.base_url:
                headers["Authorization"] = f"Bearer {self._api_key}"
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=self.max_connections, limit_per_host=0),
                headers=headers,
                timeout=aiohttp.ClientTimeout(total=self.timeout),
            )
        return self._session

    async def generate(
        self,
        messages: list[Message],
        *,
        tools: list[ToolSpec] | None = None,
        response_schema: dict[str, Any] | None = None,
        **params: Any,
    ) -> Reply:
        """One chat completion. Raises :class:`ModelCallError` on any failure."""
        import asyncio

        import aiohttp

        body: dict[str, Any] = {
            "model": self.model,
            "messages": [message_to_openai(m) for m in messages],
        }
        if tools:
            body["tools"] = [t.to_openai() for t in tools]
        if response_schema is not None:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "response", "schema": response_schema},
            }
        body.update(params)
        session = self._get_session()
        start = time.perf_counter()
        try:
            async with session.post(self._url, data=json.dumps(body).encode()) as resp:
                raw = await resp.read()
                status = resp.status
                if status >= 400:
                    detail = raw[:300].decode("utf-8", "replace")
                    raise ModelCallError(
                        f"HTTP {status} from {self.display_url}: {detail}",
                        transient=status in _TRANSIENT_STATUS,
                        retry_after=parse_retry_after(resp.headers),
                        status=status,
                    )
        except ModelCallError:
            raise
        except asyncio.TimeoutError as e:
            raise ModelCallError(
                f"request to {self.display_url} timed out after {self.timeout:g}s", transient=True
            ) from e
        except aiohttp.ClientConnectorError as e:
            raise ModelCallError(
                f"cannot connect to {self.display_url} ({e.os_error or e}); is the server running?",
                transient=True,
            ) from e
        except aiohttp.ClientError as e:
            raise ModelCallError(f"connection error talking to {self.display_url}: {e}",
                                 transient=True) from e
        try:
            data = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise ModelCallError(
                f"endpoint {self.display_url} returned malformed JSON: {raw[:120]!r}", transient=True
            ) from e
        reply = parse_completion(data)
        reply.latency_s = time.perf_counter() - start
        return reply

    async def aclose(self) -> None:
        """Close the connection pool."""
        if self._session is not None and not self._session.closed:
            await self._session.close()
        self._session = None
