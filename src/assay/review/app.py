"""The human review page: a small aiohttp app on 127.0.0.1, rendered on the server.

One problem at a time (``/item/<n>``, 1-based), with its answer and solution
(LaTeX shown as MathML, rendered here), four 1-5 scores, a status, a comment,
previous/next, progress, a status filter, keyboard shortcuts and an optional
blind mode that keeps the judge's scores off the page until the reviewer has
given a verdict on the item. Every submission is a ``POST /api/review`` that is
committed to the workspace database before the page says "saved"; coming back
to an item, reloading or restarting the server shows the saved state.

No external assets: the page loads only its own CSS and JS from ``/static``,
under a Content-Security-Policy that allows nothing else. Requests whose Host is
not a loopback name are refused (DNS rebinding). Every route that changes state
(saving a review, writing the export file) is POST-only and takes JSON from the
page's own origin, so a cross-site ``<img>``, link or form cannot trigger it; a
GET of such a route is answered 405 and changes nothing.

The pieces: :mod:`.pages` (HTML), :mod:`.api` (JSON), :mod:`.security` (loopback and
same-origin checks), :mod:`.state` (what the handlers share), :mod:`.mathml` (LaTeX),
:mod:`.inputs` (judge scores); this module builds the app and serves it.
"""

from __future__ import annotations

import webbrowser
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from aiohttp import web

from assay.core.local_server import run_until_stopped, start_site
from assay.errors import DatasetError
from assay.review.api import (
    api_export,
    api_get_review,
    api_history,
    api_post_review,
    api_progress,
    api_reviews,
)
from assay.review.inputs import load_judge_scores, utf8_error
from assay.review.pages import index_page, item_page
from assay.review.records import DIMENSIONS, normalize_reviewer
from assay.review.security import check_loopback, guard
from assay.review.state import STATE_KEY, STATIC, STORE_KEY, ReviewState
from assay.review.store import ReviewStore, dataset_id
from assay.store.sqlite import workspace_dir
from assay.tasks.datagen.problem import Problem, load_problems

__all__ = ["create_app", "default_export_path", "launch", "serve"]


def default_export_path(data_path: str | Path | None, dataset_id: str) -> Path:
    """The book's ``<data>_verifications.json`` beside the data file, else in the workspace."""
    if data_path is not None:
        p = Path(data_path)
        return p.with_name(f"{p.stem}_verifications.json")
    return workspace_dir() / "reviews" / f"{dataset_id}_verifications.json"


def create_app(problems: Sequence[Problem], dataset_id: str,
               judge_scores: Mapping[str, Mapping[str, Any]] | None = None,
               store: ReviewStore | None = None, *, reviewer: str | None = None,
               export_path: str | Path | None = None,
               dimensions: Sequence[str] = DIMENSIONS, title: str | None = None
               ) -> web.Application:
    """The review app for ``problems`` (reviews filed under ``dataset_id``).

    ``store`` defaults to a :class:`ReviewStore` on the workspace database, closed
    with the app. ``reviewer`` is used when a URL names none. ``judge_scores``
    (``problem_id -> {dimension: score}``) are shown beside the form, or, in blind
    mode (``?blind=1``), only once the reviewer has submitted a verdict (approved,
    rejected or needs_revision) for the item; a draft does not reveal them.
    """
    if not problems:
        raise DatasetError("no problems to review")
    app = web.Application(middlewares=[guard], client_max_size=1024 * 1024)
    reviewer = normalize_reviewer(reviewer) if reviewer else None
    owned = store is None
    app[STORE_KEY] = store if store is not None else ReviewStore()
    app[STATE_KEY] = ReviewState(problems, dataset_id, judge_scores or {}, reviewer,
                                 Path(export_path) if export_path else
                                 default_export_path(None, dataset_id),
                                 dimensions, title or f"dataset {dataset_id}")
    if owned:
        async def _close(app: web.Application) -> None:
            app[STORE_KEY].close()
        app.on_cleanup.append(_close)
    r = app.router
    r.add_get("/", index_page)
    r.add_get("/item/{n}", item_page)
    r.add_get("/api/review", api_get_review)
    r.add_post("/api/review", api_post_review)
    r.add_get("/api/reviews", api_reviews)
    r.add_get("/api/history", api_history)
    r.add_get("/api/progress", api_progress)
    r.add_post("/api/export", api_export)  # writes a file: POST-only, like every write
    r.add_get("/favicon.ico", _no_icon)
    r.add_static("/static", STATIC, append_version=False)
    return app


async def _no_icon(request: web.Request) -> web.Response:
    return web.Response(status=204)


async def serve(data_path: str | Path, reviewer: str | None, host: str = "127.0.0.1",
                port: int = 0, open_browser: bool = False, *,
                judge_scores: str | Path | Mapping[str, Any] | None = None,
                blind: bool = False, store: ReviewStore | None = None,
                export_path: str | Path | None = None) -> tuple[str, web.AppRunner]:
    """Start the review page for a problems file; returns its URL and the running runner.

    Binds to ``host`` (loopback only; ``port=0`` picks a free port). Stop it with
    ``await runner.cleanup()``. Reviews go to the workspace database under the
    file's :func:`dataset_id`; ``/api/export`` writes ``<data>_verifications.json``
    beside the file unless ``export_path`` says otherwise.
    """
    check_loopback(host)
    if reviewer is not None:
        reviewer = normalize_reviewer(reviewer)
    try:
        problems = load_problems(data_path)
    except UnicodeDecodeError as e:  # a reader that lets it through: still one line, file:line
        raise utf8_error(Path(data_path), e) from e
    did = dataset_id(problems)
    app = create_app(problems, did, load_judge_scores(judge_scores), store,
                     reviewer=reviewer,
                     export_path=export_path or default_export_path(data_path, did),
                     title=Path(str(data_path)).name)
    url, runner = await start_site(app, host, port)
    q: dict[str, str] = {}
    if reviewer:
        q["reviewer"] = reviewer
    if blind:
        q["blind"] = "1"
    url += f"?{urlencode(q)}" if q else ""
    if open_browser:
        webbrowser.open(url)
    return url, runner


def launch(data_path: str | Path, reviewer: str | None = None, *, host: str = "127.0.0.1",
           port: int = 0, open_browser: bool = True,
           judge_scores: str | Path | Mapping[str, Any] | None = None, blind: bool = False,
           echo: Callable[[str], Any] = print) -> None:
    """Serve the review page until Ctrl-C (what ``assay review DATA --reviewer NAME`` runs)."""

    async def start() -> web.AppRunner:
        url, runner = await serve(data_path, reviewer, host, port, open_browser,
                                  judge_scores=judge_scores, blind=blind)
        echo(f"Review page: {url}")
        echo("Every submission is saved at once in the workspace store; Ctrl-C stops.")
        return runner

    run_until_stopped(start)
