"""The review page (``/review/`` of the local web app) over real HTTP on 127.0.0.1:
rendering, escaping, saving, restarts, races."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import aiohttp
import pytest

from assay.review.export import dataset_id
from assay.review.mathml import render_math
from assay.review.page import ReviewPage
from assay.store.review import DIMENSIONS, ReviewStore
from assay.store.sqlite import Store
from assay.tasks.datagen.problem import Problem, save_problems
from assay.web.server import create_app, serve

HOSTILE = '<script>alert("pwned")</script> & <b>bold</b>'


def _problems() -> list[Problem]:
    return [
        Problem(problem_id="g1", problem=r"Let $x^2 + y^2 = 25$. Find $\frac{x}{y}$ when "
                r"$$x = 3.$$ " + HOSTILE, answer="12",
                solution=r"Since $\sqrt{25} = 5$, ... \$5 in total. "
                r"$\text{<img src=x onerror=alert(1)>}$",
                topic="algebra"),
        *[Problem(problem_id=f"g{i}", problem=f"Problem {i}: compute ${i} + {i}$.",
                  answer=str(2 * i), solution=f"${i}+{i}={2 * i}$") for i in range(2, 13)],
    ]


@pytest.fixture
def data_file(tmp_path: Path) -> Path:
    return save_problems(_problems(), tmp_path / "aime_generated_x.json")


class Running:
    """A served review page and a client session for it (``base`` is the page's own root,
    ``/review``; ``root`` the app's)."""

    def __init__(self, url: str, runner, session: aiohttp.ClientSession) -> None:
        self.url, self.runner, self.session = url, runner, session
        self.base = url.split("?")[0].rstrip("/")
        self.root = self.base.removesuffix("/review")

    async def get(self, path: str, **kw):
        return await self.session.get(self.base + path, **kw)

    async def post_review(self, **body):
        async with self.session.post(self.base + "/api/review", json=body) as r:
            return r.status, await r.json()


async def _start(data_file: Path, reviewer: str | None = "alice", **kw) -> Running:
    url, runner = await serve(review=ReviewPage.from_file(data_file, reviewer, **kw))
    return Running(url, runner, aiohttp.ClientSession())


async def _stop(run: Running) -> None:
    await run.session.close()
    await run.runner.cleanup()


@pytest.fixture
async def site(data_file: Path):
    run = await _start(data_file, judge_scores={"g1": {"correctness": 2, "clarity": 4}})
    yield run
    await _stop(run)


def _checked(html: str, input_id: str) -> bool:
    m = re.search(rf'<input[^>]*id="{re.escape(input_id)}"[^>]*>', html)
    assert m, input_id
    return " checked" in m.group(0)


async def test_serves_on_loopback_and_resumes_at_first_item(site: Running) -> None:
    assert site.url.startswith("http://127.0.0.1:") and "reviewer=alice" in site.url
    assert site.base.endswith("/review")
    async with site.session.get(site.url) as r:
        assert r.status == 200
        assert r.url.path == "/review/item/1" and r.url.query["reviewer"] == "alice"
        html = await r.text()
        assert "0 / 12 reviewed" in html
        csp = r.headers["Content-Security-Policy"]
        assert "script-src 'self'" in csp and "default-src 'none'" in csp
    # our own assets only: no absolute URLs in src/href
    assert not re.search(r'(?:src|href)="(?:https?:)?//', html)
    async with site.session.get(site.root + "/static/review.js") as js:
        assert js.status == 200 and "api/review" in await js.text()


async def test_an_item_url_from_before_the_move_redirects(site: Running) -> None:
    # the review page had its own server at the root: /item/3 was an item's address
    async with site.session.get(site.root + "/item/3?reviewer=alice",
                                allow_redirects=False) as r:
        assert r.status == 301
        assert r.headers["Location"] == "/review/item/3?reviewer=alice"
    async with site.session.get(site.root + "/item/3?reviewer=alice") as r:
        assert r.status == 200 and r.url.path == "/review/item/3"
        assert "Problem 3: compute" in await r.text()


async def test_item_renders_problem_answer_solution_with_mathml(site: Running) -> None:
    async with await site.get("/item/1?reviewer=alice") as r:
        html = await r.text()
    assert "<math" in html and "<mfrac>" in html and "<msqrt>" in html
    assert '<math display="block">' in html  # $$...$$
    assert "Find " in html and "algebra" in html and ">12<" in html
    assert "$5 in total" in html  # an escaped dollar stays a dollar


async def test_html_in_problem_text_is_escaped(site: Running) -> None:
    async with await site.get("/item/1?reviewer=alice") as r:
        html = await r.text()
    assert "<script>alert" not in html
    assert "&lt;script&gt;alert(&#34;pwned&#34;)&lt;/script&gt;" in html
    assert "<b>bold</b>" not in html and "&lt;b&gt;bold&lt;/b&gt;" in html
    assert "<img" not in html  # \text{<img ...>} inside math does not become markup
    assert '<code class="tex" title="LaTeX not rendered">$\\text{&lt;img' in html  # raw, escaped


def test_render_math_falls_back_and_sanitizes() -> None:
    assert "<math" in render_math(r"$a^2$")
    broken = render_math(r"value $\frac{1}{$ end")
    assert "<math" not in broken and "\\frac{1}{" in broken
    assert "href" not in render_math(r"$\href{javascript:alert(1)}{x}$")
    assert render_math("a < b & c") == "a &lt; b &amp; c"
    assert render_math(None) == ""


async def test_post_review_saves_and_the_page_restores_it(site: Running) -> None:
    status, body = await site.post_review(
        problem_id="g2", reviewer="alice", status="needs_revision", comment="step 2 <unclear>",
        scores={"correctness": 4, "clarity": 2, "difficulty_match": None, "completeness": 5})
    assert status == 200 and body["ok"]
    assert body["review"]["version"] == 1 and body["progress"]["reviewed"] == 1
    async with await site.get("/api/review?problem_id=g2&reviewer=alice") as r:
        got = (await r.json())["review"]
    assert got["status"] == "needs_revision" and got["scores"]["clarity"] == 2
    async with await site.get("/item/2?reviewer=alice") as r:
        html = await r.text()
    assert _checked(html, "s-correctness-4") and _checked(html, "s-clarity-2")
    assert _checked(html, "s-completeness-5") and _checked(html, "st-needs_revision")
    assert not any(_checked(html, f"s-difficulty_match-{v}") for v in range(1, 6))
    assert not _checked(html, "st-approved")
    assert "step 2 &lt;unclear&gt;</textarea>" in html
    assert "1 / 12 reviewed" in html
    # bob's view of the same item is his own (empty)
    async with await site.get("/item/2?reviewer=bob") as r:
        assert not _checked(await r.text(), "s-correctness-4")


async def test_review_survives_a_server_restart(data_file: Path, workspace: Path) -> None:
    first = await _start(data_file)
    status, _ = await first.post_review(problem_id="g3", reviewer="alice", status="approved",
                                        scores={"correctness": 5, "clarity": 5,
                                                "difficulty_match": 4, "completeness": 4},
                                        comment="solid")
    assert status == 200
    await _stop(first)  # the server and its database handle are gone
    second = await _start(data_file)  # a new app, a new store, the same workspace file
    try:
        async with await second.get("/api/review?problem_id=g3&reviewer=alice") as r:
            got = (await r.json())["review"]
        assert got["status"] == "approved" and got["comment"] == "solid"
        async with await second.get("/item/3?reviewer=alice") as r:
            html = await r.text()
        assert _checked(html, "s-correctness-5") and _checked(html, "st-approved")
        assert "1 / 12 reviewed" in html
    finally:
        await _stop(second)
    with ReviewStore(workspace / "assay.db") as s:
        assert s.get_review(dataset_id(_problems()), "g3", "alice").comment == "solid"


async def test_twenty_concurrent_posts_from_two_reviewers_lose_nothing(
        site: Running, workspace: Path) -> None:
    sent = {}
    posts = []
    for k in range(20):
        reviewer = ("alice", "bob")[k % 2]
        pid = f"g{k // 2 + 1}"
        scores = dict(zip(DIMENSIONS, (1 + k % 5, 1 + (k + 1) % 5, 3, 4), strict=True))
        status = ("approved", "rejected", "needs_revision")[k % 3]
        sent[(pid, reviewer)] = (scores, status)
        posts.append(site.post_review(problem_id=pid, reviewer=reviewer, scores=scores,
                                      status=status, comment=f"c{k}"))
    results = await asyncio.gather(*posts)
    assert all(status == 200 and body["ok"] for status, body in results)
    async with await site.get("/api/reviews") as r:
        rows = (await r.json())["reviews"]
    assert len(rows) == 20
    for row in rows:
        assert (row["scores"], row["status"]) == sent[(row["problem_id"], row["reviewer"])]
    async with await site.get("/api/history") as r:
        assert len((await r.json())["events"]) == 20
    async with await site.get("/api/progress?reviewer=bob") as r:
        prog = await r.json()
    assert prog["reviewer"]["reviewed"] == 10 and prog["project"]["items_reviewed"] == 10


async def test_two_servers_on_one_workspace_do_not_overwrite_each_other(
        data_file: Path) -> None:
    a, b = await _start(data_file, "alice"), await _start(data_file, "bob")
    try:
        posts = []
        for i in range(1, 11):
            for run, name in ((a, "alice"), (b, "bob")):
                posts.append(run.post_review(problem_id="g1", reviewer=name, status="approved",
                                             scores={"correctness": 1 + i % 5}, comment=str(i)))
        results = await asyncio.gather(*posts)
        assert all(s == 200 for s, _ in results)
        async with await a.get("/api/history?problem_id=g1") as r:
            events = (await r.json())["events"]
        assert len(events) == 20
        assert sorted(e["version"] for e in events if e["reviewer"] == "bob") == list(range(1, 11))
        async with await b.get("/api/reviews") as r:
            rows = {x["reviewer"]: x for x in (await r.json())["reviews"]}
        assert set(rows) == {"alice", "bob"} and rows["alice"]["version"] == 10
    finally:
        await _stop(a)
        await _stop(b)


async def test_bad_requests_are_refused(site: Running) -> None:
    status, body = await site.post_review(problem_id="g1", reviewer="alice", status="great")
    assert status == 400 and "status" in body["error"]
    status, body = await site.post_review(problem_id="g1", reviewer="alice",
                                          scores={"correctness": 9})
    assert status == 400
    status, body = await site.post_review(problem_id="nope", reviewer="alice")
    assert status == 404
    status, body = await site.post_review(problem_id="g1", reviewer="  ")
    assert status == 400
    async with site.session.post(site.base + "/api/review", data="problem_id=g1",
                                 headers={"Content-Type": "text/plain"}) as r:
        assert r.status == 415
    async with site.session.post(site.base + "/api/review", json={"problem_id": "g1"},
                                 headers={"Origin": "http://evil.example"}) as r:
        assert r.status == 403
    async with await site.get("/item/1?reviewer=alice", headers={"Host": "evil.example"}) as r:
        assert r.status == 403  # DNS rebinding
    async with await site.get("/item/1?reviewer=alice",
                              headers={"Host": "127.0.0.1.evil.example"}) as r:
        assert r.status == 403
    async with await site.get("/item/1?reviewer=alice", headers={"Host": "localhost"}) as r:
        assert r.status == 200
    async with await site.get("/item/99?reviewer=alice") as r:
        assert r.status == 404 and "no item 99" in await r.text()
    async with await site.get("/api/reviews") as r:
        assert (await r.json())["reviews"] == []


async def test_blind_mode_hides_judge_scores_until_submitted(site: Running) -> None:
    async with await site.get("/item/1?reviewer=alice") as r:
        html = await r.text()
    assert 'id="judge-scores"' in html and "judge 2" in html  # not blind: shown
    async with await site.get("/item/1?reviewer=alice&blind=1") as r:
        html = await r.text()
    assert 'id="judge-hidden"' in html and 'id="judge-scores"' not in html
    assert "judge 2" not in html and "blind review" in html
    status, body = await site.post_review(problem_id="g1", reviewer="alice",
                                          scores={"correctness": 4})  # a draft reveals nothing
    assert status == 200 and body["judge"] is None
    async with await site.get("/item/1?reviewer=alice&blind=1") as r:
        assert 'id="judge-scores"' not in await r.text()
    status, body = await site.post_review(problem_id="g1", reviewer="alice", status="approved",
                                          scores={"correctness": 5})
    assert body["judge"] == {"correctness": 2, "clarity": 4}
    async with await site.get("/item/1?reviewer=alice&blind=1") as r:
        html = await r.text()
    assert 'id="judge-scores"' in html and "judge 2" in html
    async with await site.get("/item/1?reviewer=bob&blind=1") as r:
        assert 'id="judge-scores"' not in await r.text()  # bob has not submitted


async def test_filter_and_resume(site: Running) -> None:
    for pid, status in (("g1", "approved"), ("g2", "rejected"), ("g4", "approved")):
        await site.post_review(problem_id=pid, reviewer="alice", status=status)
    await site.post_review(problem_id="g3", reviewer="alice")  # a draft: still to do
    async with await site.get("/?reviewer=alice") as r:
        assert r.url.path == "/review/item/3"  # first item without a decision
    async with await site.get("/?reviewer=alice&status=approved&from=2") as r:
        assert r.url.path == "/review/item/4" and r.url.query["status"] == "approved"
        html = await r.text()
    assert '"next_url": null' in html and '"/review/item/1?reviewer=alice\\u0026status=approved"' in html
    async with await site.get("/?reviewer=alice&status=needs_revision") as r:
        assert "No item has the status" in await r.text()


async def test_asks_for_a_name_when_none_is_given(data_file: Path) -> None:
    run = await _start(data_file, reviewer=None)
    try:
        async with run.session.get(run.url) as r:
            html = await r.text()
        assert 'name="reviewer"' in html and "Your name" in html
        assert "not usable" not in html
        async with await run.get("/item/2?reviewer=carol") as r:
            assert r.status == 200 and "carol" in await r.text()
        for path in ("/?reviewer=%20", "/item/2?reviewer=" + "x" * 65):
            async with await run.get(path) as r:
                html = await r.text()
            assert r.status == 200 and 'name="reviewer"' in html, path
            assert "That name is not usable: 1-64 printable characters." in html, path
    finally:
        await _stop(run)


async def test_export_writes_the_verifications_file_beside_the_data(site: Running,
                                                                    data_file: Path) -> None:
    await site.post_review(problem_id="g2", reviewer="alice", status="approved",
                           scores={"correctness": 5, "clarity": 4, "difficulty_match": 4,
                                   "completeness": 5}, comment="good")
    await site.post_review(problem_id="g2", reviewer="bob", status="rejected",
                           scores={"correctness": 1})
    async with site.session.post(site.base + "/api/export", json={}) as r:
        assert r.status == 200
        data = await r.json()
        path = Path(r.headers["X-Assay-Export-Path"])
        assert "Content-Disposition" not in r.headers
    assert path == data_file.with_name("aime_generated_x_verifications.json")
    assert json.loads(path.read_text(encoding="utf-8")) == data
    entry = data["g2"]
    assert {"problem_id", "scores", "total_score", "status", "comments", "verified_at",
            "reviewer"} <= set(entry)
    assert [x["reviewer"] for x in entry["reviews"]] == ["alice", "bob"]
    async with site.session.post(site.base + "/api/export",
                                 json={"reviewer": "alice", "download": True}) as r:
        mine = await r.json()
        assert Path(r.headers["X-Assay-Export-Path"]).name == \
            "aime_generated_x_verifications.alice.json"
        assert r.headers["Content-Disposition"] == \
            'attachment; filename="aime_generated_x_verifications.alice.json"'
    assert mine["g2"]["status"] == "approved" and mine["g2"]["total_score"] == 4.5
    # an empty JSON body is an export of everyone; a bad one is refused
    async with site.session.post(site.base + "/api/export",
                                 headers={"Content-Type": "application/json"}) as r:
        assert r.status == 200 and (await r.json()) == data
    async with site.session.post(site.base + "/api/export", json={"reviewer": 5}) as r:
        assert r.status == 400


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and not p.name.startswith("assay.db")}


