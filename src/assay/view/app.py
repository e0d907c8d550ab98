"""``assay view``: a local, read-only web app over the workspace store.

An aiohttp app on 127.0.0.1, rendered on the server: the runs list (``/``), a run with
its metrics and samples (``/run/<id>``), one sample in full
(``/run/<id>/sample/<sample_id>``), the paired comparison of two runs (``/compare``),
and the JSON its live view polls (``/api/run/<id>/progress``).

It never writes: the store is opened with ``Store(readonly=True)`` (SQLite
``mode=ro``), and the app answers only ``GET``/``HEAD`` (anything else is 405). The
review page's guard (:mod:`assay.review.security`) keeps it local: requests
whose ``Host`` is not a loopback name are refused (DNS rebinding), and every answer
carries a Content-Security-Policy that allows only the app's own CSS and JS.
"""

from __future__ import annotations

import asyncio
import logging
import webbrowser
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aiohttp import web

from assay.core.local_server import run_until_stopped, start_site
from assay.errors import ConfigError, StoreError
from assay.review.security import SECURITY_HEADERS, check_loopback, guard, host_ok
from assay.store.sqlite import workspace_dir
from assay.view.api import api_progress
from assay.view.compare_page import compare_page
from assay.view.pages import PageError, error_page, run_page, runs_page, sample_page
from assay.view.params import BadParam
from assay.view.state import STATE_KEY, STATIC, ViewState, state_of

__all__ = ["create_app", "launch", "serve"]

log = logging.getLogger(__name__)

READ_METHODS = frozenset({"GET", "HEAD"})


@web.middleware
async def read_only(request: web.Request, handler: Callable[..., Any]) -> web.StreamResponse:
    """Middleware: anything but GET/HEAD is 405, before any handler (or the review
    guard's write checks) sees it; non-loopback hosts are still refused first. Every
    refusal carries the security headers too (the guard's own 403 does not)."""
    if request.method not in READ_METHODS:
        if not host_ok(request.host):
            raise web.HTTPForbidden(text="assay view answers on loopback names only",
                                    headers=SECURITY_HEADERS)
        raise web.HTTPMethodNotAllowed(request.method, sorted(READ_METHODS),
                                       text="assay view is read-only: GET only",
                                       headers=SECURITY_HEADERS)
    try:
        return await handler(request)
    except web.HTTPException as e:
        for k, v in SECURITY_HEADERS.items():
            e.headers.setdefault(k, v)
        raise


@web.middleware
async def error_pages(request: web.Request, handler: Callable[..., Any]) -> web.StreamResponse:
    """Middleware: a bad parameter is a 400 page, an unknown run or sample a 404 page,
    and an unexpected failure a 500 page with one line (the traceback goes to the log)."""
    st = state_of(request)
    api = request.path.startswith("/api/")

    def answer(status: int, title: str, message: str) -> web.Response:
        if api:
            return web.json_response({"ok": False, "error": message}, status=status)
        return error_page(st, status, title, message)

    try:
        return await handler(request)
    except BadParam as e:
        return answer(400, "Bad request", str(e))
    except PageError as e:
        return answer(e.status, e.title, e.message)
    except web.HTTPNotFound:
        return answer(404, "Not found", f"there is no page at {request.path}")
    except web.HTTPException:
        raise
    except StoreError as e:
        return answer(503, "Store unavailable", str(e))
    except Exception as e:  # noqa: BLE001 - one line on the page, the traceback in the log
        log.exception("assay view: %s %s", request.method, request.path)
        return answer(500, "Internal error", f"{type(e).__name__}: {e}")


def create_app(store_path: str | Path | None = None) -> web.Application:
    """The app over the store at ``store_path`` (default: the workspace's ``assay.db``).

    A missing or unreadable store is a :class:`StoreError` here, not at the first request.
    """
    path = Path(store_path) if store_path else workspace_dir() / "assay.db"
    app = web.Application(middlewares=[read_only, guard, error_pages])
    app[STATE_KEY] = ViewState(path)

    async def _close(app: web.Application) -> None:
        await asyncio.get_running_loop().run_in_executor(None, app[STATE_KEY].close)

    app.on_cleanup.append(_close)
    r = app.router
    r.add_get("/", runs_page)
    r.add_get("/run/{run_id}", run_page)
    r.add_get("/run/{run_id}/sample/{sample_id:.+}", sample_page)
    r.add_get("/compare", compare_page)
    r.add_get("/api/run/{run_id}/progress", api_progress)
    r.add_get("/favicon.ico", _no_icon)
    r.add_static("/static", STATIC, append_version=False)
    return app


async def _no_icon(request: web.Request) -> web.Response:
    return web.Response(status=204)


async def serve(host: str = "127.0.0.1", port: int = 0, *, store_path: str | Path | None = None,
                open_browser: bool = False) -> tuple[str, web.AppRunner]:
    """Start the app; returns its URL and the running runner (``await runner.cleanup()``
    stops it). Binds to loopback only; ``port=0`` picks a free port."""
    try:
        check_loopback(host)
    except ValueError as e:
        raise ConfigError(f"assay view binds to loopback only (127.0.0.1), not {host!r}") from e
    url, runner = await start_site(create_app(store_path), host, port)
    if open_browser:
        webbrowser.open(url)
    return url, runner


def launch(*, host: str = "127.0.0.1", port: int = 0, open_browser: bool = True,
           store_path: str | Path | None = None,
           echo: Callable[[str], Any] = print) -> None:
    """Serve until Ctrl-C (what ``assay view`` runs).

    Before serving, the finished runs an older assay stored without a description are
    described once (:func:`assay.engine.finalize.describe_old_store`: the upgrade of the
    store, like its schema's; the app itself then only reads).
    """
    from assay.engine.finalize import describe_old_store

    describe_old_store(Path(store_path) if store_path else workspace_dir() / "assay.db")

    async def start() -> web.AppRunner:
        url, runner = await serve(host, port, store_path=store_path, open_browser=open_browser)
        echo(f"assay view: {url}")
        echo(f"Reading {state_path(runner)} (read-only); Ctrl-C stops.")
        return runner

    run_until_stopped(start)


def state_path(runner: web.AppRunner) -> Path:
    """The store file a running app reads."""
    return runner.app[STATE_KEY].store_path
