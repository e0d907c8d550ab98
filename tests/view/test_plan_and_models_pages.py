"""A plan run and a multi-model run in ``assay view`` and in their reports (issue 34.1), in
real Chromium at 1280 px and over real HTTP.

A plan run's page shows the plan's results as its report does (each task's headline with
its interval, the capability profile, each step's run linked), never its summary dumped as
a table. A multi-model parent has report.html and report.md, is called "qa on 2 models"
everywhere (terminal, runs list, its page, its report) with its kind shown apart, shows its
models as a list with each child's headline and a link, and its children are "model 1 of 2:
<model>", not "step of" (a plan's steps still are).

The runs are made by the real CLI (``assay run plan.yaml``, ``assay run qa --model A
--model B``) over real HTTP to the fake OpenAI-compatible server, into one real store.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from assay.testing import FakeServer, Rule
from assay.testing.fake_replies import last_user_text
from assay.web.server import serve
from tests.browser import ServedInThread, expect
from tests.storedb import rows

REPO = Path(__file__).resolve().parents[2]
HOSTILE = '<img src=x onerror="window.__xss=1">'
REQUEST = f"three small qa sets {HOSTILE}"
#: per task: its data file's name, its capability tags, how many of 6 questions are right
TASKS = [("alpha", ["math", "reasoning"], 4), ("beta", ["tool calling"], 2),
         ("gamma", ["reading comprehension", "reasoning"], 4)]
VIEWPORT = 1280
#: the page's elements that reach past the viewport's edges (none may)
OVERFLOW = """() => [...document.querySelectorAll('body *')].filter(e => {
  const r = e.getBoundingClientRect();
  return r.width > 0 && (r.right > innerWidth + 0.5 || r.left < -0.5);
}).map(e => e.tagName + ' ' + (e.id || e.className || ''))"""
#: table cells holding a JSON list or object as text
JSON_CELLS = """() => [...document.querySelectorAll('td, th')].map(c => c.textContent)
  .filter(t => t.includes('["') || t.includes('{"'))"""


def _cli(home: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    p = subprocess.run([sys.executable, "-m", "assay", *args], capture_output=True, text=True,
                       timeout=300, cwd=cwd, env=dict(os.environ, ASSAY_HOME=str(home)))
    assert p.returncode == 0, (p.stdout, p.stderr)
    return p


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A plan run of three qa tasks and a two-model qa run, in one store."""
    root = tmp_path_factory.mktemp("plan-models")
    home = root / "home"
    for name, _, _ in TASKS:
        (root / f"{name}.jsonl").write_text("".join(
            json.dumps({"id": f"{name}{i}", "question": f"{name} q{i}?", "answer": f"a{i}"})
            + "\n" for i in range(6)))
    plan = {"assay_plan": 1, "request": REQUEST, "tasks": [
        {"task": "qa", "source": "builtin", "options": {"data": f"{name}.jsonl"},
         "capabilities": caps, "metrics": [{"name": "exact_match", "role": "primary"}]}
        for name, caps, _ in TASKS]}
    (root / "plan.yaml").write_text(json.dumps(plan))  # JSON is YAML
    # the first `right` questions of each task answered right, the rest wrong; on the
    # multi-model run, openai/good answers alpha as the plan's model does, openai/bad none
    rules = [Rule(rf"{name} q([0-{right - 1}])\?", "Answer: a\\1") for name, _, right in TASKS]
    with FakeServer(rules=rules, default_reply="Answer: nope") as srv:
        _cli(home, "run", str(root / "plan.yaml"), "--model", "openai/fake", "--base-url",
             srv.base_url, "-q", cwd=root)
    with FakeServer(responder=lambda body: (
            re.sub(r".*alpha q(\d)\?.*", r"Answer: a\1", last_user_text(body), flags=re.S)
            if body["model"] == "good" else "Answer: nope")) as srv:
        multi = _cli(home, "run", "qa", "--data", str(root / "alpha.jsonl"), "--base-url",
                     srv.base_url, "--model", "openai/good", "--model", "openai/bad", "-q",
                     cwd=root)
    db = home / "assay.db"
    (plan_id,), = rows(db, "SELECT id FROM runs WHERE kind = 'plan'")
    (parent,), = rows(db, "SELECT id FROM runs WHERE kind = 'pipeline'")

    def children(pid: str) -> list[str]:
        return [c for c, in rows(db, f"SELECT id FROM runs WHERE parent_id = '{pid}' "
                                     "ORDER BY created_at, id")]

    return {"db": db, "home": home, "plan": plan_id, "steps": children(plan_id),
            "parent": parent, "models": children(parent), "terminal": multi.stdout}


@pytest.fixture(scope="module")
def server(made):
    s = ServedInThread(serve(store_path=made["db"]))
    yield s
    s.close()


def _fits(page: Any) -> None:
    """Nothing wider than the 1280 px viewport, and no JSON list or object in a table cell."""
    assert page.viewport_size["width"] == VIEWPORT
    assert page.evaluate("document.documentElement.scrollWidth") <= VIEWPORT
    assert page.evaluate(OVERFLOW) == []
    assert page.evaluate(JSON_CELLS) == []


