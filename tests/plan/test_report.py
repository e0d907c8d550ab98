"""The combined plan report, built from a real plan run: a parent ``plan`` run whose
children are real ``qa`` runs against the fake OpenAI-compatible server.

The fake server answers a known set right, wrong, unreadably or with an error, so every
number the report shows is checked against counts worked out here by hand.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

import assay
from assay.engine.finalize import metric_facts
from assay.pipelines.parent import run_step
from assay.plan.report import normalise, plan_summary, write_plan_report
from assay.plan.schema import Plan
from assay.store.sqlite import Store
from assay.testing import Rule

XSS_REQUEST = 'how good is <script>alert("req")</script> my model | really?'
XSS_HUB = 'org/<script>alert("hub")</script>'

MATH = [  # (id, question, answer, the fake model's reply)
    ("a1", "What is 1+1?", "2", "Answer: 2"),
    ("a2", "What is 2+2?", "4", "Answer: 4"),
    ("a3", "What is 3+3?", "6", "Answer: 6"),
    ("a4", "What is 4+4?", "8", "Answer: 5"),  # wrong
    ("a5", "What is 5+5?", "10", "I do not know"),  # no number: no answer extracted
    ("a6", "What is 6+6?", "12", {"status": 400, "error": "bad request <b>boom</b>"}),
]
TRIVIA = [
    ("b1", "Who wrote Hamlet? <img src=x onerror=alert(1)>", "Shakespeare",
     'Answer: <script>alert("out")</script>'),  # wrong, and an XSS payload
    ("b2", "Pick one: a|b or c", "a|b", "Answer: c"),  # wrong; a pipe in the target
    ("b3", "Capital of Peru?", "Lima", "Answer: Lima"),
    ("b4", "Capital of Chile?", "Santiago", "Answer: Quito"),  # wrong
]
TRACE = [{"step": "understand", "inputs": {"request": XSS_REQUEST},
          "outputs": {"capabilities": ["math", "reasoning"]},
          "reasons": ["the request names arithmetic"],
          "model_calls": [{"prompt": "classify", "reply": "<script>alert('trace')</script>"}],
          "answers": [{"question": "Which languages?", "answer": "English only"}]},
         {"step": "select", "reasons": ["gsm8k is the gallery's grade-school math set"]}]


def _jsonl(path: Path, rows: list[tuple[str, str, str, Any]]) -> Path:
    path.write_text("".join(json.dumps({"id": i, "question": q, "answer": a}) + "\n"
                            for i, q, a, _ in rows), encoding="utf-8")
    return path


def _plan(tasks: list[dict[str, Any]], request: str = XSS_REQUEST) -> Plan:
    return Plan(request=request, models={"model": "openai/fake"}, tasks=tasks, trace=TRACE,
                notes=["a note"])


def _task(task: str, caps: list[str], primary: str, **extra: Any) -> dict[str, Any]:
    return {"task": task, "capabilities": caps, "source": extra.pop("source", "builtin"),
            "metrics": [{"name": primary, "role": "primary", "why": "test"}], **extra}


def _run_plan(store: Store, plan: Plan, runs: list[tuple[str, dict[str, Any]]],
              base_url: str) -> tuple[str, list[str]]:
    """A parent plan run and one real child run per ``(task, options)``, in order."""
    pid = store.create_run(
        task="plan", kind="plan", spec={"task": "plan", "model": "openai/fake"},
        model={"model": "openai/fake"},
        dataset={"plan": plan.model_dump(mode="json"), "plan_file": "<b>plan</b>.yaml",
                 "plan_hash": "abc123"}, package_version=assay.__version__)
    children = [run_step(store, task, "openai/fake", options,
                         engine={"base_url": base_url, "max_retries": 0}, parent_id=pid)
                for task, options in runs]
    store.set_run_status(pid, "finished")
    return pid, children


@pytest.fixture
def server(fake_server: Any) -> Any:
    rules = [Rule(re.escape(q), reply) for _, q, _, reply in (*MATH, *TRIVIA)]
    return fake_server(rules=rules, default_reply="Answer: ???")


@pytest.fixture
def plan_run(server: Any, tmp_path: Path) -> Any:
    """Tasks: math (run), gsm8k (never run: its child is missing), trivia (a Hub task, run)."""
    plan = _plan([_task("qa", ["math", "reasoning"], "numeric_match"),
                  _task("gsm8k", ["math"], "numeric_match", source="gallery"),
                  _task("qa", ["knowledge", "reasoning"], "exact_match", source="hub",
                        hub={"id": XSS_HUB})])
    store = Store()
    pid, children = _run_plan(store, plan, [
        ("qa", {"data": str(_jsonl(tmp_path / "math.jsonl", MATH)), "scorer": "numeric"}),
        ("qa", {"data": str(_jsonl(tmp_path / "trivia.jsonl", TRIVIA)), "scorer": "exact"}),
    ], server.base_url)
    yield store, pid, children
    store.close()


def test_task_values_are_the_childrens_stored_metrics(plan_run: Any) -> None:
    store, pid, (math_run, trivia_run) = plan_run
    s = plan_summary(store, pid)
    math, gsm8k, trivia = s["tasks"]
    stored = store.get_run(math_run)["metrics"]["numeric_match"]
    # 3 right of 5 scored; the 400 is an error, apart from the rate
    assert (stored["successes"], stored["n"]) == (3, 5)
    assert math["value"] == stored and math["metric_key"] == "numeric_match"
    assert (math["run_id"], math["status"], math["n_errors"], math["n_samples"]) == (
        math_run, "finished", 1, 6)
    assert trivia["value"] == store.get_run(trivia_run)["metrics"]["exact_match"]
    assert (trivia["value"]["successes"], trivia["value"]["n"]) == (1, 4)
    assert trivia["label"] == f"hub:{XSS_HUB}" and trivia["verified"] is False
    md = write_plan_report(store, pid)["markdown"].read_text(encoding="utf-8")
    row = next(line for line in md.splitlines() if line.startswith("| qa |"))
    assert "0.600 [" in row and f"{stored['ci_low']:.3f}, {stored['ci_high']:.3f}] (3/5)" in row
    assert "| 1/6 |" in row and math_run in row and "hub (unverified)" in md


def test_primary_metric_is_read_before_the_headline(plan_run: Any) -> None:
    store, pid, (math_run, _) = plan_run
    metrics = store.get_run(math_run)["metrics"]
    own = {"value": 0.8, "ci_low": 0.5, "ci_high": 0.9, "successes": 4, "n": 5}
    store.set_metrics(math_run, {**metrics, "numeric_match": own})
    math = plan_summary(store, pid)["tasks"][0]
    assert (math["metric_key"], math["value"], math["normalised"]) == ("numeric_match", own, 0.8)
    # a primary with no value (nothing scored) is shown as such, not as another metric
    unset = {"value": None, "ci_low": None, "ci_high": None, "successes": 0, "n": 0}
    store.set_metrics(math_run, {**metrics, "numeric_match": unset})
    math = plan_summary(store, pid)["tasks"][0]
    assert (math["status"], math["value"], math["normalised"]) == ("finished", None, None)
    md = write_plan_report(store, pid)["markdown"].read_text(encoding="utf-8")
    assert "| numeric_match | no scored samples |" in md


def test_a_missing_child_is_not_run_and_shifts_nothing(plan_run: Any) -> None:
    store, pid, (_, trivia_run) = plan_run
    s = plan_summary(store, pid)
    gsm8k = s["tasks"][1]
    assert (gsm8k["status"], gsm8k["run_id"], gsm8k["value"], gsm8k["normalised"]) == (
        "not run", None, None, None)
    assert s["tasks"][2]["run_id"] == trivia_run  # not given to gsm8k
    assert s["counts"] == {"tasks": 3, "finished": 2, "not_run": 1}
    paths = write_plan_report(store, pid)
    md = paths["markdown"].read_text(encoding="utf-8")
    row = next(line for line in md.splitlines() if line.startswith("| gsm8k |"))
    assert row.count("not run") == 2 and "0.000" not in row and "| 0 |" not in row
    html = paths["html"].read_text(encoding="utf-8")
    assert "<td>gsm8k</td><td>gallery</td><td>numeric_match</td><td>not run</td>" in html


def test_radar_axes_are_means_of_the_tagged_tasks(plan_run: Any) -> None:
    store, pid, _ = plan_run
    s = plan_summary(store, pid)
    axes = {a["capability"]: a for a in s["capabilities"]}
    assert list(axes) == ["math", "reasoning", "knowledge"] and s["chart"] == "radar"
    # math: only the math task (3/5) was measured; gsm8k did not run (not a 0)
    assert axes["math"]["value"] == pytest.approx(3 / 5)
    assert axes["math"]["not_measured"] == ["gsm8k"]
    assert axes["reasoning"]["value"] == pytest.approx((3 / 5 + 1 / 4) / 2)
    assert axes["knowledge"]["value"] == pytest.approx(1 / 4)
    html = write_plan_report(store, pid)["html"].read_text(encoding="utf-8")
    svg = html[html.index('aria-label="capability radar"'):]
    svg = svg[: svg.index("</svg>")]
    assert svg.count("<circle") == 3
    assert "math (0.60)" in svg and "reasoning (0.42)" in svg and "knowledge (0.25)" in svg
    assert "<script" not in html.lower() and "http" not in svg  # self-contained, inline


def test_fewer_than_three_axes_draw_bars_and_say_why(server: Any, tmp_path: Path) -> None:
    store = Store()
    try:
        plan = _plan([_task("qa", ["math"], "numeric_match")], request="math only")
        pid, _ = _run_plan(store, plan, [("qa", {"data": str(_jsonl(tmp_path / "m.jsonl", MATH)),
                                                 "scorer": "numeric"})], server.base_url)
        s = plan_summary(store, pid)
        assert s["chart"] == "bars"
        assert any("a radar needs three axes" in n for n in s["notes"])
        html = write_plan_report(store, pid)["html"].read_text(encoding="utf-8")
        assert 'aria-label="capability bars"' in html and "capability radar" not in html
        assert 'width="204.0"' in html  # 0.6 of the 340-pixel bar
    finally:
        store.close()


def test_failure_categories_and_cases_are_the_right_samples(plan_run: Any) -> None:
    store, pid, _ = plan_run
    math, _, trivia = plan_summary(store, pid)["tasks"]
    f = math["failures"]
    assert {k: f[k] for k in ("samples", "errors", "no_answer", "wrong", "correct")} == {
        "samples": 6, "errors": 1, "no_answer": 1, "wrong": 1, "correct": 3}
    assert [e["count"] for e in f["error_messages"]] == [1]
    assert "boom" in f["error_messages"][0]["message"]
    ids = {w: [c["sample_id"] for c in math["cases"][w]] for w in ("worst", "best")}
    assert ids == {"worst": ["a4", "a5"], "best": ["a1", "a2"]}
    ids = {w: [c["sample_id"] for c in trivia["cases"][w]] for w in ("worst", "best")}
    # b4 answered wrong (score 0): never a "best" case (issue 24, point 7)
    assert ids == {"worst": ["b1", "b2"], "best": ["b3"]}
    md = write_plan_report(store, pid)["markdown"].read_text(encoding="utf-8")
    cases = md[md.index("## Cases: qa"):md.index("## Cases: gsm8k")]
    rows = [line for line in cases.splitlines() if line.startswith("| worst") or
            line.startswith("| best")]
    assert [r.split(" | ")[1] for r in rows] == ["a4", "a5", "a1", "a2"]
    assert "What is 4+4?" in rows[0] and "Answer: 5" in rows[0] and "| 8 |" in rows[0]
    assert "No scored samples (not run)" in md


def test_strings_are_escaped_in_html_and_markdown(plan_run: Any) -> None:
    store, pid, _ = plan_run
    paths = write_plan_report(store, pid)
    html = paths["html"].read_text(encoding="utf-8")
    md = paths["markdown"].read_text(encoding="utf-8")
    # (Markdown: every "<" that would open a tag is backslash-escaped)
    for text in (html, md.replace("\\<", "")):
        assert "<script" not in text.lower() and "<img" not in text and "<b>" not in text
    # the request, a model output, a dataset question, the hub id and the trace, as text
    assert "how good is &lt;script&gt;alert(&#34;req&#34;)&lt;/script&gt;" in html
    assert "Answer: &lt;script&gt;alert(&#34;out&#34;)&lt;/script&gt;" in html
    assert "Who wrote Hamlet? &lt;img src=x onerror=alert(1)&gt;" in html
    assert "hub:org/&lt;script&gt;" in html and "&lt;b&gt;plan&lt;/b&gt;.yaml" in html
    assert "Answer: \\<script>alert(\"out\")\\</script>" in md  # backslashed: inert
    assert "Who wrote Hamlet? \\<img src=x onerror=alert(1)>" in md
    assert "https://" not in html and "src=" not in html.replace("src=x", "")


def test_pipes_do_not_break_markdown_tables(plan_run: Any) -> None:
    store, pid, _ = plan_run
    md = write_plan_report(store, pid)["markdown"].read_text(encoding="utf-8")
    tables: list[list[str]] = [[]]
    for line in md.splitlines():
        if line.startswith("|"):
            tables[-1].append(line)
        elif tables[-1]:
            tables.append([])
    tables = [t for t in tables if t]
    assert len(tables) >= 6
    for table in tables:
        cells = {len(re.findall(r"(?<!\\)\|", line)) for line in table}
        assert len(cells) == 1, table
    assert "a\\|b" in md and "my model \\| really?" in md


def test_plan_and_trace_are_shown(plan_run: Any) -> None:
    store, pid, _ = plan_run
    paths = write_plan_report(store, pid)
    html = paths["html"].read_text(encoding="utf-8")
    md = paths["markdown"].read_text(encoding="utf-8")
    for text in (html, md):
        assert "assay_plan: 1" in text and "primary" in text
        assert "1. understand" in text and "2. select" in text
        assert "the request names arithmetic" in text and "English only" in text
        assert "alert(&#39;trace&#39;)" in text or "alert('trace')" in text
    plan_part = md[md.index("## The plan"):md.index("## How the plan was made")]
    assert "trace" not in plan_part and "understand" not in plan_part
    summary = json.loads(paths["json"].read_text(encoding="utf-8"))
    assert summary == json.loads(json.dumps(plan_summary(store, pid)))
    assert set(paths) == {"markdown", "html", "json"}
    assert paths["html"].parent == store.runs_dir / pid


def test_normalise_maps_scales_and_directions() -> None:
    assert normalise("exact_match", 0.7) == (0.7, None)
    # the direction is the registry's, as the runs stored it (none stored: higher)
    facts = metric_facts(["empty_answer_rate"])
    v, note = normalise("empty_answer_rate", 0.2, facts)
    assert v == pytest.approx(0.8) and "better when lower" in note
    assert normalise("empty_answer_rate", 0.2) == (0.2, None)
    v, note = normalise("mtbench_score", 5.5)
    assert v == pytest.approx(0.5) and "1-10 scale" in note
    assert normalise("bleu", 40.0)[0] == pytest.approx(0.4)
    v, note = normalise("exact_match", 3.0)
    assert v is None and "left off the radar" in note


def test_a_run_that_is_not_a_plan_is_refused(plan_run: Any) -> None:
    store, _, (math_run, _) = plan_run
    with pytest.raises(assay.errors.ConfigError, match="not a plan run"):
        plan_summary(store, math_run)


def test_an_unfinished_child_is_shown_as_such(plan_run: Any) -> None:
    store, pid, (_, trivia_run) = plan_run
    store.set_run_status(trivia_run, "failed")
    s = plan_summary(store, pid)
    trivia = s["tasks"][2]
    assert (trivia["status"], trivia["value"], trivia["normalised"]) == ("failed", None, None)
    axes = {a["capability"]: a["value"] for a in s["capabilities"]}
    assert axes == {"math": pytest.approx(0.6), "reasoning": pytest.approx(0.6),
                    "knowledge": None}
    md = write_plan_report(store, pid)["markdown"].read_text(encoding="utf-8")
    row = next(line for line in md.splitlines() if line.startswith("| hub:"))
    assert "| not finished |" in row and row.endswith("| failed (not finished) |")
    assert "| knowledge | not measured |" in md


def test_weakest_groups_of_a_breakdown(plan_run: Any) -> None:
    store, pid, (math_run, _) = plan_run

    def rate(k: int, n: int) -> dict[str, Any]:
        return {"value": k / n, "ci_low": 0.0, "ci_high": 1.0, "successes": k, "n": n}

    metrics = store.get_run(math_run)["metrics"]
    store.set_metrics(math_run, {
        **metrics,
        "by_level": {"1": rate(4, 4), "2": rate(1, 4), "3": rate(0, 4), "4": rate(2, 4)},
        "by_group": {"a": {"strict": rate(3, 4), "loose": rate(4, 4)},
                     "b": {"strict": rate(1, 4), "loose": rate(2, 4)}},
        "by_single": {"only": rate(0, 1)},  # one group: nothing to compare
    })
    weak = plan_summary(store, pid)["tasks"][0]["weakest_groups"]
    assert [(g["field"], g["group"]) for g in weak] == [
        ("level", "3"), ("level", "2"), ("level", "4"), ("group", "b"), ("group", "a")]
    md = write_plan_report(store, pid)["markdown"].read_text(encoding="utf-8")
    assert "| qa | level | 3 | 0.000 [0.000, 1.000] (0/4) |" in md


def test_children_given_by_the_runner_are_used_as_given(plan_run: Any) -> None:
    store, pid, (math_run, trivia_run) = plan_run
    given = plan_summary(store, pid, children=[math_run, None, trivia_run])
    assert given == plan_summary(store, pid)
    swapped = plan_summary(store, pid, children=[trivia_run, math_run, None])
    assert [t["run_id"] for t in swapped["tasks"]] == [trivia_run, math_run, None]
    assert swapped["tasks"][1]["status"] == "finished" and swapped["tasks"][2]["status"] == (
        "not run")
    with pytest.raises(assay.errors.ConfigError, match="3 tasks, but 2 child runs"):
        plan_summary(store, pid, children=[math_run, trivia_run])


def test_why_a_task_could_not_run_is_shown(plan_run: Any) -> None:
    store, pid, _ = plan_run
    why = {"1": "gsm8k: the data <i>cannot</i> be had offline"}
    store.set_metrics(pid, {**plan_summary(store, pid), "failures": why})  # as the runner does
    md = write_plan_report(store, pid)["markdown"].read_text(encoding="utf-8")
    assert "## Tasks that could not run" in md
    assert "| gsm8k | gsm8k: the data \\<i>cannot\\</i> be had offline |" in md
    html = write_plan_report(store, pid, summary={**plan_summary(store, pid),
                                                  "failures": why})["html"]
    text = html.read_text(encoding="utf-8")
    assert "gsm8k: the data &lt;i&gt;cannot&lt;/i&gt; be had offline" in text
