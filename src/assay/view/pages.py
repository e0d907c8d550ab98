"""The HTML pages of ``assay view``: the runs list, a run, and one sample. Handlers
parse the query, run the store's queries on a worker thread and render; nothing is written."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from aiohttp import web
from markupsafe import Markup

from assay.errors import ConfigError, RunNotFoundError
from assay.metrics.run import NOT_FINISHED_NOTE
from assay.plan.children import models_of
from assay.plan.report import plan_page
from assay.reports.models import NAME as MODELS_TASK
from assay.reports.models import child_label, models_label
from assay.reports.pages import render_page
from assay.reports.render import failure_line
from assay.reports.values import cost_rows, rescored_from
from assay.store import queries as q
from assay.store.queries import PAGE_SIZE
from assay.store.sqlite import Store
from assay.view.history_page import history_url
from assay.view.params import VERDICTS, BadParam, RunFilters, SampleFilters
from assay.view.run_files import run_files, run_options
from assay.view.sample_extras import page_extras
from assay.view.summary import headline_for, metric_sections, models_view
from assay.view.transcript import pretty, sample_view
from assay.web.state import PageError, WebState, html, run_or_404, sample_url, state_of

__all__ = ["run_page", "runs_page", "sample_page"]


def _pager(page: int, total: int, link: Any) -> dict[str, Any]:
    pages = q.pages_for(total)
    return {"page": page, "pages": pages, "total": total,
            "first": (page - 1) * PAGE_SIZE + 1 if total else 0,
            "last": min(page * PAGE_SIZE, total),
            "prev": link(page - 1) if page > 1 else None,
            "next": link(page + 1) if page < pages else None}


# -- the runs list ----------------------------------------------------------------------
def _parents(store: Store, runs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The records of ``runs``' parents, by id (a missing one left out)."""
    found = {}
    for pid in {r["parent_id"] for r in runs if r["parent_id"]}:
        try:
            found[pid] = store.get_run(pid)
        except RunNotFoundError:
            pass
    return found


def _runs_context(store: Store, f: RunFilters) -> dict[str, Any]:
    rows, total, page = q.run_rows(store, f)
    parents = _parents(store, rows)
    for r in rows:
        r["headline"] = headline_for(r)
        r["label"] = models_label(r)
        parent = parents.get(r["parent_id"])
        # a multi-model parent's child is one of its models; a plan's, one of its steps
        r["child_of"] = child_label(parent, r) if parent else None
        r["parent_label"] = models_label(parent) if parent else None
        name = next((str(r["dataset"][k]) for k in ("name", "dataset", "source")
                     if isinstance(r["dataset"], dict) and r["dataset"].get(k)), "")
        # a data file's name, not its whole path (which would widen the column)
        r["dataset_name"] = name.rstrip("/").rsplit("/", 1)[-1]
        r["dataset_path"] = name
        r["history_url"] = history_url(r["task"]) if r["kind"] == "task" else None
    choices = q.run_choices(store)
    # the Task filter says what a stored name means: multi_model is every multi-model run
    choices["task_labels"] = {MODELS_TASK: "multi-model runs (any task)"}
    return {"runs": rows, "f": f, "choices": choices,
            "pager": _pager(page, total, lambda n: "/?" + f.query(page=n)),
            "statuses": ("running", "finished", "interrupted", "failed")}


async def runs_page(request: web.Request) -> web.Response:
    """``/``: runs newest first, filtered by task, model, status, date and text; paged."""
    st = state_of(request)
    f = RunFilters.parse(request.query)
    ctx = await st.call(_runs_context, f)
    return html(st, "runs.html", title="Runs", **ctx)


# -- one run ----------------------------------------------------------------------------
def _metrics(run: dict[str, Any], n_samples: int) -> tuple[dict[str, Any] | None, str]:
    """The run's stored metrics and a note; a run that stored none (running, stopped)
    shows counts: metrics come when it finishes, never from this page."""
    if run["metrics"] is not None:
        return run["metrics"], ""
    if n_samples == 0:
        return None, "No samples yet."
    if run["status"] == "running":
        return None, f"This run is still going: its {NOT_FINISHED_NOTE}."
    if run["status"] == "finished":  # an old store's run its task code could not describe
        return None, "This run stored no metrics."
    return None, (f"This run is {run['status']}: its {NOT_FINISHED_NOTE} "
                  f"('assay run {run['task']} --resume {run['id']}').")


