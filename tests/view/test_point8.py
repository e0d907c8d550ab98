"""Issue 34, point 8, in ``assay view`` (and report.html): the Errors box only where samples
failed; a history page per task; a failed run's error under its heading; a re-scoring's own
calls and tokens apart from the original run's; the runs list's Task filter in words.

Every run is made by the real CLI in a subprocess over real HTTP to the fake
OpenAI-compatible server, into one real store; the viewer is served for real on 127.0.0.1
and read over HTTP and in real Chromium at 1280 px (screenshots in ``$ASSAY_SHOTS``).
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from assay.testing import FakeServer, Rule
from assay.web.server import serve
from tests.browser import ServedInThread, expect

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "qa_example.jsonl"
MTBENCH = REPO / "tests" / "gallery" / "fixtures" / "mtbench"
CAPITALS = [Rule(r"capital of France", "Answer: Paris"), Rule(r"capital of Italy", "Answer: Rome")]
BOOM = Rule(r"capital of Japan", {"status": 500, "error": "upstream down"})
MARK = re.compile(r"\[Q-(\d+)\]")


def _mtbench(body: dict[str, Any]) -> str:
    """The agent answers ``ANS-<q>``; judge rates 8, judge2 rates 3."""
    if body["model"] == "agent":
        return f"ANS-{MARK.search(body['messages'][0]['content']).group(1)}"
    return {"judge": "Rating: [[8]]", "judge2": "Rating: [[3]]"}[body["model"]]


def rows(db: Path, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """What ``sql`` selects from the store's file, on a connection of its own."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return con.execute(sql, args).fetchall()
    finally:
        con.close()


