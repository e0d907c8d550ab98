"""A run's cost (``stats.cost``) and why a limit stopped it (``stats.stopped``) on every
surface that reads a run: ``assay list runs``, report.md/html and samples.csv, ``assay
compare`` and ``assay history`` (text, pages, JSON), and the viewer's run, sample, compare and
history pages. A run from before costs were kept shows none (never $0); a price unknown
reads "unknown". Runs written into a real store as the engine leaves them."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from assay.compare.history import task_history
from assay.compare.history_render import history_lines, write_history
from assay.compare.render import summary_lines, write_comparison
from assay.compare.runs import compare_runs
from assay.core.types import SampleResult
from assay.reports.csv_export import write_samples_csv
from assay.reports.render import write_reports
from assay.store.sqlite import Store
from assay.web.server import serve

PRICED = {"usd": 0.000226, "tokens": 106, "unpriced": [], "roles": {
    "subject": {"input_tokens": 42, "output_tokens": 42, "cached_input_tokens": 10,
                "reasoning_tokens": 5, "usd": 0.000126, "model": "openai/m", "price": "file"},
    "judge": {"input_tokens": 20, "output_tokens": 2, "usd": 0.0001, "model": "openai/j",
              "price": "genai-prices"}}}
UNKNOWN = {"usd": None, "tokens": 106, "unpriced": ["judge"], "roles": {
    "subject": {**PRICED["roles"]["subject"]},
    "judge": {**PRICED["roles"]["judge"], "usd": None, "price": "unknown"}}}
CHEAP = {"usd": 0.0001, "tokens": 84, "unpriced": [], "roles": {
    "subject": {**PRICED["roles"]["subject"], "usd": 0.0001}}}
STOPPED = "cost limit reached: $0.0002 of $0.0002"
PRICED_LINE = ("$0.0002 (106 tokens paid for): subject openai/m: $0.0001 (price from "
               "--pricing); judge openai/j: $0.0001 (price from genai-prices)")
THOUGHT = "The capital of France: Paris, surely."


def _run(store: Store, cost: dict[str, Any] | None, judge_usd: float | None = 0.0001,
         status: str = "finished", stopped: str | None = None) -> str:
    """A qa run of two samples (s0 right, s1 wrong), each with its usage, ending with
    ``stats.cost`` (None: a run from before costs were kept)."""
    rid = store.create_run(task="qa", spec={"task": "qa", "epochs": 1}, model={"model": "openai/m"},
                           dataset={"source": "synthetic", "selected": 2}, package_version="test")
    for seq, value in enumerate((1.0, 0.0)):
        usage = {"subject": {"input_tokens": 42, "output_tokens": 42, "cached_input_tokens": 10,
                             "reasoning_tokens": 5, "cost_usd": 0.000126},
                 "judge": {"input_tokens": 20, "output_tokens": 2, "cost_usd": judge_usd}}
        store.record(rid, SampleResult(
            rid, f"s{seq}", 0, "What is the capital of France?", "Paris", "Answer: Paris",
            "Paris", {"exact": {"name": "exact", "value": value}}, None, 0.1, 62, 44,
            transcript=[{"role": "user", "content": "What is the capital of France?"},
                        {"role": "assistant", "content": "Answer: Paris", "reasoning": THOUGHT}],
            outcome={} if cost is None else {"usage": usage}, seq=seq, model_calls=2))
    stats = {"samples": 2, "errors": 0}
    if cost is not None:
        stats["cost"] = cost
    if stopped:
        stats["stopped"] = stopped
    store.set_run_status(rid, status, stats)
    return rid


@pytest.fixture
def runs(workspace: Path) -> tuple[Path, dict[str, str]]:
    """``(store path, {"old", "priced", "unknown", "cheap": run id})``, oldest first."""
    workspace.mkdir(parents=True, exist_ok=True)
    store = Store(workspace / "assay.db")
    try:
        ids = {"old": _run(store, None),
               "priced": _run(store, PRICED, status="interrupted", stopped=STOPPED),
               "unknown": _run(store, UNKNOWN, judge_usd=None), "cheap": _run(store, CHEAP)}
    finally:
        store.close()
    return workspace / "assay.db", ids


def test_list_runs_has_a_cost_column_and_cost_usd(runs) -> None:
    path, ids = runs
    env = dict(os.environ, ASSAY_HOME=str(path.parent), COLUMNS="100", NO_COLOR="1")
    out = subprocess.run([sys.executable, "-m", "assay", "list", "runs"], capture_output=True,
                         text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].split()[-2:] == ["cost", "headline"], out.stdout
    cost = {line.split()[0]: line.split()[-2] for line in lines[1:5]}
    assert cost == {ids["old"]: "—", ids["priced"]: "$0.0002", ids["unknown"]: "unknown",
                    ids["cheap"]: "$0.0001"}, out.stdout
    listed = json.loads(subprocess.run([sys.executable, "-m", "assay", "list", "runs", "--json"],
                                       capture_output=True, text=True, env=env,
                                       timeout=120).stdout)
    assert {r["id"]: r["cost_usd"] for r in listed} == {
        ids["old"]: None, ids["priced"]: 0.000226, ids["unknown"]: None, ids["cheap"]: 0.0001}


def test_report_says_the_cost_per_role_and_why_the_run_stopped(runs, tmp_path: Path) -> None:
    path, ids = runs
    store = Store(path, readonly=True)
    try:
        pages = {k: write_reports(store, rid, tmp_path / k) for k, rid in ids.items()}
        for k in ("priced", "unknown"):
            write_samples_csv(store, ids[k], tmp_path / k / "samples.csv")
    finally:
        store.close()
    md = {k: p["markdown"].read_text() for k, p in pages.items()}
    html = {k: p["html"].read_text() for k, p in pages.items()}
    assert f"| Cost | {PRICED_LINE} |" in md["priced"]
    assert f"| Stopped | {STOPPED}; no new sample started" in md["priced"]
    assert f'<p id="run-cost"><strong>Cost</strong>: {PRICED_LINE}</p>' in html["priced"]
    assert f"<strong>Stopped</strong>: {STOPPED}" in html["priced"]
    assert ("| Cost | unknown (106 tokens paid for): subject openai/m: $0.0001 (price from "
            "--pricing); judge openai/j: price unknown: give one with --pricing FILE |"
            ) in md["unknown"]
    assert "price unknown: give one with --pricing FILE" in html["unknown"]
    for text in (md["old"], html["old"]):  # kept no cost: none said, never $0
        assert "Cost" not in text and "$0" not in text and "Stopped" not in text
    assert "Stopped" not in md["cheap"]
    # samples.csv: each sample's cost; blank where a price is unknown
    for k, want in (("priced", "0.000226"), ("unknown", "")):
        with (tmp_path / k / "samples.csv").open(newline="") as f:
            assert [r["cost_usd"] for r in csv.DictReader(f)] == [want, want]


def test_compare_says_each_runs_cost_and_the_difference(runs, tmp_path: Path) -> None:
    path, ids = runs
    store = Store(path, readonly=True)
    try:
        cheaper = compare_runs(store, ids["priced"], ids["cheap"])
        unknown = compare_runs(store, ids["priced"], ids["unknown"])
        old = compare_runs(store, ids["old"], ids["priced"])
        neither = compare_runs(store, ids["old"], ids["old"])
    finally:
        store.close()
    assert (cheaper["a"]["cost_usd"], cheaper["b"]["cost_usd"]) == (0.000226, 0.0001)
    assert cheaper["cost_diff_usd"] == pytest.approx(-0.000126)
    assert "cost: A $0.0002  B $0.0001  B-A -$0.0001" in summary_lines(cheaper)
    assert unknown["cost_diff_usd"] is None and unknown["b"]["cost_usd"] is None
    assert "cost: A $0.0002  B unknown  B-A unknown" in summary_lines(unknown)
    assert "cost: A —  B $0.0002  B-A unknown" in summary_lines(old)
    assert not [line for line in summary_lines(neither) if "cost" in line]
    paths = write_comparison(cheaper, tmp_path / "cmp")
    assert "cost: A $0.0002  B $0.0001  B-A -$0.0001" in paths["markdown"].read_text()
    assert '<p id="cost">cost: A $0.0002  B $0.0001' in paths["html"].read_text()
    saved = json.loads(paths["json"].read_text())
    assert saved["cost_diff_usd"] == pytest.approx(-0.000126) and saved["a"]["cost_usd"] == 0.000226


def test_history_has_a_cost_per_run(runs, tmp_path: Path) -> None:
    path, ids = runs
    store = Store(path, readonly=True)
    try:
        hist = task_history(store, "qa")
    finally:
        store.close()
    assert [(p["id"], p["cost"], p["cost_usd"]) for p in hist["points"]] == [
        (ids["old"], "—", None), (ids["priced"], "$0.0002", 0.000226),
        (ids["unknown"], "unknown", None), (ids["cheap"], "$0.0001", 0.0001)]
    lines = {line.split()[2]: line for line in history_lines(hist) if line[:4].isdigit()}
    assert "cost" not in lines[ids["old"]] and "$0" not in lines[ids["old"]]
    assert lines[ids["priced"]].endswith("cost $0.0002") and "cost unknown" in lines[ids["unknown"]]
    md = write_history(hist, tmp_path / "hist")["markdown"].read_text()
    assert "| change from previous | cost |" in md
    assert [row.rstrip(" |").rsplit("| ", 1)[-1] for row in md.splitlines()
            if any(rid in row for rid in ids.values())] == ["—", "$0.0002", "unknown", "$0.0001"]


async def test_viewer_shows_cost_stopped_usage_and_reasoning(runs) -> None:
    path, ids = runs
    url, runner = await serve(store_path=path)
    try:
        async with aiohttp.ClientSession() as session:
            async def get(page: str) -> str:
                async with session.get(url.rstrip("/") + page) as r:
                    assert r.status == 200, page
                    return await r.text()

            priced = await get(f"/run/{ids['priced']}")
            assert f'<dd id="run-cost">{PRICED_LINE}</dd>' in priced
            assert f'<dd id="run-stopped">{STOPPED}; no new sample started' in priced
            assert "judge openai/j: price unknown: give one with --pricing FILE" in await get(
                f"/run/{ids['unknown']}")
            old = await get(f"/run/{ids['old']}")
            assert 'id="run-cost"' not in old and "$0" not in old
            sample = await get(f"/run/{ids['priced']}/sample/s0")
            assert ("<dt>cost</dt><dd>subject 42 in (10 cached), 42 out (5 reasoning), $0.0001; "
                    "judge 20 in, 2 out, $0.0001</dd>") in sample
            assert ('<details class="reasoning"><summary>reasoning</summary><pre class="text">'
                    f"{THOUGHT}</pre></details>") in sample
            assert sample.count("Paris, surely") == 1  # folded, not again among the extras
            assert "judge 20 in, 2 out, unknown" in await get(f"/run/{ids['unknown']}/sample/s0")
            assert "<dt>cost</dt>" not in await get(f"/run/{ids['old']}/sample/s0")
            compared = await get(f"/compare?a={ids['priced']}&b={ids['unknown']}")
            assert '<p id="compare-cost">cost: A $0.0002  B unknown  B-A unknown</p>' in compared
            history = await get("/history/qa")
            assert '<td class="num cost">$0.0002</td>' in history
    finally:
        await runner.cleanup()
