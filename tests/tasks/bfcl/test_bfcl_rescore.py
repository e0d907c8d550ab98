"""BFCL runs scored again from the store: the same verdicts, no requests; epochs clustered."""

from __future__ import annotations

from typing import Any

import official_oracle as oracle
import pytest
from bfcl_prompt_text import calls_to_prompt_text

import assay
from assay.rescore import rescore
from assay.store.sqlite import Store

pytestmark = pytest.mark.skipif(not oracle.available(), reason=oracle.NOT_INSTALLED)


def table(category: str) -> dict[str, dict[str, Any]]:
    questions, answers = oracle.entries(category)
    out = {}
    for i, q in enumerate(questions):
        calls = oracle.render(oracle.truth_calls(q["function"], answers[i]["ground_truth"]),
                              "python", fc=False)
        out[q["question"][0][-1]["content"]] = {"calls": calls, "id": q["id"]}
    return out


def responder(mode: str):
    known = {**table("simple_python"), **table("multiple")}

    def respond(body: dict[str, Any]) -> Any:
        entry = known[[m for m in body["messages"] if m["role"] == "user"][-1]["content"]]
        if entry["id"].endswith(("_2", "_5")):  # wrong on purpose: no call, or text
            return "I would rather not." if mode == "prompt" else "no call from me"
        calls = entry["calls"]
        if entry["id"].endswith("_4"):  # a wrong argument value
            calls = [{name: {k: "wrong" for k in args} for name, args in c.items()}
                     for c in calls]
        if mode == "fc":
            return {"tool_calls": [{"name": name.replace(".", "_"), "arguments": args}
                                   for call in calls for name, args in call.items()]}
        return calls_to_prompt_text(calls, "python")

    return respond


def verdicts(store: Store, run_id: str) -> dict[str, Any]:
    return {r.sample_id: {k: (v["value"], v["answer"], v["explanation"],
                              (v.get("metadata") or {}).get("error_type"))
                          for k, v in r.scores.items()} for r in store.results(run_id)}


@pytest.mark.parametrize("mode", ["fc", "prompt"])
def test_score_reproduces_every_bfcl_verdict_without_requests(fake_server, workspace, mode):
    srv = fake_server(responder=responder(mode))
    result = assay.evaluate("bfcl", model="openai/fake", base_url=srv.base_url,
                            category="simple_python,multiple", mode=mode, limit=16)
    sent = srv.stats["requests"]
    store = Store()
    try:
        again = rescore(store, result.run_id)
        before, after = verdicts(store, result.run_id), verdicts(store, again.run_id)
        assert after == before and len(before) == 16
        assert {v["bfcl"][0] for v in before.values()} == {0.0, 1.0}  # both kinds present
        assert again.metrics["accuracy"] == result.metrics["accuracy"]
        assert again.metrics["categories"] == result.metrics["categories"]
        assert again.metrics["error_types"] == result.metrics["error_types"]
    finally:
        store.close()
    assert srv.stats["requests"] == sent


def test_bfcl_epochs_are_clustered_by_entry(fake_server, workspace):
    srv = fake_server(responder=responder("prompt"))
    one = assay.evaluate("bfcl", model="openai/fake", base_url=srv.base_url,
                         category="simple_python", mode="prompt", limit=10).metrics
    three = assay.evaluate("bfcl", model="openai/fake", base_url=srv.base_url,
                           category="simple_python", mode="prompt", limit=10, epochs=3,
                           cache=False).metrics
    for key in ("accuracy", "tolerant_accuracy"):
        a, b = one[key], three[key]
        assert (b["value"], b["n"], b["ci_low"], b["ci_high"]) == (
            a["value"], a["n"], a["ci_low"], a["ci_high"]), key
        assert b["clustered_by"] == "sample" and b["observations"] == 30
    cat1, cat3 = one["categories"]["simple_python"], three["categories"]["simple_python"]
    assert (cat3["n"], cat3["ci_low"], cat3["ci_high"]) == (cat1["n"], cat1["ci_low"],
                                                            cat1["ci_high"])
