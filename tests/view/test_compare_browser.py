"""The viewer's compare page in real Chromium (issue 24, points 3 and 4): the configuration
difference first, then every fixed and broken sample with its target and both outputs
side by side, long outputs folded, many flips paged.

The runs are made by the real CLI against the fake OpenAI-compatible server (two qa runs
at temperatures 0.0 and 0.7, see tests/compare/test_compare_outputs.py); the paging case
writes its runs into the store directly.
"""

from __future__ import annotations

import viewhelpers as vh

from assay.view.compare_page import MAX_FLIPS
from tests.browser import expect
from tests.compare.test_compare_cli import run_qa, write_data
from tests.compare.test_compare_outputs import BROKEN, FIXED, LONG, responder


def test_compare_page_shows_the_configuration_and_both_outputs_side_by_side(
        fake_server, tmp_path, store, server, page, shots) -> None:
    srv = fake_server(responder=responder)
    data = write_data(tmp_path / "items.jsonl", range(40))
    a = run_qa(srv.base_url, data, "m", "--temperature", "0.0")
    b = run_qa(srv.base_url, data, "m", "--temperature", "0.7")
    page.goto(f"{server.base}/compare?a={a}&b={b}")
    expect(page.locator("#configuration-text")).to_contain_text(
        "same configuration except: temperature 0.0 -> 0.7")
    diff = page.locator("#configuration-differences tbody tr")
    expect(diff).to_have_count(1)
    expect(diff.locator("th")).to_have_text("temperature")
    expect(diff.locator("td").nth(0)).to_have_text("0.0")
    expect(diff.locator("td").nth(1)).to_have_text("0.7")
    # the configuration comes before the verdict
    assert (page.locator("#configuration").bounding_box()["y"]
            < page.locator("#verdict-box").bounding_box()["y"])

    fixed = page.locator("#flips-fixed tr.flip")
    expect(fixed).to_have_count(len(FIXED))
    expect(page.locator("#flips-broken tr.flip")).to_have_count(len(BROKEN))
    first = fixed.first
    expect(first.locator("code")).to_have_text("q020")
    expect(first.locator(".flip-target")).to_have_text("code20")
    expect(first.locator(".flip-a-output")).to_have_text("Answer: not sure about 20 (cold)")
    expect(first.locator(".flip-b-output")).to_have_text("Answer: code20")
    # side by side: one row, A's output left of B's
    box_a = first.locator(".flip-a-output pre").bounding_box()
    box_b = first.locator(".flip-b-output pre").bounding_box()
    assert abs(box_a["y"] - box_b["y"]) < 2 and box_a["x"] + box_a["width"] <= box_b["x"]
    broken = page.locator("#flips-broken tr.flip").first
    expect(broken.locator(".flip-a-output")).to_have_text("Answer: code0")
    expect(broken.locator(".flip-b-output")).to_have_text("Answer: not sure about 0 (hot)")
    # the long output is folded after its first part and opens whole
    long_row = fixed.filter(has=page.locator("code", has_text=f"q{LONG:03d}"))
    fold = long_row.locator(".flip-a-output details")
    expect(fold.locator("pre")).to_be_hidden()
    expect(fold.locator("summary")).to_contain_text("more characters")
    fold.locator("summary").click()
    expect(fold.locator("pre")).to_be_visible()
    shown = long_row.locator(".flip-a-output pre").all_text_contents()
    assert "".join(shown) == "Answer: " + "long winded " * 75
    # a sample's link opens it in B
    page.screenshot(path=str(shots / "compare.png"), full_page=True)
    first.locator("a.flip-b").click()
    expect(page.locator("#run-link")).to_have_text(b)
    expect(page.locator("#sample-id")).to_have_text("q020")


def test_many_flips_are_paged(store, server, page) -> None:
    n = MAX_FLIPS + 30
    a = vh.synthetic_run(store, n, pattern=lambda i: {"value": 0.0})
    b = vh.synthetic_run(store, n, pattern=lambda i: {"value": 1.0})
    page.goto(f"{server.base}/compare?a={a}&b={b}")
    rows = page.locator("#flips-fixed tr.flip")
    expect(rows).to_have_count(MAX_FLIPS)
    expect(rows.first.locator(".flip-a-output")).to_have_text("answer 0")
    pager = page.locator("#flips-fixed-pager")
    expect(pager).to_contain_text(f"the first {MAX_FLIPS} are listed")
    pager.locator("a.next").click()
    expect(rows).to_have_count(30)
    expect(page.locator("#flips-fixed-pager")).to_contain_text(f"samples {MAX_FLIPS + 1}–{n} of {n}")
    expect(rows.first.locator("code")).to_have_text(f"s{MAX_FLIPS:04d}")
    expect(rows.first.locator(".flip-target")).to_have_text(f"t{MAX_FLIPS}")
    page.locator("#flips-fixed-pager a.btn", has_text="previous").click()
    expect(rows).to_have_count(MAX_FLIPS)
    bad = page.request.get(f"{server.base}/compare?a={a}&b={b}&fixed_page=x")
    assert bad.status == 400 and "the parameter fixed_page=&#39;x&#39; is not usable" in bad.text()