def _db_rows(workspace: Path) -> tuple[list, list]:
    with ReviewStore(workspace / "assay.db") as s:
        reviews = s._query("SELECT * FROM reviews ORDER BY problem_id, reviewer")
        events = s._query("SELECT * FROM review_events ORDER BY seq")
    return reviews, events


async def test_get_of_export_is_405_and_writes_nothing(site: Running, data_file: Path,
                                                       workspace: Path) -> None:
    await site.post_review(problem_id="g2", reviewer="alice", status="approved")
    before = _files(data_file.parent)
    # what <img src="http://127.0.0.1:PORT/api/export?reviewer=x"> on any web page does
    for query in ("", "?reviewer=x", "?download=1", "?reviewer=alice&download=1"):
        async with await site.get("/api/export" + query,
                                  headers={"Sec-Fetch-Site": "cross-site",
                                           "Sec-Fetch-Dest": "image"}) as r:
            assert r.status == 405, query
            assert r.headers.get("Allow") == "POST"
            assert r.headers["Content-Security-Policy"].startswith("default-src 'none'")
        async with site.session.head(site.base + "/api/export" + query) as r:
            assert r.status == 405
    assert _files(data_file.parent) == before
    assert not list(data_file.parent.glob("*_verifications*"))


async def test_cross_origin_writes_are_refused(site: Running, data_file: Path,
                                               workspace: Path) -> None:
    before_files, before_db = _files(data_file.parent), _db_rows(workspace)
    base = site.base
    port = site.root.rsplit(":", 1)[1]
    refused = [
        # another site, another port on the same host, a sandboxed page: all other origins
        ({"Origin": "http://evil.example"}, 403),
        ({"Origin": f"http://127.0.0.1:{int(port) + 1}"}, 403),
        ({"Origin": "null"}, 403),
        # a browser that names the request cross-site even without an Origin
        ({"Sec-Fetch-Site": "cross-site"}, 403),
        ({"Sec-Fetch-Site": "same-site"}, 403),
    ]
    for path in ("/api/export", "/api/review"):
        body = {"problem_id": "g1", "reviewer": "mallory", "status": "rejected"}
        for headers, status in refused:
            async with site.session.post(base + path, json=body, headers=headers) as r:
                assert r.status == status, (path, headers)
        # what a cross-site <form method=post> can send: not JSON, refused before the handler
        for ctype in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data"):
            async with site.session.post(base + path, data="reviewer=mallory",
                                         headers={"Content-Type": ctype}) as r:
                assert r.status == 415, (path, ctype)
    assert _files(data_file.parent) == before_files
    assert _db_rows(workspace) == before_db
    # the page's own origin may write
    own = {"Origin": site.root, "Sec-Fetch-Site": "same-origin"}
    async with site.session.post(base + "/api/export", json={}, headers=own) as r:
        assert r.status == 200
    assert data_file.with_name("aime_generated_x_verifications.json").is_file()


