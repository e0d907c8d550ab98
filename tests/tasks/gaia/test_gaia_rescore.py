"""GAIA runs scored again from the store: official verdicts reproduced, lenient on request."""

from __future__ import annotations

import subprocess
import sys

import gaia_fixtures as fx

import assay
from assay.store.sqlite import Store


def responder():
    tasks = {t["Question"]: t for t in fx.default_tasks("validation")}
    # one answer both refuse, one only the official scorer refuses, one only the lenient
    loose = {"Saint Petersburg": "St. Petersburg", "red": "the red", "1000": "1000.0"}

    def respond(body):
        user = body["messages"][-1]["content"]
        answer = tasks[next(q for q in tasks if user.startswith(q))]["Final answer"]
        return f"Thinking.\nFINAL ANSWER: {loose.get(answer, answer)}"

    return respond


def verdicts(store: Store, run_id: str) -> dict[str, tuple]:
    return {(r.sample_id, r.epoch): (r.scores["gaia"]["value"], r.scores["gaia"]["answer"])
            for r in store.results(run_id)}


def test_score_reproduces_gaia_verdicts_and_gives_the_lenient_numbers(fake_server, workspace,
                                                                      tmp_path):
    root = fx.write_gaia_fixture(tmp_path / "gaia", layout="jsonl")
    srv = fake_server(responder=responder())
    official = assay.evaluate("gaia", model="openai/fake", base_url=srv.base_url,
                              data_dir=str(root))
    lenient_run = assay.evaluate("gaia", model="openai/fake", base_url=srv.base_url,
                                 data_dir=str(root), scorer="lenient", cache=False)
    sent = srv.stats["requests"]
    same = subprocess.run([sys.executable, "-m", "assay", "score", official.run_id],
                          capture_output=True, text=True)
    lenient = subprocess.run([sys.executable, "-m", "assay", "score", official.run_id,
                              "--scorer", "lenient"], capture_output=True, text=True)
    assert same.returncode == 0 and lenient.returncode == 0, same.stderr + lenient.stderr
    assert srv.stats["requests"] == sent  # no model calls
    store = Store()
    try:
        same_id, lenient_id = same.stdout.split()[1], lenient.stdout.split()[1]
        assert verdicts(store, same_id) == verdicts(store, official.run_id)
        # scoring the stored answers leniently == running leniently from the start
        assert verdicts(store, lenient_id) == verdicts(store, lenient_run.run_id)
        got = store.get_run(lenient_id)["metrics"]["exact_match_rate"]
        want = lenient_run.metrics["exact_match_rate"]
        assert (got["successes"], got["n"]) == (want["successes"], want["n"])
        changed = {k for k, v in verdicts(store, lenient_id).items()
                   if v != verdicts(store, official.run_id)[k]}
        assert len(changed) == 2  # "the red" now passes, "1000.0" no longer does
    finally:
        store.close()


def test_gaia_epochs_are_clustered_by_task(fake_server, workspace, tmp_path):
    root = fx.write_gaia_fixture(tmp_path / "gaia", layout="jsonl")
    srv = fake_server(responder=responder())
    one = assay.evaluate("gaia", model="openai/fake", base_url=srv.base_url,
                         data_dir=str(root)).metrics
    three = assay.evaluate("gaia", model="openai/fake", base_url=srv.base_url,
                           data_dir=str(root), epochs=3, cache=False).metrics
    a, b = one["exact_match_rate"], three["exact_match_rate"]
    assert (b["value"], b["n"], b["ci_low"], b["ci_high"]) == (a["value"], a["n"], a["ci_low"],
                                                               a["ci_high"])
    assert b["clustered_by"] == "sample" and b["observations"] == 3 * a["n"]
    for level, value in one["level_accuracy"].items():
        assert three["level_accuracy"][level]["ci_low"] == value["ci_low"], level
