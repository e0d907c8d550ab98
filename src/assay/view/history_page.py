"""``/history/<task>``: a task's headline metric run by run, as ``assay history TASK``
writes it (the ``history`` page of the one renderer), each run linked to its page."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, urlencode

from aiohttp import web
from markupsafe import Markup

from assay.compare.history import task_history
from assay.compare.history_render import history_context
from assay.errors import AssayError
from assay.reports.pages import render_page
from assay.store.sqlite import Store
from assay.view.params import BadParam
from assay.web.state import PageError, html, state_of

__all__ = ["history_page", "history_url"]


def history_url(task: str, **query: Any) -> str:
    """The link to ``task``'s history page (``query``: model, fingerprint, all, limit)."""
    params = {k: v for k, v in query.items() if v not in (None, "", False)}
    return f"/history/{quote(task, safe='')}" + (f"?{urlencode(params)}" if params else "")


def _limit(raw: str) -> int | None:
    if not raw:
        return None
    if not raw.isdigit() or int(raw) < 1:
        raise BadParam("limit", raw, "give a number of runs: 1, 2, ...")
    return int(raw)


def _history(store: Store, task: str, model: str | None, fingerprint: str | None,
             mix: bool, limit: int | None) -> dict[str, Any]:
    try:
        hist = task_history(store, task, model=model, fingerprint=fingerprint, mix=mix,
                            limit=limit)
    except AssayError as e:  # no runs of the task, an unknown fingerprint
        raise PageError(404, "No history", str(e)) from None
    links = {p["id"]: f"/run/{quote(p['id'], safe='')}" for p in hist["points"]}
    # autoescaped by the page renderer: safe to place as is
    body = Markup(render_page("history", {**history_context(hist), "fragment": True,
                                          "titled": True, "run_links": links}))
    configs = [{"fingerprint": c["fingerprint"], "runs": c["runs"], "shown": c["shown"],
                "text": c.get("text") or "",
                "url": history_url(task, model=model, fingerprint=c["fingerprint"])}
               for c in hist["configurations"]]
    return {"task": hist["task"], "body": body, "configs": configs, "mixed": hist["mixed"],
            "all_url": history_url(task, model=model, all=1), "model": model or "",
            "latest": hist["points"][-1]["id"] if hist["points"] else None}


async def history_page(request: web.Request) -> web.Response:
    """``/history/<task>?model=M&fingerprint=F&all=1&limit=N``."""
    st = state_of(request)
    query = request.query
    task = request.match_info["task"]
    model = query.get("model", "").strip()[:200] or None
    fingerprint = query.get("fingerprint", "").strip()[:200] or None
    mix = query.get("all", "").strip() not in ("", "0")
    if mix and fingerprint:
        raise BadParam("all", query.get("all", ""), "give a fingerprint or all, not both")
    ctx = await st.call(_history, task, model, fingerprint, mix,
                        _limit(query.get("limit", "").strip()))
    return html(st, "history.html", title=f"History of {task}", **ctx)
