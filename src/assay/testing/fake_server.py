"""A real OpenAI-compatible HTTP server for tests and benchmarks: enough of chat completions
(non-streaming), models and embeddings for the ``openai`` SDK. Replies are deterministic;
latency and faults (500, 429, hangs, malformed bodies) are injected reproducibly.
It runs on a background thread (``with FakeServer(...)``), on the current event loop
(``async with``), or as ``python -m assay.testing.fake_server --port 0`` (prints
``READY <base_url>``)."""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import inspect
import itertools
import json
import random
import re
import signal
import sys
import threading
import time
import zlib
from collections import Counter
from pathlib import Path
from typing import IO, Any

from aiohttp import web

from assay.testing.fake_batches import add_batch_routes
from assay.testing.fake_replies import (
    ALL_KINDS,
    FAULT_KINDS,
    FaultPlan,
    Reply,
    Responder,
    Rule,
    chat_completion,
    last_user_text,
)

__all__ = ["FakeServer", "FaultPlan", "Rule", "build_arg_parser", "main", "server_from_args"]

MALFORMED_BODY = b'{"id": "x", "choices": ['


def _json(payload: Any, status: int = 200, headers: dict[str, str] | None = None
          ) -> web.Response:
    return web.Response(status=status, body=json.dumps(payload).encode(),
                        content_type="application/json", headers=headers)


def _error(status: int, message: str, type_: str, code: str | None = None,
           headers: dict[str, str] | None = None) -> web.Response:
    return _json({"error": {"message": message, "type": type_, "param": None, "code": code}},
                 status, headers)


def _new_loop() -> asyncio.AbstractEventLoop:
    try:
        import uvloop  # startup  # type: ignore[import-not-found]

        return uvloop.new_event_loop()
    except ImportError:
        return asyncio.new_event_loop()


