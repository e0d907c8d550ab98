"""A re-scored run (``assay score RUN``) says what it is, everywhere it is read.

An MT-Bench run judged by ``openai/judge`` at one fake server is re-judged, at a second
server, by ``openai/judge2`` (valid ratings), ``openai/half`` (ratings for questions 1 and 2
only) and ``openai/mute`` (never a rating). Then: the store, the reports (``assay report``),
the viewer's run page and ``assay history`` are read. Every command is the real CLI in a
subprocess, over real HTTP, into one real SQLite store; the viewer is served for real.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from assay.store.sqlite import Store
from assay.testing import FakeServer
from assay.web.server import serve

FIX = Path(__file__).parent / "gallery" / "fixtures" / "mtbench"
TASK = f"{FIX / 'mtbench_task.py'}@mtbench"
QUESTIONS = FIX / "data" / "mt_bench" / "question.jsonl"
ANSWER = re.compile(r"ANS-(\w+)-T(\d)")
MARK = re.compile(r"\[Q-(\d+)\]")
MUTE = "I would rather not put a number on it."
QUERY_SECRET = "sekrit-query-7"


def agent(body: dict[str, Any]) -> str:
    """The model under test: ``ANS-<question>-T<turn>`` (the fixture marks ``[Q-n]``)."""
    question = MARK.search(body["messages"][0]["content"]).group(1)
    turn = sum(1 for m in body["messages"] if m["role"] == "user")
    return f"ANS-{question}-T{turn}"


def judges(body: dict[str, Any]) -> str:
    """judge: 8, judge2: 3, half: 5 for questions 1 and 2 only, mute: never a rating."""
    question = ANSWER.findall(body["messages"][1]["content"])[0][0]
    return {"judge": "Rating: [[8]]", "judge2": "Rating: [[3]]", "mute": MUTE,
            "half": "Rating: [[5]]" if question in ("1", "2") else MUTE}[body["model"]]


def responder(body: dict[str, Any]) -> str:
    return agent(body) if body["model"] == "agent" else judges(body)


def cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ASSAY_HOME": str(home), "OPENAI_API_KEY": "sk-test-secret-9"}
    env.pop("OPENAI_BASE_URL", None)
    env.pop("ASSAY_JUDGE_BASE_URL", None)
    return subprocess.run([sys.executable, "-m", "assay", *args], capture_output=True,
                          text=True, timeout=300, env=env, cwd=home.parent)


def new_run(p: subprocess.CompletedProcess[str]) -> str:
    return re.search(r"^run (\S+) scores run", p.stdout, re.M).group(1)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The original run and its three re-judgings (made once, read by every test)."""
    home = tmp_path_factory.mktemp("rescore-reads") / "home"
    out: dict[str, Any] = {"home": home}
    with FakeServer(responder=responder) as first, FakeServer(responder=responder) as second:
        p = cli(home, "run", TASK, "--data", str(QUESTIONS), "--model", "openai/agent",
                "--base-url", first.base_url, "-T", "judge_model=openai/judge",
                "-T", f"judge_base_url={first.base_url}", "-q")
        assert p.returncode == 0, p.stderr
        out["original"] = p.stdout.split()[1]
        sent = len(first.requests)
        for name in ("judge2", "half", "mute"):  # half's endpoint carries a secret query
            url = second.base_url + (f"?api-key={QUERY_SECRET}" if name == "half" else "")
            p = cli(home, "score", out["original"], "--judge-model", f"openai/{name}",
                    "--judge-base-url", url)
            out[name], out[f"{name}_cli"] = new_run(p), p
        assert second.queries.count(f"api-key={QUERY_SECRET}") == 4 + 4 * 2  # half was asked
        assert len(first.requests) == sent  # nothing went to the original's server again
        assert {b["model"] for b in second.requests} == {"judge2", "half", "mute"}
        out["first_url"], out["second_url"] = first.base_url, second.base_url
    assert out["judge2_cli"].returncode == 0, out["judge2_cli"].stderr
    return out


def record(runs: dict[str, Any], name: str) -> dict[str, Any]:
    store = Store(runs["home"] / "assay.db", readonly=True)
    try:
        return store.get_run(runs[name])
    finally:
        store.close()


def text_of(html: str) -> str:
    """An HTML page's text: tags dropped, entities read, spaces collapsed."""
    import html as html_module

    return " ".join(html_module.unescape(re.sub(r"<[^>]+>", " ", html)).split())


