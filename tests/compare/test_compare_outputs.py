"""``assay compare`` says what differs between A's and B's configurations first, then its
table, then every fixed and broken sample with both outputs (issue 24, points 3 and 4);
``assay history`` draws one series per configuration (point 3).

Real runs of qa through the CLI against the fake OpenAI-compatible server, whose reply
depends on the request's temperature and scorer-independent text: B (temperature 0.7)
fixes 12 samples and breaks 7 of A's (temperature 0.0).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.cli.test_cli import assay, assert_user_error
from tests.compare.test_compare_cli import qid, run_qa, write_data

N = 40
FIXED = set(range(20, 32))  # wrong at temperature 0, right at 0.7
BROKEN = set(range(0, 7))  # right at temperature 0, wrong at 0.7
LONG = 21  # its wrong answer at temperature 0 is 900 characters long


def hot(body: dict[str, Any]) -> bool:
    return float(body.get("temperature") or 0) > 0.5


def responder(body: dict[str, Any]) -> str:
    i = int(re.search(r"Item (\d+)", body["messages"][-1]["content"]).group(1))
    right = (i < 20 and i not in BROKEN) or i in FIXED if hot(body) else i < 20
    if right:
        return f"Answer: code{i}"
    if i == LONG and not hot(body):
        return "Answer: " + "long winded " * 75
    return f"Answer: not sure about {i} ({'hot' if hot(body) else 'cold'})"


@pytest.fixture
def cold_and_hot(fake_server, tmp_path: Path) -> tuple[str, str, Any, Path]:
    srv = fake_server(responder=responder)
    data = write_data(tmp_path / "items.jsonl", range(N))
    a = run_qa(srv.base_url, data, "m", "--temperature", "0.0")
    b = run_qa(srv.base_url, data, "m", "--temperature", "0.7")
    return a, b, srv, data


def test_compare_prints_the_configuration_difference_first_then_both_outputs(cold_and_hot,
                                                                             workspace):
    a, b, _, _ = cold_and_hot
    p = assay("compare", a, b)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0].startswith("configuration: same configuration except: temperature 0.0 -> 0.7"
                               " (fingerprints ")
    table = next(i for i, ln in enumerate(lines) if ln.startswith("exact_match: A "))
    fixed_at = lines.index(f"fixed by B (12): {', '.join(qid(i) for i in sorted(FIXED)[:10])} "
                           "(+2 more)")
    broken_at = next(i for i, ln in enumerate(lines) if ln.startswith("broken by B (7): "))
    assert 0 < table < fixed_at < broken_at
    # the first five of each direction with the target and both outputs, one line each
    first = sorted(FIXED)[0]
    assert lines[fixed_at + 1:fixed_at + 4] == [
        f"  {qid(first)}  target: code{first}",
        f"    A: Answer: not sure about {first} (cold)", f"    B: Answer: code{first}"]
    shown = [ln.strip() for ln in lines[fixed_at + 1:broken_at] if ln.startswith("  q")]
    assert len(shown) == 5
    assert lines[broken_at - 1] == "  ... 7 more with both outputs in compare.md and compare.html"
    broken = [ln for ln in lines[broken_at + 1:] if ln.startswith("    B: ")]
    assert broken == [f"    B: Answer: not sure about {i} (hot)" for i in sorted(BROKEN)[:5]]
    # the files: every flip, both outputs, whole
    out = workspace / "runs" / "compare" / f"{a}_vs_{b}"
    md = (out / "compare.md").read_text()
    assert md.index("**Configuration:** same configuration except: temperature 0.0 → 0.7") < (
        md.index("## exact_match"))
    for i in sorted(FIXED - {LONG}):
        assert f"| {qid(i)} | code{i} | Answer: not sure about {i} (cold) | Answer: code{i} |" in md
    for i in sorted(BROKEN):
        assert f"| {qid(i)} | code{i} | Answer: code{i} | Answer: not sure about {i} (hot) |" in md
    data = json.loads((out / "compare.json").read_text())
    assert data["configuration"]["differences"] == [{"name": "temperature", "a": 0.0, "b": 0.7}]
    assert {f["sample_id"] for f in data["flips"]["fixed"]} == {qid(i) for i in FIXED}
    long_flip = next(f for f in data["flips"]["fixed"] if f["sample_id"] == qid(LONG))
    assert long_flip["b_output"] == f"Answer: code{LONG}"
    assert long_flip["a_output"] == "Answer: " + "long winded " * 75
    html = (out / "compare.html").read_text()
    assert all(f"<td>{qid(i)}</td>" in html for i in FIXED | BROKEN)
    assert all(f"Answer: not sure about {i} (hot)" in html for i in BROKEN)


def test_compare_cuts_long_outputs_to_the_terminal(cold_and_hot, workspace):
    a, b, _, _ = cold_and_hot
    # the order swapped: B is the run at temperature 0, whose long answer is shown cut
    p = assay("compare", b, a, env={"COLUMNS": "72"})
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0].startswith("configuration: same configuration except: temperature 0.7 -> 0.0")
    long_line = next(ln for ln in lines if ln.startswith("    B: Answer: long winded"))
    assert len(long_line) == 72 and long_line.endswith("…")
    md = (workspace / "runs" / "compare" / f"{b}_vs_{a}" / "compare.md").read_text()
    assert "long winded " * 75 in md  # the file has it whole


def test_same_configuration_is_said_so(cold_and_hot):
    a, _, srv, data = cold_and_hot
    again = run_qa(srv.base_url, data, "m", "--temperature", "0", "--no-cache")
    p = assay("compare", a, again)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines()[0] == "configuration: same configuration"


def test_history_draws_one_series_per_configuration(cold_and_hot, workspace):
    a, b, srv, data = cold_and_hot
    includes = run_qa(srv.base_url, data, "m", "--temperature", "0.0", "--scorer", "includes")
    p = assay("score", a, "--scorer", "includes")
    assert p.returncode == 0, p.stderr
    # newest: A's configuration
    a2 = run_qa(srv.base_url, data, "m", "--temperature", "0.0", "--no-cache")
    hist = json.loads(assay("history", "qa", "--json").stdout)
    assert [pt["id"] for pt in hist["points"]] == [a, a2]
    configs = {c["fingerprint"]: c for c in hist["configurations"]}
    assert len(configs) == 4 and hist["fingerprint"] == hist["points"][0]["fingerprint"]
    assert sorted(c["runs"] for c in configs.values()) == [1, 1, 1, 2]
    texts = sorted(c["text"] for c in configs.values() if not c["shown"])
    assert texts == ["same configuration except: scorer exact_match -> includes_match",
                     "same configuration except: scorer exact_match -> includes_match; "
                     "re-scored no -> yes",
                     "same configuration except: temperature 0.0 -> 0.7"]
    # the text says which configuration it shows and lists the others with their counts
    p = assay("history", "qa")
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    shown_fp = hist["fingerprint"]
    assert lines[1].startswith(f"configuration {shown_fp} (2 runs): qa · openai/m · "
                               "scorer exact_match · temperature 0.0 · data ")
    assert lines[2] == ("3 other configurations not shown (--fingerprint F to show one, "
                        "--all to mix them):")
    hot_fp = next(fp for fp, c in configs.items() if "temperature" in c["text"])
    assert f"  {hot_fp} (1 run): differs in temperature 0.0 -> 0.7" in lines
    # one picked by a prefix of its fingerprint; --all mixes them, each run marked
    picked = json.loads(assay("history", "qa", "--fingerprint", hot_fp[:6], "--json").stdout)
    assert [pt["id"] for pt in picked["points"]] == [b]
    p = assay("history", "qa", "--all")
    run_lines = [ln for ln in p.stdout.splitlines() if re.match(r"\d{4}-", ln)]
    assert len(run_lines) == 5 and all(re.search(r"  \[[0-9a-f]{10}\]  ", ln) for ln in run_lines)
    assert next(ln for ln in run_lines if includes in ln).count("vs previous") == 0
    html = (workspace / "runs" / "history" / "qa" / "history.html").read_text()
    assert html.count("<polyline") == 1 and html.count("<circle") == 5
    assert_user_error(assay("history", "qa", "--fingerprint", "zzzz"), "--fingerprint 'zzzz'",
                      "matches none", hot_fp)
    assert_user_error(assay("history", "qa", "--all", "--fingerprint", hot_fp), "not both")
