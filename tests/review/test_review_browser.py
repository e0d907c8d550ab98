"""The review page (``/review/`` of the local web app) in a real browser: Playwright driving Debian's chromium, headless.

Needs the ``playwright`` Python package and a chromium binary (``/usr/bin/chromium``
from Debian's ``chromium`` package, or ``$ASSAY_CHROMIUM``); ``playwright install``
is not used (it downloads browsers, which CI cannot). Skipped when either is missing.
"""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path
from typing import Any

import pytest

from assay.review.export import dataset_id
from assay.review.page import ReviewPage
from assay.store.review import ReviewStore
from assay.tasks.datagen.problem import Problem, save_problems
from assay.web.server import serve
from tests.browser import ServedInThread, checked_page, expect

JUDGE = {"b1": {"correctness": 2, "clarity": 3, "difficulty_match": 4, "completeness": 1}}


def _problems() -> list[Problem]:
    return [
        Problem(problem_id="b1", problem=r"Find the remainder when $2^{100}$ is divided by "
                r"$7$, given $$\sum_{k=1}^{n} k = \frac{n(n+1)}{2}.$$", answer="2",
                solution=r"Since $2^3 \equiv 1 \pmod 7$, $2^{100} = 2 \cdot (2^3)^{33}$.",
                topic="number theory"),
        Problem(problem_id="b2", problem="How many positive divisors does $360$ have?",
                answer="24", solution="$360 = 2^3 3^2 5$, so $(3+1)(2+1)(1+1) = 24$."),
        Problem(problem_id="b3", problem="Compute $\\binom{10}{3}$.", answer="120"),
    ]


def _server(data: Path, reviewer: str | None, **kw: Any) -> ServedInThread:
    """The review page served from a background thread."""
    return ServedInThread(serve(review=ReviewPage.from_file(data, reviewer, **kw)))



@pytest.fixture
def data_file(tmp_path: Path) -> Path:
    return save_problems(_problems(), tmp_path / "aime_generated_b.json")


@pytest.fixture
def server(workspace: Path, data_file: Path):
    s = _server(data_file, "alice", judge_scores=JUDGE)
    yield s
    s.close()


@pytest.fixture
def page(browser):
    yield from checked_page(browser)


def _review(workspace: Path, pid: str, reviewer: str):
    with ReviewStore(workspace / "assay.db") as s:
        return s.get_review(dataset_id(_problems()), pid, reviewer)


def _at(page, url: str) -> None:
    """Wait until the page is at ``url`` (a pattern) and its script has started (keys work)."""
    expect(page).to_have_url(re.compile(url))
    expect(page.locator("body")).to_have_attribute("data-ready", "1")


def _expect_saved(page) -> None:
    expect(page.locator("#save-status")).to_have_attribute("data-state", "saved")
    expect(page.locator("#save-status")).to_contain_text("saved")


def _expect_state(page, scores: dict[str, int], status: str, comment: str) -> None:
    for dim, v in scores.items():
        expect(page.locator(f"#s-{dim}-{v}")).to_be_checked()
    expect(page.locator(f"#st-{status}")).to_be_checked()
    expect(page.locator("#comment")).to_have_value(comment)