class FakeServer:
    """Reply per request: the next ``script`` item, else ``responder(body)``, else the first
    matching rule, else ``default_reply`` (``None`` echoes the last user message); a text,
    or a dict with ``content`` and/or ``tool_calls`` (``[{"name", "arguments"}]``)."""

    def __init__(self, *, rules: list[Rule] | None = None, responder: Responder | None = None,
                 script: list[Reply] | None = None, default_reply: Reply | None = None,
                 latency: float = 0.0, faults: FaultPlan | None = None,
                 require_api_key: str | None = None, log_requests: str | Path | None = None,
                 hold_after: int | None = None, host: str = "127.0.0.1", port: int = 0,
                 max_concurrent: int | None = None, prompt_logprobs: bool = True,
                 batch_polls: int = 2) -> None:
        #: ``/v1/completions`` gives log-probs (a fixed value per token text, as the
        #: endpoint check wants); False: none, as an endpoint that cannot
        self.prompt_logprobs = prompt_logprobs
        self.rules = list(rules or [])
        self.responder = responder
        self.script = list(script or [])
        self.default_reply = default_reply
        self.latency = latency
        self.faults = faults or FaultPlan()
        self.require_api_key = require_api_key
        self.log_requests = Path(log_requests) if log_requests else None
        self.hold_after = hold_after  # hold later requests open: deterministic interrupts
        self._released: asyncio.Event | None = None
        #: at most this many requests served at once (each ``latency`` long); others queue
        self.max_concurrent = max_concurrent
        self._slots: asyncio.Semaphore | None = None
        # per chat request, in arrival order: query string, Authorization header ("" when
        # absent), time.monotonic() at arrival
        self.queries: list[str] = []
        self.authorizations: list[str] = []
        self.request_times: list[float] = []
        self.host = host
        self.port = port
        self.requests: list[dict[str, Any]] = []
        #: every HTTP request by method and path (a batch's files, polls and downloads too)
        self.http_requests: Counter[str] = Counter()
        #: the usage of each chat completion answered (and each batch line), with its model
        self.usages: list[dict[str, Any]] = []
        self.embedding_requests: list[dict[str, Any]] = []
        #: the Batch API (fake_batches.py): a batch completes on its ``batch_polls``-th GET,
        #: the lines of ``batch_fail_ids`` failing (500), as ``batch_outcome`` says
        #: ("completed", "expired", "failed"); answered bodies in ``batch_requests``
        self.batch_polls = batch_polls
        self.batch_fail_ids: set[str] = set()
        self.batch_outcome = "completed"
        self.batch_requests: list[dict[str, Any]] = []
        self.batch_files: dict[str, tuple[dict[str, Any], bytes]] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.stats: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._runner: web.AppRunner | None = None
        self._log_fh: IO[str] | None = None
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.reset()

    def reset(self) -> None:
        """Clear recorded requests and stats; rewind the script, fault RNG and fail_first."""
        with self._lock:
            for log in (self.requests, self.usages, self.http_requests, self.stats, self.queries,
                        self.authorizations, self.request_times, self.batch_requests,
                        self.batch_files, self.batches):
                log.clear()
            self.stats.update(requests=0, completed=0, faults=dict.fromkeys(ALL_KINDS, 0))
            self._script_pos = 0
            self._seen: dict[str, int] = {}
            #: system prompts answered before: their words count as cached prompt tokens
            self._systems: set[str] = set()
            self._rng = random.Random(self.faults.seed)

    @property
    def base_url(self) -> str:
        """``http://HOST:PORT/v1`` (valid once started)."""
        return f"http://{self.host}:{self.port}/v1"

    def _pick_fault(self, body: dict[str, Any]) -> str | None:
        plan = self.faults
        if plan.fail_first > 0:
            key = last_user_text(body)
            n = self._seen.get(key, 0)
            self._seen[key] = n + 1
            if n < plan.fail_first:
                return self._draw_kind()
        if plan.rate > 0 and self._rng.random() < plan.rate:
            return self._draw_kind()
        return None

    def _draw_kind(self) -> str:
        kinds = [k for k, w in self.faults.kinds.items() if w > 0]
        weights = [self.faults.kinds[k] for k in kinds]
        return self._rng.choices(kinds, weights)[0]

    async def _reply_for(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            if self._script_pos < len(self.script):
                self._script_pos += 1
                return self.script[self._script_pos - 1]
        if self.responder is not None:
            out = self.responder(body)
            return await out if inspect.isawaitable(out) else out
        text = last_user_text(body)
        for rule in self.rules:
            reply = rule.apply(text)
            if reply is not None:
                return reply
        return text if self.default_reply is None else self.default_reply

    def _completion(self, body: dict[str, Any], reply: Reply) -> dict[str, Any]:
        with self._lock:
            n = self.stats["completed"]
            payload = chat_completion(body, reply, n, self._systems)
            self.usages.append({"model": body.get("model"), **payload["usage"]})
        return payload

    async def _handle_chat(self, request: web.Request) -> web.Response:
        arrived = time.monotonic()
        raw = await request.read()
        try:
            body = json.loads(raw)
            if not isinstance(body, dict):
                raise ValueError("body must be a JSON object")
        except ValueError as exc:
            return _error(400, f"invalid JSON body: {exc}", "invalid_request_error")
        with self._lock:
            self.requests.append(body)
            self.queries.append(request.query_string)
            self.authorizations.append(request.headers.get("Authorization", ""))
            self.request_times.append(arrived)
            self.stats["requests"] += 1
            n_request = self.stats["requests"]
            if self._log_fh is not None:
                self._log_fh.write(json.dumps(body) + "\n")
                self._log_fh.flush()
        if self.require_api_key is not None:
            if request.headers.get("Authorization") != f"Bearer {self.require_api_key}":
                return _error(401, "Incorrect API key provided.", "invalid_request_error",
                              "invalid_api_key")
        if body.get("stream"):
            return _error(400, "stream=true is not supported by the fake server",
                          "invalid_request_error", "unsupported_parameter")
        with self._lock:
            kind = self._pick_fault(body)
            if kind is not None:
                self.stats["faults"][kind] += 1
        if self.max_concurrent is not None:  # a server that serves C at a time queues the rest
            if self._slots is None:
                self._slots = asyncio.Semaphore(self.max_concurrent)
            async with self._slots:
                await asyncio.sleep(self.latency)
        elif self.latency > 0:
            await asyncio.sleep(self.latency)
        if self.hold_after is not None and n_request > self.hold_after:
            if self._released is None:
                self._released = asyncio.Event()
            if self.hold_after is not None:  # until release(), or the server stops
                await self._released.wait()
        if kind == "500":
            return _error(500, "The server had an error while processing your request.",
                          "server_error")
        if kind == "429":
            ra = self.faults.retry_after
            headers = {"Retry-After": str(int(ra)) if float(ra).is_integer() else str(ra),
                       "retry-after-ms": str(int(ra * 1000))}
            return _error(429, "Rate limit reached (fake).", "requests", "rate_limit_exceeded",
                          headers)
        if kind == "malformed":
            return web.Response(body=MALFORMED_BODY, content_type="application/json")
        if kind == "hang":
            await asyncio.sleep(self.faults.hang_s)
        reply = await self._reply_for(body)
        if isinstance(reply, dict) and "status" in reply:  # a scripted HTTP error
            return _error(int(reply["status"]), str(reply.get("error", "scripted error")),
                          "invalid_request_error")
        if kind == "oversized":
            reply = "x" * self.faults.oversize_bytes
        payload = self._completion(body, reply)
        if kind == "list_content":
            message = payload["choices"][0]["message"]
            message["content"] = [{"type": "text", "text": message["content"] or ""}]
        with self._lock:
            self.stats["completed"] += 1
        return _json(payload)

    async def _handle_models(self, request: web.Request) -> web.Response:
        return _json({"object": "list", "data": [
            {"id": "fake", "object": "model", "created": 0, "owned_by": "assay"}]})

    async def _handle_completions(self, request: web.Request) -> web.Response:
        """``/v1/completions``: " ok" after the prompt (echoed when asked), each token (a word
        and the space before it) with a log-prob fixed by its text; none without
        ``prompt_logprobs``."""
        body = await request.json()
        prompt = body.get("prompt") if isinstance(body, dict) else None
        prompt = prompt if isinstance(prompt, str) else ""
        echo = bool(body.get("echo"))
        tokens = [*(re.findall(r"\s*\S+|\s+$", prompt) if echo else []), " ok"]
        offsets = list(itertools.accumulate([len(t) for t in tokens[:-1]], initial=0))
        if not echo:
            offsets = [len(prompt)]
        values: list[float | None] = [
            -1 - (zlib.crc32(t.encode()) % 400) / 100 for t in tokens]
        if echo:
            values[0] = None  # the first token has none, as OpenAI's API gives it
        logprobs = {"tokens": tokens, "text_offset": offsets, "token_logprobs": values,
                    "top_logprobs": [None if v is None else {t: v}
                                     for t, v in zip(tokens, values, strict=True)]}
        return _json({"object": "text_completion", "model": body.get("model", "fake"),
                      "choices": [{"index": 0, "text": (prompt if echo else "") + " ok",
                                   "logprobs": logprobs if self.prompt_logprobs else None,
                                   "finish_reason": "length"}]})

    async def _handle_embeddings(self, request: web.Request) -> web.Response:
        """``/v1/embeddings``: a deterministic bag-of-words vector per input (each lower-case
        word hashed into one of 64 dimensions), so texts that share words are close."""
        body = await request.json()
        with self._lock:
            self.embedding_requests.append(body)
        inputs = body.get("input")
        inputs = [inputs] if isinstance(inputs, str) else list(inputs or [])
        data = []
        for i, text in enumerate(inputs):
            vec = [0.0] * 64
            for word in re.findall(r"[a-z0-9]+", str(text).lower()):
                vec[hashlib.sha256(word.encode()).digest()[0] % 64] += 1.0
            data.append({"object": "embedding", "index": i, "embedding": vec})
        return _json({"object": "list", "data": data, "model": body.get("model"),
                      "usage": {"prompt_tokens": 0, "total_tokens": 0}})

    def release(self) -> None:
        """Answer the requests held by ``hold_after``, and every later one, from now on."""
        self.hold_after = None
        if self._loop is not None and self._released is not None:
            self._loop.call_soon_threadsafe(self._released.set)

    async def start_async(self) -> FakeServer:
        """Start serving on the running event loop, returning once listening."""
        if self._runner is not None:
            raise RuntimeError("FakeServer already started")
        @web.middleware
        async def count(request: web.Request, handler: Any) -> web.StreamResponse:
            with self._lock:
                self.http_requests[f"{request.method} {request.path}"] += 1
            return await handler(request)

        app = web.Application(client_max_size=64 * 1024**2, middlewares=[count])
        app.router.add_post("/v1/chat/completions", self._handle_chat)
        app.router.add_get("/v1/models", self._handle_models)
        app.router.add_post("/v1/embeddings", self._handle_embeddings)
        app.router.add_post("/v1/completions", self._handle_completions)
        add_batch_routes(app, self)
        runner = web.AppRunner(app, access_log=None, handler_cancellation=True,
                               shutdown_timeout=0.5)
        await runner.setup()
        self._runner = runner
        if self.log_requests is not None:
            self._log_fh = self.log_requests.open("a", encoding="utf-8")
        try:
            await web.TCPSite(runner, self.host, self.port).start()
        except BaseException:
            await self.stop_async()
            raise
        self.port = runner.addresses[0][1]
        return self

    async def stop_async(self) -> None:
        """Stop serving (in-flight requests are cancelled after a short grace)."""
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()
        if self._log_fh is not None:
            self._log_fh.close()
            self._log_fh = None

    def start(self, timeout: float = 10.0) -> FakeServer:
        """Start serving on a thread with its own event loop; blocks until listening."""
        if self._thread is not None:
            raise RuntimeError("FakeServer already started")
        ready = threading.Event()
        errors: list[BaseException] = []
        loop = _new_loop()

        def run() -> None:
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(self.start_async())
            except BaseException as exc:  # surfaced in the caller's thread
                errors.append(exc)
                ready.set()
                loop.close()
                return
            ready.set()
            loop.run_forever()
            loop.run_until_complete(self.stop_async())
            loop.close()

        self._loop = loop
        self._thread = threading.Thread(target=run, name="FakeServer", daemon=True)
        self._thread.start()
        if not ready.wait(timeout) or errors:
            self._thread = self._loop = None
            raise RuntimeError("FakeServer failed to start") from (errors[0] if errors else None)
        return self

    def stop(self, timeout: float = 10.0) -> None:
        thread, loop = self._thread, self._loop
        if thread is None or loop is None:
            return
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout)
        self._thread = self._loop = None

    def __enter__(self) -> FakeServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def __aenter__(self) -> FakeServer:
        return await self.start_async()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop_async()