def test_a_rejudged_run_stores_the_judge_that_gave_its_verdicts_as_its_role(runs) -> None:
    original, rejudged = record(runs, "original"), record(runs, "judge2")
    first, second = runs["first_url"], runs["second_url"]
    # the model under test: the original run's facts, unchanged
    assert {k: v for k, v in rejudged["model"].items() if k != "roles"} == {
        k: v for k, v in original["model"].items() if k != "roles"}
    assert rejudged["model"]["base_url"] == first
    assert original["model"]["roles"] == {"judge": {"model": "openai/judge", "base_url": first}}
    # its role is the judge that gave its verdicts, where it was asked
    assert rejudged["model"]["roles"] == {"judge": {"model": "openai/judge2",
                                                    "base_url": second}}
    assert rejudged["stats"]["original_roles"] == original["model"]["roles"]
    assert rejudged["stats"]["rescored_from"] == original["id"]
    # its configuration names its own judge, never the original's
    roles = rejudged["config"]["parts"]["scorer"]["roles"]
    assert roles == {"judge": f"openai/judge2 at {second.rstrip('/')}"}
    # no secret anywhere in what was stored
    assert "sk-test-secret-9" not in json.dumps([original, rejudged])


def test_the_reports_say_from_which_run_and_by_which_judge_at_which_endpoint(runs) -> None:
    home, orig, rid = runs["home"], runs["original"], runs["judge2"]
    second, first = runs["second_url"], runs["first_url"]
    folder = home / "runs" / rid
    for f in ("report.md", "report.html"):  # written again by 'assay report', from the store
        (folder / f).unlink()
    p = cli(home, "report", rid)
    assert p.returncode == 0, p.stderr
    md = (folder / "report.md").read_text(encoding="utf-8")
    html = text_of((folder / "report.html").read_text(encoding="utf-8"))
    said = f"Re-scored from run {orig} by judge openai/judge2 at {second}"
    assert said in md.replace("`", "").replace("**", "") and said in html
    assert f"| Roles | judge openai/judge2 at {second} |" in md
    assert f"| Original run's judge | judge openai/judge at {first} |" in md
    assert f"| Endpoint | {first} (the original run's; not called again) |" in md
    assert f"roles judge openai/judge2 at {second}" in html
    assert f"original run's judge judge openai/judge at {first}" in html
    assert "sk-test-secret-9" not in md + html
    # the original run's own report: no re-scoring said, its judge as its role
    own = (home / "runs" / orig / "report.md").read_text(encoding="utf-8")
    assert "Re-scored" not in own and f"| Roles | judge openai/judge at {first} |" in own


async def test_the_viewer_run_page_shows_the_rescoring_and_its_own_judge(runs) -> None:
    rid, orig = runs["judge2"], runs["original"]
    url, runner = await serve(store_path=runs["home"] / "assay.db")
    try:
        async with aiohttp.ClientSession() as session:
            async with session.get(f"{url.rstrip('/')}/run/{rid}") as r:
                assert r.status == 200
                page = await r.text()
    finally:
        await runner.cleanup()
    text = text_of(page)
    assert (f"re-scored re-scored from {orig} by judge openai/judge2 at "
            f"{runs['second_url']}") in text
    assert f'id="parent-link" href="/run/{orig}"' in page
    options = text_of(page.split('id="options"', 1)[1].split("</section>", 1)[0])
    assert f"roles judge openai/judge2 at {runs['second_url']}" in options
    assert f"original run's judge judge openai/judge at {runs['first_url']}" in options
    assert "openai/judge at" not in options.split("original run's judge")[0]