# -- a plan run ---------------------------------------------------------------------------
def test_a_plan_runs_page_shows_its_results_as_its_report_does(made, server, page,
                                                                shots) -> None:
    page.goto(f"{server.base}/run/{made['plan']}")
    results = page.locator("#plan-results")
    expect(results).to_contain_text("three small qa sets")
    expect(results).to_contain_text(HOSTILE)  # shown as text, never run
    assert page.evaluate("window.__xss") is None
    # each task's headline with its interval, and its step's run linked
    tasks = results.locator("table", has=page.locator("th", has_text="primary metric"))
    expect(tasks.locator("tr")).to_have_count(4)
    for i, (right, step) in enumerate(zip((4, 2, 4), made["steps"], strict=True), 1):
        row = tasks.locator("tr").nth(i)
        expect(row).to_contain_text(f"qa (task {i})")
        expect(row).to_contain_text(f"({right}/6)")
        expect(row).to_contain_text(re.compile(r"\d\.\d{3} \[\d\.\d{3}, \d\.\d{3}\]"))
        expect(row.locator("a")).to_have_attribute("href", f"/run/{step}")
    # the capability profile: four tags, so a radar with each tag's value
    radar = results.locator("svg[aria-label='capability radar']")
    expect(radar).to_be_visible()
    for label in ("math (0.67)", "reasoning (0.67)", "tool calling (0.33)"):
        expect(radar).to_contain_text(label)
    # no raw summary: no metric table of tasks and no row of lists as JSON
    expect(page.locator("#metrics")).to_have_count(0)
    _fits(page)
    page.screenshot(path=str(shots / "plan-run-page.png"), full_page=True)
    # a step's link opens that step's run, which says it is a step of the plan
    tasks.locator("tr").nth(2).locator("a").click()
    expect(page.locator("#run-id")).to_have_text(made["steps"][1])
    expect(page.locator("#parent-link")).to_have_text(made["plan"])
    expect(page.locator("#child-of")).to_have_count(0)


def test_a_plan_runs_page_over_http_links_every_step(made, server) -> None:
    with urllib.request.urlopen(f"{server.base}/run/{made['plan']}", timeout=30) as r:
        html = r.read().decode()
    assert r.status == 200
    section = html[html.index('id="plan-results"'):html.index('id="children"')]
    for step in made["steps"]:
        assert f'href="/run/{step}"' in section
    assert "Capability profile" in section and HOSTILE not in section  # escaped
    assert not re.search(r"<td>\s*\[&#34;", html) and not re.search(r'<td>\s*\["', html)


# -- a multi-model run --------------------------------------------------------------------
def test_a_multi_model_parent_writes_its_report_when_it_finishes(made, page, shots) -> None:
    folder = made["home"] / "runs" / made["parent"]
    assert (folder / "report.md").is_file() and (folder / "report.html").is_file()
    md = (folder / "report.md").read_text()
    assert md.startswith("# qa on 2 models")
    for model, child in zip(("openai/good", "openai/bad"), made["models"], strict=True):
        assert re.search(rf"\| {model} \| {child} \| finished \| normalized_match "
                         rf"\d\.\d{{3}} \[", md)
    page.goto((folder / "report.html").as_uri())
    expect(page.locator("h1")).to_have_text("qa on 2 models")
    table = page.locator("table tr")
    expect(table).to_have_count(3)
    expect(table.nth(1)).to_contain_text("openai/good")
    expect(table.nth(1)).to_contain_text("normalized_match 1.000 [")
    expect(table.nth(2)).to_contain_text("normalized_match 0.000 [")
    expect(page.locator("li")).to_contain_text("openai/bad vs openai/good")
    _fits(page)
    page.screenshot(path=str(shots / "multi-model-report.png"), full_page=True)


def test_a_multi_model_parent_is_one_label_and_lists_its_models(made, server, page,
                                                                  shots) -> None:
    assert f"multi-model run {made['parent']}: qa on 2 models" in made["terminal"]
    page.goto(f"{server.base}/run/{made['parent']}")
    expect(page.locator("#run-task")).to_have_text("qa on 2 models")
    expect(page.locator("#run-kind")).to_contain_text("multi-model")
    # its models and options read as names, not as JSON
    model_group = page.locator("table.option-group[data-group=model]")
    expect(model_group).to_contain_text("openai/good")
    expect(model_group).to_contain_text("openai/bad")
    rows_ = page.locator("#models-table tr.model-row")
    expect(rows_).to_have_count(2)
    expect(rows_.nth(0)).to_contain_text("1.000 [")
    expect(rows_.nth(1)).to_contain_text("0.000 [")
    _fits(page)
    page.screenshot(path=str(shots / "multi-model-page.png"), full_page=True)
    rows_.nth(1).locator("a.model-run").click()
    expect(page.locator("#run-id")).to_have_text(made["models"][1])
    # the child: which model of its parent it is, not a "step"
    expect(page.locator("#parent-label")).to_have_text("qa on 2 models")
    expect(page.locator("#child-of")).to_have_text("model 2 of 2: openai/bad")


def test_the_runs_list_names_a_multi_model_run_and_its_models(made, server, page) -> None:
    page.goto(f"{server.base}/?sort=created&order=asc")
    row = page.locator(f"tr.run-row[data-run-id='{made['parent']}']")
    expect(row.locator("td.task")).to_contain_text("qa on 2 models")
    expect(row.locator("td.task")).to_contain_text("multi-model")
    expect(row.locator("td.task")).not_to_contain_text("multi_model")
    for i, (model, child) in enumerate(zip(("openai/good", "openai/bad"), made["models"],
                                           strict=True), 1):
        cell = page.locator(f"tr.run-row[data-run-id='{child}'] td").nth(2)
        expect(cell).to_contain_text(f"model {i} of 2: {model}")
        expect(cell).not_to_contain_text("step of")
        expect(cell.locator("div a")).to_have_text("qa on 2 models")
    for step in made["steps"]:  # a plan's tasks stay its steps
        expect(page.locator(f"tr.run-row[data-run-id='{step}'] td").nth(2)).to_contain_text(
            f"step of {made['plan']}")
    _fits(page)
    cell = page.locator(f"tr.run-row[data-run-id='{made['models'][0]}'] td").nth(2)
    cell.locator("div a").click()
    expect(page.locator("#run-id")).to_have_text(made["parent"])
