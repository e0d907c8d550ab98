"""``assay view`` over real HTTP on 127.0.0.1: pages over real runs, filters and paging
counted row by row, bad parameters, 404 pages, read-only, loopback and security headers."""

from __future__ import annotations

import json
import math
import os
import re
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
import viewhelpers as vh

from assay.errors import StoreError
from assay.store.sqlite import Store
from assay.web.security import SECURITY_HEADERS
from tests.patching import patch_everywhere

CSP = SECURITY_HEADERS["Content-Security-Policy"]


def sample_ids(html: str) -> list[str]:
    """The sample ids of the samples table, in page order."""
    return re.findall(r'<tr class="sample-row" data-sample-id="([^"]*)"', html)


def run_ids(html: str) -> list[str]:
    """The run ids of the runs list, in page order."""
    return re.findall(r'<tr class="run-row" data-run-id="([^"]*)"', html)


async def every_page(site: Any, path: str) -> list[str]:
    """The sample ids of every page of a filtered table, following its "Next" links."""
    got: list[str] = []
    while True:
        status, html, _ = await site.get(path)
        assert status == 200, path
        got += sample_ids(html)
        nxt = re.search(r'<a class="btn" rel="next" href="([^"]+)"', html)
        if not nxt:
            return got
        path = nxt.group(1).replace("&amp;", "&")


def _truth(i: int) -> str:
    """The verdict :func:`viewhelpers.synthetic_run` gives sample ``i``."""
    return "error" if i % 10 == 9 else "wrong" if i % 3 == 0 else "correct"


# -- real runs ----------------------------------------------------------------------------
async def test_runs_list_shows_the_real_runs_with_model_status_and_headline(real_site) -> None:
    site, ids, _ = real_site
    status, html, _ = await site.get("/")
    assert status == 200
    assert set(run_ids(html)) == set(ids.values())
    for model in ("openai/qa-model", "openai/bfcl-model", "openai/gaia-model", "openai/agent"):
        assert model in html
    # the fake GAIA agent answers 17 everywhere: exactly 1 of the 11 tasks is right
    gaia_row = html.split(f'data-run-id="{ids["gaia"]}"')[1].split("</tr>")[0]
    assert "exact_match_rate" in gaia_row and "0.091 [" in gaia_row and "(1/11)" in gaia_row
    qa_row = html.split(f'data-run-id="{ids["qa"]}"')[1].split("</tr>")[0]
    assert "(2/20)" in qa_row and ">finished<" in qa_row  # Paris and Rome right


async def test_run_filters_narrow_the_list(real_site) -> None:
    site, ids, path = real_site
    assert run_ids((await site.get("/?task=gaia"))[1]) == [ids["gaia"]]
    assert run_ids((await site.get("/?model=openai/agent"))[1]) == [ids["converse"]]
    assert run_ids((await site.get("/?q=bfcl-mod"))[1]) == [ids["bfcl"]]
    assert run_ids((await site.get("/?q=GAIA"))[1]) == [ids["gaia"]]  # dataset name, any case
    assert set(run_ids((await site.get("/?status=finished"))[1])) == set(ids.values())
    assert run_ids((await site.get("/?status=running"))[1]) == []
    # the runs' own day, not the clock's: the session's runs may be made before midnight
    store = Store(path)
    made = store.get_run(ids["gaia"])["created_at"]
    store.close()
    today = time.strftime("%Y-%m-%d", time.localtime(made))
    assert len(run_ids((await site.get(f"/?from={today}&to={today}"))[1])) == 4
    tomorrow = time.strftime("%Y-%m-%d", time.localtime(made + 86_400))
    _, html, _ = await site.get(f"/?from={tomorrow}")
    assert run_ids(html) == [] and "No run matches these filters" in html


