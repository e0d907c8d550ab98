"""The human review page: a small aiohttp app on 127.0.0.1, rendered on the server.

One problem at a time (``/item/<n>``, 1-based), with its answer and solution
(LaTeX shown as MathML, rendered here), four 1-5 scores, a status, a comment,
previous/next, progress, a status filter, keyboard shortcuts and an optional
blind mode that keeps the judge's scores off the page until the reviewer has
given a verdict on the item. Every submission is a ``POST /api/review`` that is
committed to the workspace database before the page says "saved"; coming back
to an item, reloading or restarting the server shows the saved state.

No external assets: the page loads only its own CSS and JS from ``/static``,
under a Content-Security-Policy that allows nothing else. Requests whose Host is
not a loopback name are refused (DNS rebinding). Every route that changes state
(saving a review, writing the export file) is POST-only and takes JSON from the
page's own origin, so a cross-site ``<img>``, link or form cannot trigger it; a
GET of such a route is answered 405 and changes nothing.
"""

from __future__ import annotations

import asyncio
import errno
import ipaddress
import json
import re
import signal
import time
import webbrowser
import xml.etree.ElementTree as ET
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from aiohttp import web
from jinja2 import Environment, FileSystemLoader
from markupsafe import Markup, escape

from assay.datagen.problem import Problem, load_problems
from assay.datagen.review.store import (
    DECIDED,
    DIMENSIONS,
    MAX_REVIEWER,
    Review,
    ReviewError,
    ReviewStore,
    dataset_id,
    normalize_reviewer,
)
from assay.errors import ConfigError, DatasetError
from assay.store.sqlite import workspace_dir

HERE = Path(__file__).resolve().parent
TEMPLATES = HERE / "templates"
STATIC = HERE / "static"

FILTERS = ("all", "pending", "approved", "rejected", "needs_revision")
"""Status filters; ``pending`` = no decision yet by this reviewer (draft or untouched)."""

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})

DIMENSION_GUIDE: dict[str, dict[int, str]] = {
    "correctness": {1: "stated answer wrong, or the problem is unsolvable / contradictory",
                    3: "answer right, but the solution has errors or unjustified steps",
                    5: "answer and every step of the solution are correct"},
    "clarity": {1: "ambiguous or hard to parse; several readings possible",
                3: "understandable with effort; minor ambiguity or sloppy notation",
                5: "precise, unambiguous, competition-grade wording"},
    "difficulty_match": {1: "trivial, or far beyond AIME",
                         3: "AIME-like, but at the easy or hard extreme",
                         5: "squarely AIME difficulty (a mid-contest problem)"},
    "completeness": {1: "missing givens, answer or solution",
                     3: "solution skips key steps or a given is implicit",
                     5: "all givens stated; full solution; integer answer 0-999"},
}

SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}


# -- LaTeX -> MathML --------------------------------------------------------------------------
_MATH_RE = re.compile(
    r"\$\$(?P<d1>.+?)\$\$"
    r"|\\\[(?P<d2>.+?)\\\]"
    r"|\\\((?P<i1>.+?)\\\)"
    r"|(?<![\\$])\$(?P<i2>(?:\\.|[^$\\])+?)\$",
    re.S,
)
_MATHML_NS = "http://www.w3.org/1998/Math/MathML"
_MATHML_TAGS = frozenset(
    "math mrow mi mn mo ms mtext mspace mfrac msqrt mroot mstyle merror mpadded mphantom"
    " menclose msub msup msubsup munder mover munderover mmultiscripts mprescripts none"
    " mtable mtr mtd mlabeledtr semantics annotation mfenced".split())
_MATHML_ATTRS = frozenset(
    "display mathvariant stretchy fence form minsize maxsize linethickness accent accentunder"
    " width height depth displaystyle scriptlevel lspace rspace separator separators"
    " movablelimits largeop symmetric notation columnalign rowalign columnspacing rowspacing"
    " columnlines rowlines frame open close".split())
_SAFE_VALUE = re.compile(r"^[\w .%#+-]*$")


