"""Issue 34, point 8, in the written pages: summary.html never writes an uneven interval as
``±``, and report.md is plain text in a terminal yet inert in a Markdown viewer.

Real runs by the CLI in a subprocess against the fake OpenAI-compatible server (real HTTP);
report.md rendered by markdown-it-py (CommonMark, raw HTML allowed, GFM tables: what a
Markdown viewer that trusts its input does) and opened in real Chromium at 1280 px.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from assay.reports.summary import PERCENT, fmt_spread
from assay.testing import FakeServer
from assay.testing.fake_replies import last_user_text
from tests.browser import checked_page, expect


@pytest.fixture
def page(browser: Any) -> Any:
    yield from checked_page(browser)


@pytest.fixture
def shots(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("ASSAY_SHOTS") or tmp_path / "shots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    p = subprocess.run([sys.executable, "-m", "assay", *args], capture_output=True, text=True,
                       timeout=300, cwd=home.parent, env=dict(os.environ, ASSAY_HOME=str(home)))
    assert p.returncode == 0, (p.stdout, p.stderr)
    return p


def run_id_of(p: subprocess.CompletedProcess[str]) -> str:
    return re.search(r"^run (\S+) finished", p.stdout, re.M).group(1)


def test_the_summary_shows_an_uneven_interval_as_itself_never_as_plus_minus(
        tmp_path: Path, workspace: Path, page: Any, shots: Path) -> None:
    # 13 of 20 answered right: Wilson's interval 43.3%-81.9% lies 21.7 points below 65%
    # and 16.9 above; "±22 points" would claim 87% was possible
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps({"id": f"q{i}", "question": f"Say w{i}",
                                        "answer": f"w{i}"}) + "\n" for i in range(20)))
    def reply(body: dict[str, Any]) -> str:
        n = int(re.search(r"Say w(\d+)", last_user_text(body)).group(1))
        return f"Answer: w{n}" if n < 13 else "Answer: nope"

    with FakeServer(responder=reply) as srv:
        run = run_id_of(cli(workspace, "run", "qa", "--data", str(data), "--model",
                            "openai/fake", "--base-url", srv.base_url, "--scorer", "exact",
                            "--max-retries", "0", "-q"))
    out = tmp_path / "summary"
    cli(workspace, "report", run, "--summary", "--out", str(out))
    md = (out / "summary.md").read_text(encoding="utf-8")
    verdict = "65% correct (95% interval 43.3%–81.9%), too few samples to be sure."
    assert f"**{verdict}**" in md, md
    assert "±" not in md
    page.goto((out / "summary.html").as_uri())
    expect(page.locator("p.verdict")).to_have_text(verdict)
    assert "±" not in page.locator("body").inner_text()
    page.screenshot(path=str(shots / "p8-summary-uneven.png"), full_page=True)
    # a symmetric interval (a t interval; Wilson's at 50%) still reads as ± points
    assert fmt_spread({"value": 0.5, "ci_low": 0.4, "ci_high": 0.6}, PERCENT) == "±10 points"


#: what a question, a target and a reply hold: markup, entities, a pipe, backslashes
QUESTION = ('What is <script>window.__xss=1</script> a | b &amp; c &lt;i&gt; '
            '\\<img src=x onerror="window.__xss=2"> <!-- note --> 2 < 3? '
            '[click](javascript:window.__xss=4) ![pixel](https://example.invalid/p.png)')
TARGET = "<b>bold</b> & <https://example.invalid/x>"
REPLY = '<img src=x onerror="window.__xss=3"> \\| done'


def test_report_md_is_plain_text_and_inert_in_a_markdown_viewer(
        tmp_path: Path, workspace: Path, page: Any, shots: Path) -> None:
    from markdown_it import MarkdownIt

    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"id": "x1", "question": QUESTION, "answer": TARGET}) + "\n")
    with FakeServer(default_reply=f"Answer: {REPLY}") as srv:
        run = run_id_of(cli(workspace, "run", "qa", "--data", str(data), "--model",
                            "openai/fake", "--base-url", srv.base_url, "-q"))
    md = (workspace / "runs" / run / "report.md").read_text(encoding="utf-8")
    # 1. read as text: no entity made, only a backslash before what would be HTML
    row = next(line for line in md.splitlines() if line.startswith("| x1 |"))
    assert ('| x1 | What is \\<script>window.__xss=1\\</script> a \\| b \\&amp; c \\&lt;i\\&gt; '
            '\\\\\\<img src=x onerror="window.__xss=2"> \\<!-- note --> 2 < 3? '
            '\\[click](javascript:window.__xss=4) !\\[pixel](https://example.invalid/p.png) | '
            '\\<b>bold\\</b> & \\<https://example.invalid/x> | ') in row, row
    assert "&lt;script" not in md and "&amp;amp;" not in md and "&#" not in md
    # 2. rendered by a Markdown viewer that passes raw HTML through: only text, the data's
    # own characters, in the table's cells
    html = MarkdownIt("commonmark", {"html": True}).enable("table").render(md)
    page.set_content(f"<!DOCTYPE html><meta charset=utf-8><body>{html}</body>")
    assert page.evaluate("() => window.__xss") is None
    for tag in ("script", "img", "b", "a"):  # no link, no image: [...](...) is text
        expect(page.locator(f"table {tag}")).to_have_count(0)
    cells = page.locator("table").last.locator("tr").nth(1).locator("td")
    expect(cells.nth(0)).to_have_text("x1")
    expect(cells.nth(1)).to_have_text(QUESTION)
    expect(cells.nth(2)).to_have_text(TARGET)
    expect(cells.nth(3)).to_have_text(REPLY)
    page.screenshot(path=str(shots / "p8-report-md-rendered.png"), full_page=True)
