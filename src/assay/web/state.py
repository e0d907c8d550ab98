"""What every request of the local web app shares: the store (read-only, a connection
per worker thread), the templates, the static files' version, and a small cache."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

from aiohttp import web
from jinja2 import Environment, FileSystemLoader

from assay.errors import RunNotFoundError
from assay.store.search import SearchIndex
from assay.store.sqlite import Store

__all__ = ["STATE_KEY", "STATIC", "TEMPLATES", "PageError", "WebState", "html", "run_or_404",
           "sample_url", "state_of"]

HERE = Path(__file__).resolve().parent
TEMPLATES = HERE / "templates"
STATIC = HERE / "static"

T = TypeVar("T")


class PageError(Exception):
    """An answer other than the page asked for: ``status``, a title and one line (a small
    page, or ``{"ok": false, "error": ...}`` under ``/api/``)."""

    def __init__(self, status: int, title: str, message: str) -> None:
        super().__init__(message)
        self.status, self.title, self.message = status, title, message


def run_or_404(store: Store, run_id: str) -> dict[str, Any]:
    try:
        return store.get_run(run_id)
    except RunNotFoundError as e:
        raise PageError(404, "Run not found", str(e)) from None


def _date(ts: Any) -> str:
    if not isinstance(ts, (int, float)):
        return ""
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ts))


def sample_url(run_id: str, sample_id: str, epoch: int | None = None, query: str = "") -> str:
    """The link to one sample's page (ids quoted whole: a ``/`` in an id stays in it)."""
    url = f"/run/{quote(run_id, safe='')}/sample/{quote(sample_id, safe='')}"
    params = [f"epoch={epoch}"] if epoch is not None else []
    if query:
        params.append(query)
    return url + ("?" + "&".join(params) if params else "")


class WebState:
    """A thread pool whose threads each hold a read-only :class:`Store`, the Jinja
    environment (autoescape on) and the category counts' cache."""

    def __init__(self, store_path: Path, workers: int = 4) -> None:
        self.store_path = store_path
        Store(store_path, readonly=True).close()  # a missing or unreadable store: fail now
        self._local = threading.local()
        self._stores: list[Store] = []
        self._lock = threading.Lock()
        self.pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="assay-web")
        self.env = Environment(loader=FileSystemLoader(str(TEMPLATES)), autoescape=True,
                               trim_blocks=True, lstrip_blocks=True)
        self.env.filters["date"] = _date
        self.env.globals["sample_url"] = sample_url
        self.env.globals["quote"] = lambda s: quote(str(s), safe="")
        self.static_version = str(int(max(f.stat().st_mtime for f in STATIC.iterdir())))
        #: the full-text index of the samples (its own file beside the store)
        self.search = SearchIndex(store_path)
        #: (run id, field, samples, status) -> that field's values with counts
        self.categories_cache: dict[tuple[Any, ...], list[tuple[str, int]]] = {}

    def _store(self) -> Store:
        store = getattr(self._local, "store", None)
        if store is None:
            store = Store(self.store_path, readonly=True)
            self._local.store = store
            with self._lock:
                self._stores.append(store)
        return store

    async def call(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(store, *args)`` on a worker thread with that thread's read-only store."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.pool, lambda: fn(self._store(), *args))

    def render(self, name: str, **ctx: Any) -> str:
        return self.env.get_template(name).render(static_version=self.static_version, **ctx)

    def close(self) -> None:
        """Stop the worker threads and close their connections."""
        self.pool.shutdown(wait=True)
        self.search.close()
        with self._lock:
            for store in self._stores:
                store.close()
            self._stores.clear()


STATE_KEY = web.AppKey("web_state", WebState)


def state_of(request: web.Request) -> WebState:
    return request.app[STATE_KEY]


def html(st: WebState, template: str, *, http_status: int = 200, **ctx: Any) -> web.Response:
    return web.Response(text=st.render(template, **ctx), status=http_status,
                        content_type="text/html")