async def test_sample_pages_render_each_task_shape(real_site) -> None:
    site, ids, path = real_site
    # BFCL: the tool call's name and JSON arguments
    _, html, _ = await site.get(f"/run/{ids['bfcl']}/sample/simple_python_0")
    assert re.search(r'<code class="tool-name">calculate_triangle_area</code>', html)
    assert "&#34;base&#34;: 10" in html or '"base": 10' in html
    # converse: the examiner's and the agent's turns, with rounds
    _, html, _ = await site.get(f"/run/{ids['converse']}/sample/hello")
    conv = html.split('id="conversation"')[1].split("</section>")[0]
    assert conv.count('class="turn role-examiner') == 3 and conv.count('role-agent"') == 2
    assert "reply 1" in conv and "reply 2" in conv and "ends the conversation" in conv
    points = html.split('data-table="points"')[1].split("</table>")[0]  # the judged points
    assert "The agent said hello" in points and "the conversation shows it" in points
    # GAIA: the output, the official score and the annotator's steps
    gaia = Store(path, readonly=True)
    try:
        first = gaia.results(ids["gaia"])[0]
    finally:
        gaia.close()
    _, html, _ = await site.get(f"/run/{ids['gaia']}/sample/{first.sample_id}")
    assert "FINAL ANSWER: 17" in html and 'id="reference-steps"' in html
    assert "Count the lines containing ERROR." in html
    assert 'class="turn role-system' in html and 'class="turn role-assistant' in html
    # qa: the question, the target and the score explanation
    _, html, _ = await site.get(f"/run/{ids['qa']}/sample/capital-france")
    assert "What is the capital of France?" in html and "Paris" in html
    assert 'class="score-name">normalized_match<' in html


async def test_run_page_shows_metrics_intervals_and_category_tables(real_site) -> None:
    site, ids, _ = real_site
    _, html, _ = await site.get(f"/run/{ids['gaia']}")
    assert 'id="headline"' in html and "(1/11)" in html
    levels = html.split('data-metric="level_accuracy"')[1].split("</table>")[0]
    assert "level_1" in levels and "1/4" in levels and "0/4" in levels and "0/3" in levels
    _, html, _ = await site.get(f"/run/{ids['bfcl']}")
    cats = html.split('data-metric="categories"')[1].split("</table>")[0]
    # the fake agent's arguments (base=10, height=5) are right only for the triangle
    assert "simple_python" in cats and "1/3" in cats and "official_size" in cats
    # the category filter defaults to the samples' "category"; GAIA's to "level"
    assert len(sample_ids((await site.get(f"/run/{ids['bfcl']}?category=simple_python"))[1])) == 3
    _, html, _ = await site.get(f"/run/{ids['gaia']}?category=3")
    assert len(sample_ids(html)) == 3 and '<option value="level" selected>' in html


# -- synthetic runs: filters and paging, counted ------------------------------------------
async def test_sample_filters_and_paging_return_the_right_rows(syn_store, syn_site) -> None:
    n = 230
    rid = vh.synthetic_run(syn_store, n)
    truth = {f"s{i:04d}": _truth(i) for i in range(n)}
    status, html, _ = await syn_site.get(f"/run/{rid}")
    assert status == 200 and sample_ids(html) == [f"s{i:04d}" for i in range(50)]
    assert "samples 1–50 of 230" in html
    _, html, _ = await syn_site.get(f"/run/{rid}?page=5")
    assert sample_ids(html) == [f"s{i:04d}" for i in range(200, 230)]
    _, html, _ = await syn_site.get(f"/run/{rid}?page=99")  # past the end: the last page
    assert sample_ids(html)[0] == "s0200" and '<span class="page-no">5</span>' in html
    for verdict in ("wrong", "correct", "error"):
        want = [s for s, v in truth.items() if v == verdict]
        assert await every_page(syn_site, f"/run/{rid}?verdict={verdict}") == want, verdict
        _, html, _ = await syn_site.get(f"/run/{rid}?verdict={verdict}")
        assert f"of {len(want)} " in html
    want = [f"s{i:04d}" for i in range(n) if i % 4 == 1][:50]
    assert sample_ids((await syn_site.get(f"/run/{rid}?category=c1"))[1]) == want
    want = [s for s, v in truth.items() if v == "wrong" and int(s[1:]) % 4 == 2]
    assert sample_ids((await syn_site.get(f"/run/{rid}?category=c2&verdict=wrong"))[1]) == want
    ids = sample_ids((await syn_site.get(f"/run/{rid}?score_min=0.5&score_max=1"))[1])
    assert ids and all(truth[s] == "correct" for s in ids)
    ids = sample_ids((await syn_site.get(f"/run/{rid}?score_max=0.5&page=2"))[1])
    assert ids == [s for s, v in truth.items() if v == "wrong"][50:100]
    assert sample_ids((await syn_site.get(f"/run/{rid}?q=s012"))[1]) == [
        f"s{i:04d}" for i in range(120, 130)]
    assert sample_ids((await syn_site.get(f"/run/{rid}?q=%25"))[1]) == []  # % is literal


