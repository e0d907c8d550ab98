"""Reports that read as words and never say a thing twice (issue 24, point 10's report items).

Real runs over real HTTP against the fake OpenAI-compatible server, reports written from
the real store: a small BFCL run shows only the leaderboard aggregates it has and its
overall-score note once; the Model row is the provider, the model id, the endpoint
without credentials and the generation settings in words, never the stored JSON; metric
values read by their kind (seconds, counts, shares); a lopsided interval is never
written as ``±``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

import assay
from assay.reports.render import fmt_value
from assay.reports.summary import write_summary
from assay.store.sqlite import Store
from assay.testing import Rule

SIMPLE = ("simple_python", "simple_java", "simple_javascript")


def bfcl_run(fake_server: Any, sample_ids: list[str]) -> Any:
    """A BFCL run (function-calling mode) whose agent answers in plain text: every entry
    is wrong, and nothing else about the run is unusual."""
    srv = fake_server(rules=[], default_reply="I cannot call functions.")
    return assay.evaluate("bfcl", model="openai/fake", base_url=srv.base_url,
                          category=",".join(dict.fromkeys(s.rsplit("_", 1)[0]
                                                          for s in sample_ids)),
                          sample_ids=sample_ids, quiet=True)


def section(md: str, title: str) -> str:
    """The Markdown of one ``## title`` section."""
    start = md.index(f"## {title}\n")
    end = md.find("\n## ", start + 1)
    return md[start:end if end > 0 else None]


def test_a_small_bfcl_run_shows_only_its_aggregates_and_its_note_once(fake_server) -> None:
    result = bfcl_run(fake_server, ["simple_python_0", "simple_python_1"])
    note = result.metrics["overall_note"]
    assert len(note) > 300 and result.metrics["aggregates"]["simple"] is None
    md = result.reports["markdown"].read_text(encoding="utf-8")
    html = result.reports["html"].read_text(encoding="utf-8")
    assert "not reported" not in md and "not reported" not in html
    assert md.count(note) == 1, md.count(note)
    assert html.count(note.replace("'", "&#39;")) == 1
    aggregates = section(md, "Leaderboard aggregates")
    assert "No leaderboard aggregate: each needs every one of its categories, and this run " \
           "has only simple_python." in aggregates
    assert "| aggregate |" not in aggregates  # no table of rows that all say "not reported"
    assert "| overall_note |" not in md


def test_the_aggregates_a_run_has_are_shown_with_the_others_named_once(fake_server) -> None:
    result = bfcl_run(fake_server, [f"{c}_0" for c in SIMPLE])
    simple = result.metrics["aggregates"]["simple"]
    assert simple is not None and simple["value"] == 0.0
    aggregates = section(result.reports["markdown"].read_text(encoding="utf-8"),
                         "Leaderboard aggregates")
    rows = [line for line in aggregates.splitlines() if line.startswith("| ")]
    assert rows[0].startswith("| aggregate | value [95% CI] | how |")
    assert [r.split(" | ")[0] for r in rows[1:]] == ["| simple"]
    assert "mean of simple_python, simple_java, simple_javascript; PARTIAL:" in rows[1]
    assert "Not computed (some of their categories were not run): non_live_overall, " \
           "live_overall, irrelevance, multi_turn, web_search, memory, agentic." in aggregates
    assert aggregates.count("Overall score: not computed") == 1


@pytest.fixture
def qa_run(fake_server: Any, tmp_path: Path) -> Any:
    rows = [{"id": f"q{i}", "question": f"What is {i} + {i}?", "answer": str(2 * i)}
            for i in range(5)]
    data = tmp_path / "sums.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    srv = fake_server(rules=[Rule(r"What is", "Answer: 7")])
    url = srv.base_url.replace("http://", "http://alice:s3cretpassw0rd@")
    return assay.evaluate("qa", model="openai/fake-model", base_url=url, data=str(data),
                          max_tokens=32, params={"top_p": 0.9, "temperature": 0.2}, quiet=True)


def test_the_model_row_is_words_and_never_json(qa_run: Any) -> None:
    md = qa_run.reports["markdown"].read_text(encoding="utf-8")
    html = qa_run.reports["html"].read_text(encoding="utf-8")
    assert "| Model | openai/fake-model · any OpenAI-compatible endpoint |" in md
    endpoint = next(line for line in md.splitlines() if line.startswith("| Endpoint |"))
    assert "127.0.0.1" in endpoint and "/v1" in endpoint
    assert "| Generation | top p 0.9, temperature 0.2, max tokens 32 |" in md
    for text in (md, html):
        assert "s3cretpassw0rd" not in text and "alice" not in text
        assert '"base_url"' not in text and "&#34;base_url&#34;" not in text
    assert "<tr><td>generation</td><td>top p 0.9, temperature 0.2, max tokens 32</td></tr>" \
        in html
    # the settings table does not say the model again, and speaks in words
    settings = section(md, "Run settings")
    assert "| model |" not in settings and "| params |" not in settings
    assert "| timeout | 2 min 00 s |" in settings and "| max reply bytes | 16 MiB |" in settings
    assert "| task options |" in settings and "{" not in settings.split("| task options |")[1]


