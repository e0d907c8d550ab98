"""Fixtures of the ``assay view`` tests: one store of real runs (qa, BFCL, GAIA, converse)
made once per session by the engine against the fake server, plus helpers importable as
``viewhelpers``."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

import aiohttp
import pytest

sys.path.insert(0, str(Path(__file__).parent))

import viewhelpers as vh  # noqa: E402

from assay.store.sqlite import Store  # noqa: E402
from assay.web.server import serve  # noqa: E402

BFCL_MISSING = ("the BFCL run needs the official BFCL data: pip install --no-deps "
                "bfcl-eval==2026.3.23 (scripts/test does it)")


@pytest.fixture(scope="session")
def real_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """``(store path, {task: run id})`` of four finished runs made by the real engine."""
    if importlib.util.find_spec("bfcl_eval") is None:
        pytest.skip(BFCL_MISSING)
    home = tmp_path_factory.mktemp("view-real") / "home"
    ids = vh.make_real_runs(home)
    return home / "assay.db", ids


@pytest.fixture(scope="session")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the browser tests' screenshots go: ``$ASSAY_SHOTS`` to keep them, else this
    session's temporary folder (never a fixed folder shared with other runs)."""
    kept = os.environ.get("ASSAY_SHOTS")
    folder = Path(kept) if kept else tmp_path_factory.mktemp("shots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


class Site:
    """A served ``assay view`` and a client session for it."""

    def __init__(self, url: str, runner: Any, session: aiohttp.ClientSession) -> None:
        self.url, self.runner, self.session = url, runner, session
        self.base = url.rstrip("/")

    async def get(self, path: str, **kw: Any) -> tuple[int, str, Any]:
        async with self.session.get(self.base + path, allow_redirects=False, **kw) as r:
            return r.status, await r.text(), r.headers

    async def request(self, method: str, path: str, **kw: Any) -> tuple[int, str, Any]:
        async with self.session.request(method, self.base + path, **kw) as r:
            return r.status, await r.text(), r.headers


async def _site(store_path: Path) -> Site:
    url, runner = await serve(store_path=store_path)
    return Site(url, runner, aiohttp.ClientSession())


@pytest.fixture
async def real_site(real_runs):
    site = await _site(real_runs[0])
    yield site, real_runs[1], real_runs[0]
    await site.session.close()
    await site.runner.cleanup()


@pytest.fixture
def syn_store(workspace: Path):
    store = Store(workspace / "assay.db")
    yield store
    store.close()


@pytest.fixture
async def syn_site(syn_store: Store):
    site = await _site(syn_store.path)
    yield site
    await site.session.close()
    await site.runner.cleanup()


@pytest.fixture
def page(browser: Any) -> Any:
    """A checked browser page (tests/browser.py): script errors and dialogs fail the test."""
    from tests.browser import checked_page  # the browser tests' modules skip without chromium

    yield from checked_page(browser)


@pytest.fixture
def store(syn_store: Store) -> Store:
    """The workspace's store (the browser tests' name for :func:`syn_store`)."""
    return syn_store


@pytest.fixture
def server(store: Store):
    """The viewer over ``store``, served from a background thread (browser tests)."""
    from tests.browser import ServedInThread

    s = ServedInThread(serve(store_path=store.path))
    yield s
    s.close()
