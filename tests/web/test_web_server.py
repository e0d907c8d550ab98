"""One local server for the run viewer and the review page: ``assay review`` serves the runs
at ``/`` and the review page under ``/review/`` on one port, ``assay view`` the runs alone;
writes reach only the review page's JSON API."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from assay.api import make_spec, run_async
from assay.review.export import dataset_id
from assay.review.page import ReviewPage
from assay.store.review import ReviewStore
from assay.store.sqlite import Store
from assay.tasks.datagen.problem import Problem, load_problems, save_problems
from assay.testing import FakeServer, Rule
from assay.web.security import SECURITY_HEADERS
from assay.web.server import serve

REPO = Path(__file__).resolve().parents[2]
EXAMPLE_QA = REPO / "examples" / "qa_example.jsonl"


async def _qa_run(workspace: Path) -> str:
    """A qa run made by the engine over real HTTP into the workspace store."""
    rules = [Rule(r"capital of France", "Answer: Paris")]
    store = Store(workspace / "assay.db")
    try:
        with FakeServer(rules=rules, default_reply="Answer: no idea") as srv:
            spec = make_spec("qa", "openai/web-model", base_url=srv.base_url,
                             data=str(EXAMPLE_QA))
            return (await run_async(spec, store=store, reports=False)).run_id
    finally:
        store.close()


@pytest.fixture
def data_file(tmp_path: Path) -> Path:
    return save_problems([Problem(problem_id=f"w{i}", problem=f"Compute ${i} \\cdot 3$.",
                                  answer=str(3 * i)) for i in range(1, 4)],
                         tmp_path / "generated.json")


async def _read(session: aiohttp.ClientSession, method: str, url: str, **kw: Any
                ) -> tuple[int, str, Any, str]:
    async with session.request(method, url, allow_redirects=True, **kw) as r:
        return r.status, await r.text(), r.headers, r.url.path


async def test_one_server_serves_the_runs_and_the_review_page(workspace: Path,
                                                              data_file: Path) -> None:
    rid = await _qa_run(workspace)
    url, runner = await serve(review=ReviewPage.from_file(data_file, "alice"))
    root = url.split("/review/")[0]
    try:
        assert url == f"{root}/review/?reviewer=alice"
        async with aiohttp.ClientSession() as s:
            status, html, _, path = await _read(s, "GET", url)
            assert status == 200 and path == "/review/item/1" and "Compute" in html
            assert 'id="runs-link" href="/"' in html
            # the runs, on the same port, with a way back to the review page
            status, html, headers, _ = await _read(s, "GET", root + "/")
            assert status == 200 and f'data-run-id="{rid}"' in html
            assert 'id="review-link" href="/review/"' in html
            assert headers["Content-Security-Policy"] == SECURITY_HEADERS[
                "Content-Security-Policy"]
            status, html, _, _ = await _read(s, "GET", f"{root}/run/{rid}")
            assert status == 200 and "openai/web-model" in html
            # a review saved through the page's API lands in the workspace store
            status, body, _, _ = await _read(s, "POST", root + "/review/api/review",
                                             json={"problem_id": "w2", "status": "approved",
                                                   "reviewer": "alice"})
            assert status == 200 and json.loads(body)["review"]["version"] == 1
            # nothing else takes a write, same-origin JSON or not (another origin's write
            # to the review API is refused before it is even routed)
            for path in ("/", f"/run/{rid}", "/compare", "/static/view.js", "/review/",
                         "/review/item/1", "/review/api/progress", "/nowhere"):
                for headers in ({}, {"Origin": root}, {"Origin": "http://evil.example"}):
                    status, _, got, _ = await _read(s, "POST", root + path, json={"x": 1},
                                                    headers=headers)
                    cross_site_to_api = "evil" in str(headers) and "/api/" in path
                    assert status == (403 if cross_site_to_api else 405), (path, headers)
                    assert got["Content-Security-Policy"].startswith("default-src 'none'")
    finally:
        await runner.cleanup()
    with ReviewStore(workspace / "assay.db") as reviews:
        did = dataset_id(load_problems(data_file))
        assert reviews.get_review(did, "w2", "alice").status == "approved"
    runs = Store(workspace / "assay.db", readonly=True)
    try:
        assert runs.get_run(rid)["status"] == "finished"
    finally:
        runs.close()


async def test_the_viewer_alone_has_no_review_page(workspace: Path) -> None:
    rid = await _qa_run(workspace)
    url, runner = await serve(store_path=workspace / "assay.db")
    try:
        async with aiohttp.ClientSession() as s:
            status, html, _, _ = await _read(s, "GET", url)
            assert status == 200 and rid in html and 'id="review-link"' not in html
            for path in ("review/", "review/item/1", "review/api/progress"):
                status, body, _, _ = await _read(s, "GET", url + path)
                assert status == 404, path
                assert f"there is no page at /{path}" in body
            status, _, _, _ = await _read(s, "POST", url + "review/api/review",
                                          json={"problem_id": "w1"})
            assert status == 404
    finally:
        await runner.cleanup()


async def test_review_page_on_a_workspace_without_a_store_makes_an_empty_one(
        workspace: Path, data_file: Path) -> None:
    assert not (workspace / "assay.db").exists()
    url, runner = await serve(review=ReviewPage.from_file(data_file, "bob"))
    try:
        async with aiohttp.ClientSession() as s:
            status, html, _, _ = await _read(s, "GET", url.split("/review/")[0] + "/")
            assert status == 200 and 'class="run-row"' not in html
    finally:
        await runner.cleanup()


def test_assay_review_serves_the_runs_on_the_same_port(workspace: Path, data_file: Path
                                                       ) -> None:
    from assay.engine.loop import run as run_coro

    rid = run_coro(_qa_run(workspace))
    proc = subprocess.Popen([sys.executable, "-m", "assay", "review", str(data_file),
                             "--reviewer", "carol", "--no-browser"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        review_line, runs_line = proc.stdout.readline(), proc.stdout.readline()
        review = re.fullmatch(r"Review page: (http://127\.0\.0\.1:(\d+)/review/\?reviewer=carol)\n",
                              review_line)
        runs = re.fullmatch(r"Runs: (http://127\.0\.0\.1:(\d+)/)\n", runs_line)
        assert review and runs, (review_line, runs_line)
        assert review.group(2) == runs.group(2)  # one server, one port
        with urllib.request.urlopen(review.group(1), timeout=10) as r:
            assert r.status == 200 and "/review/item/1" in r.url and "carol" in r.read().decode()
        with urllib.request.urlopen(runs.group(1) + f"run/{rid}", timeout=10) as r:
            assert r.status == 200 and rid in r.read().decode()
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(15)
    assert proc.returncode == 0
