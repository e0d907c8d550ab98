"""``/search``: samples whose input, target or output hold some words, over every run or
one (``?run=<id>``), paged, best first. The index is brought up to date before each search;
input is searched as words (FTS syntax never parsed), so any query gives results or a reason."""

from __future__ import annotations

import sqlite3
from typing import Any
from urllib.parse import urlencode

from aiohttp import web

from assay.store import queries as q
from assay.store.search import MARK_END, MARK_START, fts_query
from assay.store.sqlite import Store
from assay.view.params import page_number
from assay.web.state import WebState, html, run_or_404, sample_url, state_of

__all__ = ["excerpt_parts", "search_page"]

_MAX_QUERY = 200


def excerpt_parts(excerpt: str) -> list[tuple[str, bool]]:
    """An excerpt as ``(text, is a match)`` parts."""
    parts: list[tuple[str, bool]] = []
    for i, chunk in enumerate(excerpt.split(MARK_START)):
        if i == 0:
            parts.append((chunk, False))
            continue
        match, _, rest = chunk.partition(MARK_END)
        parts += [(match, True), (rest, False)]
    return [(t, m) for t, m in parts if t]


def _search(store: Store, st: WebState, text: str, run_id: str | None, page: int
            ) -> dict[str, Any]:
    run = run_or_404(store, run_id) if run_id else None
    note = ""
    hits: list[Any] = []
    total = 0
    if not text:
        note = "Type one or more words to search for."
    elif fts_query(text) is None:
        note = "Type words (letters or digits) to search for: punctuation alone finds nothing."
    else:
        try:
            hits, total, page = st.search.search(store, text, run_id=run and run["id"],
                                                 page=page, page_size=q.PAGE_SIZE)
        except sqlite3.Error as e:  # the index file broken or locked: say so, in one line
            note = f"The search index could not be read ({e}); try again."
        if not note and not total:
            note = "No sample holds all of these words."
    rows = [{"run_id": h.run_id, "sample_id": h.sample_id, "epoch": h.epoch,
             "field": h.field, "parts": excerpt_parts(h.excerpt),
             "url": sample_url(h.run_id, h.sample_id, h.epoch)} for h in hits]
    return {"run": run, "text": text, "hits": rows, "total": total, "page": page,
            "pages": q.pages_for(total), "note": note}


async def search_page(request: web.Request) -> web.Response:
    """``/search?q=words[&run=<id>][&page=N]``."""
    st = state_of(request)
    text = request.query.get("q", "").strip()[:_MAX_QUERY]
    run_id = request.query.get("run", "").strip()
    page = page_number(request.query)
    ctx = await st.call(_search, st, text, run_id or None, page)

    def link(n: int) -> str:
        params = {"q": text, **({"run": ctx["run"]["id"]} if ctx["run"] else {}), "page": n}
        return "/search?" + urlencode(params)

    ctx["prev"] = link(ctx["page"] - 1) if ctx["page"] > 1 else None
    ctx["next"] = link(ctx["page"] + 1) if ctx["page"] < ctx["pages"] else None
    return html(st, "search.html", title=f"Search: {text}" if text else "Search", **ctx)

