"""OpenAI's Batch API on the fake server (``/v1/files``, ``/v1/batches``), in OpenAI's wire
format. A batch advances one status per GET and completes on the ``server.batch_polls``-th;
then each line is answered as ``/v1/chat/completions`` answers its body (scripted HTTP errors,
and the lines of ``server.batch_fail_ids`` with a 500, go to the error file).
``server.batch_outcome``: ``"completed"``, ``"expired"`` (the first half of the lines
answered, the rest expired) or ``"failed"`` (no output). The bodies answered are recorded in
``server.batch_requests``, apart from ``server.requests``."""

from __future__ import annotations

import json
import time
from typing import Any

from aiohttp import web

FINAL = ("completed", "failed", "expired", "cancelled")
_UNANSWERED = {
    "expired": ("batch_expired",
                "This request could not be executed before the completion window expired."),
    "cancelled": ("batch_cancelled", "The batch was cancelled before this request executed.")}
_TIMES = ("in_progress_at", "finalizing_at", "completed_at", "failed_at", "expired_at",
          "cancelling_at", "cancelled_at")


def _error(status: int, message: str, code: str | None = None) -> web.Response:
    return web.json_response({"error": {"message": message, "type": "invalid_request_error",
                                        "param": None, "code": code}}, status=status)


def _check_lines(raw: bytes) -> str | None:
    """Why a JSONL input is not a chat-completions batch (``None``: it is one)."""
    seen: set[str] = set()
    for n, text in enumerate(raw.decode("utf-8", "replace").splitlines(), 1):
        try:
            line = json.loads(text) if text.strip() else None
        except ValueError:
            return f"line {n} is not valid JSON"
        if line is None:
            continue
        if not isinstance(line, dict) or not isinstance(line.get("custom_id"), str):
            return f"line {n} has no custom_id"
        if line.get("method") != "POST" or line.get("url") != "/v1/chat/completions":
            return f"line {n}: method must be POST and url /v1/chat/completions"
        if not isinstance(line.get("body"), dict):
            return f"line {n} has no body object"
        if line["custom_id"] in seen:
            return f"line {n}: duplicate custom_id {line['custom_id']!r}"
        seen.add(line["custom_id"])
    return None if seen else "the file has no requests"


