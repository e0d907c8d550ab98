"""What users of Inspect's log viewer rely on, in ``assay view``, in real Chromium: search
over inputs, targets and outputs, sortable columns, a sample's generation settings and its
model calls as a timeline, the run's options and files, each text once, highlighted code
with the failing test of a code task, and a red badge for a run whose samples all failed.

The runs are made by the engine over real HTTP to the fake OpenAI-compatible server (a qa
run whose first call of each sample gets a 500 and is retried, a HumanEval run whose code
runs in the bubblewrap sandbox, a run pointed at a wrong URL); synthetic runs are written
into the store where only many rows matter (paging, sorting).
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any
from urllib.error import HTTPError
from urllib.parse import quote
from urllib.request import urlopen

import pytest
import viewhelpers as vh

from assay.api import make_spec, run_async
from assay.engine.loop import run as run_coro
from assay.sandbox import bwrap_problem
from assay.store.schema import INSERT_SAMPLE
from assay.store.search import SearchIndex, index_path
from assay.store.sqlite import Store
from assay.testing import FakeServer, Rule
from assay.testing.fake_replies import FaultPlan
from assay.web.server import serve
from tests.browser import ServedInThread, expect

REPO = Path(__file__).resolve().parents[2]
HUMANEVAL_MINI = REPO / "tests" / "gallery" / "fixtures" / "code" / "humaneval_mini.jsonl"
CODE_TASK = REPO / "src" / "assay" / "tasks" / "code" / "task.py"
CAPITALS = sum("capital" in line.lower() for line in vh.EXAMPLE_QA.read_text().splitlines())
"""The questions of the qa example that name a capital (each qa run asks them all)."""


def _code_reply(body: dict[str, Any]) -> str:
    text = next(m["content"] for m in reversed(body["messages"]) if m["role"] == "user")
    if "def add_two(" in text:  # right
        return ("```python\nfrom typing import List\n\n"
                "def add_two(numbers: List[int]) -> List[int]:\n"
                "    return [n + 2 for n in numbers]\n```")
    if "def count_even(" in text:  # wrong: fails the first assert of the tests
        return "```python\ndef count_even(values):\n    return len(values)\n```"
    return "```python\ndef reverse_words(text):\n    return text[::-1]\n```"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """``(store path, {name: run id})``: qa (retried calls, reports written), humaneval
    (when bubblewrap runs), wrong_url (every call a 404) and an old-style all-errored
    ``finished`` run."""
    home = tmp_path_factory.mktemp("view-features") / "home"
    home.mkdir(parents=True)
    store = Store(home / "assay.db")
    ids: dict[str, str] = {}
    try:
        rules = [Rule(r"capital of France", "Answer: Paris"),
                 Rule(r"capital of Italy", "Answer: Rome")]
        faults = FaultPlan(fail_first=1, kinds={"500": 1.0})
        with FakeServer(rules=rules, default_reply="Answer: no idea", faults=faults) as srv:
            spec = make_spec("qa", "openai/qa-model", base_url=srv.base_url,
                             data=str(vh.EXAMPLE_QA), retry_initial=0.0,
                             params={"temperature": 0.3})
            ids["qa"] = run_coro(run_async(spec, store=store, reports=True)).run_id
        with FakeServer(default_reply="Answer: Paris") as srv:
            spec = make_spec("qa", "openai/qa-model", base_url=srv.base_url.removesuffix("/v1"),
                             data=str(vh.EXAMPLE_QA), max_retries=0)
            ids["wrong_url"] = run_coro(run_async(spec, store=store, reports=False)).run_id
        if not bwrap_problem():
            with FakeServer(responder=_code_reply) as srv:
                spec = make_spec(f"{CODE_TASK}@humaneval", "openai/coder",
                                 base_url=srv.base_url, data=str(HUMANEVAL_MINI))
                ids["humaneval"] = run_coro(run_async(spec, store=store, reports=False)).run_id
        ids["old_failed"] = vh.synthetic_run(store, 4, task="old", metrics=False,
                                             pattern=lambda i: {"error": "HTTP 404"})
    finally:
        store.close()
    return home / "assay.db", ids


@pytest.fixture(scope="module")
def server(runs):
    s = ServedInThread(serve(store_path=runs[0]))
    yield s
    s.close()


def _shot(page: Any, shots: Path, name: str) -> None:
    page.screenshot(path=str(shots / f"{name}.png"), full_page=True)


def _status(url: str) -> int:
    try:
        with urlopen(url) as r:
            return r.status
    except HTTPError as e:
        return e.code


def _add_run(store_path: Path, n: int, task: str, pattern: Any) -> str:
    """A synthetic run of ``n`` samples added to the module's store (its id)."""
    store = Store(store_path)
    try:
        return vh.synthetic_run(store, n, task=task, metrics=False, pattern=pattern)
    finally:
        store.close()


