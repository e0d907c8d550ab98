"""``/compare?a=RUN&b=RUN``: the paired comparison of two runs, every flipped sample with
both outputs (MAX_FLIPS a page per direction); without ``a`` and ``b``, a form to choose."""

from __future__ import annotations

import math
from typing import Any

from aiohttp import web

from assay.compare import compare_runs
from assay.compare.flips import attach_outputs
from assay.compare.render import cost_text
from assay.errors import AssayError, RunNotFoundError
from assay.store import queries as q
from assay.store.sqlite import Store
from assay.view.params import BadParam, RunFilters
from assay.web.state import PageError, html, sample_url, state_of

__all__ = ["compare_page"]

#: flipped samples listed per direction on a page (the counts are always complete)
MAX_FLIPS = 200
#: an output longer than this is folded (``<details>``) after its first part
FOLD_CHARS = 600


def _alpha(query: Any) -> float:
    raw = query.get("alpha", "").strip()
    if not raw:
        return 0.05
    try:
        value = float(raw)
    except ValueError:
        raise BadParam("alpha", raw, "give a significance level such as 0.05") from None
    if not (math.isfinite(value) and 0 < value < 1):
        raise BadParam("alpha", raw, "give a significance level between 0 and 1, e.g. 0.05")
    return value


def _page(query: Any, name: str) -> int:
    raw = query.get(name, "").strip()
    if not raw:
        return 1
    if not raw.isdigit() or int(raw) < 1:
        raise BadParam(name, raw, "give a page number: 1, 2, ...")
    return int(raw)


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        if 0 < abs(value) < 10 ** -digits:
            return f"{value:.1e}"
        return f"{value:.{digits}f}"
    return str(value)


def _choices(store: Store) -> list[dict[str, Any]]:
    rows, _, _ = q.run_rows(store, RunFilters())
    return rows


def _compare(store: Store, a: str, b: str, score: str | None, by: str | None,
             alpha: float, pages: dict[str, int] | None = None) -> dict[str, Any]:
    pages = pages or {}
    try:
        result = compare_runs(store, a, b, score=score, by=by, alpha=alpha, outputs=False)
    except RunNotFoundError as e:
        raise PageError(404, "Run not found", str(e)) from None
    except AssayError as e:
        raise PageError(400, "Cannot compare these runs", str(e)) from None
    flips = result.get("flips") or {}
    ids = (result["a"]["id"], result["b"]["id"])
    links: dict[str, Any] = {}
    for kind in ("fixed", "broken"):
        rows = list(flips.get(kind) or [])
        page = min(pages.get(kind, 1), max(1, math.ceil(len(rows) / MAX_FLIPS)))
        start = (page - 1) * MAX_FLIPS
        links[kind] = [{**f, "a_text": _fmt(f.get("a")), "b_text": _fmt(f.get("b")),
                        "a_url": sample_url(ids[0], str(f["sample_id"])),
                        "b_url": sample_url(ids[1], str(f["sample_id"]))}
                       for f in rows[start:start + MAX_FLIPS]]
        links[kind + "_total"] = len(rows)
        links[kind + "_page"] = page
        links[kind + "_start"] = start
    attach_outputs(store, result, {"fixed": links["fixed"], "broken": links["broken"]})
    return {"c": result, "flips": links, "fmt": _fmt, "fold": FOLD_CHARS, "cost": cost_text(result),
            "page_size": MAX_FLIPS,
            "model_a": q.model_label(result["a"].get("model")),
            "model_b": q.model_label(result["b"].get("model"))}


async def compare_page(request: web.Request) -> web.Response:
    st = state_of(request)
    a, b = request.query.get("a", "").strip(), request.query.get("b", "").strip()
    score = request.query.get("score", "").strip() or None
    by = request.query.get("by", "").strip() or None
    alpha = _alpha(request.query)
    if not a or not b:
        runs = await st.call(_choices)
        return html(st, "compare_pick.html", title="Compare two runs", runs=runs, a=a, b=b,
                    model_label=q.model_label)
    pages = {k: _page(request.query, f"{k}_page") for k in ("fixed", "broken")}
    ctx = await st.call(_compare, a, b, score, by, alpha, pages)
    return html(st, "compare.html", title=f"Compare {a} and {b}", score=score or "",
                by=by or "", alpha=alpha, **ctx)