def add_batch_routes(app: web.Application, server: Any) -> None:
    """Serve the files and batches endpoints of ``server`` (a FakeServer) on ``app``."""

    def route(method: str, path: str, with_batch: bool = False) -> Any:
        def register(handler: Any) -> Any:
            async def serve(request: web.Request) -> web.Response:
                key = server.require_api_key
                if key is not None and request.headers.get("Authorization") != f"Bearer {key}":
                    return _error(401, "Incorrect API key provided.", "invalid_api_key")
                if not with_batch:
                    return await handler(request)
                entry = server.batches.get(request.match_info["id"])
                if entry is None:
                    return _error(404, f"No batch found with id '{request.match_info['id']}'.")
                return await handler(entry)
            app.router.add_route(method, path, serve)
            return handler
        return register

    def store_file(name: str, data: bytes, purpose: str) -> str:
        fid = f"file-fake{len(server.batch_files) + 1}"
        server.batch_files[fid] = ({"id": fid, "object": "file", "bytes": len(data),
                                    "created_at": int(time.time()), "filename": name,
                                    "purpose": purpose}, data)
        return fid

    def to(batch: dict[str, Any], status: str) -> None:
        batch["status"] = status
        if f"{status}_at" in batch:
            batch[f"{status}_at"] = int(time.time())

    @route("POST", "/v1/files")
    async def upload(request: web.Request) -> web.Response:
        form = await request.post()
        part = form.get("file")
        if form.get("purpose") != "batch" or not isinstance(part, web.FileField):
            return _error(400, "expected multipart fields purpose=batch and file")
        data = part.file.read()
        problem = _check_lines(data)
        if problem is not None:
            return _error(400, f"invalid batch input file: {problem}", "invalid_file")
        return web.json_response(server.batch_files[store_file(part.filename, data,
                                                               "batch")][0])

    @route("GET", "/v1/files/{id}/content")
    async def content(request: web.Request) -> web.Response:
        found = server.batch_files.get(request.match_info["id"])
        if found is None:
            return _error(404, f"No such File object: {request.match_info['id']}")
        return web.Response(body=found[1], content_type="application/octet-stream")

    @route("POST", "/v1/batches")
    async def create(request: web.Request) -> web.Response:
        try:
            body = await request.json()
            fid = body.get("input_file_id")
        except (ValueError, AttributeError):
            return _error(400, "expected a JSON object body")
        if fid not in server.batch_files or (body.get("endpoint"), body.get(
                "completion_window")) != ("/v1/chat/completions", "24h"):
            return _error(400, "expected an uploaded input_file_id, endpoint "
                          "/v1/chat/completions and completion_window 24h")
        lines = [json.loads(s) for s in server.batch_files[fid][1].splitlines() if s.strip()]
        bid, now = f"batch_fake{len(server.batches) + 1}", int(time.time())
        batch = {"id": bid, "object": "batch", "endpoint": body["endpoint"], "errors": None,
                 "input_file_id": fid, "completion_window": "24h", "status": "validating",
                 "output_file_id": None, "error_file_id": None, "created_at": now,
                 "expires_at": now + 86400, **dict.fromkeys(_TIMES),
                 "request_counts": {"total": len(lines), "completed": 0, "failed": 0},
                 "metadata": body.get("metadata")}
        server.batches[bid] = {"batch": batch, "lines": lines, "polls": 0}
        return web.json_response(batch)

    async def answer(bid: str, i: int, line: dict[str, Any]) -> dict[str, Any]:
        """The output line of line ``i``, as the chat handler would answer its body."""
        body, rid = line["body"], f"req_fake_{bid}_{i}"
        server.batch_requests.append(body)
        reply: Any = {"status": 500, "type": "server_error",
                      "error": "The server had an error while processing your request."}
        if line["custom_id"] not in server.batch_fail_ids:
            reply = await server._reply_for(body)
        if isinstance(reply, dict) and "status" in reply:  # a scripted HTTP error
            out = {"status_code": int(reply["status"]), "request_id": rid, "body": {"error": {
                "message": str(reply.get("error", "scripted error")), "param": None,
                "type": reply.get("type", "invalid_request_error"), "code": None}}}
        else:
            payload = {**server._completion(body, reply), "id": f"chatcmpl-{bid}-{i}"}
            out = {"status_code": 200, "request_id": rid, "body": payload}
        return {"id": f"batch_req_{bid}_{i}", "custom_id": line["custom_id"], "response": out,
                "error": None}

    async def finish(entry: dict[str, Any], status: str) -> None:
        batch, lines = entry["batch"], entry["lines"]
        to(batch, status)
        if status == "failed":
            batch["errors"] = {"object": "list", "data": [{
                "code": "batch_failed", "message": "The batch failed (the fake server's "
                "batch_outcome is 'failed').", "param": None, "line": None}]}
            return
        answered = {"completed": len(lines), "expired": len(lines) // 2}.get(status, 0)
        ok, bad = [], []
        for i, line in enumerate(lines):
            if i < answered:
                out = await answer(batch["id"], i, line)
            else:
                code, message = _UNANSWERED[status]
                out = {"id": f"batch_req_{batch['id']}_{i}", "custom_id": line["custom_id"],
                       "response": None, "error": {"code": code, "message": message}}
            good = out["response"] is not None and out["response"]["status_code"] == 200
            (ok if good else bad).append(out)
        for key, outs in (("output_file_id", ok), ("error_file_id", bad)):
            if outs:
                data = "".join(json.dumps(o) + "\n" for o in outs).encode()
                batch[key] = store_file(f"{batch['id']}_{key[:-8]}.jsonl", data, "batch_output")
        batch["request_counts"].update(completed=len(ok), failed=len(bad))

    @route("GET", "/v1/batches/{id}", with_batch=True)
    async def retrieve(entry: dict[str, Any]) -> web.Response:
        batch = entry["batch"]
        if batch["status"] == "cancelling":
            await finish(entry, "cancelled")
        elif batch["status"] not in FINAL:
            entry["polls"] += 1
            if entry["polls"] < server.batch_polls:
                to(batch, "in_progress")
            else:
                await finish(entry, server.batch_outcome)
        return web.json_response(batch)

    @route("POST", "/v1/batches/{id}/cancel", with_batch=True)
    async def cancel(entry: dict[str, Any]) -> web.Response:
        if entry["batch"]["status"] in FINAL:
            return _error(409, f"Cannot cancel a batch with status '{entry['batch']['status']}'.")
        to(entry["batch"], "cancelling")
        return web.json_response(entry["batch"])

    @route("GET", "/v1/batches")
    async def listing(request: web.Request) -> web.Response:
        data = [e["batch"] for e in reversed(server.batches.values())]
        return web.json_response({"object": "list", "data": data, "has_more": False,
                                  "first_id": data[0]["id"] if data else None,
                                  "last_id": data[-1]["id"] if data else None})