# -- 1. search ----------------------------------------------------------------------------
def test_search_from_the_runs_list_and_a_run_page(runs, server, page, shots) -> None:
    store_path, ids = runs
    page.goto(server.base + "/")
    page.fill("#search-q", "capital Italy")
    page.click("#search-apply")
    hits = page.locator("tr.search-hit")
    expect(hits).to_have_count(2)  # the qa run and the wrong-url run asked the same question
    expect(hits.first.locator("mark").first).to_have_text(re.compile("capital|Italy", re.I))
    assert set(hits.evaluate_all("rs => rs.map(r => r.dataset.runId)")) == {
        ids["qa"], ids["wrong_url"]}
    _shot(page, shots, "search")
    page.goto(f"{server.base}/run/{ids['qa']}")
    page.fill("#run-search-q", "Rome")  # in the target and in the output
    page.click("#run-search-apply")
    expect(page.locator("#search-run")).to_have_text(ids["qa"])
    expect(hits).to_have_count(1)
    hits.first.locator("a.hit-link").click()
    expect(page.locator("#sample-id")).to_have_text("capital-italy")
    for hostile in ('"', "AND(", '"capital" NEAR(', "*", "capital AND( OR", "')--"):
        page.goto(f"{server.base}/search?q={quote(hostile)}")
        expect(page.locator("#search-form")).to_have_count(1)  # the page, never a 500
        expect(page.locator("#search-q")).to_have_value(hostile)
        expect(page.locator("#search-note").or_(page.locator("#search-results"))
               ).to_have_count(1)
    page.goto(server.base + "/search?q=" + quote('"capital'))
    expect(page.locator("#search-total")).to_contain_text(f"{2 * CAPITALS} samples")


def test_search_results_are_paged(runs, server, page) -> None:
    # 120 samples holding a word no other run holds: three pages of 50
    rid = _add_run(runs[0], 120, "paged", lambda i: {"value": 1.0, "text": " okapi"})
    page.goto(f"{server.base}/search?q=okapi")
    expect(page.locator("#search-total")).to_have_text("120 samples · page 1 of 3")
    seen: list[str] = []
    for number, rows in ((1, 50), (2, 50), (3, 20)):
        expect(page.locator("#search-total .page-no")).to_have_text(str(number))
        hits = page.locator("tr.search-hit")
        expect(hits).to_have_count(rows)
        assert set(hits.evaluate_all("rs => rs.map(r => r.dataset.runId)")) == {rid}
        seen += hits.evaluate_all("rs => rs.map(r => r.dataset.sampleId)")
        if number < 3:
            page.locator("a[rel=next]").click()
    assert sorted(seen) == [f"s{i:04d}" for i in range(120)]  # each sample once
    expect(page.locator("a[rel=next]")).to_have_count(0)  # the last page
    page.locator("a[rel=prev]").click()
    expect(page.locator("#search-total .page-no")).to_have_text("2")
    # a page past the last shows the last; one run's search pages the same way
    page.goto(f"{server.base}/search?q=okapi&run={rid}&page=9")
    expect(page.locator("#search-total")).to_have_text("120 samples · page 3 of 3")
    expect(page.locator("tr.search-hit")).to_have_count(20)


