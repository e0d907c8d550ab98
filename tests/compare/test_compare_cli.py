"""``assay compare`` on real runs: qa runs of 200 questions through the engine against the
fake OpenAI-compatible server, whose answers make B fix 30 samples and break 5.

The p-value oracle is SciPy's exact binomial test on the discordant counts, computed here
from the counts the test itself planted (not from anything assay reports).
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from scipy.stats import binomtest

from tests.cli.test_cli import assay, assert_user_error, run_id_of

N = 200
BOTH_RIGHT = set(range(0, 100))  # right in A and in B, except the broken ones
BROKEN = set(range(0, 5))  # right in A, wrong in B
FIXED = set(range(100, 130))  # wrong in A, right in B
CATEGORIES = ("arith", "geo", "lang", "logic")


def qid(i: int) -> str:
    return f"q{i:03d}"


def write_data(path: Path, ids: range | list[int], salt: str = "") -> Path:
    rows = [{"id": qid(i), "question": f"Item {i}{salt}: what is the code?",
             "answer": f"code{i}", "category": CATEGORIES[i % 4]} for i in ids]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def right_in(model: str, i: int) -> bool:
    if model.endswith("model-a"):
        return i in BOTH_RIGHT
    if model.endswith("model-b"):
        return (i in BOTH_RIGHT and i not in BROKEN) or i in FIXED
    return i % 2 == 0


def responder(body: dict[str, Any]) -> str:
    text = body["messages"][-1]["content"]
    i = int(re.search(r"Item (\d+)", text).group(1))
    return f"Answer: code{i}" if right_in(body["model"], i) else "Answer: no idea"


def run_qa(base_url: str, data: Path, model: str, *extra: str) -> str:
    p = assay("run", "qa", "--data", str(data), "--model", f"openai/{model}", "--base-url",
              base_url, "--scorer", "exact", "-q", "--max-connections", "8", *extra,
              timeout=180)
    assert p.returncode == 0, p.stderr
    return run_id_of(p.stdout)


@pytest.fixture
def two_runs(fake_server, tmp_path: Path) -> tuple[str, str, Any, Path]:
    srv = fake_server(responder=responder)
    data = write_data(tmp_path / "items.jsonl", range(N))
    a = run_qa(srv.base_url, data, "model-a")
    b = run_qa(srv.base_url, data, "model-b")
    return a, b, srv, tmp_path


def compare_json(*args: str) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    p = assay("compare", *args, "--json")
    return p, (json.loads(p.stdout) if p.returncode in (0, 1) else {})


def test_fixes_and_breaks_match_scipy_and_list_every_flip(two_runs, workspace):
    a, b, _, _ = two_runs
    p, res = compare_json(a, b)
    assert p.returncode == 0, p.stderr
    assert res["kind"] == "binary"
    assert (res["shared"], res["only_a"], res["only_b"], res["excluded"]) == (N, 0, 0, 0)
    assert res["contingency"] == {"both_pass": 95, "a_only_pass": 5, "b_only_pass": 30,
                                  "both_fail": 70}
    expected = binomtest(len(FIXED), len(FIXED) + len(BROKEN), 0.5).pvalue
    assert res["primary"]["p_value"] == pytest.approx(expected, rel=1e-12)
    assert res["primary"]["test"] == "mcnemar_exact"
    assert res["primary"]["delta"] == pytest.approx((30 - 5) / N)
    assert res["primary"]["verdict"] == "B better" and res["primary"]["significant"]
    lo, hi = res["primary"]["ci_low"], res["primary"]["ci_high"]
    assert 0 < lo < 25 / N < hi < 1
    assert sorted(f["sample_id"] for f in res["flips"]["fixed"]) == [qid(i) for i in sorted(FIXED)]
    assert sorted(f["sample_id"] for f in res["flips"]["broken"]) == [qid(i) for i in
                                                                      sorted(BROKEN)]
    assert res["warnings"] == []
    # per category: the rows add up, each with its own exact test and a Holm adjustment
    rows = {r["name"]: r for r in res["categories"]["rows"]}
    assert res["categories"]["field"] == "category" and set(rows) == set(CATEGORIES)
    assert sum(r["n"] for r in rows.values()) == N
    for name, row in rows.items():
        k = CATEGORIES.index(name)
        fixed = sum(1 for i in FIXED if i % 4 == k)
        broken = sum(1 for i in BROKEN if i % 4 == k)
        assert row["p_value"] == pytest.approx(binomtest(fixed, fixed + broken, 0.5).pvalue)
        assert row["p_holm"] >= row["p_value"]

    # the text output lists all 35 flips (up to 10 shown per side on the terminal) and the
    # files hold every one of them
    p = assay("compare", a, b)
    assert p.returncode == 0, p.stderr
    assert f"p={expected:.2e} (McNemar exact test, n=200)" in p.stdout
    assert "fixed by B (30)" in p.stdout and "broken by B (5)" in p.stdout
    out = workspace / "runs" / "compare" / f"{a}_vs_{b}"
    md = (out / "compare.md").read_text()
    assert all(f"| {qid(i)} | code{i} |" in md for i in FIXED | BROKEN)
    assert json.loads((out / "compare.json").read_text())["contingency"] == res["contingency"]
    assert "B better" in (out / "compare.html").read_text()


def test_fail_if_worse_gates_on_the_swapped_runs(two_runs):
    a, b, _, _ = two_runs
    p = assay("compare", a, b, "--fail-if-worse")
    assert p.returncode == 0, (p.stdout, p.stderr)
    p = assay("compare", b, a, "--fail-if-worse")
    assert p.returncode == 1, (p.stdout, p.stderr)
    assert "verdict at alpha=0.05: B worse" in p.stdout
    assert "significantly worse" in p.stderr
    # without the flag the same comparison only reports
    assert assay("compare", b, a).returncode == 0
    # a stricter alpha than the p-value: not significant, so no failure
    p_value = binomtest(30, 35, 0.5).pvalue
    p = assay("compare", b, a, "--fail-if-worse", "--alpha", str(p_value / 2))
    assert p.returncode == 0, (p.stdout, p.stderr)


def test_different_data_warns_in_one_line_and_compares_shared_ids(two_runs):
    a, _, srv, tmp = two_runs
    # 150 of the same ids with different question text (another content hash) + 20 new ids
    other = write_data(tmp / "other.jsonl", [*range(50, 200), *range(300, 320)], salt="b")
    c = run_qa(srv.base_url, other, "model-c")
    p, res = compare_json(a, c)
    assert p.returncode == 0, p.stderr
    assert (res["shared"], res["only_a"], res["only_b"]) == (150, 50, 20)
    assert res["primary"]["n"] == 150
    assert len(res["warnings"]) == 1
    warning = res["warnings"][0]
    assert "data hashes" in warning and "150 shared" in warning and "\n" not in warning
    p = assay("compare", a, c)
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("warning:")]
    assert len(lines) == 1 and "data hashes" in lines[0]


def test_different_tasks_warn(two_runs, tmp_path):
    a, _, srv, tmp = two_runs
    # the same data as a one-file YAML task: another task name, same sample ids
    task = tmp / "codes.yaml"
    # (a task file names its data inside its own folder: tmp holds both)
    task.write_text("name: codes\ndata: items.jsonl\nscorer: exact\n")
    p = assay("run", str(task), "--model", "openai/model-b", "--base-url", srv.base_url, "-q",
              "--max-connections", "8", timeout=180)
    assert p.returncode == 0, p.stderr
    c = run_id_of(p.stdout)
    p, res = compare_json(a, c)
    assert p.returncode == 0, p.stderr
    assert len(res["warnings"]) == 1 and "tasks (qa vs" in res["warnings"][0]
    assert res["shared"] == N and res["contingency"]["b_only_pass"] == 30


def test_user_errors_are_one_line(two_runs):
    a, b, _, _ = two_runs
    assert_user_error(assay("compare", a, "NOSUCH"), "NOSUCH")
    assert_user_error(assay("compare", a, b, "--score", "nope"), "nope", "exact")
    p = assay("compare", a, b, "--alpha", "1.5")
    assert p.returncode == 2


def test_errored_samples_are_left_out_and_counted(fake_server, tmp_path):
    def answer(body: dict[str, Any]) -> Any:
        i = int(re.search(r"Item (\d+)", body["messages"][-1]["content"]).group(1))
        if body["model"].endswith("model-e") and i < 10:
            return {"status": 400, "error": "bad request"}  # not retried: a sample error
        return responder(body)

    srv = fake_server(responder=answer)
    data = write_data(tmp_path / "items.jsonl", range(N))
    a = run_qa(srv.base_url, data, "model-a")
    p = assay("run", "qa", "--data", str(data), "--model", "openai/model-e", "--base-url",
              srv.base_url, "--scorer", "exact", "-q", timeout=180)
    e = run_id_of(p.stdout)
    p, res = compare_json(a, e)
    assert p.returncode == 0, p.stderr
    assert res["shared"] == N and res["excluded"] == 10 and res["primary"]["n"] == N - 10
    # never counted as failures: the errored samples are in no flip list
    flipped = {f["sample_id"] for side in res["flips"].values() for f in side}
    assert not flipped & {qid(i) for i in range(10)}


def test_continuous_scores_use_the_paired_bootstrap(fake_server, tmp_path):
    def answer(body: dict[str, Any]) -> str:
        i = int(re.search(r"Item (\d+)", body["messages"][-1]["content"]).group(1))
        words = ["alpha", "beta", "gamma", "delta"]
        keep = 1 + (i % 3) + (1 if body["model"].endswith("model-b") and i % 2 else 0)
        return "Answer: " + " ".join(words[:keep])

    srv = fake_server(responder=answer)
    rows = [{"id": qid(i), "question": f"Item {i}: list the words",
             "answer": "alpha beta gamma delta"} for i in range(60)]
    data = tmp_path / "words.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    ids = []
    for model in ("model-a", "model-b"):
        p = assay("run", "qa", "--data", str(data), "--model", f"openai/{model}", "--base-url",
                  srv.base_url, "--scorer", "f1", "-q", timeout=180)
        assert p.returncode == 0, p.stderr
        ids.append(run_id_of(p.stdout))
    p, res = compare_json(*ids)
    assert p.returncode == 0, p.stderr
    assert res["kind"] == "continuous" and res["contingency"] is None
    assert res["primary"]["test"] == "paired_bootstrap"
    # the mean difference of the stored per-sample F1 values, read from results.jsonl
    from assay.store.sqlite import Store

    store = Store()
    f1 = [{r.sample_id: r.scores["token_f1"]["value"] for r in store.iter_results(rid)}
          for rid in ids]
    store.close()
    diffs = [f1[1][k] - f1[0][k] for k in f1[0]]
    assert res["primary"]["delta"] == pytest.approx(sum(diffs) / len(diffs))
    assert res["primary"]["ci_low"] > 0 and res["primary"]["verdict"] == "B better"
    assert len(res["flips"]["fixed"]) == 30 and res["flips"]["broken"] == []
    assert assay("compare", ids[1], ids[0], "--fail-if-worse").returncode == 1


def test_a_rescored_run_with_another_scorer_warns(two_runs):
    a, _, _, _ = two_runs
    p = assay("score", a, "--scorer", "includes", "--no-report")
    assert p.returncode == 0, p.stderr
    rescored = re.search(r"^run (\S+) scores run", p.stdout, re.M).group(1)
    p, res = compare_json(a, rescored)
    assert p.returncode == 0, p.stderr
    assert len(res["warnings"]) == 1 and "scorers (exact" in res["warnings"][0]
    assert "includes" in res["warnings"][0]
