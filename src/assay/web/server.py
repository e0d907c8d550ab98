"""The local web app: one aiohttp server on 127.0.0.1 for the run viewer and the review page.

``assay view`` and ``assay review DATA`` both start it. The viewer reads the store
read-only (SQLite ``mode=ro``); the review API under ``/review/api/`` is the only place
that takes writes. Every request passes :func:`assay.web.security.guard`, then
:func:`error_pages` (one-line 4xx/5xx pages, never a traceback)."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import signal
import webbrowser
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from aiohttp import web

from assay.errors import ConfigError, StoreError
from assay.review import api as review_api
from assay.review import pages as review_pages
from assay.review.mathml import render_math
from assay.review.page import PREFIX, REVIEW_KEY, STORE_KEY, ReviewPage
from assay.store.review import ReviewStore
from assay.store.sqlite import Store, workspace_dir
from assay.view import api as view_api
from assay.view import compare_page, history_page, pages, run_files, search_page
from assay.web.security import check_loopback, guard
from assay.web.state import STATE_KEY, STATIC, PageError, WebState, html, state_of

__all__ = ["create_app", "launch", "run_until_stopped", "serve", "start_site"]

log = logging.getLogger(__name__)


@web.middleware
async def error_pages(request: web.Request, handler: Callable[..., Any]) -> web.StreamResponse:
    """Middleware: a bad parameter is a 400 page, an unknown run a 404, a failure a 500
    with one line (the traceback to the log); under ``/api/`` the same as JSON."""
    st = state_of(request)
    api = "/api/" in request.path

    def answer(status: int, title: str, message: str) -> web.Response:
        if api:
            return web.json_response({"ok": False, "error": message}, status=status)
        return html(st, "error.html", http_status=status, status=status, title=title,
                    message=message)

    try:
        return await handler(request)
    except PageError as e:
        return answer(e.status, e.title, e.message)
    except web.HTTPNotFound:
        return answer(404, "Not found", f"there is no page at {request.path}")
    except web.HTTPException:
        raise
    except StoreError as e:
        return answer(503, "Store unavailable", str(e))
    except Exception as e:  # noqa: BLE001 - one line on the page, the traceback in the log
        log.exception("assay web: %s %s", request.method, request.path)
        return answer(500, "Internal error", f"{type(e).__name__}: {e}")


def _store_path(store_path: str | Path | None) -> Path:
    return Path(store_path) if store_path else workspace_dir() / "assay.db"


def create_app(store_path: str | Path | None = None, *,
               review: ReviewPage | None = None) -> web.Application:
    """The app over ``store_path`` (default: the workspace's ``assay.db``), with
    ``review``'s page under ``/review/``; a missing store is a StoreError here."""
    app = web.Application(middlewares=[guard, error_pages], client_max_size=1024 * 1024)
    state = app[STATE_KEY] = WebState(_store_path(store_path))
    r = app.router
    r.add_get("/", pages.runs_page)
    r.add_get("/run/{run_id}", pages.run_page)
    r.add_get("/run/{run_id}/sample/{sample_id:.+}", pages.sample_page)
    r.add_get("/run/{run_id}/files/{name}", run_files.run_file)
    r.add_get("/search", search_page.search_page)
    r.add_get("/compare", compare_page.compare_page)
    r.add_get("/history/{task:.+}", history_page.history_page)
    r.add_get("/api/run/{run_id}/progress", view_api.api_progress)
    r.add_get("/favicon.ico", _no_icon)
    r.add_static("/static", STATIC, append_version=False)
    if review is not None:
        app[REVIEW_KEY] = review
        app[STORE_KEY] = review.store or ReviewStore(state.store_path)
        state.env.filters["math"] = render_math
        state.env.globals["review_url"] = f"{PREFIX}/"  # the viewer's menu links to it
        r.add_get(f"{PREFIX}/", review_pages.index_page)
        r.add_get(f"{PREFIX}/item/{{n}}", review_pages.item_page)
        r.add_get(f"{PREFIX}/api/review", review_api.api_get_review)
        r.add_post(f"{PREFIX}/api/review", review_api.api_post_review)
        r.add_get(f"{PREFIX}/api/reviews", review_api.api_reviews)
        r.add_get(f"{PREFIX}/api/history", review_api.api_history)
        r.add_get(f"{PREFIX}/api/progress", review_api.api_progress)
        r.add_post(f"{PREFIX}/api/export", review_api.api_export)  # writes a file: POST only
        r.add_get("/item/{n}", _old_item_url)  # where an item's page was before the viewer

    async def _close(app: web.Application) -> None:
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, app[STATE_KEY].close)
        if review is not None and review.store is None:  # the one made here
            app[STORE_KEY].close()

    app.on_cleanup.append(_close)
    return app