def _parse_kinds(spec: str) -> dict[str, float]:
    """``"500,429:2,hang"`` as ``{"500": 1.0, "429": 2.0, "hang": 1.0}``."""
    kinds: dict[str, float] = {}
    for part in filter(None, (p.strip() for p in spec.split(","))):
        name, _, weight = part.partition(":")
        kinds[name] = float(weight) if weight else 1.0
    return kinds


def build_arg_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m assay.testing.fake_server",
                                description="OpenAI-compatible fake chat-completions server.")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0, help="0 picks a free port")
    p.add_argument("--latency", type=float, default=0.0, help="seconds added per request")
    p.add_argument("--rules", type=Path, help='JSON list of {"match": regex, "reply": ...}')
    p.add_argument("--default-reply", help="reply when no rule matches (default: echo)")
    p.add_argument("--fault-rate", type=float, default=0.0)
    p.add_argument("--fault-kinds", default=",".join(FAULT_KINDS),
                   help="comma list of kinds, optional :weight (e.g. 500,429:2,hang)")
    p.add_argument("--retry-after", type=float, default=1.0)
    p.add_argument("--hang-s", type=float, default=30.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--fail-first", type=int, default=0)
    p.add_argument("--api-key", help="require 'Authorization: Bearer KEY'")
    p.add_argument("--log-requests", type=Path, help="append each request body as a JSON line")
    p.add_argument("--hold-after", type=int, help="answer N requests, then hold the rest open")
    p.add_argument("--oversize-bytes", type=int, default=4_000_000,
                   help="size of an 'oversized' fault reply")
    return p


def server_from_args(args: argparse.Namespace) -> FakeServer:
    rules = []
    if args.rules is not None:
        rules = [Rule(r["match"], r["reply"])
                 for r in json.loads(args.rules.read_text(encoding="utf-8"))]
    plan = FaultPlan(rate=args.fault_rate, kinds=_parse_kinds(args.fault_kinds),
                     retry_after=args.retry_after, hang_s=args.hang_s, seed=args.seed,
                     fail_first=args.fail_first, oversize_bytes=args.oversize_bytes)
    return FakeServer(rules=rules, default_reply=args.default_reply, latency=args.latency,
                      faults=plan, require_api_key=args.api_key,
                      log_requests=args.log_requests, hold_after=args.hold_after,
                      host=args.host, port=args.port)


async def _serve(server: FakeServer) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await server.start_async()
    sys.stdout.write(f"READY {server.base_url}\n")
    sys.stdout.flush()
    try:
        await stop.wait()
    finally:
        await server.stop_async()


def main(argv: list[str] | None = None) -> int:
    """CLI entry point: serve until SIGTERM/SIGINT."""
    server = server_from_args(build_arg_parser().parse_args(argv))
    loop = _new_loop()
    try:
        loop.run_until_complete(_serve(server))
    finally:
        loop.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
