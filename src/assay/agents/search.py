"""The ``search`` and ``fetch`` tools and the backends behind them: a local corpus (BM25 over
a folder of documents, ``--search-corpus DIR``) or a hosted search API (Tavily, SerpAPI,
Brave), whichever key is in the environment.

A backend is built once per run and shared by every sample, so it holds no per-sample state:
the local index is built on first use under a lock; a hosted backend reads its key from the
environment at each call and never keeps it (errors and results have it masked). ``fetch``
of a hosted backend is a plain HTTP GET, to public addresses only (``ASSAY_FETCH_PRIVATE=1``
lets it reach loopback and private ones), capped in time and size, HTML turned into text."""

from __future__ import annotations

import asyncio
import ipaddress
import json
import os
import re
import socket
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import unquote, urljoin, urlsplit

from assay.agents.tools import ToolContext, ToolResult, bounded, check_offset, error, paged
from assay.core.redact import scrub, scrub_known
from assay.core.types import ToolSpec
from assay.errors import ConfigError

TEXT_SUFFIXES = {".txt", ".md", ".markdown", ".rst", ".json", ".jsonl", ".csv", ".tsv", ".xml",
                 ".yaml", ".yml", ".log"}
HTML_SUFFIXES = {".html", ".htm", ".xhtml"}
#: a hosted fetch: seconds for the whole exchange, bytes read at most, redirects followed
FETCH_TIMEOUT_S = 30.0
MAX_FETCH_BYTES = 2 * 1024 * 1024
MAX_REDIRECTS = 5
#: seconds a hosted search API has to answer
SEARCH_TIMEOUT_S = 30.0
#: characters of a page one ``fetch`` hands back (room left for the paging line)
SNIPPET = 300
USER_AGENT = "Mozilla/5.0 (compatible; assay-fetch)"
NEEDS_BACKEND = ("needs --search-corpus DIR or one of TAVILY_API_KEY, SERPAPI_API_KEY, "
                 "BRAVE_SEARCH_API_KEY")


class SearchError(Exception):
    """A search or fetch failed; its one-line message (secrets masked) goes to the model."""


@dataclass(frozen=True, slots=True)
class Hit:
    title: str
    url: str
    snippet: str


class SearchBackend(Protocol):
    """What the tools need of a backend; failures raise :class:`SearchError`."""

    async def search(self, query: str, k: int) -> list[Hit]: ...

    async def fetch(self, url: str) -> str: ...


def html_to_text(html: str) -> str:
    """``html`` as Markdown-ish text (scripts and styles dropped)."""
    try:
        from markdownify import markdownify  # optional
    except ImportError:  # tags stripped: rough, but the words are there
        html = re.sub(r"(?is)<(script|style)\b.*?</\1\s*>", " ", html)
        return re.sub(r"[ \t]+", " ", re.sub(r"<[^>]+>", " ", html)).strip()
    text = markdownify(html, heading_style="ATX", strip=["img"])
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def _one_line(text: str, limit: int = 200) -> str:
    return " ".join(text.split())[:limit]