def _safe_mathml(xml: str) -> str | None:
    """Re-serialize converter output keeping only MathML elements and layout attributes.

    The converter copies ``\\text{...}`` verbatim and turns ``\\href`` into an
    attribute, so its output is parsed and rebuilt here: any non-MathML element
    rejects the span (it is then shown as raw text), other attributes are dropped,
    and text is escaped on the way out.
    """
    try:
        root = ET.fromstring(xml)
    except ET.ParseError:
        return None
    for el in root.iter():
        ns, _, local = str(el.tag).rpartition("}")
        if ns.lstrip("{") != _MATHML_NS or local not in _MATHML_TAGS:
            return None
        el.tag = local
        for k in list(el.attrib):
            if k not in _MATHML_ATTRS or not _SAFE_VALUE.match(el.attrib[k]):
                del el.attrib[k]
    return ET.tostring(root, encoding="unicode")


@lru_cache(maxsize=8192)
def tex_to_mathml(tex: str, display: bool = False) -> str | None:
    """One LaTeX span as safe MathML markup, or None when it cannot be converted."""
    try:
        from latex2mathml.converter import convert
    except ImportError:  # the dependency is missing: show the raw LaTeX
        return None
    try:
        xml = convert(tex.strip(), display="block" if display else "inline")
    except Exception:  # noqa: BLE001 - any converter failure falls back to the raw text
        return None
    return _safe_mathml(xml)


def _text(segment: str) -> str:
    return str(escape(segment.replace("\\$", "$")))


def render_math(text: str | None) -> Markup:
    """HTML for text with ``$...$``, ``$$...$$``, ``\\(...\\)`` and ``\\[...\\]`` as MathML.

    Everything outside math is HTML-escaped; a span the converter rejects is
    shown escaped, as typed, in a ``<code class="tex">``.
    """
    if not text:
        return Markup("")
    out: list[str] = []
    pos = 0
    for m in _MATH_RE.finditer(text):
        out.append(_text(text[pos:m.start()]))
        display = m.group("d1") is not None or m.group("d2") is not None
        tex = next(g for g in (m.group("d1"), m.group("d2"), m.group("i1"), m.group("i2"))
                   if g is not None)
        html = tex_to_mathml(tex, display)
        if html is None:
            out.append(f'<code class="tex" title="LaTeX not rendered">{escape(m.group(0))}</code>')
        else:
            out.append(html)
        pos = m.end()
    out.append(_text(text[pos:]))
    return Markup("".join(out))


# -- judge scores -----------------------------------------------------------------------------
def load_judge_scores(source: str | Path | Mapping[str, Any] | Sequence[Any] | None
                      ) -> dict[str, dict[str, float]]:
    """Judge scores as ``problem_id -> {dimension: score}``.

    Accepts that mapping (or a JSON file holding it), a list of
    ``{"problem_id": ..., "scores": {...}}`` rows, or an object with such a list
    under ``results``/``items``/``details``. Non-numeric values are dropped.
    """
    if source is None:
        return {}
    data: Any = source
    if isinstance(source, str | Path):
        data = _read_json_file(Path(source), "judge scores")
    if isinstance(data, Mapping):
        for key in ("results", "items", "details"):
            if isinstance(data.get(key), list):
                data = data[key]
                break
    rows: list[tuple[str, Any]]
    if isinstance(data, Mapping):
        rows = [(str(k), v) for k, v in data.items()]
    elif isinstance(data, Sequence) and not isinstance(data, str):
        rows = [(str(r.get("problem_id")), r.get("scores", r)) for r in data
                if isinstance(r, Mapping) and r.get("problem_id") is not None]
    else:
        raise DatasetError("judge scores must map problem ids to {dimension: score}")
    out: dict[str, dict[str, float]] = {}
    for pid, scores in rows:
        if not isinstance(scores, Mapping):
            continue
        clean = {str(k): v for k, v in scores.items()
                 if isinstance(v, int | float) and not isinstance(v, bool)}
        if clean:
            out[pid] = clean
    return out


