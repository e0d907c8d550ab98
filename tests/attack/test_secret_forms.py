"""Secrets that change when they are percent-encoded or JSON-escaped (issue 32).

The secrets of ``test_secrets.py`` are letters, digits and ``-``: their JSON-escaped form
is the raw one, so a redaction that lost its JSON forms would pass there. Here a base URL's
query value holds ``/ + = " \\`` and non-ASCII letters (given percent-encoded in the URL,
as it must be) and the API key in the environment holds ``/ + = " \\``. A server echoes
them in neutral places (no ``api_key=`` or ``Authorization`` beside them, so only the
known-secret forms can mask them): percent-encoded (``quote`` with and without ``/``
safe), JSON-escaped (``\\"``, ``\\\\``, ``\\u00dc``, as ``json.dumps`` writes them, and
with ``ensure_ascii=False``) and raw, in an error body (the stored error, the run's
error line on the console) and in a normal reply (the stored output, transcript and
cached reply). Every byte written is then searched for every form: the SQLite files,
``results.jsonl``, the reports, ``assay list runs``, the viewer's pages and the commands'
stdout and stderr. The first tests go through the same policy in-process, form by form,
at the functions the choke points call (:func:`scrub`, :func:`scrub_known`,
:func:`redact_tree`).
"""

from __future__ import annotations

import html
import itertools
import json
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

import pytest

from assay.store.sqlite import Store
from attack.clitools import cli, one_line_error
from attack.test_secrets import EchoServer, everything_shown, leaks

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "qa_example.jsonl"

#: a query value of the base URL: every character that an encoding changes
QSEC = 'Qk/Sec+ret="x\\y"=Ünï-ключ-4242'
#: the API key in the environment (sent as a bearer header: ASCII only)
ENVKEY = 'Env/Key+9="a\\b"==Zq0123xy'
ENV = {"OPENAI_API_KEY": ENVKEY}


def encoded(secret: str) -> dict[str, str]:
    """The forms a server writes ``secret`` in, by name."""
    return {"raw": secret, "percent": quote(secret, safe=""), "percent-path": quote(secret),
            "json": json.dumps(secret)[1:-1],
            "json-utf8": json.dumps(secret, ensure_ascii=False)[1:-1]}


def search_forms(secret: str) -> set[str]:
    """What must appear nowhere: every encoded form, each also HTML-escaped (the reports,
    the viewer) and JSON-escaped once more (``results.jsonl``), and every run of ten
    characters of the raw, percent-encoded and JSON-escaped forms (a secret cut short)."""
    forms = set(encoded(secret).values())
    forms |= {html.escape(f) for f in list(forms)} | {json.dumps(f)[1:-1] for f in list(forms)}
    for whole in (secret, quote(secret, safe=""), json.dumps(secret)[1:-1]):
        forms |= {whole[i:i + 10] for i in range(len(whole) - 9)}
    return forms


def test_the_secrets_really_change_under_each_encoding() -> None:
    for secret in (QSEC, ENVKEY):
        forms = encoded(secret)
        assert len(set(forms.values())) == len(forms) - (secret.isascii()), forms
        for name in ("percent", "json"):
            assert forms[name] != secret, name
    assert '\\"' in json.dumps(QSEC) and "\\\\" in json.dumps(QSEC) and "\\u" in json.dumps(QSEC)


# -- the policy, form by form, at the functions the choke points call ------------------------
@pytest.fixture
def known(monkeypatch: pytest.MonkeyPatch) -> Any:
    """The secrets known as a run knows them: the key from the environment, the query
    value from the base URL the run parsed."""
    from assay.core.redact import parse_endpoint

    monkeypatch.setenv("OPENAI_API_KEY", ENVKEY)
    return parse_endpoint(f"http://127.0.0.1:8/v1?api_key={quote(QSEC, safe='')}")


CASES = [(who, form) for who in ("query value", "env key") for form in encoded(QSEC)]


