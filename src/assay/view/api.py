"""The JSON the live view polls every two seconds while a run is ``running``:
``/api/run/<id>/progress``, its counts and newest samples. Read-only."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from assay.store import queries as q
from assay.store.sqlite import Store
from assay.web.state import sample_url, state_of

__all__ = ["api_progress"]


def _progress(store: Store, run_id: str) -> dict[str, Any] | None:
    info = q.progress(store, run_id)
    if info is None:
        return None
    info["newest"] = [{
        "sample_id": r["sample_id"], "epoch": r["epoch"], "verdict": r["verdict"],
        "score": r["score"], "prediction": r["prediction"], "error": r["error"],
        "url": sample_url(run_id, r["sample_id"], r["epoch"]),
    } for r in q.newest_samples(store, run_id)]
    return info


async def api_progress(request: web.Request) -> web.Response:
    """``GET /api/run/<id>/progress``: status, counts and the ten newest samples."""
    st = state_of(request)
    run_id = request.match_info["run_id"]
    info = await st.call(_progress, run_id)
    if info is None:
        return web.json_response({"ok": False, "error": f"no run {run_id!r}"}, status=404)
    return web.json_response({"ok": True, **info})
