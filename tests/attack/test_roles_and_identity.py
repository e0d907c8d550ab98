"""Issue 32, points 1, 2, 5 and 6: whom a role calls, what a YAML source may read, and
what a cache key and a fingerprint are made of.

Each test drives the real CLI (or the engine) over real HTTP to fake OpenAI servers on
127.0.0.1 and reads the real SQLite store; each failed on 1194102:
1. a re-judged self-judged run sent the new judge's requests to the stored endpoint of
   the model under test (with the judge's key) and printed "0 model calls"; a live run
   did the same with a judge given no endpoint;
2. ``source.hf.id`` of a YAML task read any local file;
5. two endpoints that differ only in their query shared cache entries and a fingerprint;
6. ``--limit 12`` and twelve other ``--sample-ids`` had one fingerprint, and
   ``history --fail-on-drop`` failed on the difference.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from assay.store.sqlite import Store
from tests.attack.clitools import free_port
from tests.cli.test_cli import assay, assert_user_error, run_id_of
from tests.compare.test_compare_cli import qid, write_data
from tests.gallery.test_mtbench import SCRIPT, Players, evaluate, stored

JUDGE_KEY = "sk-judge-5ecret-value-0001"
AGENT_KEY = "sk-agent-5ecret-value-0002"


def score(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "assay", "score", *args], capture_output=True,
                          text=True, timeout=300, env={**os.environ, **env})


# -- 1. a role never falls back to the endpoint or key of the model under test -----------


@pytest.mark.parametrize("how", ["environment", "option"])
def test_rejudging_calls_the_judges_own_endpoint_never_the_model_under_test(
        fake_server: Any, monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", AGENT_KEY)
    agent = Players(SCRIPT, judge_is="system")  # the model under test judges itself
    subject_srv = fake_server(responder=agent)
    first = evaluate(subject_srv)
    assert first.metrics["self_judged"] is True
    sent = len(subject_srv.requests)
    judge = Players(default="Rating: [[3]]", judge_is="judge-model")
    judge_srv = fake_server(responder=judge)
    env = {"ASSAY_JUDGE_API_KEY": JUDGE_KEY,
           # the provider's default endpoint is the subject's: the judge must not use it
           "OPENAI_BASE_URL": subject_srv.base_url}
    args = [first.run_id, "--judge-model", "openai/judge-model"]
    if how == "environment":
        env["ASSAY_JUDGE_BASE_URL"] = judge_srv.base_url
    else:
        args += ["--judge-base-url", judge_srv.base_url]
    p = score(*args, env=env)
    assert p.returncode == 0, p.stderr
    assert len(subject_srv.requests) == sent, "the model under test's endpoint was called"
    assert [b["model"] for b in judge_srv.requests] == ["judge-model"] * 8
    assert set(judge_srv.authorizations) == {f"Bearer {JUDGE_KEY}"}
    line = p.stdout.splitlines()[0]
    assert "no call to the model under test" in line
    assert f"8 calls to judge openai/judge-model at {judge_srv.base_url}" in line
    child = stored(p.stdout.split()[1])["run"]
    assert child["metrics"]["mtbench_score"]["value"] == pytest.approx(3.0)


def test_a_live_runs_judge_with_no_endpoint_of_its_own_is_refused_not_sent_to_the_subject(
        fake_server: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from tests.gallery.test_mtbench import QUESTIONS, TASK

    players = Players(SCRIPT)
    srv = fake_server(responder=players)
    nowhere = f"http://127.0.0.1:{free_port()}/v1"
    base = ["run", TASK, "--model", "openai/agent", "--base-url", srv.base_url, "-T",
            f"data={QUESTIONS}", "-T", "judge_model=openai/judge", "-q"]
    p = assay(*base, env={"OPENAI_BASE_URL": nowhere, "OPENAI_API_KEY": AGENT_KEY},
              timeout=120)
    assert_user_error(p, "the judge (openai/judge)", "cannot reach", "-T judge_base_url=URL",
                      "ASSAY_JUDGE_BASE_URL")
    assert srv.requests == []  # neither the agent nor, above all, the judge
    judge_srv = fake_server(responder=Players(default="Rating: [[4]]"))
    p = assay(*base, env={"OPENAI_BASE_URL": nowhere, "OPENAI_API_KEY": AGENT_KEY,
                          "ASSAY_JUDGE_BASE_URL": judge_srv.base_url,
                          "ASSAY_JUDGE_API_KEY": JUDGE_KEY}, timeout=120)
    assert p.returncode == 0, p.stderr
    # the counts printed are of the calls made, each to whom it was made
    assert "model calls 8 (cache hits 0)" in p.stdout
    assert f"judge openai/judge at {judge_srv.base_url}: 8 calls (cache hits 0)" in p.stdout
    assert {b["model"] for b in srv.requests} == {"agent"}
    assert {b["model"] for b in judge_srv.requests} == {"judge"}
    assert set(judge_srv.authorizations) == {f"Bearer {JUDGE_KEY}"}
    assert set(srv.authorizations) == {f"Bearer {AGENT_KEY}"}


# -- 2. a YAML task's hf id is a Hub id, never a path -------------------------------------


@pytest.mark.parametrize("hf_id", ["/etc/passwd", "../secret.jsonl", "~/secret.jsonl",
                                   "secret.jsonl", "sub/secret.jsonl"])
def test_a_yaml_tasks_hf_id_never_reads_a_local_file(
        fake_server: Any, tmp_path: Path, hf_id: str) -> None:
    task_dir = tmp_path / "task"
    (task_dir / "sub").mkdir(parents=True)
    row = json.dumps({"question": "SECRET-ROW what is 1+1?", "answer": "2"}) + "\n"
    for where in (tmp_path / "secret.jsonl", task_dir / "secret.jsonl",
                  task_dir / "sub" / "secret.jsonl"):
        where.write_text(row, encoding="utf-8")
    (task_dir / "t.yaml").write_text(
        f"name: sneaky\nsource:\n  hf:\n    id: {json.dumps(hf_id)}\n", encoding="utf-8")
    srv = fake_server(default_reply="2")
    p = assay("run", str(task_dir / "t.yaml"), "--model", "openai/fake", "--base-url",
              srv.base_url, "-q", cwd=task_dir, timeout=120)
    assert_user_error(p, "source.hf.id", hf_id)
    assert srv.requests == []
    assert "SECRET-ROW" not in p.stdout + p.stderr


# -- 5. an endpoint's query is part of its identity ----------------------------------------


def test_endpoints_differing_only_in_their_query_share_no_cache_entry_nor_fingerprint(
        fake_server: Any, tmp_path: Path) -> None:
    route = {"good": True}
    srv = fake_server(responder=lambda body: (
        "Answer: " + re.search(r"Item (\d+)", body["messages"][-1]["content"]).group(1)
        if route["good"] else "Answer: nothing"))
    data = tmp_path / "items.jsonl"
    data.write_text("".join(json.dumps({"id": f"q{i}", "question": f"Item {i}: echo it",
                                        "answer": str(i)}) + "\n" for i in range(6)))

    def run(query: str) -> str:
        p = assay("run", "qa", "--data", str(data), "--model", "openai/m", "--base-url",
                  f"{srv.base_url}?route={query}", "--scorer", "exact", "-q", timeout=120)
        assert p.returncode == 0, p.stderr
        return run_id_of(p.stdout)

    good = run("good")
    route["good"] = False
    asked = len(srv.requests)
    bad = run("bad")
    assert srv.queries[asked:] == ["route=bad"] * 6, "answered from the other route's cache"
    store = Store()
    try:
        a, b = store.get_run(good), store.get_run(bad)
    finally:
        store.close()
    assert a["metrics"]["exact_match"]["value"] == 1.0
    assert b["metrics"]["exact_match"]["value"] == 0.0
    assert a["config"]["fingerprint"] != b["config"]["fingerprint"]
    # the store shows neither query value, nor the URL they hide in
    text = json.dumps([a, b])
    assert "route=good" not in text and "route=bad" not in text
    again = run("good")  # the same route: its own cache, no request
    route["good"] = True
    assert len(srv.requests) == asked + 6
    store = Store()
    try:
        assert store.get_run(again)["config"]["fingerprint"] == a["config"]["fingerprint"]
    finally:
        store.close()


# -- 6. the fingerprint covers which samples ran -----------------------------------------


def test_the_fingerprint_covers_the_sample_selection_and_history_compares_like_with_like(
        fake_server: Any, tmp_path: Path) -> None:
    right = {"ids": set(range(12))}
    srv = fake_server(responder=lambda body: (
        "Answer: code" + m.group(1)
        if int((m := re.search(r"Item (\d+)", body["messages"][-1]["content"])).group(1))
        in right["ids"] else "Answer: unsure"))
    data = write_data(tmp_path / "items.jsonl", range(24))

    def run(*extra: str) -> str:
        p = assay("run", "qa", "--data", str(data), "--model", "openai/model-x", "--base-url",
                  srv.base_url, "--scorer", "exact", "--no-cache", "-q", *extra, timeout=120)
        assert p.returncode == 0, p.stderr
        return run_id_of(p.stdout)

    first12 = run("--limit", "12")
    other12 = run("--sample-ids", ",".join(qid(i) for i in range(12, 24)))
    # 1.0 on twelve items, 0.0 on twelve others: two configurations, no drop
    p = assay("history", "qa", "--fail-on-drop")
    assert p.returncode == 0, (p.stdout, p.stderr)
    whole = run()
    again12 = run("--sample-ids", ",".join(qid(i) for i in reversed(range(12))))
    store = Store()
    try:
        fp = {r: store.get_run(r)["config"] for r in (first12, other12, whole, again12)}
    finally:
        store.close()
    assert len({fp[first12]["fingerprint"], fp[other12]["fingerprint"],
                fp[whole]["fingerprint"]}) == 3
    # the same twelve, chosen another way, are the same configuration
    assert fp[again12]["fingerprint"] == fp[first12]["fingerprint"]
    assert fp[first12]["parts"]["samples"].startswith("12 of 24 (")
    assert "samples" not in fp[whole]["parts"]
    p = assay("compare", whole, first12)
    assert p.returncode == 0, p.stderr
    assert "samples unset -> 12 of 24 (" in p.stdout


# -- the kind of 2 elsewhere: a converse case's app_dir goes through the path policy ------


@pytest.mark.parametrize("app_dir", ["/etc", "../outside", "~"])
def test_a_cases_app_dir_stays_inside_the_cases_folder(tmp_path: Path, app_dir: str) -> None:
    from assay.errors import ConfigError
    from assay.tasks.converse.cases import load_case

    folder = tmp_path / "cases"
    folder.mkdir()
    (tmp_path / "outside").mkdir()
    case = folder / "c.yaml"
    case.write_text("task_description: say hello\nscoring_points:\n"
                    "  - score_point: it said hello\napp_dir: " + json.dumps(app_dir) + "\n")
    with pytest.raises(ConfigError, match="app_dir"):
        load_case(case)
    case.write_text(case.read_text().replace(json.dumps(app_dir), "apps/mine"))
    loaded, _ = load_case(case)
    assert loaded.app_dir == str((folder / "apps" / "mine").resolve())