@pytest.mark.parametrize(("who", "form"), CASES)
def test_error_text_masks_every_form(known: Any, who: str, form: str) -> None:
    from assay.core.redact import scrub

    secret = QSEC if who == "query value" else ENVKEY
    assert unquote(known.query.split("=", 1)[1]) == QSEC  # the URL carries it encoded
    text = f"upstream saw {encoded(secret)[form]} there"
    for out in (scrub(text, known.secrets), scrub(text)):  # the model's, the CLI's
        assert leaks({"scrubbed": out}, {who: search_forms(secret)}) == [], out
        assert out == "upstream saw *** there"


@pytest.mark.parametrize(("who", "form"), CASES)
def test_content_and_configuration_mask_every_form(known: Any, who: str, form: str) -> None:
    from assay.core.redact import redact_tree, scrub_known

    secret = QSEC if who == "query value" else ENVKEY
    text = f"the model said {encoded(secret)[form]} here"
    assert scrub_known(text) == "the model said *** here"
    stored = redact_tree({"note": text, "tags": [text]})
    assert stored == {"note": "the model said *** here", "tags": ["the model said *** here"]}


# -- end to end: a run, its store, its reports, its console ---------------------------------
def echo_by_request(kinds: list[str], error: bool) -> Any:
    """A behaviour that echoes both secrets in one form per request, in turn (each
    message stays short: an error is cut at 300 characters after it is scrubbed)."""
    counter = itertools.count()

    def behave(body: dict[str, Any], echo: str) -> Any:
        kind = kinds[next(counter) % len(kinds)]
        text = (f"upstream saw {encoded(QSEC)[kind]} and {encoded(ENVKEY)[kind]} "
                f"({kind})")
        return {"status": 401, "error": f"denied: {text}"} if error else f"Answer: {text}"

    return behave


MODES = {
    # an error body is JSON: a raw secret in its message arrives JSON-escaped, a
    # percent-encoded one arrives as it is
    "401 echo": (["raw", "percent", "percent-path"], True),
    # a reply's text arrives decoded: every form as it was written
    "reply echo": (list(encoded(QSEC)), False),
}


@pytest.mark.parametrize("mode", MODES)
def test_a_run_writes_no_encoded_form_of_its_secrets(mode: str, workspace: Path) -> None:
    kinds, error = MODES[mode]
    srv = EchoServer({"fake": echo_by_request(kinds, error)}).start()
    try:
        url = f"{srv.base_url}?api_key={quote(QSEC, safe='')}"
        ran = cli("run", "qa", "--data", str(EXAMPLE), "--model", "openai/fake",
                  "--base-url", url, "--limit", str(2 * len(kinds)), "--max-retries", "0",
                  "-c", "1", "-q", env=ENV)
        assert ran.returncode == (1 if error else 0), ran.stderr
        # the secrets really were sent: their absence below means they were masked
        assert set(srv.authorizations) == {f"Bearer {ENVKEY}"}
        assert len(srv.queries) == 2 * len(kinds)
        assert all(QSEC in unquote(q) or QSEC in q for q in srv.queries), srv.queries[:1]
    finally:
        srv.stop()
    run_id = ran.stdout.split()[1]
    store = Store()
    try:
        results = store.results(run_id)
    finally:
        store.close()
    if error:  # the stored error still says what went wrong, its secrets masked
        assert all(r.error and "HTTP 401" in r.error and "upstream saw *** and ***" in r.error
                   for r in results), [r.error for r in results]
        assert "upstream saw *** and ***" in ran.stderr  # the run's error line
    else:
        assert all(r.error is None and "upstream saw *** and ***" in r.output
                   for r in results), [r.output for r in results]
    blobs = everything_shown(workspace, {"run": ran}, [run_id])
    assert leaks(blobs, {"query value": search_forms(QSEC),
                         "env key": search_forms(ENVKEY)}) == []


def test_a_refused_base_url_does_not_repeat_its_query_value(workspace: Path) -> None:
    p = cli("run", "qa", "--data", str(EXAMPLE), "--model", "openai/x", "--base-url",
            f"http://127.0.0.1:99999/v1?api_key={quote(QSEC, safe='')}", env=ENV)
    one_line_error(p)
    assert leaks({"stdout": p.stdout, "stderr": p.stderr},
                 {"query value": search_forms(QSEC), "env key": search_forms(ENVKEY)}) == []
