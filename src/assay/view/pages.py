"""The HTML pages of ``assay view``: the runs list, a run, one sample, and errors.

Handlers parse the query (:mod:`.params`), run the SQL on a worker thread
(:mod:`.queries`) and render a template; nothing here writes anywhere.
"""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import quote

from aiohttp import web

from assay.errors import RunNotFoundError
from assay.store.sqlite import Store
from assay.view import queries as q
from assay.view.params import PAGE_SIZE, VERDICTS, BadParam, RunFilters, SampleFilters
from assay.view.state import ViewState, sample_url, state_of
from assay.view.summary import headline_for, metric_sections
from assay.view.transcript import pretty, sample_view

__all__ = ["LIVE_METRICS_MAX", "PageError", "error_page", "run_page", "runs_page",
           "sample_page"]

log = logging.getLogger(__name__)

LIVE_METRICS_MAX = 20_000
"""A run that stored no metrics (stopped half way, still running, or from an older
version) has them computed when its page is opened, read-only and kept in memory while
the run is unchanged; past this many samples only when asked (``?metrics=compute``), so
that opening any run's page stays well under a second."""


class PageError(Exception):
    """An answer other than the page asked for: ``status``, a title and one line."""

    def __init__(self, status: int, title: str, message: str) -> None:
        super().__init__(message)
        self.status, self.title, self.message = status, title, message


def error_page(st: ViewState, status: int, title: str, message: str) -> web.Response:
    """A small HTML page for a 4xx/5xx answer (never a traceback)."""
    return web.Response(text=st.render("error.html", title=title, message=message,
                                       status=status),
                        status=status, content_type="text/html")


def _html(st: ViewState, template: str, **ctx: Any) -> web.Response:
    return web.Response(text=st.render(template, **ctx), content_type="text/html")


def _get_run(store: Store, run_id: str) -> dict[str, Any]:
    try:
        return store.get_run(run_id)
    except RunNotFoundError as e:
        raise PageError(404, "Run not found", str(e)) from None


def _pager(page: int, total: int, link: Any) -> dict[str, Any]:
    pages = q.pages_for(total)
    return {"page": page, "pages": pages, "total": total,
            "first": (page - 1) * PAGE_SIZE + 1 if total else 0,
            "last": min(page * PAGE_SIZE, total),
            "prev": link(page - 1) if page > 1 else None,
            "next": link(page + 1) if page < pages else None}


# -- the runs list ----------------------------------------------------------------------
def _runs_context(store: Store, f: RunFilters) -> dict[str, Any]:
    rows, total, page = q.run_rows(store, f)
    for r in rows:
        r["headline"] = headline_for(r["task"], r["metrics"])
        r["dataset_name"] = next((str(r["dataset"][k]) for k in ("name", "dataset", "source")
                                  if isinstance(r["dataset"], dict) and r["dataset"].get(k)),
                                 "")
    return {"runs": rows, "f": f, "choices": q.run_choices(store),
            "pager": _pager(page, total, lambda n: "/?" + f.query(page=n)),
            "statuses": ("running", "finished", "interrupted", "failed")}


async def runs_page(request: web.Request) -> web.Response:
    """``/``: runs newest first, filtered by task, model, status, date and text; paged."""
    st = state_of(request)
    f = RunFilters.parse(request.query)
    ctx = await st.call(_runs_context, f)
    return _html(st, "runs.html", title="Runs", **ctx)


# -- one run ----------------------------------------------------------------------------
def _metrics(st: ViewState, store: Store, run: dict[str, Any], n_samples: int,
             compute: bool) -> tuple[dict[str, Any] | None, str, bool]:
    """The run's metrics (stored, else computed read-only and cached), a note, and whether
    the page should offer to compute them."""
    if run["metrics"] is not None:
        return run["metrics"], "", False
    if n_samples == 0:
        return None, "No samples yet.", False
    key = (n_samples, run["status"])
    cached = st.metrics_cache.get(run["id"])
    if cached is not None and cached[0] == key:
        return cached[1], _computed_note(run), False
    if n_samples > LIVE_METRICS_MAX and not compute:
        return None, (f"This run stored no metrics{' yet' if run['status'] == 'running' else ''}"
                      f"; computing them from its {n_samples:,} samples takes a few "
                      "seconds."), True
    from assay.metrics.run import compute_metrics

    try:
        metrics = compute_metrics(store, run)  # read-only store: computed, never saved
    except Exception as e:  # noqa: BLE001 - a task that no longer loads, bad stored data
        log.debug("metrics of %s", run["id"], exc_info=True)
        return None, f"Metrics cannot be computed here: {type(e).__name__}: {e}", False
    st.metrics_cache[run["id"]] = (key, metrics)
    return metrics, _computed_note(run), False


def _computed_note(run: dict[str, Any]) -> str:
    if run["status"] == "running":
        return "Metrics so far (the run is still going); they are final when it ends."
    return "This run stored no metrics; they were computed from its samples for this page."


