"""MT-Bench's cost per role: the model's two turns and the judge's verdicts, each role's
tokens as the fake server counted them (its judge system prompt cached after the first),
priced by hand from a --pricing file, equal to what the run stored."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from assay.store.sqlite import Store
from gallery import test_mtbench
from gallery.test_mtbench import Players, evaluate

# the fixtures of MT-Bench's own tests, shared
api_key, wheel_files = test_mtbench.api_key, test_mtbench.wheel_files
PRICES = {"agent": (2.0, 0.5, 6.0), "judge": (5.0, 1.25, 20.0)}  # input, cached, output


def test_cost_per_role_equals_the_servers_tokens_priced_by_hand(
        fake_server: Any, api_key: None, wheel_files: dict[str, Path],  # noqa: F811
        tmp_path: Path) -> None:
    prices = tmp_path / "prices.yaml"
    prices.write_text("".join(f"openai/{m}: {{input: {i}, cached_input: {c}, output: {o}}}\n"
                              for m, (i, c, o) in PRICES.items()), encoding="utf-8")
    srv = fake_server(responder=Players())
    result = evaluate(srv, judge_prompts=str(wheel_files["prompts"]),
                      judge_model="openai/judge", pricing=str(prices), cache=False,
                      max_connections=1)
    store = Store()
    try:
        cost = store.get_run(result.run_id)["stats"]["cost"]
    finally:
        store.close()
    assert set(cost["roles"]) == {"subject", "judge"}
    total = 0.0
    for model, role in (("agent", "subject"), ("judge", "judge")):
        mine = [u for u in srv.usages if u["model"] == model]
        cached = sum(u["prompt_tokens_details"]["cached_tokens"] for u in mine)
        prompt = sum(u["prompt_tokens"] for u in mine)
        out = sum(u["completion_tokens"] for u in mine)
        i, c, o = PRICES[model]
        usd = ((prompt - cached) * i + cached * c + out * o) / 1e6
        got = cost["roles"][role]
        assert (got["input_tokens"], got["output_tokens"], got["cached_input_tokens"]) == (
            prompt, out, cached)
        assert got["usd"] == pytest.approx(usd, rel=1e-9)
        total += usd
    assert cost["roles"]["judge"]["cached_input_tokens"] > 0  # its system prompt repeats
    assert cost["usd"] == pytest.approx(total, rel=1e-9)


def test_a_judged_two_turn_task_goes_through_batches_round_by_round(
        fake_server: Any, api_key: None, wheel_files: dict[str, Path],  # noqa: F811
        tmp_path: Path) -> None:
    """The model's first turns, its second turns, then the judge's verdicts: three rounds,
    every call in a batch, none sent directly; the same scores as the direct run's."""
    script = {("81", 1): ["Rating: [[7]]"], ("101", 2): ["Rating: [[2]]"]}
    direct_srv = fake_server(responder=Players(script))
    prices = tmp_path / "prices.yaml"
    prices.write_text("openai/agent: {input: 2, output: 6}\nopenai/judge: {input: 5, output: "
                      "20}\n", encoding="utf-8")
    direct = evaluate(direct_srv, judge_prompts=str(wheel_files["prompts"]),
                      judge_model="openai/judge", cache=False, pricing=str(prices))
    srv = fake_server(responder=Players(script))
    batched = evaluate(srv, judge_prompts=str(wheel_files["prompts"]),
                       judge_model="openai/judge", batch=True, batch_poll=0.01,
                       pricing=str(prices))
    assert not srv.requests and len(srv.batch_requests) == len(direct_srv.requests)
    store = Store()
    try:
        paid = store.get_run(direct.run_id)["stats"]["cost"]
        run = store.get_run(batched.run_id)
        rows = {r.sample_id: r.scores for r in store.results(batched.run_id)}
        want = {r.sample_id: r.scores for r in store.results(direct.run_id)}
    finally:
        store.close()
    assert [(b["model"], b["requests"]) for b in run["stats"]["batches"]] == [
        ("openai/agent", 4), ("openai/agent", 4), ("openai/judge", 8)]
    assert rows == want and batched.metrics["mtbench_score"] == direct.metrics["mtbench_score"]
    # every call paid for once, at half the price: a turn read in one round by a sample put
    # off to the next is paid for when the sample finally runs
    for role in ("subject", "judge"):
        got, full = run["stats"]["cost"]["roles"][role], paid["roles"][role]
        assert (got["input_tokens"], got["output_tokens"]) == (
            full["input_tokens"], full["output_tokens"])
        assert got["usd"] == pytest.approx(full["usd"] / 2, rel=1e-9)
