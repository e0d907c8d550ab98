"""The ``search`` and ``fetch`` tools: BM25 over a corpus folder, and the hosted APIs (Tavily,
SerpAPI, Brave) against a real local HTTP server that checks each key arrives where its API
expects it and answers in the API's format. No test reaches the network: every key and base
URL is cleared or pointed at the local server."""

from __future__ import annotations

import asyncio
import json
import pickle
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import bm25s
import pytest
from aiohttp import web

from assay.agents import search as search_mod
from assay.agents.search import (
    BraveSearch,
    LocalCorpus,
    SerpApiSearch,
    TavilySearch,
    backend_from,
    check_search,
    fetch_tool,
    search_tool,
)
from assay.agents.tools import ToolContext, ToolResult, make_tool
from assay.errors import ConfigError

ENV = ("TAVILY_API_KEY", "SERPAPI_API_KEY", "BRAVE_SEARCH_API_KEY", "BRAVE_API_KEY",
       "ASSAY_TAVILY_URL", "ASSAY_SERPAPI_URL", "ASSAY_BRAVE_URL", "ASSAY_FETCH_PRIVATE")
KEYS = {"tavily": "tvly-test-7f3a9c2e51d04b88", "serpapi": "serp-test-4be1d07a93c2f615",
        "brave": "BSA-test-c9d2e8a1f7b34066"}
LONG = " ".join(f"word{i}" for i in range(3000))  # about 26,000 characters


