"""``assay history TASK``: every run of a task over time, drops flagged, on real qa runs."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from scipy.stats import binomtest, fisher_exact

from tests.cli.test_cli import assay, assert_user_error, run_id_of
from tests.compare.test_compare_cli import qid, write_data

N = 120


class Behaviour:
    """Which items the fake model answers right; changed between runs by the test."""

    def __init__(self) -> None:
        self.right: set[int] = set(range(80))

    def __call__(self, body: dict[str, Any]) -> str:
        i = int(re.search(r"Item (\d+)", body["messages"][-1]["content"]).group(1))
        return f"Answer: code{i}" if i in self.right else "Answer: unsure"


def run(srv: Any, data: Path, model: str, *extra: str) -> str:
    p = assay("run", "qa", "--data", str(data), "--model", f"openai/{model}", "--base-url",
              srv.base_url, "--scorer", "exact", "--no-cache", "-q", "--max-connections", "8",
              *extra, timeout=180)
    assert p.returncode == 0, p.stderr
    return run_id_of(p.stdout)


def test_history_flags_the_significant_drop_only(fake_server, tmp_path, workspace):
    behaviour = Behaviour()
    srv = fake_server(responder=behaviour)
    data = write_data(tmp_path / "items.jsonl", range(N))
    r1 = run(srv, data, "model-x")
    behaviour.right = set(range(78))  # two fewer: not significant
    r2 = run(srv, data, "model-x")
    other = run(srv, data, "model-y")  # another model's series, never compared with x's
    behaviour.right = set(range(40))  # 38 broken, none fixed: a drop
    r3 = run(srv, data, "model-x")

    p = assay("history", "qa", "--all", "--json")  # both models' configurations
    assert p.returncode == 0, p.stderr
    hist = json.loads(p.stdout)
    assert [pt["id"] for pt in hist["points"]] == [r1, r2, other, r3]
    by_id = {pt["id"]: pt for pt in hist["points"]}
    assert by_id[r1]["change"] is None and by_id[other]["change"] is None
    assert by_id[r2]["previous"] == r1 and not by_id[r2]["drop"]
    assert by_id[r2]["change"]["p_value"] == binomtest(0, 2, 0.5).pvalue
    assert by_id[r3]["previous"] == r2 and by_id[r3]["drop"]
    assert by_id[r3]["change"]["p_value"] == binomtest(0, 38, 0.5).pvalue
    assert hist["drops"] == [r3]
    assert by_id[r3]["metric"]["successes"] == 40 and by_id[r3]["metric"]["n"] == N
    assert by_id[r3]["metric"]["ci_low"] < 40 / N < by_id[r3]["metric"]["ci_high"]

    p = assay("history", "qa", "--all")
    assert p.returncode == 0
    line = next(ln for ln in p.stdout.splitlines() if r3 in ln)
    assert "DROP -0.317" in line and "McNemar" in line
    assert f"significant drops at alpha=0.05: {r3}" in p.stdout
    html = (workspace / "runs" / "history" / "qa" / "history.html").read_text()
    assert html.count("<circle") == 4 and html.count('fill="#cf222e"') == 1

    # one model only; --fail-on-drop gates on the latest run
    p = assay("history", "qa", "--model", "openai/model-y", "--json")
    assert [pt["id"] for pt in json.loads(p.stdout)["points"]] == [other]
    p = assay("history", "qa", "--model", "model-x", "--fail-on-drop")
    assert p.returncode == 1 and "significant drop" in p.stderr
    assert assay("history", "qa", "--model", "model-x", "--limit", "2",
                 "--fail-on-drop").returncode == 1
    assert assay("history", "qa", "--model", "model-y", "--fail-on-drop").returncode == 0


def test_runs_without_shared_scored_samples_use_fishers_exact_test(fake_server, tmp_path):
    """Two runs of one configuration (the same data, the same samples) whose scored
    samples do not overlap: each errored on the half the other scored."""
    behaviour = Behaviour()
    broken = set(range(500, 500 + N))  # replies past --max-reply-bytes: those samples error

    def reply(body: dict[str, Any]) -> str:
        i = int(re.search(r"Item (\d+)", body["messages"][-1]["content"]).group(1))
        return "x" * 5000 if i in broken else behaviour(body)

    srv = fake_server(responder=reply)
    data = write_data(tmp_path / "a.jsonl", [*range(N), *range(500, 500 + N)])
    run(srv, data, "model-x", "--max-reply-bytes", "2000")
    behaviour.right, broken = set(), set(range(N))
    run(srv, data, "model-x", "--max-reply-bytes", "2000")
    hist = json.loads(assay("history", "qa", "--json").stdout)
    assert len(hist["points"]) == 2  # one configuration
    change = hist["points"][1]["change"]
    assert change["test"] == "fisher_exact" and change["shared"] == 0
    assert change["p_value"] == fisher_exact([[0, N], [80, N - 80]]).pvalue
    assert hist["points"][1]["drop"]


def test_two_parts_of_one_data_set_are_two_configurations_never_compared(fake_server,
                                                                          tmp_path):
    """``--sample-ids`` of two disjoint halves: other samples, so another configuration;
    history draws them apart and finds no drop between them (issue 32)."""
    behaviour = Behaviour()
    srv = fake_server(responder=behaviour)
    data = write_data(tmp_path / "a.jsonl", [*range(N), *range(500, 500 + N)])
    run(srv, data, "model-x", "--sample-ids", ",".join(qid(i) for i in range(N)))
    behaviour.right = set()
    run(srv, data, "model-x", "--sample-ids", ",".join(qid(i) for i in range(500, 500 + N)))
    hist = json.loads(assay("history", "qa", "--all", "--json").stdout)
    assert len({pt["fingerprint"] for pt in hist["points"]}) == 2
    assert all(pt["change"] is None for pt in hist["points"]) and hist["drops"] == []
    assert assay("history", "qa", "--fail-on-drop").returncode == 0


def test_history_errors_are_one_line(fake_server, tmp_path):
    assert_user_error(assay("history", "qa"), "no store")
    srv = fake_server(responder=Behaviour())
    run(srv, write_data(tmp_path / "a.jsonl", range(5)), "model-x")
    assert_user_error(assay("history", "bfcl"), "no runs of task 'bfcl'", "qa")
    assert_user_error(assay("history", "qa", "--model", "nope"), "nope")