async def test_runs_list_pages(syn_store, syn_site) -> None:
    made = [syn_store.create_run(task=f"t{i % 3}", spec={}, model={"model": f"m{i}"},
                                 dataset={}, package_version="x") for i in range(57)]
    newest_first = list(reversed(made))
    _, html, _ = await syn_site.get("/")
    assert run_ids(html) == newest_first[:50] and "runs 1–50 of 57" in html
    _, html, _ = await syn_site.get("/?page=2")
    assert run_ids(html) == newest_first[50:]
    _, html, _ = await syn_site.get("/?task=t1&page=2")
    assert run_ids(html) == [r for i, r in enumerate(made) if i % 3 == 1][::-1]  # clamped
    # this process owns the runs, so they are running; a dead owner makes one interrupted
    dead = syn_store.create_run(task="t0", spec={}, model={"model": "gone"}, dataset={},
                                package_version="x")
    syn_store._db.execute("UPDATE runs SET stats=? WHERE id=?",
                          (json.dumps({"owner": {"host": socket.gethostname(),
                                                 "pid": 2 ** 22 + 12345}}), dead))
    syn_store._db.commit()
    assert run_ids((await syn_site.get("/?status=interrupted"))[1]) == [dead]
    assert len(run_ids((await syn_site.get("/?status=running&page=2"))[1])) == 7


async def test_bad_query_values_give_a_400_page_or_are_clamped(syn_store, syn_site) -> None:
    rid = vh.synthetic_run(syn_store, 60)
    sample = f"/run/{rid}/sample/s0001"
    for path, name in [("/?page=abc", "page"), (f"/run/{rid}?page=1.5", "page"),
                       (f"/run/{rid}?score_min=foo", "score_min"),
                       (f"/run/{rid}?score_max=nan", "score_max"),
                       (f"/run/{rid}?verdict=maybe", "verdict"), ("/?status=sleeping", "status"),
                       ("/?from=yesterday", "from"), (f"{sample}?epoch=x", "epoch"),
                       (f"/run/{rid}?field=%22)%3B--", "field"),
                       ("/compare?a=x&b=y&alpha=2", "alpha")]:
        status, html, headers = await syn_site.get(path)
        assert status == 400, path
        assert f"the parameter {name}=" in html and "Traceback" not in html, path
        assert headers["Content-Security-Policy"] == CSP
    for path in ("/?page=-1", f"/run/{rid}?page=0", f"/run/{rid}?page=-7&verdict=all",
                 f"/run/{rid}?category=%27%3B%20DROP%20TABLE%20runs", "/?q=%27%22%3C",
                 f"/run/{rid}?field=nonexistent&category=1", f"{sample}?verdict=wrong"):
        status, html, _ = await syn_site.get(path)
        assert status == 200, (path, html[-500:])
    for path in (f"/run/{rid}?page=-1", f"/run/{rid}?page=0", "/?page=-3"):
        html = (await syn_site.get(path))[1]
        assert '<span class="page-no">1</span>' in html, path
    assert sample_ids((await syn_site.get(f"/run/{rid}?page=-1"))[1])[0] == "s0000"


async def test_unknown_run_or_sample_is_a_404_page(syn_store, syn_site) -> None:
    rid = vh.synthetic_run(syn_store, 3)
    for path, text in [("/run/nope", "no run &#39;nope&#39;"),
                       (f"/run/{rid}/sample/nope", "has no sample &#39;nope&#39;"),
                       (f"/run/{rid}/sample/s0001?epoch=4", "(epoch 4)"),
                       ("/nowhere", "there is no page at /nowhere")]:
        status, html, headers = await syn_site.get(path)
        assert status == 404, path
        assert text in html and "<h1>" in html and "Traceback" not in html, path
        assert headers["Content-Type"].startswith("text/html")
    status, body, _ = await syn_site.get("/api/run/nope/progress")
    assert status == 404 and json.loads(body)["ok"] is False
    # a unique prefix of a run id goes to the run
    status, _, headers = await syn_site.get(f"/run/{rid[:-2]}")
    assert status == 302 and headers["Location"] == f"/run/{rid}"