def test_score_with_keys_and_clicks_approve_navigate_back_and_reload(
        server: ServedInThread, page, workspace: Path) -> None:
    page.goto(server.url)
    _at(page, r"/review/item/1\?reviewer=alice$")
    expect(page.locator("#progress")).to_have_text("0 / 3 reviewed")
    expect(page.locator("#problem-text math").first).to_be_visible()  # MathML rendered
    expect(page.locator("#save-status")).to_have_text("not reviewed yet")

    # keyboard: 4 and 5 score correctness and clarity (the highlight moves on)
    page.keyboard.press("4")
    page.keyboard.press("5")
    expect(page.locator("#dim-difficulty_match")).to_have_class(re.compile(r"\bactive\b"))
    page.click("label[for=s-difficulty_match-3]")  # a click
    page.keyboard.press("ArrowDown")  # to completeness
    page.keyboard.press("2")
    page.keyboard.press("ArrowUp")  # back to difficulty_match, re-score with a key
    page.keyboard.press("4")
    page.keyboard.press("a")
    expect(page.locator("#save-status")).to_have_attribute("data-state", "dirty")
    page.keyboard.press("c")
    page.keyboard.type("Clean statement; j and k typed here are text.")
    page.keyboard.press("Escape")
    page.keyboard.press("s")
    _expect_saved(page)
    expect(page.locator("#progress")).to_have_text("1 / 3 reviewed")
    expect(page.locator(".strip a.current")).to_have_class(re.compile("s-approved"))
    want = {"correctness": 4, "clarity": 5, "difficulty_match": 4, "completeness": 2}
    comment = "Clean statement; j and k typed here are text."
    r = _review(workspace, "b1", "alice")
    assert (r.scores, r.status, r.comment) == (want, "approved", comment)

    # next item is empty; a change there is saved when navigating on
    page.keyboard.press("j")
    _at(page, r"/item/2\?")
    expect(page.locator("#problem-id")).to_have_text("b2")
    expect(page.locator("input[name=status]:checked")).to_have_count(0)
    page.keyboard.press("3")
    page.keyboard.press("ArrowRight")
    _at(page, r"/item/3\?")
    draft = _review(workspace, "b2", "alice")
    assert draft.status == "pending" and draft.scores["correctness"] == 3

    # back twice: the state comes back from the store
    page.keyboard.press("k")
    _at(page, r"/item/2\?")
    expect(page.locator("#s-correctness-3")).to_be_checked()
    page.click("#prev")
    _at(page, r"/item/1\?")
    _expect_state(page, want, "approved", comment)
    expect(page.locator("#save-status")).to_contain_text("saved · v1")

    # reload: still there
    page.reload()
    _expect_state(page, want, "approved", comment)
    expect(page.locator("#progress")).to_have_text("1 / 3 reviewed")

    # change the verdict with a click and Ctrl+Enter from the comment box
    page.click("label[for=st-needs_revision]")
    page.click("#comment")
    page.keyboard.press("Control+Enter")
    _expect_saved(page)
    expect(page.locator("#save-status")).to_contain_text("v2")
    assert _review(workspace, "b1", "alice").status == "needs_revision"


def test_two_reviewers_at_once_are_both_saved(server: ServedInThread, browser,
                                              workspace: Path) -> None:
    contexts = [browser.new_context(), browser.new_context()]
    try:
        pages = [c.new_page() for c in contexts]
        for p, name in zip(pages, ("alice", "bob"), strict=True):
            p.set_default_timeout(10_000)
            p.goto(f"{server.base}/item/1?reviewer={name}")
        alice, bob = pages
        for key in ("5", "5", "4", "5", "a"):
            alice.keyboard.press(key)
        for key in ("1", "2", "2", "1", "r"):
            bob.keyboard.press(key)
        bob.fill("#comment", "the answer is wrong")
        bob.locator("#dim-correctness").focus()
        # both submit together
        alice.keyboard.press("s")
        bob.keyboard.press("s")
        _expect_saved(alice)
        _expect_saved(bob)
        a, b = _review(workspace, "b1", "alice"), _review(workspace, "b1", "bob")
        assert (a.status, a.scores["correctness"]) == ("approved", 5)
        assert (b.status, b.scores["correctness"], b.comment) == ("rejected", 1,
                                                                  "the answer is wrong")
        for p in pages:
            p.reload()
        _expect_state(alice, {"correctness": 5, "clarity": 5, "completeness": 5}, "approved", "")
        _expect_state(bob, {"correctness": 1, "completeness": 1}, "rejected",
                      "the answer is wrong")
        expect(alice.locator("#project-progress")).to_contain_text("2 reviewers")
    finally:
        for c in contexts:
            c.close()


def test_blind_mode_hides_judge_scores_until_submit(server: ServedInThread, page) -> None:
    page.goto(f"{server.base}/item/1?reviewer=alice&blind=1")
    expect(page.locator("#blind-badge")).to_be_visible()
    expect(page.locator("#judge-hidden")).to_be_visible()
    expect(page.locator("#judge-scores")).to_have_count(0)
    assert "judge 2" not in page.content()
    for key in ("3", "3", "3", "3", "n"):
        page.keyboard.press(key)
    page.click("#submit")
    _expect_saved(page)
    table = page.locator("#judge-scores")
    expect(table).to_be_visible()
    expect(table).to_contain_text("Correctness")
    expect(table.locator("tr").first.locator("td.num")).to_have_text("2")
    page.reload()
    expect(page.locator("#judge-scores")).to_be_visible()  # submitted: stays revealed
    # without blind mode the scores are shown from the start
    page.goto(f"{server.base}/item/1?reviewer=carol")
    expect(page.locator("#judge-scores")).to_be_visible()
    page.goto(f"{server.base}/item/1?reviewer=carol&blind=1")
    expect(page.locator("#judge-hidden")).to_be_visible()