async def test_no_get_route_changes_state(site: Running, data_file: Path,
                                          workspace: Path) -> None:
    """Audit: every route either ignores GET (405) or only reads."""
    await site.post_review(problem_id="g2", reviewer="alice", status="approved",
                           scores={"correctness": 5})
    before_files, before_db = _files(data_file.parent), _db_rows(workspace)
    app = site.runner.app
    routes = {(r.method, r.resource.canonical) for r in app.router.routes()
              if r.resource is not None}
    # the writes of the whole app (the run viewer's pages too) are exactly these, POST-only;
    # everything else is GET (and HEAD)
    assert {(m, p) for m, p in routes if m not in ("GET", "HEAD")} == {
        ("POST", "/review/api/review"), ("POST", "/review/api/export")}
    assert ("GET", "/review/api/export") not in routes
    query = ("?reviewer=mallory&problem_id=g1&status=rejected&comment=x&download=1"
             "&scores=%7B%7D&blind=1&from=2")
    gets = {p for m, p in routes if m == "GET"}
    paths = {p for _, p in routes if p.startswith("/review/")} | {"/static/review.js"}
    for canonical in sorted(paths):
        path = canonical.replace("{n}", "1")
        async with site.session.get(site.root + path + query, allow_redirects=False) as r:
            await r.read()
            if canonical in gets or path.startswith("/static/"):
                assert r.status < 400, (path, r.status)
            else:
                assert r.status == 405, path
    assert _files(data_file.parent) == before_files
    assert _db_rows(workspace) == before_db