async def test_browsing_never_writes_and_only_get_is_answered(syn_store, syn_site) -> None:
    done = vh.synthetic_run(syn_store, 40)
    bare = vh.synthetic_run(syn_store, 40, metrics=False)  # no metrics: none computed here
    parent = syn_store.create_run(task="plan", spec={}, model={}, dataset={},
                                  package_version="x")
    child = vh.synthetic_run(syn_store, 5, parent_id=parent)
    syn_store._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db = syn_store.path
    before = (db.read_bytes(), os.stat(db).st_mtime_ns)
    wal = db.with_name(db.name + "-wal")
    wal_before = wal.read_bytes() if wal.exists() else b""
    paths = ["/", "/?status=finished", f"/run/{done}", f"/run/{bare}", f"/run/{parent}",
             f"/run/{child}", f"/run/{bare}/sample/s0003", f"/run/{done}?verdict=wrong",
             f"/api/run/{bare}/progress", "/compare", "/static/view.js", "/run/nope"]
    for path in paths:
        status, html, _ = await syn_site.get(path)
        assert status in (200, 404), path
    _, html, _ = await syn_site.get(f"/run/{bare}")
    assert "This run stored no metrics." in html and "(24/36)" not in html
    _, html, _ = await syn_site.get(f"/run/{parent}")
    assert f'class="child-link" href="/run/{child}"' in html
    assert f'id="parent-link" href="/run/{parent}"' in (await syn_site.get(f"/run/{child}"))[1]
    for method in ("POST", "PUT", "DELETE", "PATCH"):
        for path in ("/", f"/run/{done}", "/api/run/x/progress", "/nowhere"):
            status, _, headers = await syn_site.request(method, path, json={"x": 1})
            assert status == 405, (method, path)
            assert headers["Content-Security-Policy"] == CSP
    assert (db.read_bytes(), os.stat(db).st_mtime_ns) == before
    assert (wal.read_bytes() if wal.exists() else b"") == wal_before
    assert syn_store.get_run(bare)["metrics"] is None  # the page never computes nor stores
    ro = Store(db, readonly=True)
    try:
        with pytest.raises(StoreError, match="read-only"):
            ro.set_metrics(done, {})
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            ro._db.execute("DELETE FROM runs")
    finally:
        ro.close()


async def test_a_run_without_metrics_shows_its_counts_and_computes_nothing(
        syn_store, syn_site, monkeypatch) -> None:
    import assay.tasks.base
    import assay.tasks.registry

    def refuse(*args, **kwargs):
        raise AssertionError("the viewer asked a task's code")

    patch_everywhere(monkeypatch, assay.tasks.registry, "task_class", refuse)
    monkeypatch.setattr(assay.tasks.base.Task, "metrics", classmethod(refuse))
    rid = vh.synthetic_run(syn_store, 40, status="interrupted", metrics=False)
    status, html, _ = await syn_site.get(f"/run/{rid}")
    assert status == 200 and 'id="rates"' not in html and 'id="compute-metrics"' not in html
    assert ("This run is interrupted: its metrics are computed when the run finishes or is "
            "resumed") in html
    assert syn_store.get_run(rid)["metrics"] is None
    # an old run's stored metrics with no description: its first rate is the headline
    old = vh.synthetic_run(syn_store, 40, metrics=False)
    syn_store.set_metrics(old, {"accuracy": {"value": 0.5, "ci_low": 0.3, "ci_high": 0.7,
                                             "successes": 18, "n": 36}})
    _, html, _ = await syn_site.get(f"/run/{old}")
    assert "(18/36)" in html
    _, html, _ = await syn_site.get("/")
    assert "0.500 [0.300, 0.700] (18/36)" in html


async def test_non_loopback_host_is_refused(syn_store, syn_site) -> None:
    rid = vh.synthetic_run(syn_store, 2)
    for path in ("/", f"/run/{rid}", "/static/view.css", f"/api/run/{rid}/progress"):
        status, _, headers = await syn_site.get(path, headers={"Host": "evil.example"})
        assert status == 403, path
        assert headers["Content-Security-Policy"] == CSP
        status, _, _ = await syn_site.get(path, headers={"Host": "127.0.0.1.evil.example:80"})
        assert status == 403, path
    status, _, _ = await syn_site.request("POST", "/", headers={"Host": "evil.example"})
    assert status == 403
    port = syn_site.base.rsplit(":", 1)[1]
    assert (await syn_site.get("/", headers={"Host": f"localhost:{port}"}))[0] == 200


