"""``/compare?a=RUN&b=RUN``: the paired comparison of two runs, from
:func:`assay.compare.compare_runs` (McNemar's exact test or a paired bootstrap, the
difference with its interval, per-category rows with Holm-adjusted p-values, and the
samples that flipped). Without ``a`` and ``b`` it shows a form to choose them.
"""

from __future__ import annotations

import math
from typing import Any

from aiohttp import web

from assay.compare import compare_runs
from assay.errors import AssayError, RunNotFoundError
from assay.store import queries as q
from assay.store.sqlite import Store
from assay.view.params import BadParam, RunFilters
from assay.web.state import PageError, sample_url, state_of

__all__ = ["compare_page"]

MAX_FLIPS = 200
"""Flipped samples listed per direction (the counts are always complete)."""


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
             alpha: float) -> dict[str, Any]:
    try:
        result = compare_runs(store, a, b, score=score, by=by, alpha=alpha)
    except RunNotFoundError as e:
        raise PageError(404, "Run not found", str(e)) from None
    except AssayError as e:
        raise PageError(400, "Cannot compare these runs", str(e)) from None
    flips = result.get("flips") or {}
    ids = (result["a"]["id"], result["b"]["id"])
    links: dict[str, list[dict[str, Any]]] = {}
    for kind in ("fixed", "broken"):
        rows = list(flips.get(kind) or [])
        links[kind] = [{**f, "a_text": _fmt(f.get("a")), "b_text": _fmt(f.get("b")),
                        "a_url": sample_url(ids[0], str(f["sample_id"])),
                        "b_url": sample_url(ids[1], str(f["sample_id"]))}
                       for f in rows[:MAX_FLIPS]]
        links[kind + "_total"] = len(rows)  # type: ignore[assignment]
    return {"c": result, "flips": links, "fmt": _fmt,
            "model_a": q.model_label(result["a"].get("model")),
            "model_b": q.model_label(result["b"].get("model"))}


async def compare_page(request: web.Request) -> web.Response:
    """``/compare``: the comparison of runs ``a`` and ``b`` (or a form to pick them)."""
    st = state_of(request)
    a, b = request.query.get("a", "").strip(), request.query.get("b", "").strip()
    score = request.query.get("score", "").strip() or None
    by = request.query.get("by", "").strip() or None
    alpha = _alpha(request.query)
    if not a or not b:
        runs = await st.call(_choices)
        html = st.render("compare_pick.html", title="Compare two runs", runs=runs, a=a, b=b,
                         model_label=q.model_label)
        return web.Response(text=html, content_type="text/html")
    ctx = await st.call(_compare, a, b, score, by, alpha)
    html = st.render("compare.html", title=f"Compare {a} and {b}", score=score or "",
                     by=by or "", alpha=alpha, **ctx)
    return web.Response(text=html, content_type="text/html")