def _read_json_file(path: Path, what: str) -> Any:
    """One JSON document from ``path``; every way it can be bad is a one-line DatasetError."""
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise DatasetError(f"{path}: cannot read {what} ({e.strerror or type(e).__name__})"
                           ) from e
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise _utf8_error(path, e) from e
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise DatasetError(f"{path}:{e.lineno}: {what} are not valid JSON ({e.msg} at column "
                           f"{e.colno})") from e
    except RecursionError as e:
        raise DatasetError(f"{path}: {what} are nested too deeply to read") from e
    except ValueError as e:  # e.g. an integer longer than Python's digit limit
        raise DatasetError(f"{path}: cannot read {what} ({str(e).splitlines()[0]})") from e


# -- the app ----------------------------------------------------------------------------------
class _State:
    def __init__(self, problems: Sequence[Problem], dataset_id: str,
                 judge_scores: Mapping[str, Mapping[str, Any]], reviewer: str | None,
                 export_path: Path, dimensions: Sequence[str], title: str) -> None:
        self.problems = list(problems)
        self.by_id = {p.problem_id: i for i, p in enumerate(self.problems)}
        self.dataset_id = dataset_id
        self.judge = {str(k): dict(v) for k, v in judge_scores.items()}
        self.reviewer = reviewer
        self.export_path = export_path
        self.dimensions = tuple(dimensions)
        self.title = title
        self.env = Environment(loader=FileSystemLoader(str(TEMPLATES)), autoescape=True,
                               trim_blocks=True, lstrip_blocks=True)
        self.env.filters["math"] = render_math
        self.static_version = str(int(max(f.stat().st_mtime for f in STATIC.iterdir())))

    def render(self, name: str, **ctx: Any) -> str:
        return self.env.get_template(name).render(**ctx)


_KEY_STORE = web.AppKey("review_store", ReviewStore)
_KEY_STATE = web.AppKey("review_state", _State)


def default_export_path(data_path: str | Path | None, dataset_id: str) -> Path:
    """The book's ``<data>_verifications.json`` beside the data file, else in the workspace."""
    if data_path is not None:
        p = Path(data_path)
        return p.with_name(f"{p.stem}_verifications.json")
    return workspace_dir() / "reviews" / f"{dataset_id}_verifications.json"


def create_app(problems: Sequence[Problem], dataset_id: str,
               judge_scores: Mapping[str, Mapping[str, Any]] | None = None,
               store: ReviewStore | None = None, *, reviewer: str | None = None,
               export_path: str | Path | None = None,
               dimensions: Sequence[str] = DIMENSIONS, title: str | None = None
               ) -> web.Application:
    """The review app for ``problems`` (reviews filed under ``dataset_id``).

    ``store`` defaults to a :class:`ReviewStore` on the workspace database, closed
    with the app. ``reviewer`` is used when a URL names none. ``judge_scores``
    (``problem_id -> {dimension: score}``) are shown beside the form, or, in blind
    mode (``?blind=1``), only once the reviewer has submitted a verdict (approved,
    rejected or needs_revision) for the item; a draft does not reveal them.
    """
    if not problems:
        raise DatasetError("no problems to review")
    app = web.Application(middlewares=[_guard], client_max_size=1024 * 1024)
    reviewer = normalize_reviewer(reviewer) if reviewer else None
    owned = store is None
    app[_KEY_STORE] = store if store is not None else ReviewStore()
    app[_KEY_STATE] = _State(problems, dataset_id, judge_scores or {}, reviewer,
                             Path(export_path) if export_path else
                             default_export_path(None, dataset_id),
                             dimensions, title or f"dataset {dataset_id}")
    if owned:
        async def _close(app: web.Application) -> None:
            app[_KEY_STORE].close()
        app.on_cleanup.append(_close)
    r = app.router
    r.add_get("/", _index)
    r.add_get("/item/{n}", _item)
    r.add_get("/api/review", _api_get_review)
    r.add_post("/api/review", _api_post_review)
    r.add_get("/api/reviews", _api_reviews)
    r.add_get("/api/history", _api_history)
    r.add_get("/api/progress", _api_progress)
    r.add_post("/api/export", _api_export)  # writes a file: POST-only, like every write
    r.add_get("/favicon.ico", _no_icon)
    r.add_static("/static", STATIC, append_version=False)
    return app