def _copy_store(store_path: Path, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    copy = folder / "assay.db"
    src, dst = sqlite3.connect(store_path), sqlite3.connect(copy)
    src.backup(dst)
    src.close()
    dst.close()
    return copy


def test_search_index_is_built_incrementally_and_lives_beside_the_store(runs, tmp_path
                                                                        ) -> None:
    store_path = _copy_store(runs[0], tmp_path / "copy")
    store = Store(store_path)
    index = SearchIndex(store_path)
    try:
        first = index.refresh(store)
        assert first == store._db.execute("SELECT COUNT(*) FROM samples").fetchone()[0] > 10
        assert index_path(store_path).exists() and not index.in_memory
        assert index.refresh(store) == 0  # nothing new: nothing read
        pages = [index.search(store, "capital", page=n, page_size=4) for n in (1, 2, 9)]
        assert [len(p[0]) for p in pages[:2]] == [4, 4] and pages[0][1] == 2 * CAPITALS
        assert pages[2][2] == -(-2 * CAPITALS // 4)  # past the last page: the last one
        seen = [(h.run_id, h.sample_id) for p in pages[:2] for h in p[0]]
        assert len(set(seen)) == 8
        rid = vh.synthetic_run(store, 2, task="later", metrics=False,
                               pattern=lambda i: {"text": " zanzibar"})
        assert index.refresh(store) == 2  # only the new rows
        hits, total, _ = index.search(store, "zanzibar")
        assert total == 2 and {h.run_id for h in hits} == {rid}
        # a sample written again (as a resume does) is found by its new text only
        row = vh.sample_row(0, text=" kilimanjaro")
        store._db.execute(INSERT_SAMPLE, (rid, *row, None, None, None, None))  # OR REPLACE
        store._db.commit()
        assert index.search(store, "kilimanjaro")[1] == 1
        hits, _, _ = index.search(store, "zanzibar")
        assert [h.sample_id for h in hits] == ["s0001"]
    finally:
        index.close()
        store.close()


def test_search_index_lives_in_memory_where_its_file_cannot_be_made(runs, tmp_path) -> None:
    store_path = _copy_store(runs[0], tmp_path / "copy")
    index_path(store_path).mkdir()  # a folder where the index file would go
    store = Store(store_path, readonly=True)
    index = SearchIndex(store_path)
    try:
        hits, total, _ = index.search(store, "capital France")
        assert total == 2 and index.in_memory
        assert {h.sample_id for h in hits} == {"capital-france"}
    finally:
        index.close()
        store.close()


# -- 2. sorting ---------------------------------------------------------------------------
def test_sorting_the_runs_list_and_a_paged_sample_table(runs, server, page, tmp_path) -> None:
    store_path, ids = runs
    page.goto(server.base + "/")
    page.locator("th[data-sort=samples] a").click()
    expect(page.locator("th[data-sort=samples]")).to_have_attribute("aria-sort", "descending")
    expect(page.locator("th[data-sort=samples] .sort-dir")).to_have_text("▼")
    counts = page.locator("tr.run-row td.num:nth-of-type(8)").all_inner_texts()
    assert [int(c.replace(",", "")) for c in counts] == sorted(
        (int(c.replace(",", "")) for c in counts), reverse=True)
    page.locator("th[data-sort=samples] a").click()
    expect(page.locator("th[data-sort=samples]")).to_have_attribute("aria-sort", "ascending")
    page.locator("th[data-sort=task] a").click()
    tasks = page.locator("tr.run-row td.task").all_inner_texts()
    assert tasks == sorted(tasks) and len(set(tasks)) > 1

    rid = _add_run(store_path, 120, "sorting", lambda i: {"value": (i * 37 % 120) / 120})
    page.goto(f"{server.base}/run/{rid}")
    page.locator("th[data-sort=score] a").click()
    expect(page.locator("th[data-sort=score]")).to_have_attribute("aria-sort", "ascending")
    page.locator("th[data-sort=score] a").click()
    expect(page.locator("th[data-sort=score] .sort-dir")).to_have_text("▼")
    first_page = [float(x) for x in page.locator("tr.sample-row td.num:nth-of-type(3)")
                  .all_inner_texts()]
    page.locator("a[rel=next]").first.click()
    expect(page).to_have_url(re.compile(r"page=2.*|.*sort=score.*page=2"))
    second_page = [float(x) for x in page.locator("tr.sample-row td.num:nth-of-type(3)")
                   .all_inner_texts()]
    assert first_page == sorted(first_page, reverse=True) and len(first_page) == 50
    assert second_page == sorted(second_page, reverse=True)
    assert min(first_page) >= max(second_page)
    assert first_page[0] == pytest.approx(119 / 120, abs=1e-3)


def test_previous_and_next_follow_the_tables_sort(runs, server, page, tmp_path) -> None:
    rid = _add_run(runs[0], 60, "neighbours", lambda i: {"value": (i * 37 % 60) / 60})
    page.goto(f"{server.base}/run/{rid}?sort=score&order=desc")
    table = page.locator("tr.sample-row").evaluate_all("rs => rs.map(r => r.dataset.sampleId)")
    assert len(table) == 50
    page.locator("tr.sample-row a").first.click()
    seen = [page.locator("#sample-id").inner_text()]
    expect(page.locator("#prev-sample")).to_have_count(0)  # the table's first row
    for _ in range(3):
        page.locator("#next-sample").click()
        seen.append(page.locator("#sample-id").inner_text())
    assert seen == table[:4]  # the score order, not dataset order
    page.locator("#prev-sample").click()
    expect(page.locator("#sample-id")).to_have_text(table[2])
    # across the table's page break: the 50th row's next is the 51st (page 2's first)
    page.goto(f"{server.base}/run/{rid}?sort=score&order=desc&page=2")
    page2 = page.locator("tr.sample-row").evaluate_all("rs => rs.map(r => r.dataset.sampleId)")
    page.goto(f"{server.base}/run/{rid}?sort=score&order=desc")
    page.locator(f"tr.sample-row[data-sample-id='{table[-1]}'] a").first.click()
    page.locator("#next-sample").click()
    expect(page.locator("#sample-id")).to_have_text(page2[0])


# -- 3. generation settings and the model calls' timeline --------------------------------
def test_sample_shows_generation_settings_and_each_calls_timing(runs, server, page,
                                                               shots) -> None:
    _, ids = runs
    page.goto(f"{server.base}/run/{ids['qa']}")
    page.locator("a.sample-link", has_text="capital-france").click()
    expect(page.locator("#generation")).to_contain_text("temperature")
    expect(page.locator("#generation")).to_contain_text("0.3")
    rows = page.locator("#calls tr.call-row")
    expect(rows).to_have_count(1)
    cells = rows.first.locator("td")
    expect(cells.nth(8)).to_have_text("1")  # retried once after the 500
    expect(cells.nth(9)).to_contain_text("500")
    assert float(cells.nth(3).inner_text()) > 0  # duration
    assert int(cells.nth(5).inner_text()) > 0  # input tokens
    expect(page.locator("svg.timeline g.call-retried rect.bar")).to_have_count(1)
    _shot(page, shots, "sample-qa")
    page.goto(f"{server.base}/run/{ids['wrong_url']}")
    page.locator("a.sample-link").first.click()
    expect(page.locator("#calls tr.call-row.state-failed")).to_have_count(1)
    expect(page.locator("#calls")).to_contain_text("404")


# -- 4. run options and files -------------------------------------------------------------
def test_run_page_shows_its_options_and_serves_its_files_only(runs, server, page,
                                                             shots) -> None:
    store_path, ids = runs
    page.goto(f"{server.base}/run/{ids['qa']}")
    options = page.locator("#options")
    expect(options.locator("[data-group=model]")).to_contain_text("openai/qa-model")
    expect(options.locator("[data-group='task options']")).to_contain_text("qa_example.jsonl")
    expect(options.locator("[data-group=generation]")).to_contain_text("temperature")
    expect(options.locator("[data-group=scoring]")).to_contain_text("scorer")
    box = options.bounding_box()
    assert box is not None and box["y"] < page.locator("#samples").bounding_box()["y"]
    _shot(page, shots, "run-qa")
    names = page.locator("a.run-file").all_inner_texts()
    assert {"report.md", "report.html", "results.jsonl"} <= set(names)
    page.locator("a.run-file", has_text="report.md").click()
    expect(page.locator("body")).to_contain_text(ids["qa"])
    page.goto(f"{server.base}/run/{ids['qa']}/files/report.html")  # its own inline styles
    expect(page.locator("body")).to_contain_text(ids["qa"])
    (store_path.parent / "secret.txt").write_text("not for the web")
    base = f"{server.base}/run/{ids['qa']}/files/"
    for bad in ("..%2F..%2Fsecret.txt", "..%2F..%2Fassay.db", "%2E%2E%2F%2E%2E%2Fsecret.txt",
                "../../secret.txt", "nothere.md", "..", "%2Fetc%2Fpasswd"):
        assert _status(base + bad) == 404, bad
    assert _status(f"{server.base}/run/..%2F..%2Fsecret.txt/files/x") == 404
    assert _status(f"{server.base}/run/{ids['wrong_url']}/files/report.md") == 404


# -- 5, 6, 7. each text once, highlighted code, the failing test --------------------------
def test_code_sample_shows_each_text_once_highlighted_with_its_failing_test(runs, server,
                                                                           page, shots) -> None:
    _, ids = runs
    if "humaneval" not in ids:
        pytest.skip(bwrap_problem() or "")
    page.goto(f"{server.base}/run/{ids['humaneval']}")
    page.locator("a.sample-link", has_text="Mini/1").click()
    expect(page.locator("#output-text .hl")).to_have_count(1)
    expect(page.locator("#output-text .hl .k", has_text="def")).to_have_count(1)
    keyword = page.locator("#output-text .hl .k").first
    assert keyword.evaluate("e => getComputedStyle(e).color") != keyword.evaluate(
        "e => getComputedStyle(e.closest('pre')).color")  # the stylesheet coloured it
    expect(page.locator("#prediction-same")).to_have_count(1)
    expect(page.locator("#prediction-text")).to_have_count(0)
    expect(page.locator("#scores .answer-same")).to_have_count(1)
    expect(page.locator("#scores .score-answer")).to_have_count(0)
    shown = "".join(page.locator(f"#{part}").inner_text()
                    for part in ("output", "prediction", "scores"))
    assert shown.count("return len(values)") == 1  # output, prediction, answer: once
    failing = page.locator("#scores .failing-test")
    expect(failing).to_contain_text("assert candidate([1, 2, 4]) == 2")
    expect(failing.locator(".hl")).to_have_count(1)
    _shot(page, shots, "sample-humaneval")
    page.goto(f"{server.base}/run/{ids['humaneval']}")
    page.locator("a.sample-link", has_text="Mini/0").click()
    expect(page.locator("#scores .failing-test")).to_have_count(0)  # it passed


# -- 8. failed runs are red ---------------------------------------------------------------
def test_a_run_whose_samples_all_failed_is_red_and_interrupted_amber(runs, server, page,
                                                                     shots) -> None:
    store_path, ids = runs
    store = Store(store_path)
    try:
        stopped = vh.synthetic_run(store, 3, task="stopped", status="interrupted", metrics=False)
    finally:
        store.close()
    page.goto(server.base + "/")
    _shot(page, shots, "runs-list")

    def colour(run_id: str) -> str:
        badge = page.locator(f"tr.run-row[data-run-id='{run_id}'] .status")
        return badge.evaluate("e => getComputedStyle(e).backgroundColor")

    red, amber, green = "rgb(253, 233, 228)", "rgb(255, 241, 220)", "rgb(227, 244, 232)"
    assert colour(ids["old_failed"]) == red
    assert colour(ids["wrong_url"]) == red
    assert colour(stopped) == amber
    assert colour(ids["qa"]) == green
    page.goto(f"{server.base}/run/{ids['old_failed']}")
    badge = page.locator("#run-status .status")
    expect(badge).to_contain_text("failed")
    assert badge.evaluate("e => getComputedStyle(e).backgroundColor") == red
