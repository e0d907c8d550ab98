"""The one page writer (:mod:`assay.reports.pages`): every page kind in Markdown and HTML
from one environment over one templates folder, data inert in both formats, and no other
reader rendering pages of its own."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import assay
from assay.reports.pages import TEMPLATES, environment, render_page, write_pages

#: every page assay writes
KINDS = {"report", "summary", "sections", "compare", "history", "plan", "models"}
HOSTILE = "<script>alert(1)</script> & | x\ny"
SRC = Path(assay.__file__).parent


def models_context(name: str = HOSTILE) -> dict[str, Any]:
    rate = {"value": 0.5, "ci_low": 0.25, "ci_high": 0.75, "successes": 1, "n": 2}
    return {"record": {"id": "r1", "status": "finished"},
            "summary": {"task": name, "rows": [
                {"model": name, "run": "c1", "status": "finished", "metric": "accuracy",
                 "headline": rate},
                {"model": "openai/b", "run": None, "status": "not run"}]},
            "tests": [f"{name} vs openai/b: +0.500 p=0.5000"]}


def test_every_page_kind_has_a_markdown_and_an_html_template() -> None:
    names = {p.name for p in TEMPLATES.iterdir() if not p.name.startswith("_")}
    assert names == {f"{kind}.{fmt}" for kind in KINDS for fmt in ("md", "html")}
    for name in names | {p.name for p in TEMPLATES.glob("_*")}:
        environment().get_template(name)  # each one compiles


def test_data_is_inert_in_both_formats_and_escaped_once() -> None:
    md = render_page("models", models_context(), "md")
    html = render_page("models", models_context(), "html")
    assert "<script>" not in md.replace("\\<", "") and "<script>" not in html
    # a Markdown table cell: "<" of a tag backslashed, the pipe escaped, the newline a space
    assert "| \\<script>alert(1)\\</script> & \\| x y | c1 | finished |" in md
    # HTML: autoescaped once (the Markdown finalize never runs on an HTML page)
    assert "<td>&lt;script&gt;alert(1)&lt;/script&gt; &amp; | x\ny</td>" in html
    assert "&amp;lt;" not in html and "&amp;lt;" not in md
    assert "<title>&lt;script&gt;" in html  # the page layout's blocks are escaped too
    # the shared filters: a rate with its interval and counts, a model not run
    for page in (md, html):
        assert "accuracy 0.500 [0.250, 0.750] (1/2)" in page
        assert "n/a" in page and "openai/b" in page


def test_write_pages_writes_each_format_and_the_data(tmp_path: Path) -> None:
    paths = write_pages(tmp_path / "new", "models", models_context("qa"), stem="report",
                        data={"name": "é"})
    assert list(paths) == ["markdown", "html", "json"]
    assert [p.name for p in paths.values()] == ["report.md", "report.html", "report.json"]
    assert json.loads(paths["json"].read_text(encoding="utf-8")) == {"name": "é"}
    md, html = (paths[k].read_text(encoding="utf-8") for k in ("markdown", "html"))
    assert md.startswith("# qa on 2 models\n") and html.startswith("<!DOCTYPE html>")
    assert all(t.endswith("\n") and not t.endswith("\n\n") for t in (md, html))
    # one self-contained page: no script, no stylesheet or image fetched from elsewhere
    assert not re.search(r"<script|<link|src=", html)


def test_no_reader_renders_pages_of_its_own() -> None:
    """Pages come from :mod:`assay.reports.pages` only: no other reader module builds a
    template environment, and the only page templates are its folder (the live viewer's
    are the web app's)."""
    own = SRC / "reports" / "pages.py"
    for package in ("reports", "compare", "plan", "pipelines"):
        for module in (SRC / package).rglob("*.py"):
            text = module.read_text(encoding="utf-8")
            if module != own:
                assert "jinja2" not in text and "get_template" not in text, module
    folders = {p.relative_to(SRC).as_posix() for p in SRC.rglob("templates") if p.is_dir()}
    assert folders == {"reports/templates", "web/templates"}