# -- the local corpus ------------------------------------------------------------------------
def _snippet(text: str, terms: list[str]) -> str:
    """The paragraph of ``text`` that holds most of ``terms``, about ``SNIPPET`` characters
    around its first match."""
    paras = [p for p in re.split(r"\n\s*\n", text) if p.strip()] or [text]
    best = " ".join(max(paras, key=lambda p: sum(p.lower().count(t) for t in terms)).split())
    low = best.lower()
    at = min((low.find(t) for t in terms if t in low), default=0)
    start = max(0, at - SNIPPET // 3)
    cut = best[start:start + SNIPPET]
    return ("... " if start else "") + cut + (" ..." if start + SNIPPET < len(best) else "")


def _title(text: str, rel: str, suffix: str) -> str:
    """A markdown, HTML or text document's first line; else (JSON, CSV, ...) its file name."""
    if suffix in TEXT_SUFFIXES - {".txt", ".md", ".markdown", ".rst"}:
        return rel
    line = next((ln.strip().lstrip("#").strip() for ln in text.splitlines() if ln.strip()), "")
    return _one_line(line, 120) or rel


def _documents(folder: Path) -> list[Path]:
    """The documents under ``folder`` (hidden files and folders left out), sorted."""
    found = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        found += [Path(root) / f for f in files if not f.startswith(".")
                  and Path(f).suffix.lower() in TEXT_SUFFIXES | HTML_SUFFIXES]
    return sorted(found)


class LocalCorpus:
    """BM25 over the documents of ``folder`` (text, Markdown, HTML, JSON, ...; hidden files
    skipped), each at ``corpus://<path relative to folder>``. The files are listed now (a
    missing or empty folder is a :class:`ConfigError`); read and indexed on first use."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder).expanduser()
        if not self.folder.is_dir():
            raise ConfigError(f"--search-corpus {folder}: no such folder",
                              hint="name a folder of .txt, .md, .html or .json documents")
        self._paths = _documents(self.folder)
        if not self._paths:
            raise ConfigError(f"--search-corpus {folder} holds no documents",
                              hint="add .txt, .md, .html or .json files to it, or name "
                                   "another folder")
        self._lock = threading.Lock()
        self._docs: dict[str, tuple[str, str]] | None = None  # url -> (title, text)
        self._retriever: Any = None

    def __getstate__(self) -> dict[str, Any]:  # shipped to another process: index there
        return {"folder": self.folder, "_paths": self._paths}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state, _lock=threading.Lock(), _docs=None, _retriever=None)

    def _index(self) -> dict[str, tuple[str, str]]:
        """The documents by url, read and indexed once (the caller holds the lock)."""
        if self._docs is not None:
            return self._docs
        import bm25s  # heavy

        docs: dict[str, tuple[str, str]] = {}
        for path in self._paths:
            rel = path.relative_to(self.folder).as_posix()
            try:
                raw = path.read_text(encoding="utf-8", errors="replace")
            except OSError as e:
                raise SearchError(f"cannot read corpus://{rel}: {e.strerror or e}") from e
            suffix = path.suffix.lower()
            text = html_to_text(raw) if suffix in HTML_SUFFIXES else raw
            docs[f"corpus://{rel}"] = (_title(text, rel, suffix), text)
        tokens = bm25s.tokenize([f"{t}\n{x}" for t, x in docs.values()], stopwords="en",
                                show_progress=False)
        if tokens.vocab:  # bm25s cannot index a corpus without a single word
            self._retriever = bm25s.BM25()
            self._retriever.index(tokens, show_progress=False)
        self._docs = docs
        return docs

    def _search(self, query: str, k: int) -> list[Hit]:
        import bm25s  # heavy

        terms = bm25s.tokenize([query], stopwords="en", return_ids=False,
                               show_progress=False)[0]
        with self._lock:
            docs = self._index()
            if self._retriever is None or not terms:
                return []
            found, scores = self._retriever.retrieve([terms], k=min(k, len(docs)),
                                                     show_progress=False)
        urls = list(docs)
        hits = []
        for i, score in zip(found[0], scores[0], strict=True):
            if score > 0:
                title, text = docs[urls[int(i)]]
                hits.append(Hit(title, urls[int(i)], _snippet(text, terms)))
        return hits

    def _fetch(self, url: str) -> str:
        with self._lock:
            docs = self._index()
        found = docs.get(url) or docs.get(unquote(url))
        if found is None:
            raise SearchError(f"{_one_line(url)} is not in the search corpus; fetch takes a "
                              "corpus:// url that search returned")
        return found[1]

    async def search(self, query: str, k: int) -> list[Hit]:
        return await asyncio.to_thread(self._search, query, k)

    async def fetch(self, url: str) -> str:
        return await asyncio.to_thread(self._fetch, url)


# -- hosted search APIs ----------------------------------------------------------------------
def _public(address: str) -> bool:
    return ipaddress.ip_address(address.split("%")[0]).is_global


class _PublicResolver:
    """An aiohttp resolver that keeps only public addresses (checked where the connection is
    made, so a name that later resolves to 127.0.0.1 is refused too)."""

    def __init__(self) -> None:
        import aiohttp  # startup

        self._inner = aiohttp.ThreadedResolver()

    async def resolve(self, host: str, port: int = 0,
                      family: socket.AddressFamily = socket.AF_INET) -> list[dict[str, Any]]:
        found = [r for r in await self._inner.resolve(host, port, family) if _public(r["host"])]
        if not found:
            raise OSError(f"{host} has no public address; fetch reaches public addresses only")
        return found

    async def close(self) -> None:
        await self._inner.close()


def _check_url(url: str, private: bool) -> None:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise SearchError(f"{_one_line(url)}: fetch takes an http:// or https:// address")
    try:
        literal = ipaddress.ip_address(parts.hostname)
    except ValueError:
        return  # a name: the resolver checks its addresses
    if not private and not literal.is_global:
        raise SearchError(f"{_one_line(url)}: fetch reaches public addresses only")


def _text_kind(ctype: str) -> str | None:
    if ctype in ("text/html", "application/xhtml+xml"):
        return "html"
    if (ctype.startswith("text/") or ctype.endswith(("+json", "+xml"))
            or ctype in ("application/json", "application/xml", "application/javascript")):
        return "text"
    return None


async def fetch_url(url: str) -> str:
    """The page at ``url`` as text: http(s) only, public addresses only (unless
    ``ASSAY_FETCH_PRIVATE=1``), ``MAX_FETCH_BYTES`` at most, HTML converted."""
    import aiohttp  # startup

    private = os.environ.get("ASSAY_FETCH_PRIVATE", "").strip() == "1"
    try:
        connector = aiohttp.TCPConnector(resolver=None if private else _PublicResolver())
        async with aiohttp.ClientSession(
                connector=connector, headers={"User-Agent": USER_AGENT},
                timeout=aiohttp.ClientTimeout(total=FETCH_TIMEOUT_S)) as session:
            for _ in range(MAX_REDIRECTS + 1):
                _check_url(url, private)
                async with session.get(url, allow_redirects=False) as resp:
                    if resp.status in (301, 302, 303, 307, 308) and "Location" in resp.headers:
                        url = urljoin(str(resp.url), resp.headers["Location"])
                        continue
                    if resp.status >= 400:
                        raise SearchError(f"HTTP {resp.status} from {_one_line(url)}")
                    kind = _text_kind(resp.content_type)
                    if kind is None:
                        raise SearchError(f"{_one_line(url)} is {resp.content_type}, not "
                                          "text; fetch reads text and HTML pages only")
                    body = bytearray()
                    async for chunk in resp.content.iter_chunked(65536):
                        body += chunk
                        if len(body) > MAX_FETCH_BYTES:
                            break
                    charset = resp.charset or "utf-8"
                    break
            else:
                raise SearchError(f"{_one_line(url)}: more than {MAX_REDIRECTS} redirects")
    except SearchError as e:
        raise SearchError(scrub(str(e))) from None
    except asyncio.TimeoutError:
        raise SearchError(f"fetching {_one_line(url)} timed out after {FETCH_TIMEOUT_S:g}s"
                          ) from None
    except (aiohttp.ClientError, OSError, ValueError) as e:
        why = _one_line(str(getattr(e, "os_error", None) or e)) or type(e).__name__
        raise SearchError(scrub(f"cannot fetch {_one_line(url)}: {why}")) from None
    try:
        text = bytes(body[:MAX_FETCH_BYTES]).decode(charset, errors="replace")
    except LookupError:
        text = bytes(body[:MAX_FETCH_BYTES]).decode("utf-8", errors="replace")
    if kind == "html":
        text = await asyncio.to_thread(html_to_text, text)
    if len(body) > MAX_FETCH_BYTES:
        text += f"\n[page cut at {MAX_FETCH_BYTES:,} bytes]"
    return text


class HostedSearch:
    """A hosted search API: its key from the first of ``keys`` set in the environment (read
    at each call, never kept), its base URL from ``url_env`` (tests: a local server)."""

    name = ""
    keys: tuple[str, ...] = ()
    url_env = ""
    default_url = ""

    def key(self) -> str | None:
        return next((os.environ[k].strip() for k in self.keys if os.environ.get(k, "").strip()),
                    None)

    def request(self, base: str, key: str, query: str, k: int) -> dict[str, Any]:
        """``aiohttp`` request arguments: method, url, params, headers, json."""
        raise NotImplementedError

    def hits(self, data: Any) -> list[dict[str, Any]]:
        """The reply's results, each with ``title``, ``url``, ``snippet``."""
        raise NotImplementedError

    async def search(self, query: str, k: int) -> list[Hit]:
        import aiohttp  # startup

        key = self.key()
        if key is None:
            raise SearchError(f"{self.name} search needs {self.keys[0]} set")
        base = (os.environ.get(self.url_env, "").strip() or self.default_url).rstrip("/")
        try:
            async with aiohttp.ClientSession(
                    timeout=aiohttp.ClientTimeout(total=SEARCH_TIMEOUT_S)) as session:
                async with session.request(**self.request(base, key, query, k)) as resp:
                    raw = await resp.read()
                    status = resp.status
        except asyncio.TimeoutError:
            raise SearchError(f"{self.name} search timed out after {SEARCH_TIMEOUT_S:g}s"
                              ) from None
        except (aiohttp.ClientError, OSError, ValueError) as e:
            why = _one_line(str(e)) or type(e).__name__
            raise SearchError(scrub(f"cannot reach {self.name} search: {why}", [key])) from None
        detail = raw[:2000].decode("utf-8", "replace")
        if status in (401, 403):
            raise SearchError(scrub(f"{self.name} refused the key in {self.keys[0]} (HTTP "
                                    f"{status}): {_one_line(detail)}", [key]))
        if status >= 400:
            raise SearchError(scrub(f"{self.name} search failed (HTTP {status}): "
                                    f"{_one_line(detail)}", [key]))
        try:
            found = [h for h in self.hits(json.loads(raw)) if h.get("url")]
        except (ValueError, TypeError, AttributeError, KeyError):
            raise SearchError(scrub(f"{self.name} sent a reply that is not its search "
                                    f"results: {_one_line(detail, 120)}", [key])) from None
        return [Hit(*(scrub_known(_one_line(str(h.get(f) or ""), 1000), [key])
                      for f in ("title", "url", "snippet")))
                for h in found[:k]]

    async def fetch(self, url: str) -> str:
        return await fetch_url(url)


def _strip_tags(text: Any) -> str:
    return re.sub(r"<[^>]+>", "", str(text or ""))


class TavilySearch(HostedSearch):
    """``POST /search``, ``Authorization: Bearer KEY``; ``results[]``: title, url, content."""

    name, keys, url_env = "Tavily", ("TAVILY_API_KEY",), "ASSAY_TAVILY_URL"
    default_url = "https://api.tavily.com"

    def request(self, base: str, key: str, query: str, k: int) -> dict[str, Any]:
        return {"method": "POST", "url": f"{base}/search",
                "headers": {"Authorization": f"Bearer {key}"},
                "json": {"query": query, "max_results": min(k, 20)}}

    def hits(self, data: Any) -> list[dict[str, Any]]:
        return [{"title": r.get("title"), "url": r.get("url"), "snippet": r.get("content")}
                for r in data.get("results") or []]


class SerpApiSearch(HostedSearch):
    """``GET /search?engine=google&q=..&api_key=KEY``; ``organic_results[]``: title, link,
    snippet."""

    name, keys, url_env = "SerpAPI", ("SERPAPI_API_KEY",), "ASSAY_SERPAPI_URL"
    default_url = "https://serpapi.com"

    def request(self, base: str, key: str, query: str, k: int) -> dict[str, Any]:
        return {"method": "GET", "url": f"{base}/search",
                "params": {"engine": "google", "q": query, "num": str(k), "api_key": key}}

    def hits(self, data: Any) -> list[dict[str, Any]]:
        # a search Google found nothing for comes back as 200 with ``error`` and no results
        return [{"title": r.get("title"), "url": r.get("link"), "snippet": r.get("snippet")}
                for r in data.get("organic_results") or []]


class BraveSearch(HostedSearch):
    """``GET /res/v1/web/search?q=..&count=..``, ``X-Subscription-Token: KEY``;
    ``web.results[]``: title, url, description (with ``<strong>`` marks)."""

    name, keys, url_env = "Brave", ("BRAVE_SEARCH_API_KEY", "BRAVE_API_KEY"), "ASSAY_BRAVE_URL"
    default_url = "https://api.search.brave.com"

    def request(self, base: str, key: str, query: str, k: int) -> dict[str, Any]:
        return {"method": "GET", "url": f"{base}/res/v1/web/search",
                "params": {"q": query, "count": str(min(k, 20))},
                "headers": {"X-Subscription-Token": key, "Accept": "application/json"}}

    def hits(self, data: Any) -> list[dict[str, Any]]:
        return [{"title": _strip_tags(r.get("title")), "url": r.get("url"),
                 "snippet": _strip_tags(r.get("description"))}
                for r in (data.get("web") or {}).get("results") or []]


#: the hosted backends, in the order ``backend_from`` tries their keys
HOSTED: tuple[HostedSearch, ...] = (TavilySearch(), SerpApiSearch(), BraveSearch())


def backend_from(search_corpus: str | Path | None) -> SearchBackend | None:
    """The run's backend: ``--search-corpus DIR``'s corpus, else the first hosted API whose
    key is set, else ``None``."""
    if search_corpus:
        return LocalCorpus(search_corpus)
    return next((b for b in HOSTED if b.key()), None)


def check_search(tools: Iterable[str], backend: SearchBackend | None) -> None:
    """One line naming what to set when ``search`` or ``fetch`` is asked for with no backend."""
    for name in ("search", "fetch"):
        if name in tools and backend is None:
            raise ConfigError(f"the {name} tool {NEEDS_BACKEND}")


# -- the tools -------------------------------------------------------------------------------
def _failure(e: Exception) -> str:
    return str(e) if isinstance(e, SearchError) else scrub(f"{type(e).__name__}: {e}")


SEARCH_SPEC = ToolSpec(
    "search",
    "Search for documents; numbered hits, each a title, url and snippet (read one with fetch).",
    {"type": "object", "properties": {
        "query": {"type": "string", "description": "what to look for"},
        "k": {"type": "integer", "minimum": 1, "maximum": 10,
              "description": "how many hits (default 5)"}},
     "required": ["query"]})

FETCH_SPEC = ToolSpec(
    "fetch",
    "Read a page or document as text by its url (an http(s) address, or a url search gave).",
    {"type": "object", "properties": {
        "url": {"type": "string", "description": "the address to read"},
        "offset": {"type": "integer", "minimum": 0,
                   "description": "characters to skip (to page through a long page)"}},
     "required": ["url"]})


class SearchTool:
    """The run's backend searched; at most 10 hits."""

    spec = SEARCH_SPEC

    def __init__(self, backend: SearchBackend | None) -> None:
        self._backend = backend

    async def call(self, arguments: dict[str, Any]) -> ToolResult:
        if self._backend is None:
            return error(f"no search backend: the search tool {NEEDS_BACKEND}")
        query, k = arguments.get("query"), arguments.get("k", 5)
        if not isinstance(query, str) or not query.strip():
            return error("query: give the words to search for")
        if k is None:
            k = 5
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            return error(f"k must be a whole number from 1 to 10, not {k!r}")
        try:
            hits = await self._backend.search(query.strip(), min(k, 10))
        except Exception as e:  # any backend's failure goes back to the model
            return error(f"search failed: {_failure(e)}")
        if not hits:
            return ToolResult(f"no results for {query.strip()[:200]!r}")
        return ToolResult(bounded("\n\n".join(
            f"{n}. {h.title}\n   {h.url}\n   {h.snippet}" for n, h in enumerate(hits, 1))))

    async def aclose(self) -> None:
        return None


class FetchTool:
    """A page by url, paged by ``offset``; the last page read is kept for the next page."""

    spec = FETCH_SPEC

    def __init__(self, backend: SearchBackend | None) -> None:
        self._backend = backend
        self._last: tuple[str, str] | None = None

    async def call(self, arguments: dict[str, Any]) -> ToolResult:
        if self._backend is None:
            return error(f"no search backend: the fetch tool {NEEDS_BACKEND}")
        url, offset = arguments.get("url"), arguments.get("offset", 0)
        if not isinstance(url, str) or not url.strip():
            return error("url: give the address to read")
        if (bad := check_offset(offset)) is not None:
            return bad
        url = url.strip()
        if self._last is None or self._last[0] != url:
            try:
                self._last = (url, await self._backend.fetch(url))
            except Exception as e:  # any backend's failure goes back to the model
                return error(f"fetch failed: {_failure(e)}")
        return paged(self._last[1], offset, _one_line(url))

    async def aclose(self) -> None:
        self._last = None


def search_tool(ctx: ToolContext) -> SearchTool:
    return SearchTool(ctx.search)


def fetch_tool(ctx: ToolContext) -> FetchTool:
    return FetchTool(ctx.search)