async def test_every_page_has_the_security_headers_and_no_inline_code(syn_store,
                                                                      syn_site) -> None:
    rid = vh.synthetic_run(syn_store, 12)
    paths = ["/", f"/run/{rid}", f"/run/{rid}/sample/s0002", "/compare", "/run/nope",
             "/?page=x", "/static/view.css", "/static/view.js", f"/api/run/{rid}/progress"]
    for path in paths:
        status, body, headers = await syn_site.get(path)
        for k, v in SECURITY_HEADERS.items():
            assert headers.get(k) == v, (path, k)
        if headers["Content-Type"].startswith("text/html"):
            assert not re.search(r"<script(?![^>]*\bsrc=)", body), path  # no inline script
            assert not re.search(r"\sstyle\s*=", body, re.I), path
            assert not re.search(r"<[^>]+\son[a-z]+\s*=", body, re.I), path
            assert "<style" not in body and 'src="http' not in body and "href=\"http" not in body


async def test_progress_api_counts_and_lists_the_newest(syn_store, syn_site) -> None:
    rid = vh.synthetic_run(syn_store, 25, status="running")
    status, body, _ = await syn_site.get(f"/api/run/{rid}/progress")
    info = json.loads(body)
    assert status == 200 and info["status"] == "running"
    want = {_truth(i): 0 for i in range(25)}
    for i in range(25):
        want[_truth(i)] += 1
    assert (info["samples"], info["errors"], info["correct"], info["planned"]) == (
        25, want["error"], want["correct"], 25)
    assert info["scored"] == want["correct"] + want["wrong"]
    syn_store.record(rid, vh.sample_row(99, created=time.time() + 5))
    info = json.loads((await syn_site.get(f"/api/run/{rid}/progress"))[1])
    assert info["samples"] == 26 and info["newest"][0]["sample_id"] == "s0099"
    assert info["newest"][0]["url"] == f"/run/{rid}/sample/s0099?epoch=0"


async def test_sample_page_shows_unknown_shapes_as_json_and_links_neighbours(
        syn_store, syn_site) -> None:
    def pattern(i: int) -> dict[str, Any]:
        odd = {"steps": [{"thought": "<b>think</b>", "n": i}]} if i == 1 else None
        return {"value": 0.0 if i % 2 else 1.0, "transcript": odd}

    rid = vh.synthetic_run(syn_store, 6, pattern=pattern)
    _, html, _ = await syn_site.get(f"/run/{rid}/sample/s0001")
    assert 'id="transcript-json"' in html and "&lt;b&gt;think&lt;/b&gt;" in html
    assert f'href="/run/{rid}/sample/s0000?epoch=0"' in html  # previous
    assert f'href="/run/{rid}/sample/s0002?epoch=0"' in html  # next
    # within a filter, the neighbours are the matching samples
    _, html, _ = await syn_site.get(f"/run/{rid}/sample/s0003?verdict=wrong")
    assert f'href="/run/{rid}/sample/s0001?epoch=0&amp;verdict=wrong"' in html
    assert f'href="/run/{rid}/sample/s0005?epoch=0&amp;verdict=wrong"' in html
    # an id with a slash and spaces round-trips through its link
    odd_id = "a/b c?d"
    syn_store.record(rid, ("a/b c?d", 0, 50, '"q"', '"t"', "[]", "o", "p", "{}", None, 0.1,
                           1, 1, 1, 0, "{}", time.time()))
    status, html, _ = await syn_site.get(f"/run/{rid}/sample/{quote(odd_id, safe='')}")
    assert status == 200 and "a/b c?d" in html


async def test_epochs_of_a_sample_each_have_a_page(syn_store, syn_site) -> None:
    rid = vh.synthetic_run(syn_store, 2)
    second = list(vh.sample_row(0))
    second[1], second[6] = 1, "the second try"
    syn_store.record(rid, tuple(second))
    _, html, _ = await syn_site.get(f"/run/{rid}")
    assert sample_ids(html) == ["s0000", "s0000", "s0001"] and "#1</span>" in html
    _, html, _ = await syn_site.get(f"/run/{rid}/sample/s0000?epoch=1")
    assert "the second try" in html and "epoch 1" in html
    assert f'href="/run/{rid}/sample/s0000?epoch=0"' in html  # previous: epoch 0
    assert f'href="/run/{rid}/sample/s0001?epoch=0"' in html  # next: the next sample
    _, html, _ = await syn_site.get(f"/run/{rid}/sample/s0000")  # no epoch: the first
    assert "answer 0" in html and "the second try" not in html


