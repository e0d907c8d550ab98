"""Keeping secrets out of what is stored or shown: one policy, used at every choke point.

* **Configuration**: :func:`redact_tree` masks credential-named values; URLs lose
  ``user:password@`` and query values; other text loses URL passwords, ``name=value``
  credentials and the known secrets. Changed paths are returned (``--resume`` asks again).
* **Error text**: :func:`scrub`: known secrets in every encoding, auth headers, bearer/basic
  credentials, ``key=``-like values, URL passwords, provider key shapes.
* **Content** (prompts, transcripts, outputs, cached replies): only the known secrets
  (:func:`scrub_known`); a pattern could change what a model said and so its score.

*Known secrets*: secret-named environment variables, every parsed endpoint's passwords and query
values, and :func:`remember_secret`'s; matched raw, percent-encoded, JSON-escaped and (for
``user:password``) base64 as HTTP basic auth sends it."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit, urlunsplit

from assay.errors import ConfigError

MASK = "***"

# -- names that say a value is a credential ---------------------------------------------
#: name parts (split on ``_``, ``-``, ``.``, not on case) that alone make it a credential
_SECRET_PARTS = {"token", "secret", "password", "passwd", "pwd", "apikey", "credential",
                 "credentials", "authorization", "cookie", "passphrase"}
#: ``<part>_key`` is a credential (``api_key``); a bare ``key`` or ``question_key`` is a column
_KEY_OWNERS = {"api", "access", "secret", "private", "auth", "client", "signing",
               "encryption", "master", "subscription"}
_NAME_SPLIT = re.compile(r"[_\-.\s]+")
#: environment variables whose values are secrets (matched on the upper-cased name)
_SECRET_ENV = re.compile(r"(?:^|_)(?:API_?KEY|TOKEN|SECRET|PASSWORD|PASSWD|ACCESS_KEY|"
                         r"PRIVATE_KEY|CREDENTIALS?)(?:_|$)")
#: environment variables whose values are URLs that may carry credentials
_URL_ENV = re.compile(r"(?:^|_)(?:URL|URI|ENDPOINT|PROXY)$")


def is_secret_name(name: str) -> bool:
    """Whether ``name`` holds a credential: ``api_key``, ``hf_token``, ``Authorization`` do;
    ``max_tokens``, ``question_key``, ``key``, ``tokenizer`` do not."""
    parts = [p for p in _NAME_SPLIT.split(name.lower()) if p]
    if any(p in _SECRET_PARTS for p in parts):
        return True
    return any(p == "key" and i and parts[i - 1] in _KEY_OWNERS for i, p in enumerate(parts))


# -- the secrets this process knows --------------------------------------------------------
_lock = threading.Lock()
_remembered: set[str] = set()
_version = 0
#: shorter would mask ordinary words (but a URL's password or ``api_key`` is never stored)
MIN_SECRET = 4
#: the least length of a known secret looked for in content, and of an environment
#: variable's secret (``HF_HUB_DISABLE_TOKEN=1`` is a switch): a password ``pass`` is
#: masked in error text only, never in what a model said (``passed``)
MIN_ENV_SECRET = 8
#: query parameters whose values are credentials even when short
_SECRET_QUERY = {"key", "token", "sig", "signature", "auth", "code", "access_token",
                 "password", "secret"}


def _forms(value: str) -> set[str]:
    forms = {value, unquote(value), quote(value, safe=""), quote(value),
             json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1]}
    return {f for f in forms if len(f) >= MIN_SECRET}


def _basic_forms(user: str, password: str) -> set[str]:
    """``user:password`` as HTTP basic auth sends it (base64, with and without padding)."""
    out = set()
    for u, p in {(user, password), (unquote(user), unquote(password))}:
        token = base64.b64encode(f"{u}:{p}".encode()).decode()
        out |= {token, token.rstrip("=")}
    return out


def remember_secret(*values: str | None, min_len: int = MIN_SECRET) -> None:
    """Add literal secrets that must never be written (in all their encodings)."""
    global _version
    new = set()
    for v in values:
        if v and len(v) >= min_len:
            new |= _forms(v)
    with _lock:
        if not new <= _remembered:
            _remembered.update(new)
            _version += 1


def _remember_url(url: str) -> None:
    global _version
    try:
        parts = urlsplit(url.strip())
        user, password = parts.username, parts.password
    except ValueError:
        return
    values: list[str] = []
    if password:
        values.append(password)
        basic = _basic_forms(user or "", password)
        with _lock:
            if not basic <= _remembered:
                _remembered.update(basic)
                _version += 1
    elif user and len(user) >= MIN_ENV_SECRET:  # https://TOKEN@host: the user is the secret
        values.append(user)
    for q in (parts.query, parts.fragment):
        # a query value is a credential by its name, or by its look (a long random
        # string); ``?format=json`` must not make every "json" a secret
        values += [v for k, v in parse_qsl(q, keep_blank_values=True)
                   if v and (k.lower() in _SECRET_QUERY or is_secret_name(k) or _token_like(v))]
    remember_secret(*values)


def _token_like(value: str) -> bool:
    """An API key's shape: a long string mixing letters and digits."""
    return (len(value) >= 16 and any(c.isdigit() for c in value)
            and any(c.isalpha() for c in value))


