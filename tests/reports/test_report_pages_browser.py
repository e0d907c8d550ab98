"""The run report and the plan report as a reader sees them: opened in real Chromium
(headless, Debian's chromium driven by Playwright; see tests/browser.py), from real runs
against the fake OpenAI-compatible server (issue 24, points 7 and 10)."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

import assay
from assay.pipelines.plan import start_plan
from assay.store.sqlite import Store
from tests.browser import checked_page, expect


@pytest.fixture
def page(browser: Any) -> Any:
    yield from checked_page(browser)


def in_thread(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """``fn(...)`` on another thread: a run has its own event loop, and Playwright's
    synchronous API holds one on this thread."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(fn, *args, **kwargs).result()


def test_a_small_bfcl_report_reads_as_words(page: Any, fake_server: Any) -> None:
    srv = fake_server(rules=[], default_reply="I cannot call functions.")
    result = in_thread(assay.evaluate, "bfcl", model="openai/fake", base_url=srv.base_url,
                            category="simple_python", limit=2, params={"temperature": 0},
                            quiet=True)
    page.goto(result.reports["html"].resolve().as_uri())
    heading = page.get_by_role("heading", name="Leaderboard aggregates")
    expect(heading).to_be_visible()
    said = heading.locator("xpath=following-sibling::*[1]")
    expect(said).to_contain_text("No leaderboard aggregate: each needs every one of its "
                                 "categories, and this run has only simple_python.")
    body = page.locator("body").inner_text()
    assert "not reported" not in body
    assert body.count(result.metrics["overall_note"]) == 1
    def row(name: str) -> Any:
        return page.locator("tr", has=page.get_by_role("cell", name=name, exact=True))

    expect(row("model").locator("td").nth(1)).to_have_text("openai/fake · any OpenAI-compatible endpoint")
    expect(row("generation").locator("td").nth(1)).to_have_text("temperature 0")
    assert '"base_url"' not in body
    assert row("mean_wait_s").locator("td").nth(1).inner_text().endswith(("ms", " s"))


def test_the_plan_report_puts_its_problems_first(page: Any, fake_server: Any,
                                                  tmp_path: Path) -> None:
    # a plan whose primary metric is not what its task's scorer option scores by
    rows = [{"id": f"s{i}", "question": f"What is {i} + {i}?", "answer": str(2 * i)}
            for i in range(3)]
    (tmp_path / "sums.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    plan = {"assay_plan": 1, "request": "sums", "models": {"model": "local"},
            "tasks": [{"task": "qa", "source": "builtin", "capabilities": ["math"],
                       "options": {"data": "sums.jsonl", "scorer": "exact"},
                       "metrics": [{"name": "token_f1", "role": "primary"}]}]}
    path = tmp_path / "plan.yaml"
    path.write_text(json.dumps(plan), encoding="utf-8")
    server = fake_server(rules=[], default_reply="Answer: 99")
    store = Store()
    try:
        done = in_thread(start_plan, store, path, model="openai/fake",
                          engine={"base_url": server.base_url, "limit": 2},
                          echo=lambda _x: None)
    finally:
        store.close()
    page.goto(done.reports["html"].resolve().as_uri())
    problems = page.get_by_role("heading", name="Plan problems")
    expect(problems).to_be_visible()
    warning = page.locator("p.warning")
    expect(warning).to_have_text(
        "qa: the plan's primary metric is token_f1, but the run scored its samples by "
        "exact_match; the value shown is exact_match, not token_f1. Fix the plan: "
        "set the task's scorer option to token_f1, or make exact_match its primary.")
    profile = page.get_by_role("heading", name="Capability profile")
    assert warning.bounding_box()["y"] < profile.bounding_box()["y"]
    expect(page.locator("tr", has_text="NOT what the run scored")).to_have_count(1)
    expect(page.locator("td", has_text="best")).to_have_count(0)  # every score was 0
    plan_text = page.locator("pre").first.inner_text()
    assert "model: openai/fake" in plan_text and "model: local" not in plan_text
