"""The review page's JSON API under ``/review/api/``; writes (``POST``) reach it only as
same-origin JSON (:mod:`assay.web.security`)."""

from __future__ import annotations

import asyncio
import json
import re
import time
from typing import Any

from aiohttp import web

from assay.review.export import export_verifications
from assay.review.page import review_of, reviewer_param
from assay.store.review import Review, ReviewError

__all__ = ["api_export", "api_get_review", "api_history", "api_post_review", "api_progress",
           "api_reviews"]


def _json_error(status: int, message: str) -> web.Response:
    return web.json_response({"ok": False, "error": message}, status=status)


async def api_post_review(request: web.Request) -> web.Response:
    """``POST /api/review``: save one review (committed before the reply)."""
    st, store = review_of(request)
    body = await _json_body(request)
    if isinstance(body, web.Response):
        return body
    pid = str(body.get("problem_id") or "")
    if pid not in st.by_id:
        return _json_error(404, f"no problem {pid!r} in this dataset")
    reviewer = body.get("reviewer") or st.reviewer
    try:
        review = await asyncio.to_thread(
            store.save_review, st.dataset_id, pid, reviewer, scores=body.get("scores"),
            status=body.get("status") or "pending", comment=body.get("comment") or "",
            dimensions=st.dimensions)
    except ReviewError as e:
        return _json_error(400, str(e))
    progress = await asyncio.to_thread(store.progress, st.dataset_id, review.reviewer,
                                       len(st.problems))
    return web.json_response({"ok": True, "review": review.to_dict(), "progress": progress,
                              "judge": st.judge.get(pid) if review.decided else None,
                              "server_time": time.time()})


async def api_get_review(request: web.Request) -> web.Response:
    """``GET /api/review``: one reviewer's saved review of one problem."""
    st, store = review_of(request)
    pid = request.query.get("problem_id", "")
    reviewer = reviewer_param(request, st)
    if pid not in st.by_id or not reviewer:
        return _json_error(400, "give problem_id (of this dataset) and reviewer")
    review = await asyncio.to_thread(store.get_review, st.dataset_id, pid, reviewer)
    return web.json_response({"ok": True, "review": review.to_dict() if review else None})


async def api_reviews(request: web.Request) -> web.Response:
    """``GET /api/reviews``: the dataset's current reviews (one reviewer's or all)."""
    st, store = review_of(request)
    reviewer = request.query.get("reviewer")
    rows: list[Review] = await asyncio.to_thread(store.reviews_for, st.dataset_id,
                                                 reviewer)
    return web.json_response({"ok": True, "dataset_id": st.dataset_id,
                              "reviews": [r.to_dict() for r in rows]})


async def api_history(request: web.Request) -> web.Response:
    """``GET /api/history``: every submission, in the order they were made."""
    st, store = review_of(request)
    events = await asyncio.to_thread(store.history, st.dataset_id,
                                     request.query.get("problem_id"),
                                     request.query.get("reviewer"))
    return web.json_response({"ok": True, "events": [e.to_dict() for e in events]})


async def api_progress(request: web.Request) -> web.Response:
    """``GET /api/progress``: the reviewer's and the project's progress."""
    st, store = review_of(request)
    reviewer = reviewer_param(request, st)
    n = len(st.problems)
    mine = (await asyncio.to_thread(store.progress, st.dataset_id, reviewer, n)
            if reviewer else None)
    project = await asyncio.to_thread(store.project_progress, st.dataset_id, n)
    return web.json_response({"ok": True, "reviewer": mine, "project": project})


async def _json_body(request: web.Request) -> dict[str, Any] | web.Response:
    """The request's JSON object (an empty body counts as ``{}``), or a 400 response."""
    if not request.can_read_body:
        return {}
    try:
        body = await request.json()
    except (ValueError, UnicodeDecodeError, RecursionError):  # ValueError: JSON, huge ints
        return _json_error(400, "the body is not valid JSON")
    if not isinstance(body, dict):
        return _json_error(400, "send a JSON object")
    return body


async def api_export(request: web.Request) -> web.Response:
    """``POST /api/export``: write the verifications file and return it; the body may
    name a ``reviewer`` (their own file) and ask for a ``download`` (an attachment)."""
    st, store = review_of(request)
    body = await _json_body(request)
    if isinstance(body, web.Response):
        return body
    raw = body.get("reviewer")
    if raw is not None and not isinstance(raw, str):
        return _json_error(400, "reviewer must be a string")
    reviewer = raw or None
    path = st.export_path
    if reviewer:
        path = path.with_name(f"{path.stem}.{_slug(reviewer)}{path.suffix}")
    data = await asyncio.to_thread(export_verifications, store, st.dataset_id, st.problems,
                                   path, reviewer=reviewer)
    headers = {"X-Assay-Export-Path": str(path)}
    if body.get("download") in (True, 1, "1", "true"):
        headers["Content-Disposition"] = f'attachment; filename="{path.name}"'
    return web.json_response(data, headers=headers, dumps=lambda o: json.dumps(
        o, ensure_ascii=False, indent=2))


def _slug(name: str) -> str:
    return re.sub(r"[^\w.-]+", "_", name).strip("._") or "reviewer"