def secrets_version() -> int:
    """Changes whenever a secret is remembered (to refresh snapshots)."""
    return _version


def known_secrets(min_len: int = MIN_SECRET) -> list[str]:
    """Every known secret form (remembered or in the environment) of ``min_len``+, longest first."""
    found: set[str] = set()
    for name, value in os.environ.items():
        upper = name.upper()
        if not value:
            continue
        if _SECRET_ENV.search(upper) and len(value) >= MIN_ENV_SECRET:
            found |= _forms(value)
        elif _URL_ENV.search(upper) and "://" in value:
            _remember_url(value)  # OPENAI_BASE_URL=http://user:pw@...: its password
    with _lock:
        found |= _remembered
    return sorted((f for f in found if len(f) >= min_len), key=len, reverse=True)


# -- URLs ----------------------------------------------------------------------------------
_URL_START = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
#: ``scheme://userinfo@`` inside text (the userinfo, up to the last ``@`` before the host)
_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^\s/?#\"'<>@]+@")


def _text_display(url: str) -> str:
    """A credential-free form of a URL that may not parse: all between ``://`` and the last
    ``@`` dropped (a password may hold ``#``, ``/`` or ``?``), and any query or fragment."""
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

    raw: str  # as given, credentials and query included: used only for requests
    scheme: str
    host: str
    port: int
    path: str  # without a trailing slash
    query: str
    display: str  # as stored and shown: no user info, every query value masked
    secrets: list[str] = field(default_factory=list)  # the password and query values
    has_userinfo: bool = False  # ``user:password@``, sent as basic auth

    @property
    def identity(self) -> str | None:
        """Tells this endpoint from another shown the same (differing in query or
        credentials): a slow, salted hash of the whole URL, for cache keys and fingerprints
        (``None`` when the display is the whole URL)."""
        if not self.query and not self.has_userinfo:
            return None
        parts = urlsplit(self.raw)
        whole = urlunsplit((parts.scheme, parts.netloc, self.path, parts.query, ""))
        digest = hashlib.pbkdf2_hmac("sha256", whole.encode(), b"assay-endpoint", 100_000)
        return digest.hex()[:16]

    def url_for(self, suffix: str) -> str:
        """``suffix`` joined to the path, the query kept."""
        parts = urlsplit(self.raw)
        path = parts.path.rstrip("/") + suffix
        return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


def parse_endpoint(url: str) -> Endpoint:
    """Parse and check a base URL: a one-line ConfigError never repeating its credentials or
    query; its password, basic-auth token and query values become known secrets."""
    url = url.strip()
    _remember_url(url)
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
        secrets += [parts.password, unquote(parts.password),
                    *_basic_forms(parts.username or "", parts.password)]
    for _, value in parse_qsl(parts.query, keep_blank_values=True):
        if value:
            secrets += [value, quote(value, safe=""), quote(value)]
    host = parts.hostname
    netloc = f"[{host}]" if ":" in host else host
    if parts.port:
        netloc += f":{parts.port}"
    path = parts.path.rstrip("/")
    display = urlunsplit((parts.scheme, netloc, path, _mask_query(parts.query), ""))
    return Endpoint(url, parts.scheme, host, port, path, parts.query, display,
                    sorted({s for s in secrets if len(s) >= MIN_SECRET}, key=len, reverse=True),
                    has_userinfo=bool(parts.username or parts.password))


def redact_url(url: str | None) -> str | None:
    """A URL as it may be stored or shown: no ``user:password@``, no query values."""
    if not url:
        return url
    try:
        return parse_endpoint(url).display
    except ConfigError:
        return _text_display(url)


def _redact_any_url(url: str) -> str:
    """``url`` (any scheme) without user info and query values; else unchanged."""
    text = url.strip()
    try:
        parts = urlsplit(text)
        _ = parts.port
    except ValueError:
        return _text_display(text) if ("@" in text or "?" in text or "#" in text) else url
    if not (parts.username or parts.password or parts.query or "=" in parts.fragment):
        return url
    _remember_url(text)
    host = parts.hostname or ""
    netloc = f"[{host}]" if ":" in host else host
    if parts.port:
        netloc += f":{parts.port}"
    fragment = "" if "=" in parts.fragment else parts.fragment
    return urlunsplit((parts.scheme, netloc, parts.path, _mask_query(parts.query), fragment))


