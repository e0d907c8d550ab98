"""``compare_runs``, ``task_history`` and their text, in-process on a real SQLite store.

Runs are made by the engine against the fake OpenAI-compatible server (epochs) or written
row by row into the store and described by the engine's own finalize (exact per-sample
values, errored epochs, partial scores, interrupted runs). Every expected number is worked
out here from the values the test planted: SciPy's binomial and Fisher tests, SciPy's
paired t interval (which a bootstrap interval must approach), Holm's rule written out.
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy.stats import binomtest, fisher_exact, ttest_rel

from assay.api import make_spec, run_async
from assay.compare.history import task_history
from assay.compare.history_render import (
    configuration_lines,
    history_lines,
    history_svg,
    write_history,
)
from assay.compare.paired import paired_bootstrap, paired_continuous
from assay.compare.render import fmt_p, summary_lines, write_comparison
from assay.compare.runs import compare_runs, load_scores
from assay.engine.finalize import finalize
from assay.engine.loop import run as run_coro
from assay.errors import ConfigError
from assay.store.sqlite import Store
from assay.tasks.registry import task_class
from assay.testing import FakeServer

ERR = "error"  # an epoch that errored


@pytest.fixture
def store(workspace: Path):
    s = Store(workspace / "assay.db")
    yield s
    s.close()


def write_run(store: Store, samples: dict[str, list[Any]], *, task: str = "qa",
              model: str = "openai/m", status: str = "finished", scorer: str | None = None,
              data_hash: str | None = None, meta: Any = None, describe: bool = True,
              started_as: str | None = None) -> str:
    """A run whose sample ``sid`` has one stored result per entry of ``samples[sid]``
    (epoch 0, 1, ...): a number (the ``exact`` score's value), ``None`` (no score),
    ``ERR`` (the epoch errored), ``nan``, or a dict of scores (name -> value).
    ``started_as``: the name it was run by (its spec's task; default ``task``)."""
    spec = {"task": started_as or task, "epochs": max(len(v) for v in samples.values()),
            "task_options": {"scorer": scorer} if scorer else {}}
    dataset = {"source": "synthetic", "selected": len(samples)}
    if data_hash:
        dataset["content_hash"] = data_hash
    rid = store.create_run(task=task, spec=spec, model={"model": model}, dataset=dataset,
                           package_version="test")
    for seq, (sid, epochs) in enumerate(samples.items()):
        for epoch, v in enumerate(epochs):
            error = "boom" if v == ERR else None
            if isinstance(v, dict):
                scores = {k: {"name": k, "value": x} for k, x in v.items()}
            elif v is None or error:
                scores = {}
            else:
                scores = {"exact": {"name": "exact", "value": v}}
            metadata = meta(sid) if meta else {}
            store.record(rid, (sid, epoch, seq, json.dumps(f"question {sid}"), json.dumps("t"),
                               "[]", "out", "pred", json.dumps(scores), error, 0.1, 1, 1, 1, 0,
                               json.dumps(metadata), time.time(), None, None, None, None))
    store.set_run_status(rid, "finished" if status == "finished" else status)
    if describe:
        finalize(store, rid, task=task_class(task))
    if status != "finished":
        store.set_run_status(rid, status)
    return rid


def binary_run(store: Store, right: set[int], n: int, **kw: Any) -> str:
    return write_run(store, {f"s{i:03d}": [1.0 if i in right else 0.0] for i in range(n)}, **kw)


# -- epochs -------------------------------------------------------------------------------
class Flaky:
    """The fake model: item ``i`` is right on every call when ``i`` is in ``always``, on
    its first call only when in ``once``, else never."""

    def __init__(self, always: set[int], once: set[int]) -> None:
        self.always, self.once, self.calls = always, once, Counter[int]()

    def __call__(self, body: dict[str, Any]) -> str:
        i = int(re.search(r"Item (\d+)", body["messages"][-1]["content"]).group(1))
        self.calls[i] += 1
        right = i in self.always or (i in self.once and self.calls[i] == 1)
        return f"Answer: code{i}" if right else "Answer: no idea"


def test_engine_runs_with_two_epochs_compare_their_per_sample_means(store, tmp_path):
    data = tmp_path / "items.jsonl"
    data.write_text("".join(json.dumps({"id": f"q{i}", "question": f"Item {i}: the code?",
                                        "answer": f"code{i}"}) + "\n" for i in range(10)))
    ids = []
    # A: 6 always right, 2 right in one epoch of two, 2 never; B: 9 always right
    for name, model in (("a", Flaky(set(range(6)), {6, 7})), ("b", Flaky(set(range(9)), set()))):
        with FakeServer(responder=model) as srv:
            spec = make_spec("qa", f"openai/model-{name}", base_url=srv.base_url,
                             data=str(data), scorer="exact", epochs=2, cache=False)
            ids.append(run_coro(run_async(spec, store=store, reports=False)).run_id)
        assert sum(model.calls.values()) == 20
    res = compare_runs(store, *ids)
    means_a = [1.0] * 6 + [0.5, 0.5, 0.0, 0.0]
    means_b = [1.0] * 9 + [0.0]
    assert res["kind"] == "continuous" and res["primary"]["test"] == "paired_bootstrap"
    assert res["primary"]["a"] == pytest.approx(sum(means_a) / 10)
    assert res["primary"]["b"] == pytest.approx(sum(means_b) / 10)
    assert res["primary"]["delta"] == pytest.approx(0.2) and res["primary"]["n"] == 10
    # the largest change first: q8 went 0 -> 1, q6 and q7 0.5 -> 1
    fixed = res["flips"]["fixed"]
    assert [f["sample_id"] for f in fixed][0] == "q8"
    assert sorted(f["sample_id"] for f in fixed[1:]) == ["q6", "q7"]
    assert [(f["a"], f["b"]) for f in fixed] == [(0.0, 1.0), (0.5, 1.0), (0.5, 1.0)]
    assert res["flips"]["broken"] == []
    assert res["a"]["n_samples"] == 10 and res["b"]["model"] == "openai/model-b"


def test_an_errored_epoch_is_left_out_and_a_sample_that_always_errored_is_excluded(store):
    a = write_run(store, {"s0": [1.0, ERR], "s1": [ERR, ERR], "s2": [0.0, 0.0],
                          "s3": [1.0, 0.0], "s4": [float("nan"), 1.0], "s5": [None, None]})
    b = write_run(store, {"s0": [0.0, 0.0], "s1": [1.0, 1.0], "s2": [1.0, 1.0],
                          "s3": [1.0, 1.0], "s4": [1.0, 1.0], "s5": [1.0, 1.0]})
    ra = load_scores(store, a)
    assert ra.values == {"s0": 1.0, "s2": 0.0, "s3": 0.5, "s4": 1.0}
    assert ra.unscored == {"s1", "s5"} and ra.score == "exact"
    res = compare_runs(store, a, b)
    # s1 and s5 are excluded (never counted as failures); s3's mean 0.5 makes it continuous
    assert (res["shared"], res["excluded"], res["primary"]["n"]) == (6, 2, 4)
    assert res["kind"] == "continuous"
    assert res["primary"]["a"] == pytest.approx((1 + 0 + 0.5 + 1) / 4)
    assert res["primary"]["b"] == pytest.approx(3 / 4)
    assert res["flips"]["broken"] == [{"sample_id": "s0", "a": 1.0, "b": 0.0, "target": "t",
                                       "a_output": "out", "b_output": "out"}]
    assert [f["sample_id"] for f in res["flips"]["fixed"]] == ["s2", "s3"]
    assert res["a"]["n_samples"] == 6


def test_the_score_option_picks_a_named_score_and_an_unknown_one_is_refused(store):
    a = write_run(store, {f"s{i}": [{"exact": float(i % 2), "f1": True if i < 3 else False}]
                          for i in range(6)})
    b = write_run(store, {f"s{i}": [{"exact": 1.0, "f1": 1}] for i in range(6)})
    ra = load_scores(store, a, "f1")
    assert ra.values == {f"s{i}": (1.0 if i < 3 else 0.0) for i in range(6)}
    assert ra.score_names == ["exact", "f1"]
    res = compare_runs(store, a, b, score="f1")
    assert res["score"] == "f1" and res["contingency"]["b_only_pass"] == 3
    assert compare_runs(store, a, b)["contingency"]["b_only_pass"] == 3  # exact: s0, s2, s4
    with pytest.raises(ConfigError, match="has no score 'nope'; its scores are exact, f1"):
        compare_runs(store, a, b, score="nope")
    for alpha in (0, 1, 1.5):
        with pytest.raises(ConfigError, match="--alpha must be between 0 and 1"):
            compare_runs(store, a, b, alpha=alpha)


# -- pass/fail: counts, categories, Holm -----------------------------------------------------
def _holm(ps: list[float]) -> list[float]:
    """Holm's adjusted p-values, from the definition: max over j <= rank of (m-j) p_(j)."""
    order = sorted(range(len(ps)), key=lambda i: ps[i])
    out = [0.0] * len(ps)
    for r, i in enumerate(order):
        out[i] = min(1.0, max((len(ps) - j) * ps[order[j]] for j in range(r + 1)))
    return out


def test_pass_fail_counts_categories_and_holm_match_their_definitions(store):
    n = 120
    level = {i: f"L{i % 3}" for i in range(n)}
    right_a = {i for i in range(n) if i % 4 != 0}
    # B fixes every A failure at level L0 and breaks some at L2
    right_b = (right_a | {i for i in range(n) if level[i] == "L0"}) - {
        i for i in range(n) if level[i] == "L2" and i % 7 == 0}
    meta = lambda sid: {"level": level[int(sid[1:])], "category": sid}  # noqa: E731
    a = binary_run(store, right_a, n, meta=meta)
    b = binary_run(store, right_b, n, meta=meta)
    res = compare_runs(store, a, b)
    fixed = sorted(right_b - right_a)
    broken = sorted(right_a - right_b)
    assert res["kind"] == "binary" and res["primary"]["test"] == "mcnemar_exact"
    assert res["contingency"] == {
        "both_pass": len(right_a & right_b), "a_only_pass": len(broken),
        "b_only_pass": len(fixed), "both_fail": n - len(right_a | right_b)}
    p = binomtest(len(fixed), len(fixed) + len(broken), 0.5).pvalue
    assert res["primary"]["p_value"] == pytest.approx(p, rel=1e-12)
    assert res["primary"]["a"] == pytest.approx(len(right_a) / n)
    assert res["primary"]["b"] == pytest.approx(len(right_b) / n)
    assert res["primary"]["significant"] == (p < 0.05)
    assert [f["sample_id"] for f in res["flips"]["fixed"]] == [f"s{i:03d}" for i in fixed]
    assert [f["sample_id"] for f in res["flips"]["broken"]] == [f"s{i:03d}" for i in broken]
    # "category" names every sample apart (no split): the next field that splits is used
    cats = res["categories"]
    assert cats["field"] == "level" and [r["name"] for r in cats["rows"]] == ["L0", "L1", "L2"]
    ps = []
    for row in cats["rows"]:
        members = [i for i in range(n) if level[i] == row["name"]]
        f = sum(1 for i in members if i in right_b and i not in right_a)
        k = sum(1 for i in members if i in right_a and i not in right_b)
        assert row["n"] == len(members)
        assert row["p_value"] == pytest.approx(binomtest(f, f + k, 0.5).pvalue if f + k
                                               else 1.0)
        assert row["delta"] == pytest.approx((f - k) / len(members))
        ps.append(row["p_value"])
    assert [r["p_holm"] for r in cats["rows"]] == pytest.approx(_holm(ps))
    # an explicit field, and one no sample has
    by_cat = compare_runs(store, a, b, by="category")["categories"]
    assert by_cat["field"] == "category" and len(by_cat["rows"]) == n
    assert [r["name"] for r in compare_runs(store, a, b, by="nope")["categories"]["rows"]] \
        == ["(none)"]


def test_no_category_field_when_none_splits_the_samples(store):
    same = lambda sid: {"category": "all", "level": 1}  # noqa: E731
    a = binary_run(store, {0, 1}, 6, meta=same)
    b = binary_run(store, {0, 1, 2}, 6, meta=same)
    cats = compare_runs(store, a, b)["categories"]
    assert cats == {"field": None, "rows": []}
    # three samples in two groups: small runs still split
    small = lambda sid: {"type": "x" if sid == "s000" else "y"}  # noqa: E731
    a = binary_run(store, {0}, 3, meta=small)
    b = binary_run(store, {0, 1}, 3, meta=small)
    assert compare_runs(store, a, b)["categories"]["field"] == "type"


def test_runs_not_like_for_like_warn_in_one_line(store):
    a = binary_run(store, {0, 1, 2}, 8, data_hash="aaaaaaaaaaaaaaaa1", scorer="exact")
    same = binary_run(store, {0, 1}, 8, data_hash="aaaaaaaaaaaaaaaa1", scorer="exact")
    assert compare_runs(store, a, same)["warnings"] == []
    other = write_run(store, {f"s{i:03d}": [1.0] for i in range(2, 10)}, task="qa2",
                      data_hash="bbbbbbbbbbbbbbbb2", scorer="includes", describe=False)
    res = compare_runs(store, a, other)
    assert (res["shared"], res["only_a"], res["only_b"]) == (6, 2, 2)
    assert res["warnings"] == [
        "the runs differ in tasks (qa vs qa2), data hashes (aaaaaaaaaaaa vs bbbbbbbbbbbb), "
        "scorers (exact/exact vs exact/includes); comparing only the 6 shared sample ids "
        "(2 only in A, 2 only in B)"]
    fewer = binary_run(store, {0}, 5, data_hash="aaaaaaaaaaaaaaaa1", scorer="exact")
    assert compare_runs(store, a, fewer)["warnings"] == [
        "comparing only the 5 shared sample ids (3 only in A, 0 only in B)"]
    none = write_run(store, {"x": [1.0]})
    with pytest.raises(ConfigError, match="share no scored sample"):
        compare_runs(store, a, none)


# -- continuous: the bootstrap interval's level ------------------------------------------------
def test_the_bootstrap_interval_has_the_level_alpha_asks_for():
    rng = np.random.default_rng(11)
    a = rng.normal(0.5, 0.2, 500)
    b = a + rng.normal(0.03, 0.2, 500)
    t = ttest_rel(b, a)
    for alpha in (0.05, 0.2):
        ci = t.confidence_interval(1 - alpha)
        res = paired_continuous(list(a), list(b), alpha=alpha, resamples=20000, seed=2)
        assert res["ci_low"] == pytest.approx(ci.low, abs=0.004), alpha
        assert res["ci_high"] == pytest.approx(ci.high, abs=0.004), alpha
        assert res["p_value"] == pytest.approx(t.pvalue, abs=0.01)
        assert res["alpha"] == alpha and res["n"] == 500
        assert res["significant"] == (res["p_value"] < alpha)
    _, (lo, hi), _ = paired_bootstrap(a, b, confidence=0.5, resamples=20000, seed=2)
    ci = t.confidence_interval(0.5)
    assert (lo, hi) == pytest.approx((ci.low, ci.high), abs=0.003)


def test_compare_passes_alpha_to_the_bootstrap_and_the_verdict(store):
    vals_a = [0.2, 0.4, 0.5, 0.6, 0.1, 0.3, 0.7, 0.4, 0.5, 0.2, 0.6, 0.3]
    vals_b = [0.3, 0.4, 0.8, 0.6, 0.15, 0.3, 0.6, 0.6, 0.5, 0.45, 0.6, 0.45]
    a = write_run(store, {f"s{i}": [v] for i, v in enumerate(vals_a)})
    b = write_run(store, {f"s{i}": [v] for i, v in enumerate(vals_b)})
    wide = compare_runs(store, a, b, alpha=0.01)["primary"]
    narrow = compare_runs(store, a, b, alpha=0.3)["primary"]
    d = np.array(vals_b) - np.array(vals_a)
    assert wide["delta"] == pytest.approx(d.mean()) == narrow["delta"]
    assert wide["ci_low"] < narrow["ci_low"] < d.mean() < narrow["ci_high"] < wide["ci_high"]
    assert narrow["verdict"] == "B better" and wide["verdict"] == "no significant difference"
    # the paired flips, largest change first
    res = compare_runs(store, a, b)
    assert [f["sample_id"] for f in res["flips"]["fixed"]] == [
        "s2", "s9", "s7", "s11", "s0", "s4"]
    assert [(f["sample_id"], f["a"], f["b"]) for f in res["flips"]["broken"]] == [
        ("s6", 0.7, 0.6)]
    assert compare_runs(store, b, a)["primary"]["verdict"] in ("B worse",
                                                               "no significant difference")
    assert compare_runs(store, b, a, alpha=0.3)["primary"]["verdict"] == "B worse"


# -- the comparison as text ------------------------------------------------------------------
def test_summary_lines_and_files_say_what_the_test_found(store, tmp_path):
    n = 40
    a = binary_run(store, set(range(20)), n)
    b = binary_run(store, set(range(2, 34)), n)  # fixed 20..33 (14), broken 0, 1
    res = compare_runs(store, a, b)
    lines = summary_lines(res)
    p = binomtest(14, 16, 0.5).pvalue
    assert lines[0] == "configuration: same configuration"
    assert lines[3] == (f"{n} shared samples (0 only in A, 0 only in B); 0 of them left out "
                        "(errored or unscored in either run)")
    assert lines[4].startswith("exact: A 0.500  B 0.800  B-A +0.300 [")
    assert lines[4].endswith(f"p={p:.4f} (McNemar exact test, n={n})")
    assert "fixed by B: 14  broken by B: 2  both pass: 18  both fail: 6" in lines
    assert "verdict at alpha=0.05: B better" in lines
    shown = ", ".join(f"s{i:03d}" for i in range(20, 30))
    assert f"fixed by B (14): {shown} (+4 more)" in lines
    assert "broken by B (2): s000, s001" in lines
    assert lines[1].startswith(f"A: {a}  qa  openai/m  (") and "(20/40)" in lines[1]
    paths = write_comparison(res, tmp_path / "out")
    md = paths["markdown"].read_text()
    assert all(f"s{i:03d}" in md for i in range(20, 34))
    assert json.loads(paths["json"].read_text())["contingency"]["b_only_pass"] == 14


def test_fmt_p_switches_to_scientific_below_a_thousandth():
    assert fmt_p(None) == "n/a"
    assert fmt_p(0.001) == "0.0010" and fmt_p(0.5) == "0.5000"
    assert fmt_p(0.00099) == "9.90e-04" and fmt_p(0.0) == "0.00e+00"


def test_continuous_lines_name_better_and_worse_and_large_values(store):
    a = write_run(store, {"s0": [{"score": 120.5}], "s1": [{"score": 30.25}],
                          "s2": [{"score": 70.0}]})
    b = write_run(store, {"s0": [{"score": 140.0}], "s1": [{"score": 27.75}],
                          "s2": [{"score": 70.0}]})
    lines = summary_lines(compare_runs(store, a, b))
    # means 73.583 and 79.25: two places at 10 and above, the difference always three
    assert any(ln.startswith("score: A 73.58  B 79.25  B-A +5.667 [") for ln in lines), lines
    assert "better in B (1): s0" in lines and "worse in B (1): s1" in lines
    assert not any(ln.startswith("fixed by B") for ln in lines)


# -- history -----------------------------------------------------------------------------------
def test_history_skips_a_partial_run_and_compares_with_the_last_finished_one(store, tmp_path):
    n = 60
    r1 = binary_run(store, set(range(40)), n)
    part = binary_run(store, set(range(5)), n, status="interrupted")  # described, partial
    r2 = binary_run(store, set(range(39)), n)
    r3 = binary_run(store, set(range(10)), n)
    hist = task_history(store, "qa")
    pts = {p["id"]: p for p in hist["points"]}
    assert [p["id"] for p in hist["points"]] == [r1, part, r2, r3]
    assert pts[part]["metric"]["successes"] == 5 and pts[part]["status"] == "interrupted"
    assert pts[part]["change"] is None and pts[part]["previous"] is None
    assert not pts[part]["drop"]
    assert pts[r2]["previous"] == r1  # not the partial run in between
    assert pts[r2]["change"]["p_value"] == pytest.approx(binomtest(0, 1, 0.5).pvalue)
    assert not pts[r2]["drop"] and pts[r2]["change"]["shared"] == n
    assert pts[r3]["previous"] == r2 and pts[r3]["drop"]
    assert pts[r3]["change"]["delta"] == pytest.approx((10 - 39) / n)
    assert pts[r3]["change"]["p_value"] == pytest.approx(binomtest(0, 29, 0.5).pvalue)
    fp = store.get_run(r1)["config"]["fingerprint"]
    assert hist["drops"] == [r3] and hist["series"] == {fp: [0, 1, 2, 3]}
    lines = history_lines(hist)
    assert lines[0] == "history of qa"
    part_line = next(ln for ln in lines if part in ln)
    assert "[interrupted: partial]" in part_line and "vs previous" not in part_line
    r3_line = next(ln for ln in lines if r3 in ln)
    assert f"vs previous DROP {(10 - 39) / n:+.3f} (p=" in r3_line and "McNemar, n=60)" in r3_line
    r2_line = next(ln for ln in lines if r2 in ln)
    assert "vs previous -0.017 (p=1.0000, McNemar, n=60)" in r2_line
    assert lines[-1] == f"significant drops at alpha=0.05: {r3}"
    # a stricter alpha: no drop
    assert history_lines(task_history(store, "qa", alpha=1e-12))[-1] == (
        "no significant drop at alpha=1e-12")
    # the last two runs only
    assert [p["id"] for p in task_history(store, "qa", limit=2)["points"]] == [r2, r3]
    assert [p["id"] for p in task_history(store, "qa", limit=3)["points"]] == [part, r2, r3]


def test_history_series_per_model_and_model_names(store):
    x1 = binary_run(store, set(range(30)), 40, model="openai/x")
    y1 = binary_run(store, set(range(5)), 40, model="openai/x-large")
    x2 = binary_run(store, set(range(30)), 40, model="openai/x")
    hist = task_history(store, "qa", mix=True)
    pts = {p["id"]: p for p in hist["points"]}
    assert pts[y1]["previous"] is None and pts[x2]["previous"] == x1
    fx, fy = (store.get_run(r)["config"]["fingerprint"] for r in (x1, y1))
    assert hist["series"] == {fx: [0, 2], fy: [1]} and hist["drops"] == []
    # by default the newest run's configuration only: model x's
    assert [p["id"] for p in task_history(store, "qa")["points"]] == [x1, x2]
    # an exact name wins over a substring; else a substring
    assert [p["id"] for p in task_history(store, "qa", model="openai/x")["points"]] == [x1, x2]
    assert [p["id"] for p in task_history(store, "qa", model="large")["points"]] == [y1]
    with pytest.raises(ConfigError, match="no runs of task 'qa' with model 'zzz'"):
        task_history(store, "qa", model="zzz")
    with pytest.raises(ConfigError, match="tasks with runs: qa"):
        task_history(store, "gsm8k")
    with pytest.raises(ConfigError, match="--alpha must be between 0 and 1"):
        task_history(store, "qa", alpha=1)


def test_history_of_runs_sharing_no_sample_uses_fisher(store):
    write_run(store, {f"a{i}": [1.0 if i < 25 else 0.0] for i in range(30)})
    write_run(store, {f"b{i}": [1.0 if i < 10 else 0.0] for i in range(30)})
    write_run(store, {f"c{i}": [1.0 if i < 9 else 0.0] for i in range(30)})
    pts = task_history(store, "qa")["points"]
    change = pts[1]["change"]
    assert change["test"] == "fisher_exact" and change["shared"] == 0
    assert change["p_value"] == pytest.approx(fisher_exact([[10, 20], [25, 5]]).pvalue)
    assert change["delta"] == pytest.approx((10 - 25) / 30) and pts[1]["drop"]
    assert pts[2]["change"]["p_value"] == pytest.approx(fisher_exact([[9, 21], [10, 20]]).pvalue)
    assert not pts[2]["drop"] and pts[0]["change"] is None
    assert "(p=" in history_lines(task_history(store, "qa"))[3]
    assert "Fisher, unpaired, n=all)" in history_lines(task_history(store, "qa"))[3]


def test_history_chart_draws_one_point_per_run_and_drops_in_red(store, tmp_path):
    r1 = binary_run(store, set(range(30)), 40)
    r2 = binary_run(store, set(range(4)), 40)
    hist = task_history(store, "qa")
    svg = str(history_svg(hist))
    assert svg.count("<circle") == 2 and svg.count('fill="#cf222e"') == 1
    assert svg.count('r="6"') == 1  # the drop is drawn larger
    # the y axis is 0..1 for rates: 260 high, 20 padding, so y(v) = 20 + 220 (1 - v)
    cys = [float(c) for c in re.findall(r'<circle cx="[\d.]+" cy="([\d.]+)"', svg)]
    assert cys == pytest.approx([20 + 220 * (1 - 0.75), 20 + 220 * (1 - 0.1)], abs=0.06)
    cxs = [float(c) for c in re.findall(r'<circle cx="([\d.]+)"', svg)]
    assert cxs == pytest.approx([50 + 690 * 0.25, 50 + 690 * 0.75], abs=0.06)
    assert svg.count("<polyline") == 1 and ">0.00<" in svg and ">1.00<" in svg
    paths = write_history(hist, tmp_path / "h")
    assert json.loads(paths["json"].read_text())["drops"] == [r2]
    assert r1 in paths["markdown"].read_text()
    assert str(history_svg({"points": [], "series": {}})) == ""


def test_a_run_without_metrics_is_listed_as_n_a_and_left_off_the_chart(store):
    r1 = binary_run(store, set(range(10)), 20)
    bare = binary_run(store, set(range(10)), 20, status="interrupted", describe=False)
    hist = task_history(store, "qa", model="openai/m")
    assert [p["id"] for p in hist["points"]] == [r1, bare]
    assert hist["points"][1]["metric"] is None and hist["points"][1]["metric_name"] is None
    lines = history_lines(hist)
    assert lines[0] == "history of qa (model openai/m)"
    assert lines[3].endswith(f"{bare}  openai/m  n/a [interrupted: partial]")
    assert lines[2].endswith(f"{r1}  openai/m  exact 0.500 [0.299, 0.701] (10/20)")
    svg = str(history_svg(hist))
    assert svg.count("<circle") == 1 and "<polyline" not in svg


def test_history_by_alias_fields_and_runs_without_pass_counts(store):
    # runs stored under a catalogue entry's name are found by the alias they were run by
    m1 = write_run(store, {"s0": [1.0], "s1": [0.0]}, task="mtbench", started_as="mt_bench",
                   describe=False)
    assert [p["id"] for p in task_history(store, "mt_bench")["points"]] == [m1]
    # another alias: the history reads no catalogue; its error names the tasks with runs
    with pytest.raises(ConfigError, match="no runs of task 'mt-bench' .*tasks with runs: mtbench"):
        task_history(store, "mt-bench")
    with pytest.raises(ConfigError, match="--alpha must be between 0 and 1"):
        task_history(store, "qa", alpha=0)
    # a run of scores (no pass counts) then a run of other samples: nothing to test with
    cont = write_run(store, {"a0": [0.5], "a1": [0.25]})
    binr = binary_run(store, {0, 1}, 4)
    hist = task_history(store, "qa")
    assert [p["id"] for p in hist["points"]] == [cont, binr]
    assert hist["points"][1]["previous"] == cont and hist["points"][1]["change"] is None
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d", hist["points"][0]["created"])
    assert hist["points"][0]["created_at"] == store.get_run(cont)["created_at"]
    assert history_lines(hist)[2].startswith(hist["points"][0]["created"] + "  " + cont)
    # a paired change carries its interval and the comparison's warnings
    r3 = binary_run(store, {0}, 4)
    change = task_history(store, "qa")["points"][2]["change"]
    assert change["ci_low"] < change["delta"] < change["ci_high"] and change["warnings"] == []
    assert task_history(store, "qa")["points"][2]["id"] == r3


def test_summary_lines_per_category_rows_flag_significant_ones(store):
    n = 80
    cat = {i: "x" if i < 40 else "y" for i in range(n)}
    meta = lambda sid: {"category": cat[int(sid[1:])]}  # noqa: E731
    a = binary_run(store, set(range(40, 80)), n, meta=meta)
    b = binary_run(store, set(range(80)), n, meta=meta)  # fixes all 40 of x, none of y
    res = compare_runs(store, a, b)
    lines = summary_lines(res)
    i = lines.index("by category:")
    p_x = binomtest(40, 40, 0.5).pvalue
    assert lines[i + 1] == (f"  x: n=40  A 0.000  B 1.000  B-A +1.000 [{res['categories']['rows'][0]['ci_low']:+.3f}, "
                            f"+1.000]  p={fmt_p(p_x)} (Holm {fmt_p(2 * p_x)})  *")
    assert lines[i + 2] == "  y: n=40  A 1.000  B 1.000  B-A +0.000 [" + lines[i + 2].split("[")[1]
    assert lines[i + 2].endswith("p=1.0000 (Holm 1.0000)")
    assert lines[1].endswith("  exact 0.500 [0.393, 0.607] (40/80)")
    assert lines[2].startswith(f"B: {b}  qa  openai/m  (")


def test_compare_records_hashes_metadata_and_stays_reproducible(store, tmp_path):
    def hashed(key: str, value: Any) -> str:
        rid = binary_run(store, {0, 1}, 4)
        ds = store.get_run(rid)["dataset"]
        ds.pop("content_hash", None)
        ds[key] = value
        store._db.execute("UPDATE runs SET dataset = ? WHERE id = ?", (json.dumps(ds), rid))
        store._db.commit()
        return rid

    a, b = hashed("sha256", "abc123"), hashed("hash", {"b.json": "2", "a.json": "1"})
    res = compare_runs(store, a, b)
    assert res["a"]["data_hash"] == "abc123" and res["b"]["data_hash"] == "a.json:1,b.json:2"
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d", res["a"]["created"])
    assert res["a"]["created_at"] == store.get_run(a)["created_at"]
    # B's metadata names the category where A's sample has none
    a2 = write_run(store, {f"s{i}": [float(i % 2)] for i in range(6)}, meta=lambda sid: {})
    b2 = write_run(store, {f"s{i}": [1.0] for i in range(6)},
                   meta=lambda sid: {"category": "even" if int(sid[1:]) % 2 == 0 else "odd"})
    rows = compare_runs(store, a2, b2, by="category")["categories"]["rows"]
    assert [r["name"] for r in rows] == ["even", "odd"]
    assert all("contingency" not in r for r in rows)
    # three samples that all share one value: no split
    one = lambda sid: {"category": "x"}  # noqa: E731
    assert compare_runs(store, binary_run(store, {0}, 3, meta=one),
                        binary_run(store, {1}, 3, meta=one))["categories"]["field"] is None
    # continuous: the same comparison twice gives the same numbers (a seeded bootstrap)
    c1 = write_run(store, {f"s{i}": [{"f1": i / 10}] for i in range(8)})
    c2 = write_run(store, {f"s{i}": [{"f1": (i % 3) / 4}] for i in range(8)})
    assert compare_runs(store, c1, c2)["primary"] == compare_runs(store, c1, c2)["primary"]
    # different primary scores are named both
    assert compare_runs(store, a2, c1)["score"] == "exact / f1"
    # the files: nested folders made, Markdown not HTML-escaped, JSON keeps non-ASCII
    a3 = write_run(store, {'say "hi"': [1.0], "é": [0.0], "a&b": [1.0]})
    b3 = write_run(store, {'say "hi"': [0.0], "é": [1.0], "a&b": [0.0]})
    paths = write_comparison(compare_runs(store, a3, b3), tmp_path / "x" / "y")
    md, page = paths["markdown"].read_text(), paths["html"].read_text()
    # (Markdown backslash-escapes only what would be HTML; quotes and & stay as they are)
    assert '| say "hi" |' in md and "say &#34;hi&#34;" in page and "| a&b |" in md
    assert "McNemar exact test" in md and "McNemar exact test" in page
    assert '"é"' in paths["json"].read_text()
    write_comparison(compare_runs(store, a3, b3), tmp_path / "x" / "y")  # again: overwritten


def test_summary_line_at_exactly_ten_and_history_of_an_unknown_task(store):
    a = write_run(store, {"s0": [{"score": 12.0}], "s1": [{"score": 9.0}]})
    b = write_run(store, {"s0": [{"score": 10.0}], "s1": [{"score": 10.0}]})
    lines = summary_lines(compare_runs(store, a, b))
    assert any(ln.startswith("score: A 10.50  B 10.00  B-A -0.500") for ln in lines), lines
    with pytest.raises(ConfigError, match="no runs of task 'nosuchtask'"):
        task_history(store, "nosuchtask")


def test_configuration_lines_count_runs_and_configurations_in_agreement():
    parts = {"task": "qa", "model": "openai/m"}
    one = {"fingerprint": "aaa", "runs": 1, "parts": parts, "text": "same configuration"}
    two = {"fingerprint": "bbb", "runs": 2, "parts": parts,
           "text": "same configuration except: temperature 0.0 -> 0.7"}
    hist = {"fingerprint": "aaa", "configurations": [one, two]}
    assert configuration_lines(hist) == [
        "configuration aaa (1 run): qa · openai/m",
        "1 other configuration not shown (--fingerprint F to show one, --all to mix them):",
        "  bbb (2 runs): differs in temperature 0.0 -> 0.7"]
    assert configuration_lines({**hist, "mixed": True}) == [
        "mixing 2 configurations, each point marked [fingerprint]:",
        "  [aaa] 1 run: qa · openai/m", "  [bbb] 2 runs: qa · openai/m"]


def test_history_chart_scales_to_scores_and_draws_intervals():
    def point(i: str, value: float, lo: float, hi: float, drop: bool = False) -> dict:
        return {"id": i, "metric": {"value": value, "ci_low": lo, "ci_high": hi},
                "drop": drop}

    hist = {"points": [point("r1", 6.0, 5.0, 7.0), point("r2", 8.0, 7.5, 8.5),
                       {"id": "r3", "metric": {"value": 7.0}, "drop": False}],
            "series": {"judge-x": [0, 1, 2]}}
    svg = str(history_svg(hist))

    def y(v: float) -> float:  # scores above 1: the axis runs from the lowest low (5.0)
        return 20 + 220 * (8.5 - v) / 3.5  # to the highest high (8.5)

    cys = [float(c) for c in re.findall(r'<circle cx="[\d.]+" cy="([\d.]+)"', svg)]
    assert cys == pytest.approx([y(6.0), y(8.0), y(7.0)], abs=0.06)  # r3: no interval
    bars = re.findall(r'<line x1="[\d.]+" y1="([\d.]+)" x2="[\d.]+" y2="([\d.]+)" '
                      r'stroke="#1f6feb" stroke-width="2"/>', svg)
    assert [float(v) for bar in bars for v in bar] == pytest.approx(
        [y(5.0), y(7.0), y(7.5), y(8.5)], abs=0.06)
    labels = re.findall(r'<text x="44" y="[\d.]+" font-size="11" text-anchor="end">([\d.]+)<',
                        svg)
    assert labels == ["5.00", "6.75", "8.50"]
    assert '<text x="58" y="34" font-size="11" fill="#1f6feb">judge-x</text>' in svg
    # values a little above 1 are scores, not rates: the axis follows them
    svg = str(history_svg({"points": [point("r", 1.5, 1.2, 1.8)], "series": {"m": [0]}}))
    assert re.search(r'<circle cx="[\d.]+" cy="130.0"', svg)  # the middle of 1.2..1.8
    # one run: no spread, the axis still has a height
    flat = str(history_svg({"points": [point("r", 3.0, 3.0, 3.0)], "series": {"m": [0]}}))
    assert re.search(r'<circle cx="[\d.]+" cy="20.0"', flat) and "nan" not in flat
