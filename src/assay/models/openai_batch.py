"""OpenAI's Batch API: upload a JSONL of chat-completions requests, create a batch, poll it,
read its output and error files. Every failure is a one-line :class:`ModelCallError` with no
secret in it; a line's failure is a :class:`ModelCallError` among :meth:`results`."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import Any

from assay.core.redact import parse_endpoint, scrub
from assay.core.types import Reply
from assay.errors import ModelCallError
from assay.models.openai_model import (
    _TRANSIENT_STATUS,
    _encode,
    parse_completion,
    parse_retry_after,
)

FINAL = ("completed", "failed", "expired", "cancelled")
_HINTS = {401: "; check the API key",
          404: "; does the endpoint serve OpenAI's Batch API, and is the id right?"}


class BatchClient:
    """OpenAI's Batch API at ``base_url`` (files + batches)."""

    def __init__(self, base_url: str, api_key: str = "", timeout: float = 120.0) -> None:
        self._endpoint = parse_endpoint(base_url)
        self._api_key, self.timeout = api_key, timeout
        self.display_url = self._endpoint.display  # no credentials, no query values
        self._secrets = [*self._endpoint.secrets, *([api_key] if api_key else [])]
        self._session: Any = None

    async def _request(self, method: str, path: str, *, raw: bool = False, **kw: Any) -> Any:
        """The reply's JSON object (``raw``: its bytes); a failure as a one-line error."""
        import aiohttp  # startup

        if self._session is None or self._session.closed:
            auth = self._api_key and not self._endpoint.has_userinfo  # the URL's wins
            self._session = aiohttp.ClientSession(
                headers={"Authorization": f"Bearer {self._api_key}"} if auth else {},
                timeout=aiohttp.ClientTimeout(total=self.timeout))
        where = self.display_url + path
        try:
            async with self._session.request(method, self._endpoint.url_for(path),
                                             **kw) as resp:
                body = await resp.read()
                status = resp.status
                retry_after = parse_retry_after(resp.headers)
        except asyncio.TimeoutError as e:
            raise ModelCallError(f"request to {where} timed out after {self.timeout:g}s",
                                 transient=True) from e
        except aiohttp.ClientError as e:
            raise ModelCallError(f"cannot talk to {where} ({scrub(str(e), self._secrets)}); "
                                 "is the server running?", transient=True) from e
        try:
            data = json.loads(body) if status >= 400 or not raw else None
        except (ValueError, RecursionError):
            data = None
        if status >= 400:
            why = _error_message(data) or body[:4096].decode("utf-8", "replace")
            raise ModelCallError(f"HTTP {status} from {where}: "
                                 f"{scrub(why, self._secrets)[:300]}{_HINTS.get(status, '')}",
                                 transient=status in _TRANSIENT_STATUS, status=status,
                                 retry_after=retry_after)
        if not raw and not isinstance(data, dict):
            head = scrub(body[:4096].decode("utf-8", "replace"), self._secrets)[:120]
            raise ModelCallError(f"{where} returned no JSON object: {head!r}", transient=True)
        return body if raw else data

    async def submit(self, lines: list[tuple[str, dict[str, Any]]], *,
                     endpoint: str = "/v1/chat/completions",
                     metadata: dict[str, Any] | None = None) -> str:
        """Upload ``(custom_id, request body)`` lines and create their batch; its id."""
        import aiohttp  # startup

        form = aiohttp.FormData()
        form.add_field("purpose", "batch")
        form.add_field("file", b"".join(_encode({"custom_id": cid, "method": "POST",
                                                 "url": endpoint, "body": body}) + b"\n"
                                        for cid, body in lines),
                       filename="assay_batch.jsonl", content_type="application/jsonl")
        file = await self._request("POST", "/files", data=form)
        create = {"input_file_id": file.get("id"), "endpoint": endpoint,
                  "completion_window": "24h", **({"metadata": metadata} if metadata else {})}
        return str((await self._request("POST", "/batches", data=_encode(create), headers={
            "Content-Type": "application/json"})).get("id"))

    async def status(self, batch_id: str) -> dict[str, Any]:
        return await self._request("GET", f"/batches/{batch_id}")

    async def cancel(self, batch_id: str) -> dict[str, Any]:
        return await self._request("POST", f"/batches/{batch_id}/cancel")

    async def wait(self, batch_id: str, *, initial: float = 5.0, max_wait: float = 300.0,
                   timeout: float | None = None,
                   on_poll: Callable[[dict[str, Any]], Any] | None = None) -> dict[str, Any]:
        """Poll until the batch is final, waiting ``initial`` seconds, then twice as long
        each time up to ``max_wait``; ``timeout``: a transient error after that long."""
        deadline = None if timeout is None else time.monotonic() + timeout
        delay = initial
        while True:
            try:
                batch = await self.status(batch_id)
            except ModelCallError as e:  # a blip in hours of polling: ask again later
                if not e.transient:
                    raise
                batch = {"id": batch_id, "status": f"unknown ({e})"}
            if on_poll is not None:
                on_poll(batch)
            if batch.get("status") in FINAL:
                return batch
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise ModelCallError(f"batch {batch_id} is still {batch.get('status')} after "
                                     f"{timeout:g}s; wait longer or cancel it", transient=True)
            await asyncio.sleep(delay if left is None else min(delay, left))
            delay = min(delay * 2, max_wait)

    async def results(self, batch: dict[str, Any]) -> dict[str, Reply | ModelCallError]:
        """``custom_id`` -> its Reply or its one-line error, from a final batch's files."""
        bid, status = batch.get("id"), batch.get("status")
        if status not in FINAL or status == "failed":
            why = "; ".join(f"{e.get('code')}: {e.get('message')}"
                            for e in (batch.get("errors") or {}).get("data") or [])
            raise ModelCallError(f"batch {bid} failed: {scrub(why, self._secrets)[:300]}"
                                 if status == "failed" else
                                 f"batch {bid} is {status}, not finished; wait() for it first",
                                 transient=False)
        out: dict[str, Reply | ModelCallError] = {}
        for fid in (batch.get("output_file_id"), batch.get("error_file_id")):
            raw = await self._request("GET", f"/files/{fid}/content", raw=True) if fid else b""
            for text in filter(str.strip, raw.decode("utf-8", "replace").splitlines()):
                try:
                    line = json.loads(text)
                    out[str(line["custom_id"])] = self._outcome(line)
                except (ValueError, KeyError, TypeError) as e:
                    raise ModelCallError(f"file {fid} from {self.display_url} has a malformed "
                                         f"line: {scrub(text, self._secrets)[:120]!r}",
                                         transient=True) from e
        return out

    def _outcome(self, line: dict[str, Any]) -> Reply | ModelCallError:
        cid, resp, err = line["custom_id"], line.get("response"), line.get("error")
        if err or not isinstance(resp, dict):  # never run: expired, cancelled
            err = err if isinstance(err, dict) else {"message": err or "no response"}
            return ModelCallError(f"batch request {cid} failed: {err.get('code')}: "
                                  f"{scrub(str(err.get('message')), self._secrets)[:300]}",
                                  transient=err.get("code") in ("batch_expired",
                                                                "batch_cancelled"))
        status, body = resp.get("status_code"), resp.get("body")
        if status == 200:
            try:
                return parse_completion(body)
            except ModelCallError as e:
                return e
        code = status if isinstance(status, int) else None
        why = _error_message(body) or json.dumps(body)[:4096]
        return ModelCallError(f"HTTP {status} for batch request {cid}: "
                              f"{scrub(why, self._secrets)[:300]}",
                              transient=code is not None and (code >= 500 or code == 429),
                              status=code)

    async def aclose(self) -> None:
        if self._session is not None and not self._session.closed:
            await self._session.close()
        self._session = None


def _error_message(data: Any) -> str | None:
    """An OpenAI error body's ``error.message``."""
    try:
        return str(data["error"]["message"])
    except (KeyError, TypeError, IndexError):
        return None


def client_for(model: Any) -> BatchClient:
    """A client of the Batch API at an ``openai/`` model's endpoint, with its key."""
    return BatchClient(model.base_url, model._api_key, model.timeout)