# -- the command ------------------------------------------------------------------------
def _assay(*args: str, **kw: Any) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "assay", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kw)


def test_assay_view_serves_until_interrupted_and_reports_a_busy_port(syn_store) -> None:
    import signal
    import urllib.request

    rid = vh.synthetic_run(syn_store, 3)
    proc = _assay("view", "--no-browser")
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        url = re.search(r"http://127\.0\.0\.1:\d+/", line)
        assert url, line
        with urllib.request.urlopen(url.group(0) + f"run/{rid}", timeout=10) as r:
            assert r.status == 200 and rid in r.read().decode()
        port = url.group(0).rsplit(":", 1)[1].strip("/")
        busy = subprocess.run([sys.executable, "-m", "assay", "view", "--no-browser",
                               "--port", port], capture_output=True, text=True, timeout=60)
        assert busy.returncode == 2
        assert busy.stderr.strip().splitlines() == [
            f"error: port {port} on 127.0.0.1 is in use; choose another with --port "
            "(0 picks a free one)"]
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(15)
    assert proc.returncode == 0


def test_assay_view_without_a_store_is_one_line(tmp_path: Path) -> None:
    env = dict(os.environ, ASSAY_HOME=str(tmp_path / "empty"))
    p = subprocess.run([sys.executable, "-m", "assay", "view", "--no-browser"], env=env,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert p.stderr.startswith("error: no store at") and not (tmp_path / "empty").exists()


# -- the comparison -----------------------------------------------------------------------
def _mcnemar_p(broken: int, fixed: int) -> float:
    """Two-sided exact McNemar p-value, from the binomial distribution written out."""
    n, k = broken + fixed, min(broken, fixed)
    return min(1.0, 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n)


async def test_compare_page_shows_the_paired_test_counts_and_flips(syn_store,
                                                                   syn_site) -> None:
    a = vh.synthetic_run(syn_store, 40)
    b = vh.synthetic_run(syn_store, 40, pattern=lambda i: {"value": float(i % 2),
                                                           "category": f"c{i % 4}"})
    pairs = [(_truth(i) == "correct", i % 2 == 1) for i in range(40) if _truth(i) != "error"]
    both = sum(x and y for x, y in pairs)
    a_only = sum(x and not y for x, y in pairs)
    b_only = sum(y and not x for x, y in pairs)
    neither = sum(not x and not y for x, y in pairs)
    status, html, _ = await syn_site.get(f"/compare?a={a}&b={b}&by=category")
    assert status == 200
    table = html.split('id="contingency"')[1].split("</table>")[0]
    assert re.findall(r'<td class="num">(\d+)</td>', table) == [
        str(both), str(a_only), str(b_only), str(neither)]
    assert f'<span id="compare-p">{_mcnemar_p(a_only, b_only):.4f}</span>' in html
    assert "4 excluded" in html  # A's errors are left out of the test, never counted wrong
    delta = (both + b_only - both - a_only) / len(pairs)
    assert f'<strong id="compare-delta">{delta:.3f}</strong>' in html
    fixed = html.split('id="flips-fixed"')[1].split("</section>")[0]
    want = [f"s{i:04d}" for i in range(40) if _truth(i) == "wrong" and i % 2 == 1]
    assert re.findall(r"<code>(s\d+)</code>", fixed) == want
    assert f'href="/run/{a}/sample/{want[0]}"' in fixed
    assert f'href="/run/{b}/sample/{want[0]}"' in fixed
    cats = html.split('id="compare-categories"')[1].split("</table>")[0]
    assert re.findall(r"<tr><td>(c\d)</td>", cats) == ["c0", "c1", "c2", "c3"]
    # unknown runs are a 404 page; a form when the runs are not both given
    status, html, _ = await syn_site.get(f"/compare?a=nope&b={b}")
    assert status == 404 and "nope" in html
    status, html, _ = await syn_site.get(f"/compare?a={a}")
    assert status == 200 and 'id="compare-pick"' in html and f'value="{b}"' in html
