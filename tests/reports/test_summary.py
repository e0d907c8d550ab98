"""``assay report RUN --summary``: the one-page summary for a product owner.

Runs are made for real (the engine over real HTTP to the fake OpenAI server, a task file
with categories, MT-Bench's task file with a judge, a CLI run killed with ``kill -9``);
the summary is written through the ``report`` command and its numbers are checked
against the stored metrics and against what the fake server was told to answer.
"""

from __future__ import annotations

import json
import math
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from markupsafe import escape

import assay
from assay.cli.app import app
from assay.reports.pages import md_escape
from assay.reports.summary import NUMBER, PERCENT, Scale, fmt_with_interval, value_scale
from assay.store.sqlite import Store
from assay.testing import Rule

ECHO = Rule(r"Repeat after me: (\S+)", "Answer: \\1")
MTBENCH = Path(__file__).resolve().parents[1] / "gallery" / "fixtures" / "mtbench"
XSS_MODEL = "openai/<script>alert(1)</script>"
XSS_TOPIC = "<script>alert(2)</script>"
TOPICS_TASK = '''\
from assay.tasks.qa import QATask
from assay.metrics.summary import score_summary
from assay.tasks.registry import task


@task("topics")
class Topics(QATask):
    """qa with a topic per row and the accuracy per topic (``by_topic``)."""

    def samples(self):
        out = super().samples()
        for s in out:
            s.metadata["topic"] = s.row["topic"]
        return out

    @classmethod
    def metrics(cls, results, options=None):
        m = super().metrics(results, options)
        groups = {}
        for r in results:
            groups.setdefault(r.metadata["topic"], []).append(r)
        m["by_topic"] = {k: score_summary(v)["score"] for k, v in sorted(groups.items())}
        return m
'''