async def _no_icon(request: web.Request) -> web.Response:
    return web.Response(status=204)


def _host_ok(host: str) -> bool:
    host = host.strip().lower()
    if host.startswith("["):
        name = host[: host.find("]") + 1]
    else:
        name = host.rsplit(":", 1)[0] if host.count(":") == 1 else host
    if name in LOOPBACK_HOSTS:
        return True
    try:
        return ipaddress.ip_address(name.strip("[]")).is_loopback
    except ValueError:
        return False  # any other name, such as 127.attacker.example


SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
"""Methods that never change state; every other request must pass :func:`_write_ok`."""


def _write_ok(request: web.Request) -> None:
    """Refuse a state-changing request unless it is JSON sent by the page's own origin.

    A browser names the sending page in ``Origin`` (and ``Sec-Fetch-Site``) on every
    POST; a request without them comes from a non-browser client on this machine.
    JSON bodies cannot be sent cross-origin without a CORS preflight, which this
    server never grants.
    """
    origin = request.headers.get("Origin")
    if origin is not None and origin != f"{request.scheme}://{request.host}":
        raise web.HTTPForbidden(text="cross-origin write refused")
    if request.headers.get("Sec-Fetch-Site", "same-origin") not in ("same-origin", "none"):
        raise web.HTTPForbidden(text="cross-origin write refused")
    if request.content_type != "application/json":
        raise web.HTTPUnsupportedMediaType(text="send JSON (Content-Type: application/json)")


@web.middleware
async def _guard(request: web.Request, handler: Callable[..., Any]) -> web.StreamResponse:
    if not _host_ok(request.host):
        raise web.HTTPForbidden(text="the review page answers on loopback names only")
    if request.method not in SAFE_METHODS:
        _write_ok(request)
    try:
        response = await handler(request)
    except web.HTTPException as e:
        e.headers.update(SECURITY_HEADERS)
        raise
    for k, v in SECURITY_HEADERS.items():
        response.headers.setdefault(k, v)
    return response


def _state(request: web.Request) -> _State:
    return request.app[_KEY_STATE]


def _store(request: web.Request) -> ReviewStore:
    return request.app[_KEY_STORE]


def _json_error(status: int, message: str) -> web.Response:
    return web.json_response({"ok": False, "error": message}, status=status,
                             headers=SECURITY_HEADERS)


def _reviewer_param(request: web.Request, st: _State) -> str | None:
    raw = request.query.get("reviewer")
    if raw is None:
        return st.reviewer
    try:
        return normalize_reviewer(raw)
    except ReviewError:
        return None


def _flags(request: web.Request) -> tuple[str, bool]:
    status = request.query.get("status", "all")
    blind = request.query.get("blind", "") in ("1", "true", "yes", "on")
    return (status if status in FILTERS else "all"), blind


def _matches(status: str | None, flt: str) -> bool:
    if flt == "all":
        return True
    if flt == "pending":
        return status not in DECIDED
    return status == flt


def _item_url(n: int, reviewer: str, flt: str, blind: bool) -> str:
    q: dict[str, str] = {"reviewer": reviewer}
    if flt != "all":
        q["status"] = flt
    if blind:
        q["blind"] = "1"
    return f"/item/{n}?{urlencode(q)}"


def _ask_reviewer(st: _State, request: web.Request, message: str = "") -> web.Response:
    html = st.render("reviewer.html", title=st.title, path=request.path,
                     query={k: v for k, v in request.query.items() if k != "reviewer"},
                     message=message, max_len=MAX_REVIEWER)
    return web.Response(text=html, content_type="text/html")