def test_help_panel_filter_and_submit_and_next(server: ServedInThread, page,
                                               workspace: Path) -> None:
    page.goto(f"{server.base}/item/1?reviewer=alice")
    expect(page.locator("#help")).to_be_hidden()
    page.keyboard.press("?")
    expect(page.locator("#help")).to_be_visible()
    expect(page.locator("#help")).to_contain_text("needs revision")
    page.keyboard.press("Escape")
    expect(page.locator("#help")).to_be_hidden()
    active = re.compile(r"\bactive\b")
    page.keyboard.press("Tab")  # Tab moves between the dimensions
    expect(page.locator("#dim-clarity")).to_have_class(active)
    expect(page.locator("#dim-correctness")).not_to_have_class(active)
    page.keyboard.press("Shift+Tab")
    expect(page.locator("#dim-correctness")).to_have_class(active)
    for key in ("5", "4", "4", "5", "a"):
        page.keyboard.press(key)
    page.keyboard.press("Shift+S")  # submit and next
    _at(page, r"/item/2\?")
    assert _review(workspace, "b1", "alice").status == "approved"
    page.select_option("#status-filter", "approved")
    _at(page, r"/item/1\?.*status=approved")
    expect(page.locator("#next")).to_have_attribute("aria-disabled", "true")
    page.select_option("#status-filter", "pending")
    _at(page, r"/item/2\?.*status=pending")


def test_export_button_posts_and_downloads(server: ServedInThread, page, data_file: Path) -> None:
    page.goto(f"{server.base}/item/1?reviewer=alice")
    for key in ("5", "4", "4", "5", "a", "s"):
        page.keyboard.press(key)
    _expect_saved(page)
    written = data_file.with_name("aime_generated_b_verifications.json")
    assert not written.exists()
    with page.expect_download() as info:
        page.click("#export")
    download = info.value
    assert download.suggested_filename == written.name
    expect(page.locator("#export-status")).to_contain_text(f"exported to {written}")
    got = json.loads(Path(download.path()).read_text(encoding="utf-8"))
    assert got == json.loads(written.read_text(encoding="utf-8"))
    assert got["b1"]["status"] == "approved" and got["b1"]["reviewer"] == "alice"


ATTACKER_PAGE = """<!DOCTYPE html><html><body>
<img src="{base}/api/export?reviewer=x">
<img src="{base}/api/export?reviewer=x&download=1">
<script>
const B = "{base}";
window.results = [];
(async () => {{
  const body = JSON.stringify({{problem_id: "b1", reviewer: "mallory", status: "rejected"}});
  const tries = [
    () => fetch(B + "/api/export", {{method: "POST", mode: "no-cors", body: "{{}}",
                                     headers: {{"Content-Type": "text/plain"}}}}),
    () => fetch(B + "/api/export", {{method: "POST", body: "{{}}",
                                     headers: {{"Content-Type": "application/json"}}}}),
    () => fetch(B + "/api/review", {{method: "POST", mode: "no-cors", body,
                                     headers: {{"Content-Type": "text/plain"}}}}),
    () => fetch(B + "/api/review", {{method: "POST", body,
                                     headers: {{"Content-Type": "application/json"}}}}),
  ];
  for (const t of tries) {{
    try {{ const r = await t(); window.results.push(r.type + ":" + r.status); }}
    catch (e) {{ window.results.push("blocked"); }}
  }}
  window.done = true;
}})();
</script></body></html>"""


def test_a_cross_site_page_can_neither_export_nor_save(server: ServedInThread, browser,
                                                        data_file: Path, workspace: Path,
                                                        tmp_path: Path) -> None:
    import functools
    from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

    site = tmp_path / "evil"
    site.mkdir()
    (site / "index.html").write_text(ATTACKER_PAGE.format(base=server.base), encoding="utf-8")

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

    evil = ThreadingHTTPServer(("127.0.0.1", 0),
                               functools.partial(Quiet, directory=str(site)))
    threading.Thread(target=evil.serve_forever, daemon=True).start()
    ctx = browser.new_context()
    try:
        p = ctx.new_page()
        p.set_default_timeout(10_000)
        p.goto(f"http://127.0.0.1:{evil.server_address[1]}/index.html", wait_until="load")
        p.wait_for_function("window.done === true")
        results = p.evaluate("window.results")
    finally:
        ctx.close()
        evil.shutdown()
        evil.server_close()
    assert len(results) == 4
    assert not list(data_file.parent.glob("*_verifications*"))  # the <img> wrote nothing
    assert _review(workspace, "b1", "mallory") is None
