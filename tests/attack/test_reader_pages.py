"""Every reader page survives any output a model can write (issue 32, point 8).

A model's output is text its maker chose: the viewer's sample page once answered 500 for
deeply nested code (Python's parser raised RecursionError, or MemoryError for another
shape, in the check that decides whether to highlight it); its regular expressions took
quadratic time over long runs of blanks, and so do some of Pygments' lexers over text a
model fences as their language (a sample page that never came back, holding the server).
Here a real ``assay run qa`` against the fake server records each hostile output, a real
``assay view`` serves the store, and each page is fetched over HTTP: it answers 200 and
shows the text (plain, with a note, where it cannot be highlighted). The other readers
of the same run (its page, search, compare, its report files, ``assay compare``,
``assay report``) answer too.
"""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest

from assay.testing import FakeServer
from attack.clitools import cli

DEEP_SUM = "def f():\n    return " + "+".join(["1"] * 30000)
OUTPUTS = {
    # Python's parser: RecursionError while building the tree
    "py-deep-sum": DEEP_SUM + "  # MARK-py-deep-sum",
    "py-deep-attr": "import os\nos" + ".a" * 40000 + "  # MARK-py-deep-attr",
    # Python's parser: MemoryError (its stack of nested unary operators)
    "py-deep-unary": "def f():\n    return " + "-" * 50000 + "1  # MARK-py-deep-unary",
    "py-deep-fenced": "```python\n" + DEEP_SUM + "\n```\nMARK-py-deep-fenced",
    "json-deep": "[" * 100000 + "]" * 100000 + "MARK-json-deep",
    "json-deep-fenced": "```json\n" + "[" * 40000 + "]" * 40000 + "\n```\nMARK-json-deep-fenced",
    # quadratic regular expressions: a fence line of blanks (read again to tell the output
    # from its answer), a run of blank lines (read to tell a program)
    "fence-blanks": "```" + " " * 1_000_000 + "!\nAnswer: MARK-fence-blanks",
    "blank-lines": "x" + "\n" * 99_990 + "MARK-blank-lines",
    # a highlighter whose time grows as the square of its input: Java's over plain words
    "java-words": "```java\n" + ("a b c d e f g h i j k l m n o p q r s t u v w x y z\n"
                                 * 1800) + "```\nMARK-java-words",
    "huge-line": "a" * 2_000_000 + "MARK-huge-line",
    "nul": "MARK-nul \x00 byte\nimport os\n",
    "surrogate": "MARK-surrogate \ud800 half a pair",
    "unknown-lexer": "```no-such-language\nMARK-unknown-lexer\n```",
}
TIMEOUT = 120  # seconds: a net under a page that never comes back, not a measure


def _reply(body: dict[str, Any]) -> str:
    question = body["messages"][-1]["content"]
    return OUTPUTS[re.search(r"KEY=(\S+)", question).group(1)]  # type: ignore[union-attr]


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT) as r:
            return r.status, r.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode("utf-8", "replace")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Two qa runs made by ``assay run`` (one writing every hostile output, one answering
    plainly) and ``assay view`` serving them: ``{url, hostile, plain, env}``."""
    tmp = tmp_path_factory.mktemp("reader-pages")
    env = {"ASSAY_HOME": str(tmp / "home"), "HF_HUB_OFFLINE": "1"}
    data = tmp / "hostile.jsonl"
    data.write_text("".join(json.dumps({"id": k, "question": f"KEY={k} say it",
                                        "answer": "x"}) + "\n" for k in OUTPUTS))
    ids = {}
    for name, server in (("hostile", FakeServer(responder=_reply)),
                         ("plain", FakeServer(default_reply="Answer: x"))):
        with server:
            p = cli("run", "qa", "--data", str(data), "--model", f"openai/{name}",
                    "--base-url", server.base_url, "-q", env=env, cwd=tmp)
        assert p.returncode == 0, p.stderr[-3000:]
        ids[name] = re.search(r"runs/([\w-]+)/", p.stdout + p.stderr).group(1)  # type: ignore[union-attr]
    proc = subprocess.Popen([sys.executable, "-m", "assay", "view", "--no-browser"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            env=dict(os.environ, **env), cwd=tmp)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        url = re.search(r"http://127\.0\.0\.1:\d+/", line)
        assert url, line
        yield {"url": url.group(0), "env": env, "tmp": tmp, **ids}
    finally:
        proc.kill()  # a page still being worked on must not hold the test session
        proc.wait(15)


@pytest.mark.parametrize("key", OUTPUTS)
def test_a_sample_page_shows_any_output(served: dict[str, Any], key: str) -> None:
    status, page = _get(f"{served['url']}run/{served['hostile']}/sample/{quote(key)}")
    assert status == 200, page[-3000:]
    assert f"MARK-{key}" in html.unescape(page)


def test_a_too_deep_program_is_shown_plain_with_a_note(served: dict[str, Any]) -> None:
    status, page = _get(f"{served['url']}run/{served['hostile']}/sample/py-deep-sum")
    assert status == 200
    assert "shown plain: nested too deeply to read as Python" in page
    assert html.escape(DEEP_SUM[:60]) in page  # the program itself, whole and escaped


def test_every_other_reader_of_the_run_answers(served: dict[str, Any]) -> None:
    """The run's page and its filters, search, compare both ways, its report files,
    ``assay compare`` and ``assay report``."""
    url, a, b = served["url"], served["hostile"], served["plain"]
    for path in (f"run/{a}", f"run/{a}?q=MARK", f"run/{a}?verdict=wrong",
                 "search?q=MARK", f"compare?a={a}&b={b}", f"compare?a={b}&b={a}",
                 f"run/{a}/files/report.html", f"run/{a}/files/report.md"):
        status, page = _get(url + path)
        assert status == 200, (path, page[-2000:])
    status, page = _get(f"{url}compare?a={a}&b={b}")
    assert "MARK-py-deep-sum" in html.unescape(page)  # a flipped sample's output, shown
    for args in (("compare", a, b), ("report", a)):
        p = cli(*args, env=served["env"], cwd=served["tmp"])
        assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr[-2000:]