async def _index(request: web.Request) -> web.StreamResponse:
    """Resume: the first item matching the filter from ``from`` on (wrapping), else a notice."""
    st = _state(request)
    reviewer = _reviewer_param(request, st)
    if not reviewer:
        return _ask_reviewer(st, request, "" if "reviewer" not in request.query
                             else "That name is not usable: 1-64 printable characters.")
    flt, blind = _flags(request)
    statuses = await asyncio.to_thread(_store(request).statuses, st.dataset_id, reviewer)
    n_items = len(st.problems)
    try:
        start = min(max(int(request.query.get("from", "1")), 1), n_items)
    except ValueError:
        start = 1
    # with no filter, resume at the first item without a decision
    want = "pending" if flt == "all" and "from" not in request.query else flt
    order = list(range(start, n_items + 1)) + list(range(1, start))
    for n in order:
        if _matches(statuses.get(st.problems[n - 1].problem_id), want):
            raise web.HTTPFound(_item_url(n, reviewer, flt, blind))
    if flt == "all":
        raise web.HTTPFound(_item_url(start, reviewer, flt, blind))
    html = st.render("empty.html", title=st.title, reviewer=reviewer, flt=flt,
                     clear_url=_item_url(start, reviewer, "all", blind))
    return web.Response(text=html, content_type="text/html")


def _item_context(store: ReviewStore, st: _State, n: int, reviewer: str, flt: str,
                  blind: bool) -> dict[str, Any]:
    p = st.problems[n - 1]
    review = store.get_review(st.dataset_id, p.problem_id, reviewer)
    statuses = store.statuses(st.dataset_id, reviewer)
    n_items = len(st.problems)
    progress = store.progress(st.dataset_id, reviewer, n_items)
    project = store.project_progress(st.dataset_id, n_items)
    match = [i + 1 for i, q in enumerate(st.problems)
             if _matches(statuses.get(q.problem_id), flt)]
    prev_n = max((i for i in match if i < n), default=None)
    next_n = min((i for i in match if i > n), default=None)
    judge = st.judge.get(p.problem_id)
    # blind: the judge's scores appear once this reviewer has given a verdict on the item
    judge_visible = judge is not None and (not blind or (review is not None and review.decided))
    scores = review.scores if review else {}
    dims = [{"name": d, "label": d.replace("_", " ").capitalize(),
             "value": scores.get(d), "guide": DIMENSION_GUIDE.get(d, {}),
             "judge": judge.get(d) if judge_visible and judge else None}
            for d in st.dimensions]
    strip = [{"n": i + 1, "status": statuses.get(q.problem_id, "none"),
              "url": _item_url(i + 1, reviewer, flt, blind), "current": i + 1 == n,
              "id": q.problem_id} for i, q in enumerate(st.problems)]
    q = {"reviewer": reviewer}
    if blind:
        q["blind"] = "1"
    config = {
        "problem_id": p.problem_id, "reviewer": reviewer, "index": n, "total": n_items,
        "dimensions": list(st.dimensions), "blind": blind, "filter": flt,
        "prev_url": _item_url(prev_n, reviewer, flt, blind) if prev_n else None,
        "next_url": _item_url(next_n, reviewer, flt, blind) if next_n else None,
        "filter_base": "/?" + urlencode({**q, "from": str(n)}),
        "has_judge": judge is not None,
    }
    return {
        "title": st.title, "dataset_id": st.dataset_id, "reviewer": reviewer, "n": n,
        "total": n_items, "problem": p, "review": review, "dims": dims,
        "statuses": list(DECIDED), "status": review.status if review else "pending",
        "judge": judge if judge_visible else None, "judge_hidden": judge is not None
        and not judge_visible, "judge_extra": {k: v for k, v in (judge or {}).items()
                                               if k not in st.dimensions}
        if judge_visible else {},
        "blind": blind, "flt": flt, "filters": FILTERS, "progress": progress,
        "project": project, "strip": strip, "config": config,
        "prev_url": config["prev_url"], "next_url": config["next_url"],
        "in_filter": n in match, "saved_iso": review.to_dict()["updated_at_iso"]
        if review else None,
        "static_version": st.static_version,
    }


async def _item(request: web.Request) -> web.StreamResponse:
    st = _state(request)
    reviewer = _reviewer_param(request, st)
    if not reviewer:
        return _ask_reviewer(st, request, "" if "reviewer" not in request.query
                             else "That name is not usable: 1-64 printable characters.")
    try:
        n = int(request.match_info["n"])
    except ValueError:
        n = 0
    if not 1 <= n <= len(st.problems):
        html = st.render("empty.html", title=st.title, reviewer=reviewer, flt=None,
                         missing=request.match_info["n"], total=len(st.problems),
                         clear_url=_item_url(1, reviewer, "all", False))
        return web.Response(text=html, content_type="text/html", status=404)
    flt, blind = _flags(request)
    ctx = await asyncio.to_thread(_item_context, _store(request), st, n, reviewer, flt, blind)
    return web.Response(text=st.render("item.html", **ctx), content_type="text/html")