def test_metric_values_read_by_their_kind(qa_run: Any) -> None:
    md = qa_run.reports["markdown"].read_text(encoding="utf-8")
    metrics = dict(re.findall(r"^\| (\w+) \| (.+?) \|$", section(md, "Metrics"), re.M))
    for name in ("mean_latency_s", "mean_model_time_s", "mean_wait_s"):
        assert re.fullmatch(r"[\d.]+ (ms|s)", metrics[name]), (name, metrics[name])
    assert metrics["input_tokens"] == f"{qa_run.metrics['input_tokens']:,}"
    assert metrics["score_errors_as_wrong"] == "0.000"  # a share: three decimals
    # one formatter for every report: seconds, counts, shares
    assert fmt_value(0.001713, "mean_wait_s") == "1.71 ms"
    assert fmt_value(83.2, "elapsed_s") == "1 min 23 s"
    assert fmt_value(12400, "input_tokens") == "12,400"
    assert fmt_value(26.5, "mean_tokens_per_sample") == "26.5"
    assert fmt_value(0.123456, "empty_answer_rate") == "0.123"


def test_the_summary_never_writes_a_lopsided_interval_as_plus_minus(qa_run: Any,
                                                                    tmp_path: Path) -> None:
    store = Store()
    try:
        md = write_summary(store, qa_run.run_id, tmp_path / "s")["summary_markdown"].read_text(
            encoding="utf-8")
    finally:
        store.close()
    verdict = md.splitlines()[2]
    assert qa_run.metrics["numeric_match"]["successes"] == 0
    assert verdict.startswith("**0.0% correct (95% interval 0.0%–43.4%)"), verdict
    assert "±" not in verdict


def test_sections_and_the_settings_are_apart_in_markdown(qa_run: Any,
                                                         fake_server: Any) -> None:
    result = bfcl_run(fake_server, ["simple_python_0"])
    md = result.reports["markdown"].read_text(encoding="utf-8")
    assert "\n\n## Run settings\n" in md  # not glued to the last recommendation
    assert "## Recommendations" in md


def test_a_failed_run_says_why_under_its_headline(fake_server, tmp_path: Path) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"id": "a", "question": "Q?", "answer": "A"}) + "\n")
    srv = fake_server(rules=[])
    no_v1 = srv.base_url.removesuffix("/v1")  # every call: HTTP 404
    result = assay.evaluate("qa", model="openai/fake", base_url=no_v1, data=str(data),
                            max_retries=0, quiet=True)
    md = result.reports["markdown"].read_text(encoding="utf-8")
    html = result.reports["html"].read_text(encoding="utf-8")
    line = next(x for x in md.splitlines() if x.startswith("> **This run failed: "))
    assert "1 of 1 samples failed; most common error (1x): HTTP 404" in line
    assert "Hint: does --base-url end in /v1?" in line
    assert '<p class="warning" role="alert"' in html and "Hint: does --base-url end in /v1?" in html


def test_the_summary_says_how_the_previous_runs_configuration_differs(
        fake_server, tmp_path: Path) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps({"id": f"q{i}", "question": f"Q{i}?", "answer": "A"})
                            + "\n" for i in range(4)), encoding="utf-8")
    srv = fake_server(rules=[Rule(r"Q[01]", "Answer: A")])
    assay.evaluate("qa", model="openai/fake", base_url=srv.base_url, data=str(data),
                   quiet=True)
    same = assay.evaluate("qa", model="openai/fake", base_url=srv.base_url, data=str(data),
                          quiet=True, cache=False)
    warmer = assay.evaluate("qa", model="openai/fake", base_url=srv.base_url, data=str(data),
                            params={"temperature": 0.7}, quiet=True, cache=False)
    store = Store()
    try:
        texts = [write_summary(store, r.run_id, tmp_path / r.run_id)["summary_markdown"]
                 .read_text(encoding="utf-8") for r in (same, warmer)]
    finally:
        store.close()
    compared = [section(t, "Compared with the previous run") for t in texts]
    assert "configurations differ" not in compared[0]
    assert compared[1].rstrip().endswith(
        "The two runs' configurations differ: temperature unset → 0.7.")
