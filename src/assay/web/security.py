"""What keeps the local web app local: loopback hosts only, read-only outside the review
API, same-origin JSON writes there, and security headers (a CSP of the app's own assets)."""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from typing import Any

from aiohttp import web

__all__ = ["LOOPBACK_HOSTS", "SAFE_METHODS", "SECURITY_HEADERS", "WRITABLE_PREFIX",
           "check_loopback", "guard", "host_ok"]

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})

SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
"""Methods that never change state; every other request must pass :func:`_write_ok`."""

WRITABLE_PREFIX = "/review/api/"
"""The only paths that take writes (saving a review, writing its export); everything else
(the run viewer above all) is read-only and answers anything but GET/HEAD with 405."""


def host_ok(host: str) -> bool:
    """Whether a ``Host`` header (or a bind address) names this machine's loopback."""
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


def _write_ok(request: web.Request) -> None:
    """Refuse a write unless it is JSON from the page's own origin: browsers send
    ``Origin`` (and ``Sec-Fetch-Site``) on every POST, and cross-origin JSON needs a CORS
    preflight, which this server never grants."""
    if not request.path.startswith(WRITABLE_PREFIX):
        raise web.HTTPMethodNotAllowed(request.method, ["GET", "HEAD"],
                                       text="this page is read-only: GET only")
    origin = request.headers.get("Origin")
    if origin is not None and origin != f"{request.scheme}://{request.host}":
        raise web.HTTPForbidden(text="cross-origin write refused")
    if request.headers.get("Sec-Fetch-Site", "same-origin") not in ("same-origin", "none"):
        raise web.HTTPForbidden(text="cross-origin write refused")
    if request.content_type != "application/json":
        raise web.HTTPUnsupportedMediaType(text="send JSON (Content-Type: application/json)")


@web.middleware
async def guard(request: web.Request, handler: Callable[..., Any]) -> web.StreamResponse:
    """Middleware: loopback hosts only (DNS rebinding), writes only to the review API as
    same-origin JSON, and the security headers on every answer (refusals too)."""
    try:
        if not host_ok(request.host):
            raise web.HTTPForbidden(text="this local page answers on loopback names only")
        if request.method not in SAFE_METHODS:
            _write_ok(request)
        response = await handler(request)
    except web.HTTPException as e:
        e.headers.update(SECURITY_HEADERS)
        raise
    for k, v in SECURITY_HEADERS.items():
        response.headers.setdefault(k, v)
    return response


def check_loopback(host: str) -> None:
    """Refuse (``ValueError``) to bind the local web app anywhere but loopback."""
    if not host_ok(host):
        raise ValueError(f"this local page binds to loopback only (127.0.0.1), not {host!r}")
