"""A multi-model run's page in ``assay view``, in real Chromium (issue 24): the parent shows
each model's run (linked) and headline, the paired test of each pair with a link to the
two runs side by side, and no empty samples or errors boxes (a parent holds no samples);
a child shows its configuration fingerprint and links back to its parent.

The runs are made by the real CLI (``assay run qa --model A --model B``) over real HTTP to
the fake OpenAI-compatible server, into a real store.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from assay.testing import FakeServer
from assay.testing.fake_replies import last_user_text
from assay.web.server import serve
from tests.browser import ServedInThread, expect
from tests.storedb import rows

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "qa_example.jsonl"
ANSWERS = {r["question"]: r["answer"] for r in map(json.loads, EXAMPLE.read_text().splitlines())}


def _reply(body: dict[str, Any]) -> str:
    """``good`` answers every question right, ``bad`` every one wrong."""
    question = next(q for q in ANSWERS if q in last_user_text(body))
    return f"Answer: {ANSWERS[question]}" if body["model"] == "good" else "Answer: Atlantis"


@pytest.fixture(scope="module")
def models_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, list[str]]:
    """``(store path, parent id, [child ids])`` of a two-model qa run."""
    home = tmp_path_factory.mktemp("models-page") / "home"
    srv = FakeServer(responder=_reply).start()
    try:
        p = subprocess.run(
            [sys.executable, "-m", "assay", "run", "qa", "--data", str(EXAMPLE), "--limit", "6",
             "--base-url", srv.base_url, "--model", "openai/good", "--model", "openai/bad",
             "-q"], capture_output=True, text=True, timeout=300, cwd=REPO,
            env=dict(os.environ, ASSAY_HOME=str(home)))
    finally:
        srv.stop()
    assert p.returncode == 0, (p.stdout, p.stderr)
    db = home / "assay.db"
    (parent,), = rows(db, "SELECT id FROM runs WHERE parent_id IS NULL")
    children = [c for c, in rows(db, f"SELECT id FROM runs WHERE parent_id = '{parent}' "
                                     "ORDER BY created_at")]
    return db, parent, children


@pytest.fixture(scope="module")
def server(models_run):
    s = ServedInThread(serve(store_path=models_run[0]))
    yield s
    s.close()


def test_a_multi_model_parent_links_its_models_and_their_paired_test(models_run, server,
                                                                      page) -> None:
    _, parent, (good, bad) = models_run
    page.goto(f"{server.base}/run/{parent}")
    table = page.locator("#models-table tr.model-row")
    expect(table).to_have_count(2)
    expect(table.nth(0)).to_contain_text("openai/good")
    expect(table.nth(0)).to_contain_text("1.000 [")
    expect(table.nth(1)).to_contain_text("0.000 [")
    assert table.locator("a.model-run").evaluate_all("as => as.map(a => a.textContent)") == [
        good, bad]
    pair = page.locator("#pairs-table tr.pair-row")
    expect(pair).to_have_count(1)
    expect(pair).to_contain_text("openai/bad vs openai/good")
    expect(pair).to_contain_text("-1.000 [")
    expect(pair).to_contain_text("B worse")
    # a parent holds no samples: no empty samples table, errors box or raw metric dump
    for gone in ("#samples", "#errors", "#metrics", "table[data-metric=pairs]"):
        expect(page.locator(gone)).to_have_count(0)
    expect(page.locator("#children a.child-link")).to_have_count(2)
    # the pair's runs side by side
    pair.locator("a.pair-compare").click()
    expect(page.locator("body")).to_contain_text(good)
    expect(page.locator("body")).to_contain_text(bad)
    assert "/compare?" in page.url
    # a child: its model's run, its fingerprint, and the way back to the parent
    page.goto(f"{server.base}/run/{parent}")
    table.nth(1).locator("a.model-run").click()
    expect(page.locator("#run-id")).to_have_text(bad)
    expect(page.locator("#run-fingerprint")).to_have_text(
        rows(models_run[0], "SELECT json_extract(config, '$.fingerprint') FROM runs "
                            f"WHERE id = '{bad}'")[0][0])
    page.locator("#parent-link").click()
    expect(page.locator("#run-id")).to_have_text(parent)