def _cli(home: Path, *args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ASSAY_HOME": str(home), "OPENAI_API_KEY": "sk-test-p8"}
    for name in ("OPENAI_BASE_URL", "ASSAY_JUDGE_BASE_URL"):
        env.pop(name, None)
    p = subprocess.run([sys.executable, "-m", "assay", *args], capture_output=True,
                       text=True, timeout=300, env=env, cwd=home.parent)
    if ok:
        assert p.returncode == 0, (p.stdout, p.stderr)
    return p


def _qa(base_url: str, *extra: str) -> list[str]:
    return ["run", "qa", "--data", str(EXAMPLE), "--limit", "4", "--base-url", base_url,
            "--max-retries", "0", "-q", *extra]


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Two clean qa runs, one with an errored sample, one failed run, a two-model run, and
    an MT-Bench run re-judged by another judge; their ids by name."""
    home = tmp_path_factory.mktemp("point8") / "home"
    home.mkdir()
    with FakeServer(rules=[BOOM, *CAPITALS], default_reply="Answer: no idea") as srv:
        _cli(home, *_qa(srv.base_url, "--model", "openai/m1"))  # Japan: HTTP 500
        srv.rules[:] = CAPITALS  # the same run again (one configuration), no error now
        _cli(home, *_qa(srv.base_url, "--model", "openai/m1"))
    with FakeServer(rules=CAPITALS, default_reply="Answer: no idea") as srv:
        _cli(home, *_qa(srv.base_url, "--model", "openai/clean"))
        _cli(home, *_qa(srv.base_url, "--model", "openai/m1", "--model", "openai/m2"))
        # a base URL without /v1: every call is a 404, so the run fails
        failed = _cli(home, *_qa(srv.base_url.removesuffix("/v1"), "--model", "openai/m1"),
                      ok=False)
        assert failed.returncode == 1, (failed.stdout, failed.stderr)
    with FakeServer(responder=_mtbench) as srv:
        _cli(home, "run", f"{MTBENCH / 'mtbench_task.py'}@mtbench", "--data",
             str(MTBENCH / "data" / "mt_bench" / "question.jsonl"), "--model", "openai/agent",
             "--base-url", srv.base_url, "-T", "judge_model=openai/judge", "-T",
             f"judge_base_url={srv.base_url}", "-q")
        (original,), = rows(home / "assay.db", "SELECT id FROM runs WHERE task = 'mtbench'")
        _cli(home, "score", original, "--judge-model", "openai/judge2", "--judge-base-url",
             srv.base_url)
    db = home / "assay.db"
    qa = [r for r, in rows(db, "SELECT id FROM runs WHERE task = 'qa' AND parent_id IS NULL "
                           "ORDER BY created_at, id")]
    by_status = dict(rows(db, "SELECT status, id FROM runs WHERE task = 'qa' AND parent_id "
                          "IS NULL AND status = 'failed'"))
    (rescored,), = rows(db, "SELECT id FROM runs WHERE parent_id = ?", (original,))
    (parent,), = rows(db, "SELECT id FROM runs WHERE task = 'multi_model'")
    return {"home": home, "errors": qa[0], "clean_m1": qa[1], "clean": qa[2],
            "failed": by_status["failed"], "original": original, "rescored": rescored,
            "parent": parent}


@pytest.fixture(scope="module")
def site(made: dict[str, Any]) -> Any:
    s = ServedInThread(serve(store_path=made["home"] / "assay.db"))
    yield s
    s.close()


def get(site: Any, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(site.base + path, timeout=60) as r:  # noqa: S310
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def text_of(html: str) -> str:
    import html as html_module

    return " ".join(html_module.unescape(re.sub(r"<[^>]+>", " ", html)).split())


def test_the_errors_box_is_shown_only_when_samples_failed(made, site, page, shots) -> None:
    totals = dict(rows(made["home"] / "assay.db", "SELECT run_id, SUM(error IS NOT NULL) "
                       "FROM samples GROUP BY run_id"))
    assert totals[made["errors"]] == 1 and totals[made["clean"]] == 0
    page.goto(f"{site.base}/run/{made['clean']}")
    expect(page.locator("#samples")).to_be_visible()
    expect(page.locator("#errors")).to_have_count(0)
    assert "samples failed" not in page.inner_text("main")
    page.screenshot(path=str(shots / "p8-run-no-errors.png"), full_page=True)
    page.goto(f"{site.base}/run/{made['errors']}")
    box = page.locator("#errors")
    expect(box).to_be_visible()
    expect(box).to_contain_text("1 of 4 samples failed")
    expect(page.locator("dd span.has-errors")).to_have_text("(1 error)")
    expect(box.locator("#top-errors")).to_contain_text("upstream down")
    page.screenshot(path=str(shots / "p8-run-with-errors.png"), full_page=True)
    # report.html, as written when each run ended: an Errors section only where one failed
    for run, has in ((made["clean"], False), (made["errors"], True)):
        report = made["home"] / "runs" / run / "report.html"
        page.goto(report.as_uri())
        expect(page.locator("h2", has_text="Errors")).to_have_count(1 if has else 0)
        page.screenshot(path=str(shots / f"p8-report-{'with' if has else 'no'}-errors.png"),
                        full_page=True)


def test_the_viewer_has_a_history_page_linked_from_a_run_and_the_runs_list(
        made, site, page, shots) -> None:
    page.goto(f"{site.base}/")
    row = page.locator(f'tr.run-row[data-run-id="{made["clean_m1"]}"]')
    row.locator("a.history-link").click()
    expect(page).to_have_url(f"{site.base}/history/qa")
    expect(page.locator("main h1")).to_have_text("History of qa")
    # the newest run's configuration (the failed run's: another endpoint) is shown first;
    # the clean runs of openai/m1 are a configuration of their own, one click away
    page.goto(f"{site.base}/run/{made['clean_m1']}")
    page.locator("#history-link").click()
    expect(page.locator("main h1")).to_have_text("History of qa")
    table = page.locator("#history table").last
    ids = [made["errors"], made["clean_m1"]]
    for rid in ids:  # each run of the configuration, linked to its page
        expect(table.locator(f'a.run-link[href="/run/{rid}"]')).to_have_text(rid)
    expect(table.locator("tr")).to_have_count(1 + len(ids))
    assert "change from previous" in table.inner_text()
    expect(page.locator("#history svg.history")).to_be_visible()
    page.screenshot(path=str(shots / "p8-history.png"), full_page=True)
    # every configuration at once, then back to one by its link
    page.locator("#history-all").click()
    expect(page.locator("#history")).to_contain_text("mixing")
    # the page's title first, then the bar that picks a configuration
    expect(page.locator("main h1")).to_have_count(1)
    assert (page.locator("main h1").bounding_box()["y"]
            < page.locator("#configurations-nav").bounding_box()["y"])
    (n_qa,), = rows(made["home"] / "assay.db", "SELECT COUNT(*) FROM runs WHERE task = 'qa'")
    expect(page.locator("#history table").last.locator("a.run-link")).to_have_count(n_qa)
    page.locator("a.config-link").first.click()
    expect(page.locator("#history")).not_to_contain_text("mixing")
    # the same page as `assay history` writes: its Markdown twin names the same runs
    out = made["home"].parent / "hist-out"
    fp = rows(made["home"] / "assay.db", "SELECT json_extract(config, '$.fingerprint') "
              "FROM runs WHERE id = ?", (made["clean_m1"],))[0][0]
    _cli(made["home"], "history", "qa", "--fingerprint", fp, "--out", str(out))
    md = (out / "history.md").read_text()
    assert all(rid in md for rid in ids)
    # an unknown task, a bad parameter: one line, never a traceback
    status, html = get(site, "/history/no-such-task")
    assert status == 404 and "no runs of task 'no-such-task'" in text_of(html)
    status, html = get(site, "/history/qa?limit=abc")
    assert status == 400 and "limit" in text_of(html) and "Traceback" not in html


def test_a_failed_runs_page_shows_its_stored_error_under_its_heading(made, site) -> None:
    status, html = get(site, f"/run/{made['failed']}")
    assert status == 200
    stats = json.loads(rows(made["home"] / "assay.db", "SELECT stats FROM runs WHERE id = ?",
                            (made["failed"],))[0][0])
    assert "HTTP 404" in stats["error"]
    said = re.search(r'<p class="error-box" id="run-failure" role="alert">(.*?)</p>', html,
                     re.S)
    assert said, html[:3000]
    text = text_of(said.group(1))
    assert text.startswith(f"This run failed: {stats['error']}."), text
    assert "does --base-url end in /v1?" in text  # the hint report.html gives too
    # under the heading: before the options and the metrics
    assert html.index('id="run-failure"') < html.index('id="options"')
    # a run that did not fail says nothing of the kind
    assert 'id="run-failure"' not in get(site, f"/run/{made['errors']}")[1]


def test_a_rescored_runs_page_counts_its_own_calls_and_labels_the_original_tokens(
        made, site) -> None:
    db = made["home"] / "assay.db"
    (in_, out, calls), = rows(db, "SELECT SUM(input_tokens), SUM(output_tokens), "
                              "SUM(model_calls) FROM samples WHERE run_id = ?",
                              (made["original"],))
    judge = json.loads(rows(db, "SELECT stats FROM runs WHERE id = ?",
                            (made["original"],))[0][0])["role_calls"]["judge"]
    assert calls == 8 and judge["calls"] == 8  # 4 questions, 2 turns each
    # the re-scoring's own judge calls, summed from its samples
    (j_calls, j_in, j_out), = rows(
        db, "SELECT SUM(json_extract(outcome, '$.role_usage.judge.calls')), "
        "SUM(json_extract(outcome, '$.role_usage.judge.input_tokens')), "
        "SUM(json_extract(outcome, '$.role_usage.judge.output_tokens')) FROM samples "
        "WHERE run_id = ?", (made["rescored"],))
    assert j_calls == 8 and j_in > 0
    status, html = get(site, f"/run/{made['rescored']}")
    assert status == 200
    facts = text_of(html.split('<dl class="facts">', 1)[1].split("</dl>", 1)[0])
    assert (f"tokens this re-scoring: {j_calls} judge calls ({j_in:,} in, {j_out:,} out), "
            "none to the model under test") in facts, facts
    assert (f"original run's tokens {in_:,} in, {out:,} out, {calls} model calls (the model "
            f"under test, in run {made['original']})") in facts, facts
    assert "0 model calls" not in facts
    # the original run: its own model calls, and its judge's beside them
    facts = text_of(get(site, f"/run/{made['original']}")[1].split('<dl class="facts">', 1)[1]
                    .split("</dl>", 1)[0])
    assert (f"tokens {in_:,} in, {out:,} out, {calls} model calls; judge: {judge['calls']} "
            f"calls ({judge['input_tokens']:,} in, {judge['output_tokens']:,} out)") in facts


def test_the_task_filter_offers_multi_model_runs_in_words(made, site, page) -> None:
    page.goto(f"{site.base}/")
    options = page.locator("#f-task option")
    texts = [t.strip() for t in options.all_inner_texts()]
    assert "multi_model" not in texts, texts
    assert texts == ["any", "mtbench", "multi-model runs (any task)", "qa"], texts
    page.select_option("#f-task", label="multi-model runs (any task)")
    page.locator("#f-apply").click()
    expect(page.locator("tr.run-row")).to_have_count(1)
    expect(page.locator("tr.run-row td.task")).to_contain_text("qa on 2 models")
    assert f"/run/{quote(made['parent'])}" in page.content()