# -- text ------------------------------------------------------------------------------------
#: an Authorization (or Cookie) header's value, whatever its scheme
_AUTH_HEADER = re.compile(
    r"(?i)((?:proxy-)?(?:authorization|cookie|x-api-key|api-key)[\"']?\s*[:=]\s*[\"']?"
    r"(?:(?:bearer|basic|token|digest|apikey)(?:\s+|%20|\+))?)[^\s\"',;}\]<>]+")
_BEARER = re.compile(r"(?i)\b(bearer(?:\s+|%20|\+))[^\s\"',;}\]<>]+")
#: ``Basic <base64>``: only a base64-looking token (``basic arithmetic`` is a phrase)
_BASIC = re.compile(r"(?i)\b(basic(?:\s+|%20|\+))([A-Za-z0-9+/_-]{6,}={0,2})")
_KEYLIKE = re.compile(
    r"(?i)(?<![A-Za-z0-9])((?:[A-Za-z0-9]+[_-])*(?:api[_-]?key|apikey|access[_-]?key|"
    r"secret(?:[_-]?key)?|private[_-]?key|client[_-]?secret|password|passwd|pwd|passphrase|"
    r"(?:access|auth|refresh|id|api|session|bearer)[_-]?token)[\"']?\s*[:=]\s*[\"']?)"
    r"[^\s\"'&,;}\]<>]+")
#: ``key=``, ``token=``, ``sig=`` in a query string (``?``, ``&``, ``;`` before it), or
#: elsewhere when the value looks like a credential (``KEY=VALUE`` in a usage line is not)
_QUERYLIKE = re.compile(r"(?i)(?:^|(?<=([?&;\s,(\"'])))((?:key|token|sig|signature|auth|"
                        r"access_token)=)([^\s&#\"'<>]+)")


def _query_value(m: re.Match[str]) -> str:
    before, name, value = m.group(1), m.group(2), m.group(3)
    if before in ("?", "&", ";") or _credential_like(value):
        return name + MASK
    return m.group(0)


def _credential_like(value: str) -> bool:
    """At least 8 characters mixing letters and digits: a key, not a word."""
    return (len(value) >= 8 and any(c.isdigit() for c in value)
            and any(c.isalpha() for c in value))


#: a JSON or Python field holding a credential: ``"token": "..."``, ``'key': '...'``
_QUOTED_FIELD = re.compile(r"(?i)([\"'](?:token|secret|auth|credentials?)[\"']\s*:\s*[\"'])"
                           r"[^\"']+")
#: provider key shapes: OpenAI ``sk-...``, Hugging Face ``hf_...``, GitHub ``ghp_...``
_KEY_SHAPES = re.compile(r"\b(?:sk-[A-Za-z0-9_-]{8,}|hf_[A-Za-z0-9]{16,}|"
                         r"gh[pousr]_[A-Za-z0-9]{16,})")


def _looks_base64(token: str) -> bool:
    return (any(c.isdigit() or c in "+/=" for c in token)
            or (any(c.isupper() for c in token[1:]) and any(c.islower() for c in token)))


def _replace_known(text: str, secrets: Iterable[str]) -> str:
    for s in secrets:
        if s and s in text:
            text = text.replace(s, MASK)
    return text


def scrub(text: str, secrets: list[str] | tuple[str, ...] = ()) -> str:
    """Error text with every secret masked; ``secrets``: extra literal values to mask."""
    if not text:
        return text
    extra = sorted({f for s in secrets if s for f in _forms(s)} | {s for s in secrets if s},
                   key=len, reverse=True)
    text = _replace_known(text, extra)
    text = _replace_known(text, known_secrets())
    text = _URL_USERINFO.sub(lambda m: m.group(1) + MASK + "@", text)
    text = _AUTH_HEADER.sub(lambda m: m.group(1) + MASK, text)
    text = _BEARER.sub(lambda m: m.group(1) + MASK, text)
    text = _BASIC.sub(lambda m: m.group(1) + MASK if _looks_base64(m.group(2))
                      else m.group(0), text)
    text = _KEYLIKE.sub(lambda m: m.group(1) + MASK, text)
    text = _QUERYLIKE.sub(_query_value, text)
    text = _QUOTED_FIELD.sub(lambda m: m.group(1) + MASK, text)
    return _KEY_SHAPES.sub(MASK, text)


