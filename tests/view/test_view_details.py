"""``assay view``: partial scores under the verdict and score filters, the runs list's
status and date filters, the comparison page's numbers and limits, and the pieces a page
is made of (metric tables, transcripts, filter links), over real HTTP on a real store.

Expected rows come from the pattern the test wrote (never from the viewer's own SQL).
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

import pytest
import viewhelpers as vh
from multidict import MultiDict
from test_view_http import run_ids, sample_ids

from assay.view.compare_page import MAX_FLIPS
from assay.view.params import BadParam, RunFilters, SampleFilters
from assay.view.summary import metric_sections, rate_cells
from assay.view.transcript import message_turns, sample_view

#: sample i's primary score: full marks, half, none, a quarter, unscored, an error
PARTIAL = (1.0, 0.5, 0.0, 0.25, None, "error")


def _partial(i: int) -> dict[str, Any]:
    v = PARTIAL[i % len(PARTIAL)]
    if v == "error":
        return {"error": "boom", "category": f"c{i % 2}"}
    return {"value": v, "category": f"c{i % 2}"}


def _ids(pred: Any, n: int) -> list[str]:
    return [f"s{i:04d}" for i in range(n) if pred(PARTIAL[i % len(PARTIAL)])]


async def test_partial_scores_are_wrong_not_correct_and_ranges_are_inclusive(syn_store,
                                                                              syn_site):
    n = 42
    rid = vh.synthetic_run(syn_store, n, pattern=_partial, status="running")
    num = lambda v: isinstance(v, float)  # noqa: E731

    async def ids(query: str) -> list[str]:
        status, html, _ = await syn_site.get(f"/run/{rid}?{query}")
        assert status == 200, query
        return sample_ids(html)

    assert await ids("verdict=correct") == _ids(lambda v: v == 1.0, n)
    assert await ids("verdict=wrong") == _ids(lambda v: num(v) and v < 1, n)
    assert await ids("verdict=unscored") == _ids(lambda v: v is None, n)
    assert await ids("verdict=error") == _ids(lambda v: v == "error", n)
    assert await ids("score_min=0.5") == _ids(lambda v: num(v) and v >= 0.5, n)
    assert await ids("score_max=0.25") == _ids(lambda v: num(v) and v <= 0.25, n)
    assert await ids("score_min=0.25&score_max=0.5") == _ids(
        lambda v: num(v) and 0.25 <= v <= 0.5, n)
    assert await ids("verdict=wrong&category=c1") == [
        s for s in _ids(lambda v: num(v) and v < 1, n) if int(s[1:]) % 2 == 1]
    # the verdict cell says what the score was
    _, html, _ = await syn_site.get(f"/run/{rid}")
    verdicts = re.findall(r'<span class="verdict v-([a-z]+)">([^<]*)</span>', html)
    assert verdicts[:6] == [("correct", "correct"), ("score", "0.5"), ("wrong", "wrong"),
                            ("score", "0.25"), ("unscored", "unscored"), ("error", "error")]
    # the live counts: a half score is scored, not correct
    info = json.loads((await syn_site.get(f"/api/run/{rid}/progress"))[1])
    want = [PARTIAL[i % len(PARTIAL)] for i in range(n)]
    assert info["correct"] == want.count(1.0) == 7
    assert info["scored"] == sum(1 for v in want if num(v)) == 28
    assert info["errors"] == 7 and info["planned"] == n
    assert [r["verdict"] for r in info["newest"][:2]] == ["error", "unscored"]
    assert '<strong id="live-correct">7</strong>' in html


async def test_progress_plans_every_epoch(syn_store, syn_site):
    rid = syn_store.create_run(task="qa", spec={"task": "qa", "epochs": 3}, model={"model": "m"},
                               dataset={"selected": 7}, package_version="x")
    syn_store.record(rid, vh.sample_row(0))
    info = json.loads((await syn_site.get(f"/api/run/{rid}/progress"))[1])
    assert (info["planned"], info["samples"], info["correct"]) == (21, 1, 1)


async def test_runs_list_status_and_date_filters(syn_store, syn_site):
    done = vh.synthetic_run(syn_store, 3)
    failed = vh.synthetic_run(syn_store, 3, status="failed", metrics=False)
    running = syn_store.create_run(task="qa", spec={}, model={"model": "m"}, dataset={},
                                   package_version="x")
    assert run_ids((await syn_site.get("/?status=failed"))[1]) == [failed]
    assert run_ids((await syn_site.get("/?status=finished"))[1]) == [done]
    assert run_ids((await syn_site.get("/?status=running"))[1]) == [running]
    assert run_ids((await syn_site.get("/?status=all"))[1]) == [running, failed, done]
    made = syn_store.get_run(done)["created_at"]  # the runs' day, not the clock's now
    today = time.strftime("%Y-%m-%d", time.localtime(made))
    yesterday = time.strftime("%Y-%m-%d", time.localtime(made - 86_400))
    tomorrow = time.strftime("%Y-%m-%d", time.localtime(made + 86_400))
    assert len(run_ids((await syn_site.get(f"/?to={today}"))[1])) == 3  # the whole day
    assert run_ids((await syn_site.get(f"/?to={yesterday}"))[1]) == []
    assert len(run_ids((await syn_site.get(f"/?from={yesterday}&to={tomorrow}"))[1])) == 3
    assert run_ids((await syn_site.get(f"/?from={today}&status=failed"))[1]) == [failed]
    _, html, _ = await syn_site.get("/?status=failed&q=syn")
    assert run_ids(html) == [failed] and 'value="failed" selected' in html


async def test_compare_page_lists_at_most_max_flips_and_counts_them_all(syn_store, syn_site):
    n = MAX_FLIPS + 30
    a = vh.synthetic_run(syn_store, n, pattern=lambda i: {"value": 0.0})
    b = vh.synthetic_run(syn_store, n, pattern=lambda i: {"value": 1.0})
    status, html, _ = await syn_site.get(f"/compare?a={a}&b={b}&alpha=0.1")
    assert status == 200
    fixed = html.split('id="flips-fixed"')[1].split("</section>")[0]
    assert len(re.findall(r"<code>(s\d+)</code>", fixed)) == MAX_FLIPS
    assert f'<span class="muted">{n}</span>' in fixed
    assert f"the first {MAX_FLIPS} are listed" in fixed
    # every pair flipped: the exact two-sided p is 2 / 2^n, shown in scientific notation
    assert '<span id="compare-p">' in html
    p_text = html.split('<span id="compare-p">')[1].split("<")[0]
    assert re.fullmatch(r"\d\.\de-\d+", p_text), p_text
    assert "(90% interval)" in html and '<strong id="compare-delta">1.000</strong>' in html
    # the default level
    assert "(95% interval)" in (await syn_site.get(f"/compare?a={a}&b={b}"))[1]
    for alpha in ("0", "1", "-0.5", "inf", "x"):
        status, html, _ = await syn_site.get(f"/compare?a={a}&b={b}&alpha={alpha}")
        assert status == 400 and "the parameter alpha=" in html, alpha
    # runs that share no sample: a 400 page saying so
    other = syn_store.create_run(task="qa", spec={}, model={"model": "m"}, dataset={},
                                 package_version="x")
    status, html, _ = await syn_site.get(f"/compare?a={a}&b={other}")
    assert status == 400 and "share no scored sample" in html


# -- the pieces -----------------------------------------------------------------------------
def test_sample_filter_links_keep_only_what_narrows():
    f = SampleFilters.parse(MultiDict({"verdict": "wrong", "score_min": "0.5",
                                       "score_max": "1.0", "page": "3", "q": " s01 "}))
    assert (f.verdict, f.score_min, f.score_max, f.page, f.q) == ("wrong", 0.5, 1.0, 3, "s01")
    assert f.query() == "verdict=wrong&score_min=0.5&score_max=1&q=s01&page=3"
    assert f.query(page=1) == "verdict=wrong&score_min=0.5&score_max=1&q=s01"
    assert f.active and not SampleFilters.parse(MultiDict()).active
    assert SampleFilters.parse(MultiDict()).query() == ""
    assert SampleFilters.parse(MultiDict({"page": "-4"})).page == 1
    with pytest.raises(BadParam, match=r"score_min='0.9' is not usable: it is above "
                                       r"score_max=0.1"):
        SampleFilters.parse(MultiDict({"score_min": "0.9", "score_max": "0.1"}))
    with pytest.raises(BadParam) as e:
        SampleFilters.parse(MultiDict({"score_min": "x" * 100}))
    assert f"score_min='{'x' * 59}…'" in str(e.value) and e.value.status == 400
    r = RunFilters.parse(MultiDict({"status": "failed", "task": "qa", "page": "2"}))
    assert r.query() == "task=qa&status=failed&page=2" and r.active
    assert r.query(page=1) == "task=qa&status=failed"
    assert RunFilters.parse(MultiDict({"status": "all"})).query() == ""
    assert not RunFilters.parse(MultiDict({"page": "5"})).active
    d = RunFilters.parse(MultiDict({"from": "2026-03-01", "to": "2026-03-01"}))
    assert d.ts_to - d.ts_from == 86_400 and d.query() == "from=2026-03-01&to=2026-03-01"


def test_metric_sections_split_rates_figures_tables_and_errors():
    metrics = {
        "accuracy": {"value": 0.65, "ci_low": 0.433, "ci_high": 0.819, "successes": 13,
                     "n": 20, "method": "wilson"},
        "mean_score": {"value": 7.25, "ci_low": 6.5, "ci_high": 8.0, "n": 20},
        "n_samples": 20, "empty": {}, "nothing": None, "tags": ["a", "b"],
        "by_level": {"1": {"value": 0.5, "ci_low": 0.15, "ci_high": 0.85, "successes": 2,
                           "n": 4, "official_size": 9}, "2": None,
                     "3": {"value": 1.0, "ci_low": 0.2, "ci_high": 1.0, "n": 1,
                           "method": "wilson", "note": {"k": "é"}}},
        "confusion": {"tp": 3, "fp": 1}, "aggregates": {"live": None, "overall": None},
        "mixed": {"r": {"value": 1, "ci_low": 1, "ci_high": 1, "n": 3}, "x": {"k": 1}},
        "per_task": {"x": {"calls": 3, "mean": 0.5}, "y": {"calls": 1, "mean": 1.0}},
        "records": [{"name": "a", "rate": {"value": 0.25, "ci_low": 0.05, "ci_high": 0.7,
                                          "successes": 1, "n": 4}}],
        "n_errors": 2, "error_rate": {"value": 0.1, "ci_low": 0.03, "ci_high": 0.3,
                                            "successes": 2, "n": 20},
        "top_errors": [{"message": "timeout", "count": 2}, "other", {"count": 1}],
    }
    s = metric_sections(metrics)
    assert s["rates"] == [
        ("accuracy", {"value": "0.650", "interval": "[0.433, 0.819]", "n": "13/20",
                      "method": "wilson"}),
        ("mean_score", {"value": "7.250", "interval": "[6.500, 8.000]", "n": "n=20",
                        "method": ""})]
    # names comma-joined; a mapping with nothing computed one line, not a table of n/a
    assert s["figures"] == [("n_samples", "20"), ("tags", "a, b"),
                            ("aggregates", "none computed (live, overall)")]
    tables = {t["title"]: t for t in s["tables"]}
    assert set(tables) == {"by_level", "confusion", "per_task", "records", "mixed"}
    # a rate among other records: a table of name and value, not a rate table; the rate as
    # the rates table writes it, a mapping of counts as "name count", never as JSON
    assert tables["mixed"]["kind"] == "pairs"
    assert tables["mixed"]["rows"] == [["r", "1 [1, 1] (n=3)"], ["x", "k 1"]]
    assert rate_cells({"value": 1, "ci_low": 0, "ci_high": 1, "n": 2})["value"] == "1"
    assert tables["by_level"]["kind"] == "rates"
    # keys beyond the rate's own are extra columns, in first-seen order
    assert tables["by_level"]["columns"] == ["name", "value", "95% interval", "n", "method",
                                             "official_size", "note"]
    assert tables["by_level"]["rows"] == [
        ["1", "0.500", "[0.150, 0.850]", "2/4", "", "9", "n/a"],
        ["2", "n/a", "", "", "", "", ""],
        ["3", "1.000", "[0.200, 1.000]", "n=1", "wilson", "n/a", "k é"]]
    assert tables["confusion"] == {"title": "confusion", "kind": "pairs",
                                   "columns": ["name", "value"],
                                   "rows": [["tp", "3"], ["fp", "1"]]}
    assert tables["per_task"]["kind"] == "records"
    assert tables["per_task"]["columns"] == ["name", "calls", "mean"]
    assert tables["per_task"]["rows"][0][:2] == ["x", "3"]
    assert tables["records"]["columns"] == ["name", "rate"]
    assert tables["records"]["rows"] == [["a", "0.250 [0.050, 0.700] (1/4)"]]
    assert s["errors"]["n_errors"] == 2 and s["errors"]["error_rate"] == "0.100 [0.030, 0.300] (2/20)"
    assert s["errors"]["top_errors"] == [("timeout", 2), ("other", None), ("{'count': 1}", 1)]
    assert rate_cells(None)["value"] == "n/a" and rate_cells({"x": 1})["value"] == "n/a"
    assert metric_sections(None) == {"rates": [], "figures": [], "tables": [],
                                     "errors": {"n_errors": None, "error_rate": None,
                                                "top_errors": []}}


def test_transcripts_tool_calls_and_scores_are_made_readable():
    turns = message_turns([
        {"role": "system", "content": "be brief"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "function": {"name": "area", "arguments": '{"base": 10, "u": "é"}'}},
            {"name": "raw", "arguments": "not json"}, "odd"]},
        {"role": "tool", "tool_call_id": 7, "content": [{"type": "text", "text": "50"}],
         "name": "area"},
        {"role": "examiner", "content": "done?", "round": 2, "final": True}])
    assert [t["label"] for t in turns] == ["System", "Assistant", "Tool result", "Examiner"]
    calls = turns[1]["tool_calls"]
    assert calls[0] == {"name": "area", "id": "c1",
                        "arguments": '{\n  "base": 10,\n  "u": "é"\n}'}
    assert calls[1] == {"name": "raw", "id": "", "arguments": "not json"}
    assert calls[2] == {"name": "?", "id": "", "arguments": "odd"}
    assert turns[1]["content"] is None and turns[0]["content_json"] is None
    assert turns[3]["extra"] == ""  # round and final are shown as such, not as extras
    assert turns[2]["tool_call_id"] == "7" and turns[2]["content"] is None
    assert json.loads(turns[2]["content_json"]) == [{"type": "text", "text": "50"}]
    assert json.loads(turns[2]["extra"]) == {"name": "area"} and turns[0]["extra"] == ""
    assert (turns[3]["round"], turns[3]["final"], turns[0]["final"]) == (2, True, False)
    assert message_turns([{"content": "no role"}]) is None and message_turns("x") is None

    view = sample_view({
        "input": "q?", "target": {"answer": 3}, "transcript": {"steps": []},
        "scores": {"exact": {"value": 0.123456, "answer": "3", "explanation": None,
                             "metadata": {"points": [{"point": "p1", "ok": True}], "k": 1}},
                   "judge": 1},
        "outcome": {"metadata": {"workdir": {"files": [{"path": "a.py", "text": "xx"},
                                                       {"path": "b.bin", "base64": "QUJD"}],
                                             "bytes": 5}}, "empty": None},
        "sample": {"row": {"Annotator Metadata": {"Steps": "1. look"}}, "files": ["f.txt"]},
        "metadata": {"category": "c1"}, "latency_s": 0.5, "input_tokens": None})
    assert view["input"] == {"text": "q?"} and json.loads(view["target"]["json"]) == {"answer": 3}
    assert view["turns"] is None and json.loads(view["transcript_json"]) == {"steps": []}
    exact, judge = view["scores"]
    assert exact["primary"] and not judge["primary"]
    assert exact["value"] == "0.1235" and exact["answer"] == "3" and exact["explanation"] == ""
    assert exact["tables"] == [{"title": "points", "columns": ["point", "ok"],
                                "rows": [["p1", "true"]]}]
    assert json.loads(exact["metadata"]) == {"k": 1} and judge["value"] == "1"
    outcome = json.loads(view["outcome"])
    assert outcome == {"metadata": {"workdir": {
        "files": ["a.py (2 chars)", "b.bin (4 chars, base64)"], "bytes": 5, "left_out": []}}}
    assert view["reference_steps"] == "1. look" and view["files"] == ["f.txt"]
    assert view["metadata"] == [("category", "c1")] and view["facts"] == [("latency (s)", 0.5)]


async def test_run_page_notes_pager_text_and_live_category_counts(syn_store, syn_site):
    empty = syn_store.create_run(task="qa", spec={}, model={"model": "m"}, dataset={},
                                 package_version="x")
    _, html, _ = await syn_site.get(f"/run/{empty}")
    assert "No samples yet." in html and "No samples · page" in html
    rid = vh.synthetic_run(syn_store, 8, status="running", metrics=False)
    _, html, _ = await syn_site.get(f"/run/{rid}")
    assert ("This run is still going: its metrics are computed when the run finishes or "
            "is resumed") in html
    # counts per category follow the run while it grows (c0..c3 of i % 4)
    assert '<option value="c1">c1 (2)</option>' in html
    syn_store.record(rid, vh.sample_row(9, category="c1"))
    _, html, _ = await syn_site.get(f"/run/{rid}")
    assert '<option value="c1">c1 (3)</option>' in html
    failed = vh.synthetic_run(syn_store, 3, status="failed", metrics=False)
    _, html, _ = await syn_site.get(f"/run/{failed}")
    assert f"(&#39;assay run qa --resume {failed}&#39;)" in html
    # a filter that matches nothing on a later page: the pager says so, on page 1 of 1
    done = vh.synthetic_run(syn_store, 120)
    _, html, _ = await syn_site.get(f"/run/{done}?q=zzz&page=3")
    assert sample_ids(html) == [] and "No samples · page" in html
    assert '<span class="page-no">1</span> of 1' in html
    _, html, _ = await syn_site.get(f"/run/{done}?verdict=correct&page=2")
    n_correct = sum(1 for i in range(120) if i % 10 != 9 and i % 3 != 0)
    assert f"samples 51–{n_correct} of {n_correct}" in html
    assert f'rel="prev" href="/run/{done}?verdict=correct"' in html and 'rel="next"' not in html
    # a unique prefix redirects to the full id and keeps the filters
    status, _, headers = await syn_site.get(f"/run/{done[:-2]}?verdict=wrong")
    assert status == 302 and headers["Location"] == f"/run/{done}?verdict=wrong"


async def test_sample_page_keeps_the_table_filters_in_its_links(syn_store, syn_site):
    rid = vh.synthetic_run(syn_store, 12)
    second = list(vh.sample_row(3))
    second[1] = 1
    syn_store.record(rid, tuple(second))
    _, html, _ = await syn_site.get(f"/run/{rid}/sample/s0003?verdict=wrong&page=1")
    assert f'id="run-link" href="/run/{rid}?verdict=wrong"' in html
    assert "within the filters of the sample table" in html
    assert f'<a href="/run/{rid}/sample/s0003?epoch=1&amp;verdict=wrong">1</a>' in html
    assert "<strong>0</strong>" in html
    _, html, _ = await syn_site.get(f"/run/{rid}/sample/s0004")
    assert f'id="run-link" href="/run/{rid}"' in html
    assert "within the filters" not in html and "epochs:" not in html
    assert f"<title>s0004 · {rid} · assay view</title>" in html
    assert f"<title>Run {rid} · assay view</title>" in (await syn_site.get(f"/run/{rid}"))[1]
    assert "<title>Runs · assay view</title>" in (await syn_site.get("/"))[1]


async def test_compare_page_reads_score_and_by_and_shows_models_and_values(syn_store,
                                                                           syn_site):
    def two_scores(i: int) -> dict[str, Any]:
        return {"value": 1.0, "category": f"c{i % 2}"}

    a = vh.synthetic_run(syn_store, 10, model="openai/left",
                         pattern=lambda i: {"value": 1.0 if i < 5 else 0.0, "category": "c"})
    b = vh.synthetic_run(syn_store, 10, model="openai/right", pattern=two_scores)
    status, html, headers = await syn_site.get(f"/compare?a={a}&b={b}")
    assert status == 200 and headers["Content-Type"].startswith("text/html")
    assert f"<title>Compare {a} and {b} · assay view</title>" in html
    runs = html.split('id="compare-runs"')[1].split("</table>")[0]
    assert "<td>openai/left</td>" in runs and "<td>openai/right</td>" in runs
    assert '<td class="num">0.500</td>' in runs and '<td class="num">1.000</td>' in runs
    fixed = html.split('id="flips-fixed"')[1].split("</section>")[0]
    assert re.findall(r'<td class="num">([^<]*)</td><td class="num">([^<]*)</td>', fixed) == [
        ("0.000", "1.000")] * 5
    # by: the field named, even one that A's samples lack; score: the one named
    _, html, _ = await syn_site.get(f"/compare?a={a}&b={b}&by=category")
    cats = html.split('id="compare-categories"')[1].split("</table>")[0]
    assert re.findall(r"<tr><td>([^<]+)</td>", cats) == ["c"]
    _, html, _ = await syn_site.get(f"/compare?a={a}&b={b}&score=nope")
    assert "has no score &#39;nope&#39;" in html and "<h1>Cannot compare these runs</h1>" in html
    status, html, headers = await syn_site.get(f"/compare?a={a}&b=nosuch")
    assert status == 404 and "<h1>Run not found</h1>" in html
    status, html, headers = await syn_site.get("/compare")
    assert status == 200 and headers["Content-Type"].startswith("text/html")
    assert "<title>Compare two runs · assay view</title>" in html


async def test_run_and_sample_pages_carry_filters_records_and_neighbours(syn_store,
                                                                         syn_site):
    rid = vh.synthetic_run(syn_store, 12)  # category c{i % 4}
    _, html, _ = await syn_site.get(f"/run/{rid}?verdict=wrong")
    links = re.findall(r'class="sample-link" href="([^"]+)"', html)
    assert links[0] == f"/run/{rid}/sample/s0000?epoch=0&amp;verdict=wrong"
    # the run's records are shown as JSON
    assert "&#34;source&#34;: &#34;synthetic&#34;" in html  # dataset
    assert "&#34;model&#34;: &#34;openai/syn&#34;" in html  # model
    assert "&#34;epochs&#34;: 1" in html  # spec
    # a field the samples do not have is still offered, selected
    _, html, _ = await syn_site.get(f"/run/{rid}?field=zone")
    assert '<option value="zone" selected>' in html
    # within the default category field, neighbours are the same category's samples
    _, html, _ = await syn_site.get(f"/run/{rid}/sample/s0005?category=c1")
    assert f'href="/run/{rid}/sample/s0001?epoch=0&amp;category=c1"' in html
    assert f'href="/run/{rid}/sample/s0009?epoch=0&amp;category=c1"' in html
    status, html, _ = await syn_site.get(f"/run/{rid}/sample/nope")
    assert status == 404 and f"run {rid} has no sample &#39;nope&#39;</p>" in html
    assert "<h1>Sample not found</h1>" in html
    status, html, _ = await syn_site.get("/run/nope")
    assert "<h1>Run not found</h1>" in html
    status, html, _ = await syn_site.get(f"/run/{rid}?verdict=maybe")
    assert status == 400 and "<h1>Bad request</h1>" in html
    assert "choose one of all, correct, wrong, error, unscored" in html
    for query, text in (("page=x", "give a page number such as 2"),
                        ("score_min=x", "give a number such as 0.5"),
                        ("score_max=inf", "give a finite number such as 0.5")):
        assert text in (await syn_site.get(f"/run/{rid}?{query}"))[1], query
    assert "give a date as YYYY-MM-DD" in (await syn_site.get("/?from=x"))[1]
    assert "give a significance level such as 0.05" in (
        await syn_site.get(f"/compare?a={rid}&b={rid}&alpha=x"))[1]
    # the live API's newest samples carry what the page shows
    info = json.loads((await syn_site.get(f"/api/run/{rid}/progress"))[1])
    assert info["ok"] is True
    newest = {r["sample_id"]: r for r in info["newest"]}
    assert newest["s0009"]["error"] and newest["s0009"]["epoch"] == 0
    assert newest["s0011"]["prediction"] == "a11" and newest["s0011"]["error"] is None


def test_filter_links_of_every_field_and_long_values():
    r = RunFilters.parse(MultiDict({"model": "openai/x", "q": "gsm", "status": "running"}))
    assert r.query() == "model=openai%2Fx&status=running&q=gsm"
    f = SampleFilters.parse(MultiDict({"field": "level", "category": "3"}))
    assert f.query() == "field=level&category=3" and f.query(page=2).endswith("&page=2")
    sixty = "y" * 60
    with pytest.raises(BadParam, match=f"score_max='{sixty}' is not usable"):
        SampleFilters.parse(MultiDict({"score_max": sixty}))


def test_sample_view_of_every_field():
    view = sample_view({
        "input": [{"role": "user", "content": "hi"}], "target": None,
        "transcript": [], "output": "", "prediction": 0, "error": "boom",
        "scores": ["not", "a", "dict"], "metadata": ["odd"],
        "outcome": {"metadata": {"conversation": {"chat": "not turns", "rounds": 2,
                                                  "ended": None}}, "answer": None},
        "sample": {"tools": [{"name": "f"}], "row": {"x": 1}},
        "model_s": 1.5, "wait_s": 0.25, "input_tokens": 10, "output_tokens": 4,
        "model_calls": 2, "cache_hits": 1})
    assert view["input"]["turns"][0]["content"] == "hi" and view["target"] is None
    assert view["turns"] == [] and view["transcript_json"] is None
    assert view["output"] == "" and view["prediction"] == "0" and view["error"] == "boom"
    assert view["scores"] == [] and json.loads(view["scores_json"]) == ["not", "a", "dict"]
    assert view["metadata"] == [] and json.loads(view["metadata_json"]) == ["odd"]
    conv = view["conversation"]
    assert conv["turns"] is None and conv["json"] == "not turns"
    assert conv["facts"] == [("rounds", "2")]
    assert view["outcome"] is None  # only the conversation, shown above
    assert json.loads(view["tools"]) == [{"name": "f"}] and json.loads(view["row"]) == {"x": 1}
    assert view["facts"] == [("model time (s)", 1.5), ("waiting (s)", 0.25),
                             ("input tokens", 10), ("output tokens", 4), ("model calls", 2),
                             ("cache hits", 1)]
    assert sample_view({})["metadata_json"] is None
    assert sample_view({"metadata": {"note": {"k": "é"}}})["metadata"] == [
        ("note", '{\n  "k": "é"\n}')]
    why = sample_view({"scores": {"s": {"value": 1, "explanation": "why"}}})["scores"][0]
    assert why["explanation"] == "why" and why["answer"] == ""
    plain = sample_view({"scores": {"exact": 1.0, "f1": {"value": None, "answer": None}},
                         "outcome": "text", "transcript": None})
    assert plain["scores"][0] == {"name": "exact", "value": "1.0", "answer": "",
                                  "explanation": "", "metadata": "", "primary": True}
    assert plain["scores"][1]["value"] == "none" and plain["scores_json"] is None
    assert plain["outcome"] == "text" and plain["transcript_json"] is None
    assert sample_view({"scores": None})["scores_json"] is None
    assert sample_view({"scores": {}})["scores_json"] is None
    big = {"points": [{"i": i} for i in range(201)]}
    scores = sample_view({"scores": {"j": {"value": 1, "metadata": big}}})["scores"]
    assert scores[0]["tables"] == [] and json.loads(scores[0]["metadata"]) == big
    ws = sample_view({"outcome": {"metadata": {"workdir": "gone"}}})
    assert json.loads(ws["outcome"]) == {"metadata": {"workdir": "gone"}}


async def test_pages_show_labels_records_and_form_values(syn_store, syn_site):
    running = vh.synthetic_run(syn_store, 4, status="running", metrics=False)
    _, html, _ = await syn_site.get(f"/run/{running}")
    assert '<dd id="run-model">openai/syn</dd>' in html
    assert "&#34;pid&#34;:" in html  # the run's stats (its owner) are shown
    _, html, _ = await syn_site.get(f"/run/{running}/sample/s0001")
    assert "<dd>qa · openai/syn</dd>" in html
    _, html, _ = await syn_site.get("/")
    row = html.split(f'data-run-id="{running}"')[1].split("</tr>")[0]
    assert '<div class="muted small">synthetic</div>' in row
    assert all(f'<option value="{s}"' in html for s in ("running", "finished",
                                                         "interrupted", "failed"))
    # the runs list's "previous" goes one page back
    for _ in range(55):
        syn_store.create_run(task="t", spec={}, model={"model": "m"}, dataset={},
                             package_version="x")
    _, html, _ = await syn_site.get("/?task=t&page=2")
    assert 'rel="prev" href="/?task=t"' in html
    _, html, _ = await syn_site.get("/?task=t")
    assert 'rel="prev"' not in html and '<span class="btn disabled">‹ Previous</span>' in html
    # the comparison form keeps what was asked; the flips broken by B are listed
    a = vh.synthetic_run(syn_store, 6, pattern=lambda i: {"value": 1.0, "category": "k"})
    b = vh.synthetic_run(syn_store, 6, pattern=lambda i: {"value": float(i % 2),
                                                          "category": "k"})
    _, html, _ = await syn_site.get(f"/compare?a={a}&b={b}&by=category&score=exact")
    assert '<input type="text" name="by" value="category"' in html
    assert '<input type="text" name="score" value="exact"' in html
    broken = html.split('id="flips-broken"')[1].split("</section>")[0]
    assert re.findall(r"<code>(s\d+)</code>", broken) == ["s0000", "s0002", "s0004"]


async def test_pick_form_keeps_the_chosen_runs_and_the_verdict_menu(syn_store, syn_site):
    a = vh.synthetic_run(syn_store, 2)
    b = vh.synthetic_run(syn_store, 2)
    syn_store.create_run(task="qa", spec={}, model={"model": "m"}, package_version="x",
                         dataset={"name": "gsm8k-main", "source": "hf"})
    for query, chosen in ((f"a={a}", a), (f"b={b}", b)):
        _, html, _ = await syn_site.get(f"/compare?{query}")
        assert f'<option value="{chosen}" selected>' in html, query
        assert html.count(" selected>") == 1
    _, html, _ = await syn_site.get(f"/compare?a={a}&b={b}")
    assert '<input type="text" name="by" value=""' in html
    _, html, _ = await syn_site.get(f"/run/{a}")
    verdicts = html.split('id="s-verdict"')[1].split("</select>")[0]
    assert re.findall(r'<option value="([a-z]+)"', verdicts) == [
        "all", "correct", "wrong", "error", "unscored"]
    _, html, _ = await syn_site.get("/")
    assert '<div class="muted small">gsm8k-main</div>' in html  # the name before the source


def test_a_tool_calls_code_reads_as_written_not_as_escaped_json():
    from assay.view.transcript import message_turns

    (turn,) = message_turns([{"role": "assistant", "content": None, "tool_calls": [
        {"name": "python", "id": "c1", "arguments": {"code": "x = 1\nprint(x)", "n": 2}}]}])
    assert turn["tool_calls"][0]["arguments"] == "code:\nx = 1\nprint(x)\nn: 2"
    (short,) = message_turns([{"role": "assistant", "tool_calls": [
        {"name": "add", "arguments": {"a": 2, "b": 3}}]}])
    assert short["tool_calls"][0]["arguments"] == '{\n  "a": 2,\n  "b": 3\n}'