def _categories(st: ViewState, store: Store, run: dict[str, Any], key: str, n_samples: int
                ) -> list[tuple[str, int]]:
    """The values of the category field with their counts (kept while the run is unchanged)."""
    cache_key = (run["id"], key, n_samples, run["status"])
    cached = st.categories_cache.get(cache_key)
    if cached is None:
        cached = q.category_counts(store, run["id"], key)
        if len(st.categories_cache) > 256:
            st.categories_cache.clear()
        st.categories_cache[cache_key] = cached
    return cached


def _run_context(store: Store, st: ViewState, run_id: str, f: SampleFilters,
                 compute: bool) -> dict[str, Any]:
    run = _get_run(store, run_id)
    if run["id"] != run_id:  # a unique prefix: go to the run's own address
        raise web.HTTPFound(f"/run/{quote(run['id'], safe='')}"
                            + (f"?{f.query()}" if f.query() else ""))
    fields, default = q.metadata_fields(store, run_id)
    key = f.field or default
    rows, total, page = q.sample_page(store, run_id, f, key)
    f.page = page
    totals = store.sample_totals(run_id)
    metrics, metrics_note, offer = _metrics(st, store, run, totals["samples"], compute)
    for r in rows:
        r["url"] = sample_url(run_id, r["sample_id"], r["epoch"], f.query(page=None))
    parent = None
    if run["parent_id"]:
        try:
            parent = store.get_run(run["parent_id"])
        except RunNotFoundError:
            parent = {"id": run["parent_id"], "task": "?", "status": "missing"}
    running = run["status"] == "running"
    return {
        "run": run, "model_label": q.model_label(run["model"]), "f": f, "key": key,
        "fields": fields if key in fields or not key else [*fields, key],
        "categories": _categories(st, store, run, key, totals["samples"]), "rows": rows,
        "verdicts": VERDICTS, "totals": totals,
        "progress": q.progress(store, run_id) if running else None,
        "pager": _pager(page, total, lambda n: f"/run/{run_id}?" + f.query(page=n)),
        "metrics": metrics, "metrics_note": metrics_note,
        "compute_url": f"/run/{run_id}?" + f.query(metrics="compute") if offer else None,
        "headline": headline_for(run["task"], metrics),
        "sections": metric_sections(metrics), "children": q.children(store, run_id),
        "parent": parent, "model_json": pretty(run["model"]),
        "spec_json": pretty(run["spec"]), "dataset_json": pretty(run["dataset"]),
        "stats_json": pretty(run["stats"]),
    }


async def run_page(request: web.Request) -> web.Response:
    """``/run/<id>``: metrics with intervals, category tables, errors, child runs, and the
    samples table (paged and filtered in SQL); live progress while the run is going."""
    st = state_of(request)
    f = SampleFilters.parse(request.query)
    compute = request.query.get("metrics", "") == "compute"
    ctx = await st.call(_run_context, st, request.match_info["run_id"], f, compute)
    return _html(st, "run.html", title=f"Run {ctx['run']['id']}", **ctx)


# -- one sample -------------------------------------------------------------------------
def _epoch(request: web.Request) -> int | None:
    raw = request.query.get("epoch", "").strip()
    if not raw:
        return None
    try:
        return int(raw)
    except ValueError:
        raise BadParam("epoch", raw, "give an epoch number such as 0") from None


def _sample_context(store: Store, run_id: str, sample_id: str, epoch: int | None,
                    f: SampleFilters) -> dict[str, Any]:
    run = _get_run(store, run_id)
    run_id = run["id"]
    row = q.sample_row(store, run_id, sample_id, epoch)
    if row is None:
        which = f"{sample_id!r}" + (f" (epoch {epoch})" if epoch is not None else "")
        raise PageError(404, "Sample not found", f"run {run_id} has no sample {which}")
    _, default = q.metadata_fields(store, run_id)
    prev, nxt = q.neighbours(store, run_id, row, f, f.field or default)
    back = f.query(page=None)
    return {
        "run": run, "model_label": q.model_label(run["model"]), "row": row,
        "view": sample_view(row), "filters": f, "filtered": f.active,
        "prev_url": sample_url(run_id, prev[0], prev[1], back) if prev else None,
        "next_url": sample_url(run_id, nxt[0], nxt[1], back) if nxt else None,
        "run_url": f"/run/{run_id}" + (f"?{back}" if back else ""),
        "epoch_urls": [(e, sample_url(run_id, row["sample_id"], e, back))
                       for e in row["epochs"]],
    }


async def sample_page(request: web.Request) -> web.Response:
    """``/run/<id>/sample/<sample_id>?epoch=N``: one sample in full, with previous/next
    (within the filters it was reached through)."""
    st = state_of(request)
    f = SampleFilters.parse(request.query)
    epoch = _epoch(request)
    ctx = await st.call(_sample_context, request.match_info["run_id"],
                        request.match_info["sample_id"], epoch, f)
    return _html(st, "sample.html", title=f"{ctx['row']['sample_id']} · {ctx['run']['id']}",
                 **ctx)
