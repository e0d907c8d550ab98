"""Reports written from the store: escaped self-contained HTML, Markdown metrics, results.jsonl."""

from __future__ import annotations

import json
import math
import re

import pytest
from markupsafe import escape

import assay
from assay.reports.render import write_reports
from assay.store.sqlite import Store
from assay.testing import Rule

SCRIPT_Q = 'Is <script>alert("x")</script> safe to embed?'
IMG = "<img src=x onerror=alert(1)>"
BAD_ERROR = "bad request <b>nope</b>"
MODEL = "openai/<em>fake</em>"  # model names are user strings too

ROWS = [
    {"id": "xss", "question": SCRIPT_Q, "answer": IMG},
    {"id": "france", "question": "What is the capital of France?", "answer": "Paris"},
    {"id": "japan", "question": "What is the capital of Japan?", "answer": "Tokyo"},
    {"id": "boom", "question": "Please explode now", "answer": "never"},
]
RULES = [
    Rule(r"<script>", f"Answer: {IMG}"),
    Rule(r"France", "Answer: Paris"),
    Rule(r"Japan", "Answer: Kyoto"),
    Rule(r"explode", {"status": 400, "error": BAD_ERROR}),  # non-transient: no retries
]
RESULT_FIELDS = {"sample_id", "epoch", "input", "target", "output", "prediction", "scores",
                 "error", "latency_s", "model_s", "wait_s", "input_tokens", "output_tokens",
                 "transcript", "metadata", "sample", "outcome", "seq", "model_calls",
                 "cache_hits", "created_at"}


def wilson(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


@pytest.fixture
def finished_run(fake_server, tmp_path):
    srv = fake_server(rules=RULES)
    data = tmp_path / "html.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    result = assay.evaluate("qa", model=MODEL, base_url=srv.base_url, data=str(data),
                            quiet=True)
    return result, srv


def test_run_metrics_count_errors_apart(finished_run):
    result, srv = finished_run
    m = result.metrics
    assert (m["n_samples"], m["n_scored"], m["n_errors"]) == (4, 3, 1)
    acc = m["normalized_match"]
    assert (acc["successes"], acc["n"]) == (2, 3)  # the error is not a wrong answer
    assert acc["ci_low"] == pytest.approx(wilson(2, 3)[0], abs=1e-9)
    assert acc["ci_high"] == pytest.approx(wilson(2, 3)[1], abs=1e-9)
    assert m["score_errors_as_wrong"] == pytest.approx(0.5)
    # the 400 was not retried
    assert sum("explode" in r["messages"][-1]["content"] for r in srv.requests) == 1


def test_html_escapes_every_dataset_and_model_string(finished_run):
    result, _ = finished_run
    html = result.reports["html"].read_text(encoding="utf-8")
    for raw in (SCRIPT_Q, IMG, BAD_ERROR, MODEL):
        assert str(escape(raw)) in html, raw
    assert f"<title>qa · {escape(MODEL)} · {result.run_id}</title>" in html
    assert "<em>" not in html
    assert "<script" not in html.lower()
    assert "<img" not in html.lower()
    assert "<b>nope" not in html
    assert "onerror=alert(1)>" not in html


def test_html_is_self_contained(finished_run):
    result, _ = finished_run
    html = result.reports["html"].read_text(encoding="utf-8")
    assert html.lstrip().lower().startswith("<!doctype html>")
    assert "<style>" in html  # styles inline
    assert "<link" not in html.lower()
    assert not re.search(r"<script[^>]*\bsrc\s*=", html, re.I)
    assert not re.search(r"""\b(?:src|href)\s*=\s*["']?\s*(?:https?:)?//""", html, re.I)
    assert not re.search(r"@import|url\(\s*['\"]?(?:https?:)?//", html, re.I)
    assert "<svg" in html  # the chart is inline SVG


def test_html_shows_errors_apart_from_wrong_answers(finished_run):
    result, _ = finished_run
    html = result.reports["html"].read_text(encoding="utf-8")
    assert "<h2>Errors</h2>" in html
    rows = {m.group(1): m.group(0) for m in re.finditer(r"<tr><td>(\w+)</td>.*?</tr>", html,
                                                        re.S)}
    assert 'class="error">error</td>' in rows["boom"]
    assert "HTTP 400" in rows["boom"] and str(escape(BAD_ERROR)) in rows["boom"]
    assert 'class="wrong">wrong</td>' in rows["japan"]
    assert 'class="correct">correct</td>' in rows["france"]
    assert 'class="correct">correct</td>' in rows["xss"]