# -- JSON API ---------------------------------------------------------------------------------
async def _api_post_review(request: web.Request) -> web.Response:
    st = _state(request)
    body = await _json_body(request)
    if isinstance(body, web.Response):
        return body
    pid = str(body.get("problem_id") or "")
    if pid not in st.by_id:
        return _json_error(404, f"no problem {pid!r} in this dataset")
    reviewer = body.get("reviewer") or st.reviewer
    store = _store(request)
    try:
        review = await asyncio.to_thread(
            store.save_review, st.dataset_id, pid, reviewer, scores=body.get("scores"),
            status=body.get("status") or "pending", comment=body.get("comment") or "",
            dimensions=st.dimensions)
    except ReviewError as e:
        return _json_error(400, str(e))
    progress = await asyncio.to_thread(store.progress, st.dataset_id, review.reviewer,
                                       len(st.problems))
    return web.json_response({"ok": True, "review": review.to_dict(), "progress": progress,
                              "judge": st.judge.get(pid) if review.decided else None,
                              "server_time": time.time()})


async def _api_get_review(request: web.Request) -> web.Response:
    st = _state(request)
    pid = request.query.get("problem_id", "")
    reviewer = _reviewer_param(request, st)
    if pid not in st.by_id or not reviewer:
        return _json_error(400, "give problem_id (of this dataset) and reviewer")
    review = await asyncio.to_thread(_store(request).get_review, st.dataset_id, pid, reviewer)
    return web.json_response({"ok": True, "review": review.to_dict() if review else None})


async def _api_reviews(request: web.Request) -> web.Response:
    st = _state(request)
    reviewer = request.query.get("reviewer")
    rows: list[Review] = await asyncio.to_thread(_store(request).reviews_for, st.dataset_id,
                                                 reviewer)
    return web.json_response({"ok": True, "dataset_id": st.dataset_id,
                              "reviews": [r.to_dict() for r in rows]})


async def _api_history(request: web.Request) -> web.Response:
    st = _state(request)
    events = await asyncio.to_thread(_store(request).history, st.dataset_id,
                                     request.query.get("problem_id"),
                                     request.query.get("reviewer"))
    return web.json_response({"ok": True, "events": [e.to_dict() for e in events]})


async def _api_progress(request: web.Request) -> web.Response:
    st = _state(request)
    reviewer = _reviewer_param(request, st)
    store = _store(request)
    n = len(st.problems)
    mine = (await asyncio.to_thread(store.progress, st.dataset_id, reviewer, n)
            if reviewer else None)
    project = await asyncio.to_thread(store.project_progress, st.dataset_id, n)
    return web.json_response({"ok": True, "reviewer": mine, "project": project})


async def _json_body(request: web.Request) -> dict[str, Any] | web.Response:
    """The request's JSON object (an empty body counts as ``{}``), or a 400 response."""
    if not request.can_read_body:
        return {}
    try:
        body = await request.json()
    except (ValueError, UnicodeDecodeError, RecursionError):  # ValueError: JSON, huge ints
        return _json_error(400, "the body is not valid JSON")
    if not isinstance(body, dict):
        return _json_error(400, "send a JSON object")
    return body


async def _api_export(request: web.Request) -> web.Response:
    """``POST /api/export``: write the verifications file and return it.

    The JSON body may hold ``reviewer`` (one reviewer's file) and ``download``
    (ask for a ``Content-Disposition: attachment``).
    """
    st = _state(request)
    body = await _json_body(request)
    if isinstance(body, web.Response):
        return body
    raw = body.get("reviewer")
    if raw is not None and not isinstance(raw, str):
        return _json_error(400, "reviewer must be a string")
    reviewer = raw or None
    path = st.export_path
    if reviewer:
        path = path.with_name(f"{path.stem}.{_slug(reviewer)}{path.suffix}")
    data = await asyncio.to_thread(_store(request).export_verifications, st.dataset_id,
                                   st.problems, path, reviewer=reviewer)
    headers = {"X-Assay-Export-Path": str(path)}
    if body.get("download") in (True, 1, "1", "true"):
        headers["Content-Disposition"] = f'attachment; filename="{path.name}"'
    return web.json_response(data, headers=headers, dumps=lambda o: json.dumps(
        o, ensure_ascii=False, indent=2))