async def _old_item_url(request: web.Request) -> web.Response:
    """``/item/N``, where an item was before it moved under ``/review/``: redirected."""
    raise web.HTTPMovedPermanently(f"{PREFIX}/item/{request.match_info['n']}"
                                   + (f"?{request.query_string}" if request.query_string else ""))


async def _no_icon(request: web.Request) -> web.Response:
    return web.Response(status=204)


async def start_site(app: web.Application, host: str, port: int) -> tuple[str, web.AppRunner]:
    """Start ``app`` (port 0: a free one); its URL and runner. An unbindable port: ConfigError."""
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    try:
        await site.start()
    except OSError as e:
        await runner.cleanup()
        if e.errno == errno.EADDRINUSE:
            raise ConfigError(f"port {port} on {host} is in use; choose another with --port "
                              "(0 picks a free one)") from e
        raise ConfigError(f"cannot listen on {host} port {port}: "
                          f"{e.strerror or type(e).__name__}; choose another with --port") from e
    except BaseException:
        await runner.cleanup()
        raise
    bound = runner.addresses[0][1]
    shown = "127.0.0.1" if host in ("localhost", "127.0.0.1") else host
    shown = f"[{shown}]" if ":" in shown and not shown.startswith("[") else shown
    return f"http://{shown}:{bound}/", runner


async def serve(host: str = "127.0.0.1", port: int = 0, *,
                store_path: str | Path | None = None, review: ReviewPage | None = None,
                open_browser: bool = False) -> tuple[str, web.AppRunner]:
    """Start the app on loopback only; the URL of its page and the runner. With a review
    page, a workspace without a store gets an empty one; without, that is a StoreError."""
    check_loopback(host)
    if review is not None and review.store is None:
        Store(_store_path(store_path)).close()
    url, runner = await start_site(create_app(store_path, review=review), host, port)
    if review is not None:
        url = url.rstrip("/") + review.start_path()
    if open_browser:
        webbrowser.open(url)
    return url, runner


def run_until_stopped(start: Callable[[], Awaitable[web.AppRunner]]) -> None:
    """Run ``start()`` until SIGINT or SIGTERM, then clean up; Ctrl-C is no traceback."""

    async def main() -> None:
        runner = await start()
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            # not on Windows, nor off the main thread
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.add_signal_handler(sig, stop.set)
        try:
            await stop.wait()
        finally:
            await runner.cleanup()

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main())


def launch(*, host: str = "127.0.0.1", port: int = 0, open_browser: bool = True,
           store_path: str | Path | None = None, review: ReviewPage | None = None,
           echo: Callable[[str], Any] = print) -> None:
    """Serve until Ctrl-C (``assay view``, ``assay review``)."""
    try:
        check_loopback(host)
    except ValueError as e:
        raise ConfigError(str(e)) from e
    path = _store_path(store_path)

    async def start() -> web.AppRunner:
        url, runner = await serve(host, port, store_path=path, review=review,
                                  open_browser=open_browser)
        if review is not None:
            echo(f"Review page: {url}")
            echo(f"Runs: {url.split(PREFIX + '/')[0]}/")
            echo("Every submission is saved at once in the workspace store; Ctrl-C stops.")
        else:
            echo(f"assay view: {url}")
            echo(f"Reading {path} (read-only); Ctrl-C stops.")
        return runner

    run_until_stopped(start)