def content_secrets() -> list[str]:
    """The known secrets looked for in content (see :data:`MIN_ENV_SECRET`)."""
    return known_secrets(MIN_ENV_SECRET)


def scrub_known(text: str, secrets: list[str] | None = None) -> str:
    """Content with the known secrets masked, nothing else changed; ``secrets``: a snapshot
    of :func:`content_secrets`."""
    if not text:
        return text
    return _replace_known(text, content_secrets() if secrets is None else secrets)


#: names of options that hold a URL even when it is written without a scheme
_URL_NAME = re.compile(r"(?i)(?:^|[_-])(?:url|uri|endpoint|host)$")
#: keys whose string values are error text (a run's ``stats.error``, a step's failures)
_ERROR_NAMES = {"error", "errors", "failure", "failures", "reason", "detail", "message"}
#: command lines (an MCP server's, in an agent spec): scrubbed as error texts are, so an
#: ``env GITHUB_TOKEN=...`` assignment is never stored
_COMMAND_NAMES = {"mcp"}


def scrub_known_tree(value: Any, secrets: list[str]) -> Any:
    """A copy of a JSON-like tree with ``secrets`` masked in every string and key."""
    if isinstance(value, str):
        return _replace_known(value, secrets)
    if isinstance(value, dict):
        return {_replace_known(str(k), secrets): scrub_known_tree(v, secrets)
                for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [scrub_known_tree(v, secrets) for v in value]
    return value


# -- configuration -----------------------------------------------------------------------------
def redact_value(name: str, value: str, secrets: list[str] | None = None) -> str:
    """A configuration string as it may be stored (see :func:`redact_tree`)."""
    if not value:
        return value
    if is_secret_name(name):
        remember_secret(value, min_len=MIN_ENV_SECRET)
        return MASK
    if name.lower() in _ERROR_NAMES | _COMMAND_NAMES:  # the error-text policy
        return scrub(value)
    stripped = value.strip()
    if _URL_START.match(stripped) and not any(c.isspace() for c in stripped):
        return _redact_any_url(value)
    if (_URL_NAME.search(name) and ("@" in stripped or "?" in stripped)
            and not any(c.isspace() for c in stripped)):  # judge_url=user:pw@host:8000/v1
        shown = _redact_any_url("x://" + stripped)
        return shown.removeprefix("x://")
    out = value
    if "://" in out:
        out = _URL_USERINFO.sub(lambda m: m.group(1) + MASK + "@", out)
    if "?" in out:  # a model spec's query: agent/react?model=...&api_key=...&mcp=...
        head, sep, query = out.partition("?")
        pairs = parse_qsl(query, keep_blank_values=True)
        if any(is_secret_name(k) or _URL_START.match(v) for k, v in pairs):
            for k, v in pairs:
                if is_secret_name(k):
                    remember_secret(v, min_len=MIN_ENV_SECRET)
            out = head + sep + "&".join(
                f"{k}={MASK if is_secret_name(k) else redact_value(k, v, secrets)}"
                for k, v in pairs)
        else:  # a value decoded (an MCP command's env KEY=VALUE) redacted as written
            shown = [(k, redact_value(k, v, secrets)) for k, v in pairs]
            if shown != pairs:
                out = head + sep + urlencode(shown, quote_via=quote, safe="/:,*")
    if "=" in out or ":" in out:  # only then can a name=value credential be there
        out = _KEYLIKE.sub(lambda m: m.group(1) + MASK, out)
        out = _AUTH_HEADER.sub(lambda m: m.group(1) + MASK, out)
    if "earer" in out or "EARER" in out:
        out = _BEARER.sub(lambda m: m.group(1) + MASK, out)
    return _replace_known(out, content_secrets() if secrets is None else secrets)


def redact_tree(value: Any, name: str = "", *, path: str = "",
                changed: list[str] | None = None, secrets: list[str] | None = None) -> Any:
    """A copy of a configuration tree that may be stored or shown, each string by the key
    it sits under (a list's items take the list's): see the module; an error message
    (``error``, ``reason``, ...) gets :func:`scrub`. A masked value becomes a known secret,
    so an error echoing it is scrubbed too. ``changed`` collects the changed dotted paths."""
    if secrets is None:
        secrets = content_secrets()
    if isinstance(value, str):
        out = redact_value(name, value, secrets)
        if out != value and changed is not None:
            changed.append(path or name)
        return out
    if isinstance(value, dict):
        return {k: redact_tree(v, str(k), path=f"{path}.{k}" if path else str(k),
                               changed=changed, secrets=secrets) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_tree(v, name, path=f"{path}[{i}]", changed=changed, secrets=secrets)
                for i, v in enumerate(value)]
    return value
