"""``assay view`` in a real browser: Playwright driving Debian's chromium, headless.

Needs the ``playwright`` Python package and a chromium binary (``/usr/bin/chromium``
from Debian's ``chromium`` package, or ``$ASSAY_CHROMIUM``); ``playwright install``
is not used (it downloads browsers, which CI cannot). Skipped when either is missing.
"""

from __future__ import annotations

import json
import re
import time

import pytest
import viewhelpers as vh

from assay.store.sqlite import Store
from assay.web.server import serve
from tests.browser import ServedInThread, expect


@pytest.fixture(scope="module")
def real_server(real_runs):
    s = ServedInThread(serve(store_path=real_runs[0]))
    yield s, real_runs[1]
    s.close()


def test_runs_list_filters_by_task_status_and_search(real_server, page) -> None:
    srv, ids = real_server
    page.goto(srv.url)
    rows = page.locator("tr.run-row")
    expect(rows).to_have_count(4)
    page.select_option("#f-task", "gaia")
    page.click("#f-apply")
    expect(page).to_have_url(re.compile(r"\?task=gaia"))
    expect(rows).to_have_count(1)
    expect(rows.first).to_have_attribute("data-run-id", ids["gaia"])
    expect(page.locator("#f-task")).to_have_value("gaia")  # the filter survives the reload
    page.click("#f-clear")
    expect(rows).to_have_count(4)
    page.fill("#f-q", "bfcl-model")
    page.press("#f-q", "Enter")
    expect(rows).to_have_count(1)
    expect(rows.first.locator("td.model")).to_contain_text("openai/bfcl-model")
    page.goto(srv.url + "?status=running")
    expect(page.locator("#no-runs")).to_contain_text("No run matches")
    page.select_option("#f-status", "finished")
    page.click("#f-apply")
    expect(rows).to_have_count(4)


def test_bfcl_sample_shows_the_tool_call(real_server, page) -> None:
    srv, ids = real_server
    page.goto(f"{srv.base}/run/{ids['bfcl']}")
    expect(page.locator("#headline")).to_contain_text("accuracy")
    page.locator("a.sample-link", has_text="simple_python_0").click()
    expect(page.locator("#sample-id")).to_have_text("simple_python_0")
    call = page.locator("#transcript .tool-call").first
    expect(call.locator(".tool-name")).to_have_text("calculate_triangle_area")
    expect(call.locator("pre")).to_contain_text('"base": 10')
    expect(page.locator("#scores .score.primary .score-name")).to_have_text("bfcl")
    page.click("#next-sample")
    expect(page.locator("#sample-id")).to_have_text("simple_python_1")


def test_gaia_sample_shows_transcript_and_reference_steps(real_server, page) -> None:
    srv, ids = real_server
    page.goto(f"{srv.base}/run/{ids['gaia']}?category=1")
    expect(page.locator("tr.sample-row")).to_have_count(4)  # level 1
    page.locator("tr.sample-row", has=page.locator(".v-correct")).locator("a").click()
    expect(page.locator("#transcript .turn.role-system")).to_contain_text("general AI assistant")
    expect(page.locator("#transcript .turn.role-assistant")).to_contain_text("FINAL ANSWER: 17")
    expect(page.locator("#reference-steps")).to_contain_text("Count the lines containing ERROR")
    expect(page.locator("#prediction-text")).to_have_text("17")


def test_converse_sample_shows_the_examiner_and_agent_turns(real_server, page) -> None:
    srv, ids = real_server
    page.goto(f"{srv.base}/run/{ids['converse']}")
    page.locator("a.sample-link", has_text="hello").click()
    turns = page.locator("#conversation .turn")
    expect(turns).to_have_count(5)
    expect(turns.nth(0).locator(".role")).to_have_text("Examiner")
    expect(turns.nth(1).locator(".role")).to_have_text("Agent")
    expect(turns.nth(1)).to_contain_text("reply 1")
    expect(turns.nth(3)).to_contain_text("reply 2")
    expect(turns.nth(4)).to_contain_text("ends the conversation")