def _categories(st: WebState, store: Store, run: dict[str, Any], key: str, n_samples: int
                ) -> list[tuple[str, int]]:
    """The category field's values with counts (cached while the run is unchanged)."""
    cache_key = (run["id"], key, n_samples, run["status"])
    cached = st.categories_cache.get(cache_key)
    if cached is None:
        cached = q.category_counts(store, run["id"], key)
        if len(st.categories_cache) > 256:
            st.categories_cache.clear()
        st.categories_cache[cache_key] = cached
    return cached


def _run_context(store: Store, st: WebState, run_id: str, f: SampleFilters
                 ) -> dict[str, Any]:
    run = run_or_404(store, run_id)
    if run["id"] != run_id:  # a unique prefix: go to the run's own address
        raise web.HTTPFound(f"/run/{quote(run['id'], safe='')}"
                            + (f"?{f.query()}" if f.query() else ""))
    fields, default = q.metadata_fields(store, run_id)
    key = f.field or default
    rows, total, page = q.sample_page(store, run_id, f, key)
    f.page = page
    totals = store.sample_totals(run_id)
    metrics, metrics_note = _metrics(run, totals["samples"])
    for r in rows:
        r["url"] = sample_url(run_id, r["sample_id"], r["epoch"], f.query(page=None))
    parent = None
    if run["parent_id"]:
        try:
            parent = store.get_run(run["parent_id"])
        except RunNotFoundError:
            parent = {"id": run["parent_id"], "task": "?", "status": "missing"}
    running = run["status"] == "running"
    children = q.children(store, run_id)
    label = models_label(run)
    models = models_view(metrics) if label else None
    shown = ({k: v for k, v in (metrics or {}).items() if k not in ("rows", "pairs", "task")}
             if models else metrics)
    return {
        "run": run, "model_label": q.model_label(run["model"]), "f": f, "key": key,
        "label": label or run["task"],
        "kind": _KINDS["models"] if label else _KINDS.get(
            "plan_models" if run["kind"] == "plan" and models_of(run) else run["kind"],
            run["kind"]),
        "plan_html": _plan_html(store, run) if run.get("kind") == "plan" else None,
        "parent_label": (models_label(parent) or parent["task"]) if parent else None,
        "child_of": child_label(parent, run) if parent else None,
        "fields": fields if key in fields or not key else [*fields, key],
        "categories": _categories(st, store, run, key, totals["samples"]), "rows": rows,
        "verdicts": VERDICTS, "totals": totals,
        "progress": q.progress(store, run_id) if running else None,
        "pager": _pager(page, total, lambda n: f"/run/{run_id}?" + f.query(page=n)),
        "metrics_note": metrics_note, "headline": headline_for(run),
        "sections": metric_sections(shown), "children": children, "models": models,
        # a parent run (a plan, a pipeline, a multi-model run) holds no samples of its own
        "parent_only": bool(children) and not totals["samples"],
        "fingerprint": (fp := (run.get("config") or {}).get("fingerprint")),
        "history_url": history_url(run["task"], fingerprint=fp) if run["kind"] == "task"
        else None,
        "parent": parent, "model_json": pretty(run["model"]),
        "rescored": rescored_from(run),  # (the original run, what re-scored it)
        # why a failed run failed (stats.error), said under its heading as report.html does
        "failure": failure_line(run) if run["status"] == "failed" else "",
        "cost_rows": cost_rows(run),  # what its calls cost, why a limit stopped it
        **_usage(store, run, parent, totals),
        "spec_json": pretty(run["spec"]), "dataset_json": pretty(run["dataset"]),
        "stats_json": pretty(run["stats"]), "options": run_options(store, run),
        "files": run_files(st.store_path, run_id)}


