"""Keeping secrets out of what is stored or shown.

A base URL may carry secrets in two places: ``user:password@`` and the query
string (``?api_key=...``). Both are sent with every request and neither is ever
written: the stored and shown form drops the user info and replaces each query
value with ``***``. Error text that a server echoes back is scrubbed of every
known secret (the API key, the URL's password and query values) and of bearer
tokens before it is stored.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, quote, unquote, urlsplit, urlunsplit

from assay.errors import ConfigError

MASK = "***"
_BEARER = re.compile(r"(?i)(bearer\s+)[^\s\"',;]+")
_KEYLIKE = re.compile(r"(?i)((?:api[_-]?key|access[_-]?token|secret|password)"
                      r"[\"']?\s*[:=]\s*[\"']?)[^\s\"'&,;}]+")
_OPENAI_KEY = re.compile(r"\bsk-[A-Za-z0-9_-]{8,}")


def _text_display(url: str) -> str:
    """A best-effort credential-free form of a URL that may not parse.

    Everything between ``://`` and the last ``@`` is dropped (a password may hold
    ``#``, ``/`` or ``?``), and so is any query or fragment.
    """
    scheme, sep, rest = url.partition("://")
    if not sep:
        scheme, rest = "", url
    if "@" in rest:
        rest = rest.rsplit("@", 1)[1]
    rest = re.split(r"[?#]", rest, maxsplit=1)[0]
    return f"{scheme}{sep}{rest}"


def _mask_query(query: str) -> str:
    if not query:
        return ""
    pairs = parse_qsl(query, keep_blank_values=True)
    return "&".join(f"{quote(k, safe='')}={MASK}" for k, _ in pairs)


@dataclass
class Endpoint:
    """A parsed base URL: how to send to it, how to show it, and what to hide."""

    #: the URL as given (credentials and query included); used only for requests
    raw: str
    #: scheme, host and port, path without a trailing slash
    scheme: str
    host: str
    port: int
    path: str
    query: str
    #: the URL as stored and shown: no user info, every query value masked
    display: str
    #: strings that must never be written (the password and query values)
    secrets: list[str] = field(default_factory=list)
    #: the URL carries ``user:password@`` (sent as basic auth)
    has_userinfo: bool = False

    def url_for(self, suffix: str) -> str:
        """``suffix`` (e.g. ``/chat/completions``) joined to the path, the query kept."""
        parts = urlsplit(self.raw)
        path = parts.path.rstrip("/") + suffix
        return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


def parse_endpoint(url: str) -> Endpoint:
    """Parse and check a base URL; bad URLs are a one-line :class:`ConfigError`.

    The message never repeats the credentials or query of the URL it rejects.
    """
    url = url.strip()
    shown = _text_display(url)
    hint = ("percent-encode special characters in the user name or password "
            "('#' as %23, '/' as %2F, '?' as %3F, '@' as %40)")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as e:
        reason = str(e)
        if "Port" in reason or "port" in reason:
            reason = "the port is not a number from 0 to 65535"
        elif "IPv6" in reason:
            reason = "an IPv6 host needs both brackets, as in http://[::1]:8000/v1"
        raise ConfigError(f"invalid base URL {shown!r}: {reason}; if it holds credentials, "
                          f"{hint}") from None
    if parts.scheme not in ("http", "https"):
        raise ConfigError(f"invalid base URL {shown!r}: expected http(s)://host[:port]/v1")
    if not parts.hostname:
        raise ConfigError(f"invalid base URL {shown!r}: no host; expected http(s)://host[:port]/v1")
    if parts.fragment or "@" in parts.path or "@" in parts.query:
        raise ConfigError(f"invalid base URL {shown!r}: it has a '#' fragment or an '@' "
                          f"after the host; {hint}")
    port = port or (443 if parts.scheme == "https" else 80)
    secrets = []
    if parts.password:
        secrets += [parts.password, unquote(parts.password)]
    for _, value in parse_qsl(parts.query, keep_blank_values=True):
        if value:
            secrets += [value, quote(value, safe=""), quote(value)]
    host = parts.hostname
    netloc = f"[{host}]" if ":" in host else host
    if parts.port:
        netloc += f":{parts.port}"
    path = parts.path.rstrip("/")
    display = urlunsplit((parts.scheme, netloc, path, _mask_query(parts.query), ""))
    # very short values would mask ordinary words in error text; they are still never
    # stored, since only ``display`` is
    return Endpoint(url, parts.scheme, host, port, path, parts.query, display,
                    sorted({s for s in secrets if len(s) >= 4}, key=len, reverse=True),
                    has_userinfo=bool(parts.username or parts.password))


def redact_url(url: str | None) -> str | None:
    """The form of a URL that may be stored or shown: no ``user:password@``, no query values.

    A URL that does not parse is reduced to a credential-free text form.
    """
    if not url:
        return url
    try:
        return parse_endpoint(url).display
    except ConfigError:
        return _text_display(url)


def scrub(text: str, secrets: list[str] | tuple[str, ...] = ()) -> str:
    """``text`` with every known secret, bearer token and key-like value masked."""
    for s in sorted((s for s in secrets if s), key=len, reverse=True):
        text = text.replace(s, MASK)
    text = _BEARER.sub(lambda m: m.group(1) + MASK, text)
    text = _KEYLIKE.sub(lambda m: m.group(1) + MASK, text)
    return _OPENAI_KEY.sub(MASK, text)