def wilson(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def write_rows(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def repeat_rows(n: int, prefix: str = "w") -> list[dict[str, Any]]:
    return [{"id": f"{prefix}{i}", "question": f"Repeat after me: {prefix}{i}",
             "answer": f"{prefix}{i}"} for i in range(n)]


def report(*args: str) -> str:
    """``assay report ARGS`` through click; its output."""
    result = CliRunner().invoke(app, ["report", *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def summary(run_id: str, out: Path) -> tuple[str, str]:
    """Write the summary of ``run_id`` into ``out``: (summary.md, summary.html)."""
    printed = report(run_id, "--summary", "--out", str(out))
    assert printed.splitlines() == [f"summary_markdown: {out / 'summary.md'}",
                                    f"summary_html: {out / 'summary.html'}"]
    return ((out / "summary.md").read_text(encoding="utf-8"),
            (out / "summary.html").read_text(encoding="utf-8"))


def stored_metrics(run_id: str) -> dict[str, Any]:
    store = Store()
    try:
        return store.get_run(run_id)["metrics"]
    finally:
        store.close()


def verdict_of(md: str) -> str:
    """The bold verdict line at the top of summary.md."""
    found = re.search(r"^\*\*(.+)\*\*$", md, re.M)
    assert found, md
    return found.group(1)


def section(md: str, title: str) -> str:
    assert f"## {title}" in md, md
    return md.split(f"## {title}", 1)[1].split("\n## ", 1)[0]


# -- the headline, errors apart, and the two report levels ----------------------------------
@pytest.fixture
def run_with_errors(fake_server, tmp_path):
    """40 questions: 25 answered right, 12 wrong, 3 whose calls fail with HTTP 500 even
    after a retry (errors, never wrong answers)."""
    rows = (repeat_rows(25, "ok") + [{"id": f"no{i}", "question": f"Repeat after me: no{i}",
                                      "answer": "yes"} for i in range(12)]
            + [{"id": f"boom{i}", "question": f"Please boom {i}", "answer": "x"}
               for i in range(3)])
    srv = fake_server(rules=[Rule(r"boom", {"status": 500, "error": "upstream down"}), ECHO])
    result = assay.evaluate("qa", model="openai/fake", base_url=srv.base_url,
                            data=str(write_rows(tmp_path / "d.jsonl", rows)), quiet=True,
                            max_retries=1, retry_initial=0.01)
    return result, srv


def test_headline_sentence_matches_the_stored_metrics_and_errors_stand_apart(
        run_with_errors, tmp_path):
    result, srv = run_with_errors
    # each failing question was sent twice (the retry), then recorded as an error
    assert sum("boom" in r["messages"][-1]["content"] for r in srv.requests) == 6
    acc = stored_metrics(result.run_id)["normalized_match"]
    assert (acc["successes"], acc["n"]) == (25, 37)  # the 3 errors are not in the rate
    assert (acc["ci_low"], acc["ci_high"]) == pytest.approx(wilson(25, 37), abs=1e-9)
    md, html = summary(result.run_id, tmp_path / "out")
    sentence = (f"Answered 25 of 37 correctly: {acc['value'] * 100:.1f}% (95% interval "
                f"{acc['ci_low'] * 100:.1f}%–{acc['ci_high'] * 100:.1f}%).")
    assert sentence == "Answered 25 of 37 correctly: 67.6% (95% interval 51.5%–80.4%)."
    assert sentence in section(md, "Result") and sentence in html
    errors = "3 samples failed to run (not counted as wrong)."
    assert f"**{errors}**" in md and f'<p class="errors">{errors}</p>' in html
    # Wilson's interval is uneven (16 points below, 13 above): shown as itself, never ±
    assert verdict_of(md) == ("68% correct (95% interval 51.5%–80.4%), too few samples to be "
                              "sure; 3 samples failed to run.")
    assert f'<p class="verdict">{verdict_of(md)}</p>' in html
    facts = section(md, "What was evaluated")
    assert "- Model: openai/fake\n" in facts and "- Samples: 40\n" in facts
    assert "- Status: finished\n" in facts and "partial" not in md.lower()
    # --summary writes the summary only; --out holds no full report
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["summary.html",
                                                                     "summary.md"]
    # the full report, in the run's folder, is where the summary sends readers
    assert "full report: report.md" not in md  # not beside the summary in --out
    store = Store()
    run_dir = store.runs_dir / result.run_id
    store.close()
    assert f"(HTML: {(run_dir / 'report.html').resolve().as_uri()})" in md


def test_summary_in_the_run_folder_links_the_full_report_beside_it(run_with_errors):
    result, _ = run_with_errors
    printed = report(result.run_id, "--summary")
    store = Store()
    run_dir = store.runs_dir / result.run_id
    store.close()
    assert f"summary_html: {run_dir / 'summary.html'}" in printed
    html = (run_dir / "summary.html").read_text(encoding="utf-8")
    assert '<a href="report.html">report.html</a>' in html
    assert (run_dir / "report.html").exists()


def test_without_summary_the_full_reports_are_written_as_before(run_with_errors, tmp_path):
    result, _ = run_with_errors
    out = tmp_path / "full"
    printed = report(result.run_id, "--out", str(out))
    assert sorted(p.name for p in out.iterdir()) == ["report.html", "report.md",
                                                     "results.jsonl"]
    assert printed.splitlines() == [f"markdown: {out / 'report.md'}",
                                    f"html: {out / 'report.html'}",
                                    f"results: {out / 'results.jsonl'}"]
    lo, hi = wilson(25, 37)
    assert (f"**normalized_match 0.676 [{lo:.3f}, {hi:.3f}] (25/37)**"
            in (out / "report.md").read_text())
    assert len((out / "results.jsonl").read_text().splitlines()) == 40


def test_a_run_where_every_call_failed_says_nothing_was_scored(fake_server, tmp_path):
    srv = fake_server(rules=[Rule(r".", {"status": 500, "error": "down"})])
    result = assay.evaluate("qa", model="openai/fake", base_url=srv.base_url, quiet=True,
                            data=str(write_rows(tmp_path / "d.jsonl", repeat_rows(3))),
                            max_retries=0)
    md, html = summary(result.run_id, tmp_path / "out")
    # the run ended failed (every sample errored): said first, with its most common error
    assert verdict_of(md) == "The run failed: no sample could be scored: all 3 failed to run."
    assert "This run failed: 3 of 3 samples failed; most common error (3x): " in md
    assert "retries the samples that failed" in md and "Partial result" not in md
    assert "**3 samples failed to run (not counted as wrong).**" in md
    assert "No sample could be scored." in html and "%" not in section(md, "Result")


# -- a run stopped half way ------------------------------------------------------------------
def test_a_running_then_killed_run_says_its_metrics_come_when_it_finishes(tmp_path, workspace):
    from assay.testing.fake_server import FakeServer

    data = write_rows(tmp_path / "d.jsonl", repeat_rows(10))
    db = workspace / "assay.db"

    def stored_samples() -> int:
        if not db.exists():
            return 0
        con = sqlite3.connect(db)
        try:
            return con.execute("SELECT COUNT(*) FROM samples").fetchone()[0]
        except sqlite3.OperationalError:  # tables not made yet
            return 0
        finally:
            con.close()

    # three requests answered, the fourth held open: the run stops at 3 of 10 samples
    with FakeServer(rules=[ECHO], hold_after=3) as srv:
        proc = subprocess.Popen(
            [sys.executable, "-m", "assay", "run", "qa", "--data", str(data), "--model",
             "openai/fake", "--base-url", srv.base_url, "--max-connections", "1",
             "--no-cache", "-q"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env=dict(os.environ))
        try:
            deadline = time.monotonic() + 60
            while stored_samples() < 3 or len(srv.requests) < 4:
                assert proc.poll() is None, proc.communicate()
                assert time.monotonic() < deadline, "the run never got to 3 samples"
                time.sleep(0.02)
            store = Store()
            run_id = store.list_runs(1)[0]["id"]
            store.close()
            md, html = summary(run_id, tmp_path / "running")
            note = ("This run is still running: 3 of 10 samples have finished so far; its "
                    "metrics are computed when the run finishes or is resumed.")
            assert f"> **Warning: {note}**" in md
            assert f'<div class="partial" role="alert">{note}</div>' in html
            # a reader shows what the store has; it never computes a run's metrics
            assert verdict_of(md) == ("Partial result (running): No metrics yet: metrics are "
                                      "computed when the run finishes or is resumed.")
            assert "%" not in section(md, "Result")
            assert stored_metrics(run_id) is None
        finally:
            os.kill(proc.pid, signal.SIGKILL)
            proc.communicate()
    md, html = summary(run_id, tmp_path / "killed")
    note = (f"This run was interrupted: only 3 of 10 samples were evaluated; its metrics are "
            f"computed when the run finishes or is resumed. Resume it with "
            f"'assay run qa --resume {run_id}'.")
    assert f"> **Warning: {note}**" in md
    assert f'<div class="partial" role="alert">{escape(note)}</div>' in html
    assert verdict_of(md).startswith("Partial result (interrupted): No metrics yet")
    assert "No metrics yet: metrics are computed when the run finishes" in section(md, "Result")
    assert "- Samples: 3\n" in md and "- Status: interrupted (partial result)" in md
    assert "<strong>(partial result)</strong>" in html
    assert stored_metrics(run_id) is None


# -- categories, and every string escaped ----------------------------------------------------
def test_strongest_and_weakest_topics_and_escaped_strings(fake_server, tmp_path):
    (tmp_path / "topics_task.py").write_text(TOPICS_TASK, encoding="utf-8")

    def rows(topic: str, n: int, right: int) -> list[dict[str, Any]]:
        key = re.sub(r"\W", "", topic)
        return [{"id": f"{key}{i}", "question": f"Repeat after me: {key}{i}",
                 "answer": f"{key}{i}" if i < right else "nope", "topic": topic}
                for i in range(n)]

    data = write_rows(tmp_path / "t.jsonl", rows("easy", 35, 35) + rows("medium", 10, 5)
                      + rows(XSS_TOPIC, 6, 1) + rows("hard", 10, 0))
    srv = fake_server(rules=[ECHO])
    result = assay.evaluate(f"{tmp_path / 'topics_task.py'}@topics", model=XSS_MODEL,
                            base_url=srv.base_url, data=str(data), quiet=True)
    by_topic = stored_metrics(result.run_id)["by_topic"]
    assert {k: (v["successes"], v["n"]) for k, v in by_topic.items()} == {
        "easy": (35, 35), "medium": (5, 10), XSS_TOPIC: (1, 6), "hard": (0, 10)}
    md, html = summary(result.run_id, tmp_path / "out")

    def line(topic: str, few: bool) -> str:
        v = by_topic[topic]
        return (f"- {topic}: {v['value'] * 100:.1f}% (95% interval {v['ci_low'] * 100:.1f}%–"
                f"{v['ci_high'] * 100:.1f}%), {v['n']} samples" + (" (few samples)" * few))

    part = section(md, "Strongest and weakest by topic (4 in all)")
    strongest, weakest = part.split("Weakest:")
    assert strongest.split("Strongest:")[1].strip() == "\n".join(
        [line("easy", False), line("medium", True)])
    assert weakest.strip() == "\n".join(
        [line("hard", True), line(XSS_TOPIC, True).replace(XSS_TOPIC, md_escape(XSS_TOPIC))])
    # every data string is inert: HTML autoescaped, Markdown's tags backslash-escaped
    assert "<script" not in html.lower() and "<script" not in md.replace("\\<", "").lower()
    for raw in (XSS_MODEL, XSS_TOPIC):
        assert str(escape(raw)) in html, raw
        assert md_escape(raw) in md and md_escape(raw) != raw, raw
    assert f"<title>Summary · topics · {escape(XSS_MODEL)} · {result.run_id}</title>" in html
    assert "<h2>Strongest and weakest by topic (4 in all)</h2>" in html
    assert f'<li>{escape(XSS_TOPIC)}: 16.7% (95% interval' in html
    assert not re.search(r"<script|<link|@import|\b(?:src|href)\s*=\s*[\"']?(?:https?:)?//",
                         html, re.I)  # one self-contained file, no scripts


# -- the previous run of the same task and model ---------------------------------------------
def test_the_previous_run_of_the_same_task_and_model_is_compared(fake_server, tmp_path):
    data = str(write_rows(tmp_path / "d.jsonl", repeat_rows(40)))
    wrong = fake_server(rules=[Rule(r".", "Answer: nope")])
    right = fake_server(rules=[ECHO])
    before = assay.evaluate("qa", model="openai/fake", base_url=wrong.base_url, data=data,
                            quiet=True)
    # another model's run in between is not "the previous run"
    assay.evaluate("qa", model="openai/other", base_url=right.base_url, data=data, quiet=True)
    other_data = str(write_rows(tmp_path / "e.jsonl", repeat_rows(40)[:39]))
    assay.evaluate("qa", model="openai/fake", base_url=wrong.base_url, data=other_data,
                   quiet=True)  # nor a run of other data
    after = assay.evaluate("qa", model="openai/fake", base_url=right.base_url, data=data,
                           quiet=True, cache=False)
    assert after.metrics["normalized_match"]["successes"] == 40
    md, html = summary(after.run_id, tmp_path / "after")
    day = time.strftime("%Y-%m-%d", time.localtime(
        Store().get_run(before.run_id)["created_at"]))
    sentence = (f"Against the previous run of this task and model ({before.run_id}, {day}), "
                "on the 40 samples both runs scored: 0.0% before, 100.0% now (+100.0 points, "
                "95% interval +")
    assert sentence in section(md, "Compared with the previous run")
    # the two runs were served from two endpoints: said, as a change of setting may be
    # what moved the number
    assert section(md, "Compared with the previous run").strip().endswith(
        "points): a significant improvement. The two runs' configurations differ: endpoint "
        f"{wrong.base_url} → {right.base_url}.")
    assert sentence in html
    assert verdict_of(md).endswith(
        "; significantly better than the previous run (+100.0 points on 40 shared samples).")
    md_first, _ = summary(before.run_id, tmp_path / "before")
    assert "## Compared with the previous run" not in md_first  # nothing before it


def test_no_change_on_a_rerun_says_so(fake_server, tmp_path):
    data = str(write_rows(tmp_path / "d.jsonl", repeat_rows(30)))
    srv = fake_server(rules=[Rule(r"w1\d", "Answer: nope"), ECHO])
    assay.evaluate("qa", model="openai/fake", base_url=srv.base_url, data=data, quiet=True)
    again = assay.evaluate("qa", model="openai/fake", base_url=srv.base_url, data=data,
                           quiet=True, cache=False)
    md, _ = summary(again.run_id, tmp_path / "out")
    assert verdict_of(md).startswith("67% correct (95% interval 48.8%–80.8%)")  # Wilson: uneven
    assert verdict_of(md).endswith(
        "; no significant change from the previous run on 30 shared samples.")
    assert ("66.7% before, 66.7% now (+0.0 points, 95% interval"
            in section(md, "Compared with the previous run"))


# -- a judge's 1-10 scale is never a percentage ---------------------------------------------
def test_a_judge_scale_is_shown_on_its_scale_not_as_a_percentage(fake_server, tmp_path,
                                                                   monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    ratings = {"1": 9, "2": 3, "3": 6, "4": 8}  # by question: writing, math, coding, humanities

    def players(body: dict[str, Any]) -> str:
        if body["model"] != "judge":
            return "an answer"
        question = re.search(r"\[Q-(\d+)\]", body["messages"][1]["content"]).group(1)
        return f"Rating: [[{ratings[question]}]]"

    srv = fake_server(responder=players)
    result = assay.evaluate(f"{MTBENCH / 'mtbench_task.py'}@mtbench", "openai/agent",
                            base_url=srv.base_url, quiet=True, judge_model="openai/judge",
                            judge_base_url=srv.base_url,
                            data=str(MTBENCH / "data" / "mt_bench" / "question.jsonl"))
    m = stored_metrics(result.run_id)
    score = m["mtbench_score"]
    assert score["value"] == pytest.approx(6.5) and score["questions"] == 4
    md, html = summary(result.run_id, tmp_path / "out")
    sentence = (f"mtbench_score: {score['value']:.2f} on the 1–10 scale (95% interval "
                f"{score['ci_low']:.2f}–{score['ci_high']:.2f}), over 4 questions.")
    result_md = section(md, "Result")
    assert sentence in result_md and sentence in html
    # 6.5 never shown as 650 (%): the run id, made by the clock, may hold those digits
    assert "%" not in result_md.replace("95%", "") and "650" not in md.replace(result.run_id, "")
    assert "%" not in verdict_of(md).replace("95% interval", "")
    # the interval is cut at the scale's top (10): uneven, so shown as itself, never ±
    assert verdict_of(md).startswith(f"mtbench_score 6.5 out of 10 (95% interval "
                                     f"{score['ci_low']:.2f}–"
                                     f"{score['ci_high']:.2f})")
    assert "- Judge: openai/judge" in md
    cats = section(md, "Strongest and weakest by category (4 in all, on the 1–10 scale)")
    assert "- writing: 9.00 (no interval: too few samples), 1 question (few samples)" in cats
    assert cats.index("writing") < cats.index("humanities") < cats.index("Weakest:")
    assert cats.index("Weakest:") < cats.index("- math: 3.00") < cats.index("- coding: 6.00")


@pytest.mark.parametrize("name, entry, metrics, expected", [
    # a proportion is a percentage, whatever its name
    ("valid_rate", {"value": 0.5, "successes": 1, "n": 2, "ci_low": 0.1, "ci_high": 0.9}, {},
     PERCENT),
    # a mean of pass/fail scores (epochs that disagree) is still a rate
    ("accuracy", {"value": 0.6, "n": 9, "ci_low": 0.4, "ci_high": 0.8}, {}, PERCENT),
    # BLEU is on 0-100 (the registry's scale) even when its value is below 1
    ("bleu", {"value": 0.8, "n": 9, "ci_low": 0.2, "ci_high": 1.4}, {}, Scale("scale", 0, 100)),
    # the run's own scale (MT-Bench)
    ("score", {"value": 6.5, "n": 8, "ci_low": 5.0, "ci_high": 8.0}, {"scale": [1, 10]},
     Scale("scale", 1, 10)),
    # a 1-5 mean nobody declared, and a number of unknown meaning: printed as is
    ("overall_mean", {"value": 3.8, "n": 9, "ci_low": 3.5, "ci_high": 4.1}, {}, NUMBER),
    ("score", {"value": 0.5, "n": 9, "ci_low": 0.3, "ci_high": 0.7}, {}, NUMBER),
])
def test_how_each_kind_of_value_is_shown(name, entry, metrics, expected):
    scale = value_scale(name, entry, metrics)
    assert scale == expected
    text = fmt_with_interval(entry, scale)
    assert ("%" in text.replace("95%", "")) == (expected == PERCENT)


def test_judge_scale_and_plain_number_texts():
    entry = {"value": 3.8, "n": 9, "ci_low": 3.5, "ci_high": 4.1}
    assert fmt_with_interval(entry, NUMBER) == "3.8 (95% interval 3.5–4.1)"
    assert (fmt_with_interval({"value": 6.5, "ci_low": 5.0, "ci_high": 8.0}, Scale("scale", 1, 10))
            == "6.50 on the 1–10 scale (95% interval 5.00–8.00)")


def test_a_plan_run_is_refused_with_a_hint(tmp_path):
    """--summary names a task run; a plan's own report already spans its tasks."""
    store = Store()
    rid = store.create_run(task="plan", kind="plan", spec={"task": "plan"}, model={},
                           dataset={}, package_version="0")
    store.close()
    result = CliRunner().invoke(app, ["report", rid, "--summary"])
    assert result.exit_code != 0
    assert "is a plan run" in str(result.exception)