def _usage(store: Store, run: dict[str, Any], parent: dict[str, Any] | None,
           totals: dict[str, Any]) -> dict[str, Any]:
    """The roles' calls and tokens (a judge's); for a re-scoring, its own (read from its
    samples) and the original run's model calls and tokens, which its samples carry."""
    if not rescored_from(run):
        roles = {k: v for k, v in ((run.get("stats") or {}).get("role_calls") or {}).items()
                 if isinstance(v, dict)}
        return {"role_usage": roles, "original_totals": None}
    original = None
    if parent is not None and parent.get("status") != "missing":
        original = store.sample_totals(parent["id"])
    return {"role_usage": q.role_usage(store, run["id"]),
            "original_totals": original or {**totals, "model_calls": None}}


#: a run's kind as its page says it (a task's run says none)
_KINDS = {"task": None, "plan": "plan: a child run per task of the plan",
          "plan_models": "plan: a child run per task of the plan on each model",
          "pipeline": "pipeline: a child run per step",
          "models": "multi-model run: one task, a child run per model"}
#: what the plan page reads from a stored plan summary (an older one's is made again)
_PLAN_KEYS = ("plan_run", "tasks", "capabilities", "chart", "counts", "notes", "model")


def _plan_html(store: Store, run: dict[str, Any]) -> Markup | None:
    """A plan run's results as its report shows them (the ``plan`` page, without its own
    head), each task's run linked to its page; ``None`` for a run that holds no plan."""
    stored = run.get("metrics")
    summary = stored if isinstance(stored, dict) and (
        all(k in stored for k in _PLAN_KEYS) or "per_model" in stored) else None
    try:
        ctx = plan_page(store, run["id"], summary=summary)
    except (ConfigError, RunNotFoundError):  # no plan stored; a step's run deleted
        return None
    links = {t["run_id"]: f"/run/{quote(t['run_id'], safe='')}"
             for part in ctx["parts"] for t in part["s"]["tasks"] if t.get("run_id")}
    # autoescaped by the page renderer: safe to place as is
    return Markup(render_page("plan", {**ctx, "fragment": True, "run_links": links}))


async def run_page(request: web.Request) -> web.Response:
    """``/run/<id>``: metrics, categories, errors, child runs and the samples (paged and
    filtered in SQL); live progress while the run is going."""
    st = state_of(request)
    f = SampleFilters.parse(request.query)
    ctx = await st.call(_run_context, st, request.match_info["run_id"], f)
    return html(st, "run.html", title=f"Run {ctx['run']['id']}", **ctx)


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
    run = run_or_404(store, run_id)
    run_id = run["id"]
    row = q.sample_row(store, run_id, sample_id, epoch)
    if row is None:
        which = f"{sample_id!r}" + (f" (epoch {epoch})" if epoch is not None else "")
        raise PageError(404, "Sample not found", f"run {run_id} has no sample {which}")
    _, default = q.metadata_fields(store, run_id)
    prev, nxt = q.neighbours(store, run_id, row, f, f.field or default)
    back = f.query(page=None)
    view = sample_view(row)
    return {
        "run": run, "model_label": q.model_label(run["model"]), "row": row,
        "view": view, "extras": page_extras(view, row, run), "filters": f,
        "filtered": f.active,
        "prev_url": sample_url(run_id, prev[0], prev[1], back) if prev else None,
        "next_url": sample_url(run_id, nxt[0], nxt[1], back) if nxt else None,
        "run_url": f"/run/{run_id}" + (f"?{back}" if back else ""),
        "epoch_urls": [(e, sample_url(run_id, row["sample_id"], e, back))
                       for e in row["epochs"]]}


async def sample_page(request: web.Request) -> web.Response:
    """``/run/<id>/sample/<sample_id>?epoch=N``: one sample, previous/next within the filters."""
    st = state_of(request)
    f = SampleFilters.parse(request.query)
    epoch = _epoch(request)
    ctx = await st.call(_sample_context, request.match_info["run_id"],
                        request.match_info["sample_id"], epoch, f)
    return html(st, "sample.html", title=f"{ctx['row']['sample_id']} · {ctx['run']['id']}",
                 **ctx)