def test_markdown_has_metrics_table_with_interval_and_errors_section(finished_run):
    result, _ = finished_run
    md = result.reports["markdown"].read_text(encoding="utf-8")
    lo, hi = wilson(2, 3)
    assert f"| normalized_match | 0.667 [{lo:.3f}, {hi:.3f}] (2/3) |" in md
    assert f"**normalized_match 0.667 [{lo:.3f}, {hi:.3f}] (2/3)**" in md
    assert "95% interval" in md
    assert "| n_errors | 1 |" in md
    errors = md.split("## Errors", 1)[1].split("##", 1)[0]
    # HTML in an error body is text in report.md, never markup
    assert "| 1 | HTTP 400" in errors and "bad request \\<b>nope\\</b>" in errors
    assert BAD_ERROR not in errors
    samples_md = md.split("## Samples", 1)[1]
    sample_lines = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[1:-1]]
                    for line in samples_md.splitlines() if line.startswith("| ")}
    assert sample_lines["id"][-3:] == ["verdict", "why", "extraction"]
    assert sample_lines["boom"][-3:] == ["error", "", ""]
    assert sample_lines["japan"][-3] == "wrong"
    assert sample_lines["japan"][-2]  # the scorer's reason for the wrong answer
    assert sample_lines["japan"][-1] in ("marker", "full")  # how the answer was found
    assert result.run_id in md


def test_results_jsonl_has_one_documented_line_per_sample(finished_run):
    result, _ = finished_run
    lines = result.reports["results"].read_text(encoding="utf-8").splitlines()
    recs = [json.loads(line) for line in lines]
    assert [r["sample_id"] for r in recs] == ["xss", "france", "japan", "boom"]
    for r in recs:
        assert set(r) == RESULT_FIELDS
        assert r["epoch"] == 0
    by_id = {r["sample_id"]: r for r in recs}
    xss = by_id["xss"]
    assert xss["target"] == IMG and SCRIPT_Q in xss["input"]
    assert xss["output"] == f"Answer: {IMG}" and xss["prediction"] == IMG
    assert xss["scores"]["normalized_match"]["value"] == 1.0
    assert xss["transcript"][-1] == {"role": "assistant", "content": f"Answer: {IMG}"}
    assert xss["metadata"]["source"].endswith("html.jsonl:1")
    assert by_id["japan"]["prediction"] == "Kyoto"
    assert by_id["japan"]["scores"]["normalized_match"]["value"] == 0.0
    boom = by_id["boom"]
    assert "HTTP 400" in boom["error"] and BAD_ERROR in boom["error"]
    assert boom["scores"] == {} and boom["prediction"] is None


def test_reports_are_rebuilt_from_the_store_alone(finished_run, tmp_path):
    result, _ = finished_run
    before = {k: p.read_bytes() for k, p in result.reports.items()}
    store = Store()
    try:
        out = tmp_path / "again"
        paths = write_reports(store, result.run_id[:-1], out)  # a unique prefix
    finally:
        store.close()
    assert {k: p.read_bytes() for k, p in paths.items()} == before
    assert all(p.parent == out for p in paths.values())


def test_markdown_cells_keep_the_table_intact(fake_server, tmp_path):
    srv = fake_server(rules=[Rule(r"pipe", "Answer: a | b\nsecond line")])
    data = tmp_path / "pipes.jsonl"
    data.write_text(json.dumps({"id": "p", "question": "Has a | pipe\nand a newline?",
                                "answer": "a | b"}) + "\n", encoding="utf-8")
    result = assay.evaluate("qa", model="openai/fake", base_url=srv.base_url, data=str(data))
    md = result.reports["markdown"].read_text(encoding="utf-8")
    row = next(line for line in md.splitlines() if line.startswith("| p |"))
    assert r"Has a \| pipe and a newline?" in row
    # seven columns: id, question, target, answer, verdict, why, extraction
    assert len(re.split(r"(?<!\\)\|", row.strip())) == 9


def test_big_runs_list_a_capped_sample_table_errors_and_wrong_first(tmp_path) -> None:
    """The per-sample table stops at 1,000 rows (errors and wrong answers first) and
    says so; results.jsonl keeps every sample."""
    from assay.reports.render import MAX_SAMPLE_ROWS, write_reports
    from assay.store.sqlite import Store

    store = Store(tmp_path / "assay.db")
    run = store.create_run(task="qa", spec={"task": "qa"}, model={"model": "m"},
                           dataset={}, package_version="t")
    n = 2500
    for i in range(n):
        wrong = i % 500 == 7
        error = "HTTP 500 from x" if i == 2222 else None
        scores = {} if error else {"normalized": {"name": "normalized",
                                                  "value": 0.0 if wrong else 1.0,
                                                  "answer": "x" if wrong else "4"}}
        store.record(run, (f"s{i}", 0, i, json.dumps(f"q{i}"), json.dumps("4"), "[]", "out",
                           None if error else scores["normalized"]["answer"], json.dumps(scores),
                           error, 0.01, 1, 1, 1, 0, None, 0.0))
    store.set_run_status(run, "finished", {})
    paths = write_reports(store, run, tmp_path / "out")
    html = paths["html"].read_text()
    md = paths["markdown"].read_text()
    assert f"Showing {MAX_SAMPLE_ROWS:,} of {n:,} samples" in html
    assert f"Showing {MAX_SAMPLE_ROWS:,} of {n:,} samples" in md
    md_rows = [line for line in md.split("## Samples", 1)[1].splitlines()
               if line.startswith("| s")]
    assert len(md_rows) == MAX_SAMPLE_ROWS
    shown = {line.split("|")[1].strip() for line in md_rows}
    assert "s2222" in shown and all(f"s{i}" in shown for i in range(7, n, 500))
    assert "s2499" not in shown  # a correct one past the cap
    assert len(paths["results"].read_text().splitlines()) == n
    store.close()
