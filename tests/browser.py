"""What the browser tests share: Playwright driving Debian's chromium, headless, and a local
page served from a background thread with its own event loop.

Needs the ``playwright`` Python package and a chromium binary (``/usr/bin/chromium`` from
Debian's ``chromium`` package, or ``$ASSAY_CHROMIUM``); ``playwright install`` is not used
(it downloads browsers, which CI cannot). Importing this module skips the importing test
module when either is missing, with the install command in the reason.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import threading
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any

import pytest

sync_api = pytest.importorskip(
    "playwright.sync_api",
    reason="browser tests need the 'playwright' Python package (pip install playwright)")

CHROMIUM = os.environ.get("ASSAY_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
if not (Path(CHROMIUM).is_file() and os.access(CHROMIUM, os.X_OK)):
    pytest.skip(f"browser tests need chromium at {CHROMIUM} (apt-get install chromium)",
                allow_module_level=True)

expect = sync_api.expect
# a page that is right late is right: on a busy machine the browser takes its time, so an
# assertion waits as long as an action does (Playwright's own default is 5 s)
expect.set_options(timeout=30_000)
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--disable-dev-shm-usage"]


def launched_browser() -> Iterator[Any]:
    """A headless chromium for the length of the ``browser`` fixture (tests/conftest.py)."""
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield b
        b.close()


class ServedInThread:
    """A local page (``serve(...)``: a coroutine giving its URL and runner) served from a
    background thread with its own event loop, so a synchronous browser can drive it."""

    def __init__(self, serve: Coroutine[Any, Any, tuple[str, Any]]) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.url, self.runner = asyncio.run_coroutine_threadsafe(serve, self.loop).result(15)
        self.base = self.url.split("?")[0].rstrip("/")

    def close(self) -> None:
        """Stop the page, then the loop and its thread."""
        asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop).result(15)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


def checked_page(browser: Any) -> Iterator[Any]:
    """A 1280x900 page whose script errors, console errors (CSP violations among them) and
    dialogs (``alert()``) fail the test when it ends; the ``page`` fixture of the browser
    tests."""
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    p = ctx.new_page()
    p.set_default_timeout(30_000)
    errors: list[str] = []
    p.on("pageerror", lambda e: errors.append(str(e)))
    p.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    p.on("dialog", lambda d: (errors.append(f"dialog: {d.message}"), d.dismiss()))
    yield p
    ctx.close()
    assert not errors, errors