def test_every_invalid_verdict_is_said_and_the_run_is_failed_never_a_success(runs) -> None:
    mute, half = runs["mute_cli"], runs["half_cli"]
    line = (f'0 of 4 samples got a valid verdict: every judge reply was invalid (first, '
            f'sample 1: "{MUTE}")')
    assert mute.returncode == 1, mute.stdout + mute.stderr
    assert f"run {runs['mute']} failed: {line}" in mute.stderr
    run = record(runs, "mute")
    assert run["status"] == "failed" and run["stats"]["error"] == line
    md = (runs["home"] / "runs" / runs["mute"] / "report.md").read_text(encoding="utf-8")
    assert f"This run failed: {line}." in md
    # some verdicts invalid: the run stands, and the console says how many are left out
    assert half.returncode == 0, half.stderr
    assert (f'2 of 4 samples got a valid verdict; 2 got none and are left out of the metrics '
            f'(first, sample 3: "{MUTE}")') in half.stdout
    half_run = record(runs, "half")
    assert half_run["status"] == "finished"
    # an endpoint's query values are never stored or shown: the role says it was there
    assert half_run["model"]["roles"]["judge"]["base_url"] == \
        f"{runs['second_url']}?api-key=***"
    folder = runs["home"] / "runs" / runs["half"]
    shown = [half.stdout, half.stderr, json.dumps(half_run),
             *(f.read_text(encoding="utf-8") for f in folder.iterdir())]
    assert not [t for t in shown if QUERY_SECRET in t]
    assert "valid verdict" not in runs["judge2_cli"].stdout + runs["judge2_cli"].stderr


def test_history_shows_the_original_run_and_marks_each_rescoring(runs) -> None:
    home, orig = runs["home"], runs["original"]
    second = runs["second_url"]
    p = cli(home, "history", "mtbench")
    assert p.returncode == 0, p.stderr
    points = [line for line in p.stdout.splitlines() if re.match(r"\d{4}-\d\d-\d\d ", line)]
    assert len(points) == 1 and f"  {orig}  " in points[0] and "score 8.000" in points[0]
    # the re-scorings are listed as what they are, not shown in the series
    listed = [line for line in p.stdout.splitlines() if "re-scored from" in line]
    assert len(listed) == 3 and all(f"re-scored from {orig} by judge openai/" in line
                                    for line in listed)
    assert any(f"by judge openai/judge2 at {second};" in line for line in listed)
    # --all: every run, each re-scoring marked as one
    p = cli(home, "history", "mtbench", "--all")
    assert p.returncode == 0, p.stderr
    points = [line for line in p.stdout.splitlines() if re.match(r"\d{4}-\d\d-\d\d ", line)]
    assert [line.split()[2] for line in points] == [orig, runs["judge2"], runs["half"],
                                                    runs["mute"]]
    assert "re-scored" not in points[0]
    assert points[1].endswith(f"[re-scored from {orig} by judge openai/judge2 at {second}]")
    folder = home / "runs" / "history" / "mtbench"
    md = (folder / "history.md").read_text(encoding="utf-8")
    assert f"| {runs['judge2']} (re-scored from {orig} by judge openai/judge2 at {second}) |" \
        in md
    data = json.loads((folder / "history.json").read_text(encoding="utf-8"))
    assert [pt["rescored"] for pt in data["points"]][:2] == [
        None, f"re-scored from {orig} by judge openai/judge2 at {second}"]
    svg = (folder / "history.html").read_text(encoding="utf-8")
    assert svg.count('fill="#fff" stroke=') == 2  # the two re-scorings with a value: rings


def test_a_rescoring_with_another_scorer_says_so(tmp_path: Path) -> None:
    """A qa run re-scored with ``--scorer includes``: no judge, the scorer named."""
    home = tmp_path / "home"
    data = tmp_path / "q.jsonl"
    data.write_text("".join(json.dumps({"id": f"q{i}", "question": f"Say {i}",
                                        "answer": "cat"}) + "\n" for i in range(4)))
    with FakeServer(default_reply="Answer: the cat sat") as srv:
        p = cli(home, "run", "qa", "--data", str(data), "--model", "openai/m", "--base-url",
                srv.base_url, "--scorer", "exact", "-q")
        assert p.returncode == 0, p.stderr
        orig = p.stdout.split()[1]
        p = cli(home, "score", orig, "--scorer", "includes")
    assert p.returncode == 0, p.stderr
    rid = new_run(p)
    md = (home / "runs" / rid / "report.md").read_text(encoding="utf-8")
    assert f"**Re-scored from run `{orig}` by scorer includes**" in md
    assert "| Roles |" not in md and "Original run's judge" not in md
    p = cli(home, "history", "qa")
    assert p.returncode == 0, p.stderr
    points = [line for line in p.stdout.splitlines() if re.match(r"\d{4}-\d\d-\d\d ", line)]
    assert len(points) == 1 and f"  {orig}  " in points[0]
    assert f"re-scored from {orig} by scorer includes;" in p.stdout
