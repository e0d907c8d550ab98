"""The review page's HTML: where to resume (``/review/``) and one item (``/review/item/<n>``)."""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import urlencode

from aiohttp import web

from assay.review.page import PREFIX, ReviewPage, review_of, reviewer_param
from assay.store.review import DECIDED, MAX_REVIEWER, ReviewStore
from assay.web.state import html, state_of

__all__ = ["DIMENSION_GUIDE", "FILTERS", "index_page", "item_page"]

FILTERS = ("all", "pending", "approved", "rejected", "needs_revision")
"""Status filters; ``pending`` = no decision yet by this reviewer (draft or untouched)."""

DIMENSION_GUIDE: dict[str, dict[int, str]] = {
    "correctness": {1: "stated answer wrong, or the problem is unsolvable / contradictory",
                    3: "answer right, but the solution has errors or unjustified steps",
                    5: "answer and every step of the solution are correct"},
    "clarity": {1: "ambiguous or hard to parse; several readings possible",
                3: "understandable with effort; minor ambiguity or sloppy notation",
                5: "precise, unambiguous, competition-grade wording"},
    "difficulty_match": {1: "trivial, or far beyond AIME",
                         3: "AIME-like, but at the easy or hard extreme",
                         5: "squarely AIME difficulty (a mid-contest problem)"},
    "completeness": {1: "missing givens, answer or solution",
                     3: "solution skips key steps or a given is implicit",
                     5: "all givens stated; full solution; integer answer 0-999"}}


def _flags(request: web.Request) -> tuple[str, bool]:
    status = request.query.get("status", "all")
    blind = request.query.get("blind", "") in ("1", "true", "yes", "on")
    return (status if status in FILTERS else "all"), blind


def _matches(status: str | None, flt: str) -> bool:
    if flt == "all":
        return True
    if flt == "pending":
        return status not in DECIDED
    return status == flt


def _item_url(n: int, reviewer: str, flt: str, blind: bool) -> str:
    q: dict[str, str] = {"reviewer": reviewer}
    if flt != "all":
        q["status"] = flt
    if blind:
        q["blind"] = "1"
    return f"{PREFIX}/item/{n}?{urlencode(q)}"


def _ask_reviewer(st: ReviewPage, request: web.Request) -> web.Response:
    """The reviewer-name form (saying why when the URL named an unusable one)."""
    message = ("That name is not usable: 1-64 printable characters."
               if "reviewer" in request.query else "")
    return html(state_of(request), "reviewer.html", title=st.title, path=request.path,
                query={k: v for k, v in request.query.items() if k != "reviewer"},
                message=message, max_len=MAX_REVIEWER)


async def index_page(request: web.Request) -> web.StreamResponse:
    """Resume: the first item matching the filter from ``from`` on (wrapping), else a notice."""
    st, store = review_of(request)
    reviewer = reviewer_param(request, st)
    if not reviewer:
        return _ask_reviewer(st, request)
    flt, blind = _flags(request)
    statuses = await asyncio.to_thread(store.statuses, st.dataset_id, reviewer)
    n_items = len(st.problems)
    try:
        start = min(max(int(request.query.get("from", "1")), 1), n_items)
    except ValueError:
        start = 1
    # with no filter, resume at the first item without a decision
    want = "pending" if flt == "all" and "from" not in request.query else flt
    order = list(range(start, n_items + 1)) + list(range(1, start))
    for n in order:
        if _matches(statuses.get(st.problems[n - 1].problem_id), want):
            raise web.HTTPFound(_item_url(n, reviewer, flt, blind))
    if flt == "all":
        raise web.HTTPFound(_item_url(start, reviewer, flt, blind))
    return html(state_of(request), "empty.html", title=st.title, reviewer=reviewer, flt=flt,
                clear_url=_item_url(start, reviewer, "all", blind))


def _item_context(store: ReviewStore, st: ReviewPage, n: int, reviewer: str, flt: str,
                  blind: bool) -> dict[str, Any]:
    p = st.problems[n - 1]
    review = store.get_review(st.dataset_id, p.problem_id, reviewer)
    statuses = store.statuses(st.dataset_id, reviewer)
    n_items = len(st.problems)
    progress = store.progress(st.dataset_id, reviewer, n_items)
    project = store.project_progress(st.dataset_id, n_items)
    match = [i + 1 for i, q in enumerate(st.problems)
             if _matches(statuses.get(q.problem_id), flt)]
    prev_n = max((i for i in match if i < n), default=None)
    next_n = min((i for i in match if i > n), default=None)
    judge = st.judge.get(p.problem_id)
    # blind: the judge's scores appear once this reviewer has given a verdict on the item
    judge_visible = judge is not None and (not blind or (review is not None and review.decided))
    scores = review.scores if review else {}
    dims = [{"name": d, "label": d.replace("_", " ").capitalize(),
             "value": scores.get(d), "guide": DIMENSION_GUIDE.get(d, {}),
             "judge": judge.get(d) if judge_visible and judge else None}
            for d in st.dimensions]
    strip = [{"n": i + 1, "status": statuses.get(q.problem_id, "none"),
              "url": _item_url(i + 1, reviewer, flt, blind), "current": i + 1 == n,
              "id": q.problem_id} for i, q in enumerate(st.problems)]
    q = {"reviewer": reviewer, **({"blind": "1"} if blind else {})}
    config = {
        "problem_id": p.problem_id, "reviewer": reviewer, "index": n, "total": n_items,
        "dimensions": list(st.dimensions), "blind": blind, "filter": flt,
        "prev_url": _item_url(prev_n, reviewer, flt, blind) if prev_n else None,
        "next_url": _item_url(next_n, reviewer, flt, blind) if next_n else None,
        "filter_base": f"{PREFIX}/?" + urlencode({**q, "from": str(n)}),
        "has_judge": judge is not None}
    return {
        "title": st.title, "dataset_id": st.dataset_id, "reviewer": reviewer, "n": n,
        "total": n_items, "problem": p, "review": review, "dims": dims,
        "statuses": list(DECIDED), "status": review.status if review else "pending",
        "judge": judge if judge_visible else None, "judge_hidden": judge is not None
        and not judge_visible, "judge_extra": {k: v for k, v in (judge or {}).items()
                                               if k not in st.dimensions}
        if judge_visible else {},
        "blind": blind, "flt": flt, "filters": FILTERS, "progress": progress,
        "project": project, "strip": strip, "config": config,
        "prev_url": config["prev_url"], "next_url": config["next_url"],
        "in_filter": n in match, "saved_iso": review.to_dict()["updated_at_iso"]
        if review else None}


async def item_page(request: web.Request) -> web.StreamResponse:
    """``/item/<n>``: one problem with its review form (or a 404 page)."""
    st, store = review_of(request)
    reviewer = reviewer_param(request, st)
    if not reviewer:
        return _ask_reviewer(st, request)
    try:
        n = int(request.match_info["n"])
    except ValueError:
        n = 0
    if not 1 <= n <= len(st.problems):
        return html(state_of(request), "empty.html", http_status=404, title=st.title,
                    reviewer=reviewer, flt=None, missing=request.match_info["n"],
                    total=len(st.problems), clear_url=_item_url(1, reviewer, "all", False))
    flt, blind = _flags(request)
    ctx = await asyncio.to_thread(_item_context, store, st, n, reviewer, flt, blind)
    return html(state_of(request), "item.html", **ctx)