@pytest.mark.parametrize("content, where", [
    pytest.param(b'{"g1": {"correctness": 2}, "g2": "caf\xff"}', ":1: not valid UTF-8",
                 id="invalid-utf8"),
    pytest.param(b"[" * 100_000 + b"]" * 100_000, "nested too deeply", id="nested-100000"),
    pytest.param(b'{"g1": {"correctness": ' + b"7" * 5000 + b"}}", "cannot read judge scores",
                 id="int-5000-digits"),
    pytest.param(b'{"g1":\n {"correctness": }}', ":2: judge scores are not valid JSON",
                 id="bad-json"),
])
def test_bad_judge_scores_file_is_one_line(tmp_path: Path, content: bytes, where: str) -> None:
    from assay.errors import DatasetError
    from assay.review.inputs import load_judge_scores

    f = tmp_path / "judge.json"
    f.write_bytes(content)
    with pytest.raises(DatasetError) as e:
        load_judge_scores(f)
    msg = str(e.value)
    assert msg.startswith(str(f)) and where in msg and "\n" not in msg and len(msg) < 300


async def test_port_in_use_is_a_one_line_error(data_file: Path) -> None:
    import socket

    from assay.errors import ConfigError

    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        with pytest.raises(ConfigError) as e:
            await serve(port=port, review=ReviewPage.from_file(data_file, "alice"))
    assert str(e.value).startswith(f"port {port} on 127.0.0.1 is in use; choose another "
                                   "with --port")


async def test_create_app_with_a_given_store(tmp_path: Path) -> None:
    from aiohttp.test_utils import TestClient, TestServer

    problems = _problems()[:2]
    Store(tmp_path / "runs.db").close()
    with ReviewStore(tmp_path / "elsewhere.db") as store:
        app = create_app(tmp_path / "runs.db",
                         review=ReviewPage(problems, "custom-ds", store=store, reviewer="dana"))
        async with TestClient(TestServer(app, host="127.0.0.1")) as client:
            r = await client.post("/review/api/review",
                                  json={"problem_id": "g2", "status": "approved"})
            assert r.status == 200 and (await r.json())["review"]["reviewer"] == "dana"
        assert store.get_review("custom-ds", "g2", "dana").status == "approved"  # still open


async def test_serve_refuses_non_loopback_hosts(data_file: Path) -> None:
    with pytest.raises(ValueError, match="loopback"):
        await serve(host="0.0.0.0", review=ReviewPage.from_file(data_file, "alice"))