@pytest.fixture(autouse=True)
def _no_real_backends(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENV:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def corpus_dir(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    (root / "sub").mkdir(parents=True)
    (root / "cats.md").write_text("# Cats\n\nCats are small carnivorous mammals, often kept as "
                                  "pets. A cat sleeps most of the day.\n")
    (root / "photosynthesis.html").write_text(
        "<html><head><title>Photosynthesis</title><script>var hidden = 'scriptword';</script>"
        "</head><body><h1>Photosynthesis</h1><p>Plants convert <b>light</b> into chemical "
        "energy, stored as sugar.</p></body></html>")
    (root / "rivers.txt").write_text("Rivers of the world\n\nThe Nile is the longest river in "
                                     "Africa. The Amazon carries the most water.\n")
    (root / "sub" / "planets.json").write_text(json.dumps(
        {"planets": ["Mercury", "Venus", "Earth", "Mars"], "note": "Mars is the red planet"}))
    (root / "boats.txt").write_text("Boats\n\nA boat may sail up a river or cross a lake.\n")
    (root / "long.txt").write_text(f"A long log\n\n{LONG}\n")
    (root / ".hidden.md").write_text("zanzibarian secret note\n")
    (root / "picture.png").write_bytes(b"\x89PNG\r\n\x1a\n zanzibarian")
    return root


async def _search(backend: Any, **arguments: Any) -> ToolResult:
    return await search_tool(ToolContext(search=backend)).call(arguments)


async def _fetch(backend: Any, **arguments: Any) -> ToolResult:
    return await fetch_tool(ToolContext(search=backend)).call(arguments)


# -- the local corpus ------------------------------------------------------------------------
@pytest.mark.parametrize(("query", "first"), [
    ("how do plants turn light into energy", "corpus://photosynthesis.html"),
    ("which is the longest river", "corpus://rivers.txt"),
    ("the red planet", "corpus://sub/planets.json"),
    ("do cats sleep a lot", "corpus://cats.md"),
])
async def test_a_query_finds_its_document_first(corpus_dir: Path, query: str,
                                                first: str) -> None:
    result = await _search(backend_from(str(corpus_dir)), query=query)
    assert not result.error
    head = result.text.split("\n\n")[0].splitlines()
    assert head[0].startswith("1. ") and head[1].strip() == first
    assert head[2].strip()  # a snippet


async def test_hits_come_best_first(corpus_dir: Path) -> None:
    result = await _search(LocalCorpus(corpus_dir), query="the longest river")
    assert [line.strip() for line in result.text.splitlines()[1::4]] == [
        "corpus://rivers.txt", "corpus://boats.txt"]  # only documents that match


async def test_hits_are_numbered_titled_and_snipped(corpus_dir: Path) -> None:
    result = await _search(LocalCorpus(corpus_dir), query="plants light energy", k=1)
    assert result.text == ("1. Photosynthesis\n   corpus://photosynthesis.html\n   "
                           "Plants convert **light** into chemical energy, stored as sugar.")


async def test_fetch_of_a_corpus_url_gives_its_text(corpus_dir: Path) -> None:
    corpus = LocalCorpus(corpus_dir)
    page = await _fetch(corpus, url="corpus://photosynthesis.html")
    assert not page.error
    assert "# Photosynthesis" in page.text and "Plants convert **light**" in page.text
    assert "<" not in page.text and "scriptword" not in page.text  # HTML converted
    plain = await _fetch(corpus, url="corpus://rivers.txt")
    assert plain.text == (corpus_dir / "rivers.txt").read_text()


@pytest.mark.parametrize("url", ["corpus://nowhere.md", "corpus://../corpus/cats.md",
                                 "corpus://.hidden.md", "corpus://picture.png",
                                 "/etc/passwd", "file:///etc/passwd", "https://example.com/"])
async def test_fetch_outside_the_corpus_is_refused(corpus_dir: Path, url: str) -> None:
    result = await _fetch(LocalCorpus(corpus_dir), url=url)
    assert result.error and "not in the search corpus" in result.text
    assert "\n" not in result.text


async def test_hidden_and_unsupported_files_are_not_indexed(corpus_dir: Path) -> None:
    result = await _search(LocalCorpus(corpus_dir), query="zanzibarian")
    assert not result.error and result.text == "no results for 'zanzibarian'"


async def test_a_long_document_pages_with_offset(corpus_dir: Path) -> None:
    tool = fetch_tool(ToolContext(search=LocalCorpus(corpus_dir)))
    first = await tool.call({"url": "corpus://long.txt"})
    assert first.text.startswith("A long log") and "read on with offset=" in first.text
    offset = int(first.text.rsplit("offset=", 1)[1].rstrip("]"))
    second = await tool.call({"url": "corpus://long.txt", "offset": offset})
    whole = (corpus_dir / "long.txt").read_text()
    assert second.text.startswith(whole[offset:offset + 100])
    assert "[characters " in second.text
    past = await tool.call({"url": "corpus://long.txt", "offset": 10**6})
    assert past.error and "past the end" in past.text


@pytest.mark.parametrize(("arguments", "says"), [
    ({}, "query: give"), ({"query": "  "}, "query: give"), ({"query": 3}, "query: give"),
    ({"query": "cats", "k": 0}, "k must be"), ({"query": "cats", "k": "3"}, "k must be"),
    ({"query": "cats", "k": True}, "k must be"),
])
async def test_bad_search_arguments_are_error_results(corpus_dir: Path, arguments: dict,
                                                      says: str) -> None:
    result = await search_tool(ToolContext(search=LocalCorpus(corpus_dir))).call(arguments)
    assert result.error and says in result.text


async def test_k_is_capped_at_ten(monkeypatch: pytest.MonkeyPatch, corpus_dir: Path) -> None:
    corpus = LocalCorpus(corpus_dir)
    asked: list[int] = []
    real = corpus.search

    async def spy(query: str, k: int) -> Any:
        asked.append(k)
        return await real(query, k)

    monkeypatch.setattr(corpus, "search", spy)
    assert not (await _search(corpus, query="cats", k=50)).error
    assert not (await _search(corpus, query="cats")).error
    assert asked == [10, 5]


async def test_concurrent_samples_share_one_index(monkeypatch: pytest.MonkeyPatch,
                                                  corpus_dir: Path) -> None:
    built: list[int] = []
    real = bm25s.BM25.index
    monkeypatch.setattr(bm25s.BM25, "index", lambda self, *a, **kw: (built.append(1),
                                                                     real(self, *a, **kw))[1])
    corpus = LocalCorpus(corpus_dir)
    results = await asyncio.gather(*(_search(corpus, query="longest river") for _ in range(16)),
                                   *(_fetch(corpus, url="corpus://cats.md") for _ in range(4)))
    assert len(built) == 1
    assert len({r.text for r in results[:16]}) == 1 and "corpus://rivers.txt" in results[0].text
    copy = pickle.loads(pickle.dumps(corpus))  # another process indexes for itself
    assert "corpus://rivers.txt" in (await _search(copy, query="longest river")).text
    assert len(built) == 2


def test_html_becomes_text_without_markdownify_too(monkeypatch: pytest.MonkeyPatch) -> None:
    html = "<html><style>p{}</style><h1>Title</h1><p>Some <b>bold</b> words</p><script>x()"
    assert search_mod.html_to_text(html + "</script>") == "# Title\n\nSome **bold** words"
    monkeypatch.setitem(sys.modules, "markdownify", None)  # not installed: tags stripped
    assert search_mod.html_to_text(html + "</script>").split() == ["Title", "Some", "bold",
                                                                   "words"]


def test_a_missing_or_empty_folder_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "images").mkdir()
    (tmp_path / "images" / "a.png").write_bytes(b"\x89PNG")
    (tmp_path / "images" / ".notes.txt").write_text("hidden")
    for folder, says in [(tmp_path / "nope", "no such folder"), (tmp_path / "empty", "holds no"),
                         (tmp_path / "images", "holds no")]:
        with pytest.raises(ConfigError) as e:
            backend_from(str(folder))
        assert says in str(e.value) and f"--search-corpus {folder}" in str(e.value)
        assert "\n" not in str(e.value) and (".md" in str(e.value))


def test_the_search_tool_without_a_backend_is_a_config_error() -> None:
    with pytest.raises(ConfigError) as e:
        check_search(["python", "search"], backend_from(None))
    assert str(e.value) == ("the search tool needs --search-corpus DIR or one of "
                            "TAVILY_API_KEY, SERPAPI_API_KEY, BRAVE_SEARCH_API_KEY")
    with pytest.raises(ConfigError, match="the fetch tool needs"):
        check_search(["fetch"], None)
    check_search(["python", "bash"], None)
    check_search(["search", "fetch"], TavilySearch())


def test_the_backend_follows_the_keys_set(monkeypatch: pytest.MonkeyPatch,
                                          corpus_dir: Path) -> None:
    assert backend_from(None) is None
    monkeypatch.setenv("BRAVE_API_KEY", KEYS["brave"])  # the name Brave's own tools read
    assert isinstance(backend_from(None), BraveSearch)
    monkeypatch.setenv("SERPAPI_API_KEY", KEYS["serpapi"])
    assert isinstance(backend_from(None), SerpApiSearch)
    monkeypatch.setenv("TAVILY_API_KEY", KEYS["tavily"])
    assert isinstance(backend_from(None), TavilySearch)
    assert isinstance(backend_from(str(corpus_dir)), LocalCorpus)  # the corpus wins
    monkeypatch.setenv("TAVILY_API_KEY", "  ")
    assert isinstance(backend_from(None), SerpApiSearch)


async def test_without_a_backend_the_tools_answer_an_error() -> None:
    for tool in (make_tool("search", ToolContext()), make_tool("fetch", ToolContext())):
        result = await tool.call({"query": "x", "url": "https://example.com/"})
        assert result.error and "--search-corpus DIR" in result.text
        await tool.aclose()


# -- hosted APIs against a local server ------------------------------------------------------
class Api:
    """Tavily, SerpAPI and Brave under /tavily, /serpapi and /brave, plus pages to fetch; the
    query ``hang`` hangs, ``echo-500`` fails with the request echoed, ``bad-json`` is not
    JSON. A wrong key is refused with the request echoed (as careless servers do)."""

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []
        self.url = ""

    def _echo(self, request: web.Request, body: Any, status: int) -> web.Response:
        return web.json_response({"error": f"bad request {request.url} {body} "
                                           f"{dict(request.headers)}"}, status=status)

    async def _answer(self, request: web.Request, key: str, query: str, body: Any,
                      reply: dict[str, Any]) -> web.Response:
        self.seen.append({"path": request.path, "key": key, "query": query, "body": body,
                          "params": dict(request.query)})
        if key != KEYS[request.path.split("/")[1]]:
            return self._echo(request, body, 401)
        if query == "hang":
            await asyncio.sleep(5)
        if query == "echo-500":
            return self._echo(request, body, 500)
        if query == "bad-json":
            return web.Response(text="<html>gateway</html>", content_type="text/html")
        return web.json_response(reply)

    async def tavily(self, request: web.Request) -> web.Response:
        body = await request.json()
        auth = request.headers.get("Authorization", "")
        key = auth[len("Bearer "):] if auth.startswith("Bearer ") else ""
        return await self._answer(request, key, body.get("query"), body, {
            "query": body.get("query"), "answer": None, "images": [], "response_time": 0.4,
            "results": [
                {"title": "Nile - Wikipedia", "url": "https://en.wikipedia.org/wiki/Nile",
                 "content": "The Nile is a major north-flowing river.", "score": 0.98,
                 "raw_content": None},
                {"title": "Amazon River", "url": "https://example.org/amazon",
                 "content": "The Amazon discharges the most water.", "score": 0.7,
                 "raw_content": None}]})

    async def serpapi(self, request: web.Request) -> web.Response:
        q = request.query
        if q.get("engine") != "google":
            return web.json_response({"error": "Unsupported engine"}, status=400)
        return await self._answer(request, q.get("api_key", ""), q.get("q", ""), None, {
            "search_metadata": {"status": "Success"},
            "search_parameters": {"engine": "google", "q": q.get("q")},
            "organic_results": [
                {"position": 1, "title": "Nile", "link": "https://en.wikipedia.org/wiki/Nile",
                 "displayed_link": "en.wikipedia.org › wiki › Nile",
                 "snippet": "The Nile is a major north-flowing river."},
                {"position": 2, "title": "No link here", "snippet": "dropped"},
                {"position": 3, "title": "Amazon River", "link": "https://example.org/amazon",
                 "snippet": "The Amazon discharges the most water."}]})

    async def brave(self, request: web.Request) -> web.Response:
        q = request.query
        return await self._answer(request, request.headers.get("X-Subscription-Token", ""),
                                  q.get("q", ""), None, {
            "type": "search", "query": {"original": q.get("q")},
            "web": {"type": "search", "results": [
                {"title": "<strong>Nile</strong> - Wikipedia",
                 "url": "https://en.wikipedia.org/wiki/Nile", "is_source_local": False,
                 "description": "The <strong>Nile</strong> is a major north-flowing river."},
                {"title": "Amazon River", "url": "https://example.org/amazon",
                 "description": "The Amazon discharges the most water."}]}})

    async def page(self, request: web.Request) -> web.Response:
        return web.Response(
            text="<html><head><title>Local page</title><style>p{color:red}</style></head>"
                 "<body><h2>Rivers</h2><p>The <i>Nile</i> flows north.</p>"
                 "<script>document.write('nope')</script></body></html>",
            content_type="text/html", charset="utf-8")

    async def pdf(self, request: web.Request) -> web.Response:
        return web.Response(body=b"%PDF-1.4 ...", content_type="application/pdf")

    async def big(self, request: web.Request) -> web.Response:
        return web.Response(text="x" * 5000, content_type="text/plain")

    async def redirect(self, request: web.Request) -> web.Response:
        raise web.HTTPFound("/page.html")

    async def loop(self, request: web.Request) -> web.Response:
        raise web.HTTPFound("/loop")

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/tavily/search", self.tavily)
        app.router.add_get("/serpapi/search", self.serpapi)
        app.router.add_get("/brave/res/v1/web/search", self.brave)
        for path, handler in [("/page.html", self.page), ("/doc.pdf", self.pdf),
                              ("/big.txt", self.big), ("/moved", self.redirect),
                              ("/loop", self.loop)]:
            app.router.add_get(path, handler)
        return app


@pytest.fixture
async def api(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Api]:
    server = Api()
    runner = web.AppRunner(server.app(), access_log=None, shutdown_timeout=0.1)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    server.url = f"http://127.0.0.1:{runner.addresses[0][1]}"
    for name in ("tavily", "serpapi", "brave"):
        monkeypatch.setenv(f"ASSAY_{name.upper()}_URL", f"{server.url}/{name}")
    try:
        yield server
    finally:
        await runner.cleanup()


HOSTED = [("tavily", "TAVILY_API_KEY"), ("serpapi", "SERPAPI_API_KEY"),
          ("brave", "BRAVE_SEARCH_API_KEY")]


@pytest.mark.parametrize(("name", "env"), HOSTED)
async def test_a_hosted_search_sends_its_key_as_the_api_expects(
        monkeypatch: pytest.MonkeyPatch, api: Api, name: str, env: str) -> None:
    monkeypatch.setenv(env, KEYS[name])
    backend = backend_from(None)
    result = await _search(backend, query="longest river", k=3)
    assert not result.error, result.text
    assert result.text == (
        "1. Nile - Wikipedia\n   https://en.wikipedia.org/wiki/Nile\n"
        "   The Nile is a major north-flowing river.\n\n"
        "2. Amazon River\n   https://example.org/amazon\n   The Amazon discharges the most water."
    ).replace("Nile - Wikipedia", "Nile" if name == "serpapi" else "Nile - Wikipedia")
    [seen] = api.seen
    assert seen["key"] == KEYS[name] and seen["query"] == "longest river"
    if name == "tavily":
        assert seen["body"] == {"query": "longest river", "max_results": 3}
    elif name == "serpapi":
        assert seen["params"]["num"] == "3"
    else:
        assert seen["params"] == {"q": "longest river", "count": "3"}
    assert KEYS[name] not in result.text
    assert KEYS[name].encode() not in pickle.dumps(backend)  # read at each call, never kept


@pytest.mark.parametrize(("name", "env"), HOSTED)
async def test_a_refused_key_never_shows_in_the_error(
        monkeypatch: pytest.MonkeyPatch, api: Api, name: str, env: str) -> None:
    wrong = f"{KEYS[name]}-revoked"
    monkeypatch.setenv(env, wrong)
    result = await _search(backend_from(None), query="longest river")
    assert result.error and f"refused the key in {env}" in result.text and "401" in result.text
    assert api.seen[0]["key"] == wrong  # the server did get it, and echoed it back
    assert wrong not in result.text and "revoked" not in result.text
    assert "\n" not in result.text


@pytest.mark.parametrize(("name", "env"), HOSTED)
async def test_backend_failures_are_error_results_without_the_key(
        monkeypatch: pytest.MonkeyPatch, api: Api, name: str, env: str) -> None:
    monkeypatch.setenv(env, KEYS[name])
    monkeypatch.setattr(search_mod, "SEARCH_TIMEOUT_S", 0.3)
    backend = backend_from(None)
    for query, says in [("echo-500", "HTTP 500"), ("bad-json", "not its search results"),
                        ("hang", "timed out after 0.3s")]:
        result = await _search(backend, query=query)
        assert result.error and says in result.text, result.text
        assert KEYS[name] not in result.text
    monkeypatch.setenv(f"ASSAY_{name.upper()}_URL", "http://127.0.0.1:9/nothing")
    result = await _search(backend, query="longest river")
    assert result.error and "cannot reach" in result.text and KEYS[name] not in result.text


async def test_fetch_of_a_page_gives_its_text(monkeypatch: pytest.MonkeyPatch, api: Api) -> None:
    monkeypatch.setenv("ASSAY_FETCH_PRIVATE", "1")  # the local server is on 127.0.0.1
    monkeypatch.setenv("TAVILY_API_KEY", KEYS["tavily"])
    backend = backend_from(None)
    for path in ("/page.html", "/moved"):
        page = await _fetch(backend, url=f"{api.url}{path}")
        assert not page.error, page.text
        assert page.text == "Local page\n\n## Rivers\n\nThe *Nile* flows north."


async def test_fetch_refuses_what_is_not_a_text_page(monkeypatch: pytest.MonkeyPatch,
                                                     api: Api) -> None:
    monkeypatch.setenv("ASSAY_FETCH_PRIVATE", "1")
    backend = TavilySearch()
    for url, says in [(f"{api.url}/doc.pdf", "is application/pdf, not text"),
                      (f"{api.url}/missing", "HTTP 404"),
                      (f"{api.url}/loop", "more than 5 redirects"),
                      ("file:///etc/passwd", "http:// or https://"),
                      ("ftp://example.com/a.txt", "http:// or https://"),
                      ("corpus://cats.md", "http:// or https://")]:
        result = await _fetch(backend, url=url)
        assert result.error and says in result.text, result.text
        assert "\n" not in result.text


async def test_fetch_reaches_public_addresses_only(api: Api) -> None:
    port = api.url.rsplit(":", 1)[1]
    for url in (f"{api.url}/page.html", f"http://localhost:{port}/page.html",
                f"http://[::1]:{port}/page.html", "http://169.254.169.254/latest/meta-data/"):
        result = await _fetch(TavilySearch(), url=url)
        assert result.error and "public addresses only" in result.text, result.text


async def test_fetch_cuts_a_page_at_the_size_cap(monkeypatch: pytest.MonkeyPatch,
                                                 api: Api) -> None:
    monkeypatch.setenv("ASSAY_FETCH_PRIVATE", "1")
    monkeypatch.setattr(search_mod, "MAX_FETCH_BYTES", 1000)
    page = await _fetch(TavilySearch(), url=f"{api.url}/big.txt")
    assert page.text == "x" * 1000 + "\n[page cut at 1,000 bytes]"