def test_paging_a_run_shows_other_samples(store: Store, server, page) -> None:
    rid = vh.synthetic_run(store, 120)
    page.goto(f"{server.base}/run/{rid}")
    rows = page.locator("tr.sample-row")
    expect(rows).to_have_count(50)
    first = rows.evaluate_all("rs => rs.map(r => r.dataset.sampleId)")
    page.locator("a[rel=next]").first.click()
    expect(page).to_have_url(re.compile(r"page=2"))
    expect(rows.first).to_have_attribute("data-sample-id", "s0050")
    second = rows.evaluate_all("rs => rs.map(r => r.dataset.sampleId)")
    assert len(second) == 50 and not set(first) & set(second)
    page.select_option("#s-verdict", "error")
    page.click("#s-apply")
    expect(rows).to_have_count(12)  # i % 10 == 9 for i < 120
    expect(page.locator(".v-error")).to_have_count(12)


def test_live_view_shows_a_sample_committed_after_the_page_loaded(store: Store, server,
                                                                  page) -> None:
    rid = vh.synthetic_run(store, 3, status="running")  # this process owns it: running
    page.goto(f"{server.base}/run/{rid}")
    expect(page.locator("#live-samples")).to_have_text("3")
    expect(page.locator("#newest li")).to_have_count(3)
    writer = Store(store.path)  # a separate writable handle, as a run's process would have
    try:
        # its prediction is hostile: the live list must show it as text too
        writer.record(rid, (*vh.sample_row(7, created=time.time() + 1)[:7], vh.HOSTILE,
                            *vh.sample_row(7)[8:16], time.time() + 1))
        expect(page.locator("#newest li").first).to_have_attribute("data-sample-id", "s0007",
                                                                    timeout=8_000)
        expect(page.locator("#newest li").first).to_contain_text(vh.XSS[0])
        assert page.evaluate("typeof window.__xss") == "undefined"
        expect(page.locator("#live-samples")).to_have_text("4")
        writer.set_run_status(rid, "finished")
    finally:
        writer.close()
    expect(page.locator("#live")).to_have_attribute("data-polling", "stopped", timeout=8_000)
    expect(page.locator("#live-status")).to_have_text("finished")
    expect(page.locator("#run-status .status")).to_have_text("finished")


def _hostile_run(store: Store, value: float) -> str:
    """A run whose model name, dataset name, metrics, and sample (id, input, output,
    target, transcript, score, metadata, error) all carry the XSS payloads."""
    h = vh.HOSTILE
    rid = store.create_run(task="qa", spec={"task": "qa", "note": h},
                           model={"model": "openai/" + h}, dataset={"name": h, "source": h},
                           package_version="x")
    transcript = [{"role": "user", "content": h},
                  {"role": "assistant", "content": h, "tool_calls": [
                      {"name": h, "arguments": {h: h}, "id": h}]},
                  {"role": "tool", "content": h, "tool_call_id": h},
                  {"role": h, "content": h}]
    for sid, error in (("x" + h, None), ("err" + h, h)):
        store.record(rid, (sid, 0, 0 if error is None else 1, json.dumps(h), json.dumps(h),
                           json.dumps(transcript), h, h,
                           json.dumps({h: {"name": h, "value": value, "answer": h,
                                           "explanation": h, "metadata": {h: h}}}), error,
                           0.1, 1, 1, 1, 0, json.dumps({"category": h, h: h}), time.time()))
    store.set_metrics(rid, {"accuracy": {"value": 0.0, "successes": 0, "n": 1, "ci_low": 0.0,
                                         "ci_high": 0.5}, "by_" + h: {h: {
                                             "value": 0.0, "ci_low": 0.0, "ci_high": 1.0}},
                            "top_errors": [{"message": h, "count": 1}], h: h})
    store.set_run_status(rid, "finished")
    return rid


