"""``assay run bfcl --category all``: every scoring category that can run here runs; the
ones that cannot (no SerpAPI key, no vector packages) are left out with a note saying what
they need, and the overall score is not shown but names exactly those parts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import official_oracle as oracle
import pytest

from assay.tasks.bfcl.categories import SUPPORTED

pytestmark = pytest.mark.skipif(not oracle.available(), reason=oracle.NOT_INSTALLED)

#: one entry per category (the memory ids carry their backend once loaded)
IDS = {
    **{c: f"{c}_0" for c in SUPPORTED if not c.startswith(("live_", "memory", "web_search"))},
    "live_simple": "live_simple_0-0-0", "live_multiple": "live_multiple_0-0-0",
    "live_parallel": "live_parallel_0-0-0",
    "live_parallel_multiple": "live_parallel_multiple_0-0-0",
    "live_irrelevance": "live_irrelevance_0-0-0", "live_relevance": "live_relevance_0-0-0",
    "memory_kv": "memory_kv_0-customer-0", "memory_rec_sum": "memory_rec_sum_0-customer-0",
}
UNAVAILABLE = ("memory_vector", "web_search_base", "web_search_no_snippet")


def test_all_runs_what_it_can_and_names_what_the_overall_still_needs(fake_server,
                                                                     workspace: Path) -> None:
    srv = fake_server(default_reply="I cannot help with that.")
    env = {k: v for k, v in os.environ.items() if k != "SERPAPI_API_KEY"}
    p = subprocess.run([sys.executable, "-m", "assay", "run", "bfcl", "--category", "all",
                        "--model", "openai/fake", "--base-url", srv.base_url, "-q",
                        "--sample-ids", ",".join(IDS.values())],
                       capture_output=True, text=True, timeout=600, env=env)
    assert p.returncode == 0, p.stderr
    notes = [ln for ln in p.stderr.splitlines() if ln.startswith("note: BFCL")]
    assert [ln.split()[2] for ln in notes] == list(UNAVAILABLE)
    assert "SERPAPI_API_KEY" in notes[1] and "assay[bfcl-vector]" in notes[0]
    run_dir = next((workspace / "runs").iterdir())
    rows = [json.loads(x) for x in (run_dir / "results.jsonl").read_text().splitlines()]
    assert {r["sample_id"] for r in rows} == set(IDS.values())
    assert all(r["error"] is None for r in rows), [r["error"] for r in rows if r["error"]]
    from assay.store.sqlite import Store

    store = Store()
    run = store.list_runs()[0]
    metrics = store.get_run(run["id"])["metrics"]
    store.close()
    assert run["dataset"]["skipped_categories"].keys() == set(UNAVAILABLE)
    assert metrics["aggregates"]["overall"] is None
    assert metrics["aggregates"]["multi_turn"] is not None  # every multi-turn part ran
    note = metrics["overall_note"]
    missing = note.split("lacks ", 1)[1]
    assert [part.split(" (")[0] for part in missing.split(", ") if not part.startswith(
        ("needs", "'"))] == list(UNAVAILABLE), note
    # a category named by itself that cannot run is an error, not a silent skip
    p = subprocess.run([sys.executable, "-m", "assay", "run", "bfcl", "--category",
                        "web_search_base", "--model", "openai/fake", "--base-url",
                        srv.base_url, "-q"], capture_output=True, text=True, timeout=120, env=env)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "SERPAPI_API_KEY" in p.stderr