def _slug(name: str) -> str:
    return re.sub(r"[^\w.-]+", "_", name).strip("._") or "reviewer"


# -- serving ----------------------------------------------------------------------------------
def _utf8_error(path: Path, error: UnicodeDecodeError) -> DatasetError:
    """A one-line error naming ``file:line`` of the first line that is not valid UTF-8."""
    try:
        data = path.read_bytes()
    except OSError:
        return DatasetError(f"{path}: not valid UTF-8 ({error.reason}); save it as UTF-8")
    for lineno, line in enumerate(data.split(b"\n"), 1):
        try:
            line.decode("utf-8")
        except UnicodeDecodeError as e:
            return DatasetError(f"{path}:{lineno}: not valid UTF-8 (byte "
                                f"0x{line[e.start]:02x} at column {e.start + 1}); save the "
                                "file as UTF-8")
    return DatasetError(f"{path}: not valid UTF-8 ({error.reason}); save it as UTF-8")


def _check_loopback(host: str) -> None:
    if not _host_ok(host):
        raise ValueError(f"the review page binds to loopback only (127.0.0.1), not {host!r}")


async def serve(data_path: str | Path, reviewer: str | None, host: str = "127.0.0.1",
                port: int = 0, open_browser: bool = False, *,
                judge_scores: str | Path | Mapping[str, Any] | None = None,
                blind: bool = False, store: ReviewStore | None = None,
                export_path: str | Path | None = None) -> tuple[str, web.AppRunner]:
    """Start the review page for a problems file; returns its URL and the running runner.

    Binds to ``host`` (loopback only; ``port=0`` picks a free port). Stop it with
    ``await runner.cleanup()``. Reviews go to the workspace database under the
    file's :func:`dataset_id`; ``/api/export`` writes ``<data>_verifications.json``
    beside the file unless ``export_path`` says otherwise.
    """
    _check_loopback(host)
    if reviewer is not None:
        reviewer = normalize_reviewer(reviewer)
    try:
        problems = load_problems(data_path)
    except UnicodeDecodeError as e:  # a reader that lets it through: still one line, file:line
        raise _utf8_error(Path(data_path), e) from e
    did = dataset_id(problems)
    app = create_app(problems, did, load_judge_scores(judge_scores), store,
                     reviewer=reviewer,
                     export_path=export_path or default_export_path(data_path, did),
                     title=Path(str(data_path)).name)
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
    q: dict[str, str] = {}
    if reviewer:
        q["reviewer"] = reviewer
    if blind:
        q["blind"] = "1"
    url = f"http://{shown}:{bound}/" + (f"?{urlencode(q)}" if q else "")
    if open_browser:
        webbrowser.open(url)
    return url, runner


def launch(data_path: str | Path, reviewer: str | None = None, *, host: str = "127.0.0.1",
           port: int = 0, open_browser: bool = True,
           judge_scores: str | Path | Mapping[str, Any] | None = None, blind: bool = False,
           echo: Callable[[str], Any] = print) -> None:
    """Serve the review page until Ctrl-C (what ``assay review DATA --reviewer NAME`` runs)."""

    async def main() -> None:
        url, runner = await serve(data_path, reviewer, host, port, open_browser,
                                  judge_scores=judge_scores, blind=blind)
        echo(f"Review page: {url}")
        echo("Every submission is saved at once in the workspace store; Ctrl-C stops.")
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                loop.add_signal_handler(sig, stop.set)
            except (NotImplementedError, RuntimeError, ValueError):  # Windows, not main thread
                pass
        try:
            await stop.wait()
        finally:
            await runner.cleanup()

    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