def test_hostile_text_is_shown_as_text_and_never_runs(store: Store, server, page) -> None:
    h = vh.HOSTILE
    rid = _hostile_run(store, 0.0)
    other = _hostile_run(store, 1.0)
    sample_path = vh.sample_url_of(rid, "x" + h)
    pages = [server.url, f"{server.base}/?q={vh.quote('svg onload')}",
             f"{server.base}/run/{rid}", f"{server.base}/run/{rid}?verdict=error",
             server.base + sample_path, server.base + vh.sample_url_of(rid, "err" + h),
             f"{server.base}/compare?a={rid}&b={other}", f"{server.base}/compare?a={rid}"]
    for url in pages:
        page.goto(url)
        page.wait_for_load_state("load")
        assert page.evaluate("typeof window.__xss") == "undefined", url
        assert page.locator("img[src=x], svg[onload], script:not([src])").count() == 0, url
        expect(page.locator("body")).to_contain_text(vh.XSS[0])
    page.goto(server.base + sample_path)
    for x in vh.XSS:
        expect(page.locator("#transcript")).to_contain_text(x)
        expect(page.locator("#scores")).to_contain_text(x)
        expect(page.locator("#input")).to_contain_text(x)
        expect(page.locator("#target")).to_contain_text(x)
        expect(page.locator("#output")).to_contain_text(x)
    expect(page.locator("#transcript .tool-name")).to_have_text(h)
    expect(page.locator("#metadata")).to_contain_text(vh.XSS[1])
    page.goto(f"{server.base}/run/{rid}")
    expect(page.locator("#run-model")).to_have_text("openai/" + h)
    expect(page.locator("#s-category option").nth(1)).to_contain_text(vh.XSS[2])
    expect(page.locator("#metrics")).to_contain_text("by_" + vh.XSS[0])
    expect(page.locator("#top-errors")).to_contain_text(vh.XSS[2])
    page.goto(f"{server.base}/compare?a={rid}&b={other}")
    expect(page.locator("#flips-fixed code")).to_have_text("x" + h)
    page.locator("#flips-fixed a.flip-b").click()
    expect(page.locator("#sample-id")).to_have_text("x" + h)
    assert page.evaluate("typeof window.__xss") == "undefined"


def test_compare_two_runs_picked_on_the_runs_list(store: Store, server, page) -> None:
    a = vh.synthetic_run(store, 40)
    b = vh.synthetic_run(store, 40, pattern=lambda i: {"value": float(i % 2)})
    page.goto(server.url)
    page.check(f"#runs input[name=a][value='{a}']")
    page.check(f"#runs input[name=b][value='{b}']")
    page.click("#compare-button")
    expect(page).to_have_url(re.compile(rf"/compare\?(?=.*\ba={a}\b)(?=.*\bb={b}\b)"))
    expect(page.locator("#compare-verdict")).to_have_text("no significant difference")
    expect(page.locator("#contingency")).to_be_visible()
    page.locator("#flips-broken a.flip-b").first.click()
    expect(page.locator("#run-link")).to_have_text(b)
    expect(page.locator("#sample-id")).to_have_text("s0002")
    expect(page.locator("#scores .score-value").first).to_have_text("0")


def test_run_page_shows_the_cost_and_a_reply_shows_its_reasoning_folded(store: Store, server,
                                                                        page, shots) -> None:
    thought = "France's capital is Paris, so: Paris."
    rid = vh.synthetic_run(store, 3, pattern=lambda i: {"transcript": [
        {"role": "user", "content": "The capital of France?"},
        {"role": "assistant", "content": "Answer: Paris", "reasoning": thought}]})
    store.set_run_status(rid, "interrupted", {
        "stopped": "cost limit reached: $0.0002 of $0.0002",
        "cost": {"usd": 0.000226, "tokens": 106, "unpriced": [], "roles": {
            "subject": {"usd": 0.000126, "model": "openai/syn", "price": "file"},
            "judge": {"usd": 0.0001, "model": "openai/j", "price": "genai-prices"}}}})
    page.goto(f"{server.base}/run/{rid}")
    expect(page.locator("#run-cost")).to_have_text(
        "$0.0002 (106 tokens paid for): subject openai/syn: $0.0001 (price from --pricing); "
        "judge openai/j: $0.0001 (price from genai-prices)")
    expect(page.locator("#run-stopped")).to_contain_text("cost limit reached: $0.0002 of")
    page.screenshot(path=str(shots / "run-cost.png"), full_page=True)
    page.goto(server.base + vh.sample_url_of(rid, "s0000"))
    reasoning = page.locator("#transcript details.reasoning")
    expect(reasoning.locator("pre")).to_be_hidden()  # folded above the reply
    reasoning.locator("summary").click()
    expect(reasoning.locator("pre")).to_have_text(thought)
    expect(page.locator("#transcript .role-assistant pre.text").last).to_have_text(
        "Answer: Paris")
