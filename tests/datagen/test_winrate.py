"""Pairwise win rate against the fake OpenAI-compatible server (real HTTP, the real engine)."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest

from assay.engine.runner import Engine, RunSpec
from assay.errors import ConfigError
from assay.reports.render import write_reports
from assay.store.sqlite import Store
from assay.tasks.datagen.problem import Problem
from assay.tasks.datagen.winrate import (
    WINNER_SCHEMA,
    WinRateTask,
    combine,
    parse_winner,
    preferred_item,
    seeded_pairs,
    winner_schema,
)
from assay.tasks.registry import task_class

MARKER = "ZEBRA"  # only generated problems carry it: a judge that can "recognise" them


@pytest.fixture
def store(workspace: Path) -> Store:
    s = Store()
    yield s
    s.close()


def write_sets(tmp_path: Path, n_gen: int = 12, n_ref: int = 15,
               gen_model: str = "openai/gen-model") -> tuple[Path, Path]:
    gen, ref = tmp_path / "gen.jsonl", tmp_path / "ref.jsonl"
    with open(gen, "w") as f:
        for i in range(n_gen):
            f.write(json.dumps({
                "problem_id": f"g{i}", "source": "generated",
                "problem": f"{MARKER} generated problem number {i}: find x.",
                "answer": str(i), "solution": "by construction",
                "provenance": {"model": gen_model}}) + "\n")
    with open(ref, "w") as f:
        for i in range(n_ref):
            f.write(json.dumps({"id": f"r{i}", "problem": f"Real AIME problem {i}: find y.",
                                "answer": str(500 + i)}) + "\n")
    return gen, ref


def answer(winner: str, reason: str = "because") -> str:
    return json.dumps({"reason": reason, "winner": winner})


def positions(body: dict[str, Any]) -> tuple[str, str]:
    """The texts shown as Problem 1 and Problem 2."""
    user = next(m["content"] for m in body["messages"] if m["role"] == "user")
    one = re.search(r"\[Problem 1\]\n(.*?)\n\[End of Problem 1\]", user, re.S).group(1)
    two = re.search(r"\[Problem 2\]\n(.*?)\n\[End of Problem 2\]", user, re.S).group(1)
    return one, two


def run_winrate(store: Store, srv: Any, options: dict[str, Any],
                model: str = "openai/fake") -> tuple[str, list]:
    run_id = asyncio.run(Engine(store, quiet=True).run(RunSpec(
        task="datagen_winrate", model=model, base_url=srv.base_url,
        task_options=options, max_retries=0)))
    return run_id, store.results(run_id)


def metrics(store: Store, run_id: str, results: list) -> dict[str, Any]:
    return WinRateTask.metrics(results, store.get_run(run_id)["spec"]["task_options"])


def test_registry_finds_winrate() -> None:
    assert task_class("datagen_winrate") is WinRateTask


def test_always_first_position_gives_ties_and_full_inconsistency(fake_server, store,
                                                                tmp_path) -> None:
    gen, ref = write_sets(tmp_path)
    srv = fake_server(responder=lambda body: answer("1"))
    run_id, results = run_winrate(store, srv, {"data": str(gen), "reference": str(ref),
                                               "seed": 3})
    assert len(results) == 12 and len(srv.requests) == 24  # both orders, no retries
    req = srv.requests[0]
    assert req["response_format"]["json_schema"]["schema"] == WINNER_SCHEMA
    one, two = positions(req)
    assert "Problem 1" not in one and ("generated" in one) != ("generated" in two)
    m = metrics(store, run_id, results)
    assert m["wins"] == 0 and m["losses"] == 0 and m["ties"] == 12
    assert m["win_rate"]["value"] == 0.0 and m["tie_rate"]["value"] == 1.0
    assert m["win_rate_adjusted"]["value"] == 0.5  # only through ties
    assert m["win_rate_adjusted"]["clustered_by"] == "pair"
    assert m["position_inconsistency_rate"]["value"] == 1.0
    assert m["position_inconsistency_rate"]["ci_low"] > 0.7  # Wilson, 12/12
    assert m["ties_from_position_flips"] == 12
    assert m["decisive_win_rate"]["value"] is None  # no decisive pair at all
    assert m["first_position_pick_rate"]["value"] == 1.0
    assert m["first_position_pick_rate"]["n"] == 24
    s = results[0].scores["winrate"]
    assert s["answer"] == "tie" and s["value"] == 0.5 and s["metadata"]["inconsistent"]
    assert "position flip" in s["explanation"]
    extra = WinRateTask.report_extra(m, results)
    note = extra["sections"][0]["note"]
    assert "12 of 12 valid pairs" in note and "position bias" in note
    assert any("position-inconsistent" in r for r in extra["recommendations"])
    # the rendered report states it too
    paths = write_reports(store, run_id, tmp_path / "report")
    md = paths["markdown"].read_text()
    assert "win_rate_adjusted 0.500" in md
    assert "flipped with the position and count as ties" in md
    assert "position_inconsistency_rate | 1.000" in md


def judge_recognising_generated(prefer_generated: bool):
    def responder(body: dict[str, Any]) -> str:
        one, _ = positions(body)
        gen_first = MARKER in one
        return answer("1" if gen_first == prefer_generated else "2")
    return responder


def test_judge_preferring_generated_gives_win_rate_near_one(fake_server, store,
                                                           tmp_path) -> None:
    gen, ref = write_sets(tmp_path)
    srv = fake_server(responder=judge_recognising_generated(True))
    run_id, results = run_winrate(store, srv, {"data": str(gen), "reference": str(ref)})
    m = metrics(store, run_id, results)
    assert m["wins"] == 12 and m["losses"] == m["ties"] == 0
    assert m["win_rate_adjusted"]["value"] == 1.0 and m["win_rate"]["value"] == 1.0
    assert m["decisive_win_rate"]["value"] == 1.0
    assert m["position_inconsistency_rate"]["value"] == 0.0
    assert m["first_position_pick_rate"]["value"] == 0.5  # half the time it is shown first
    assert all(r.scores["winrate"]["answer"] == "win" for r in results)


def test_judge_preferring_reference_gives_win_rate_near_zero(fake_server, store,
                                                            tmp_path) -> None:
    gen, ref = write_sets(tmp_path)
    srv = fake_server(responder=judge_recognising_generated(False))
    run_id, results = run_winrate(store, srv, {"data": str(gen), "reference": str(ref)})
    m = metrics(store, run_id, results)
    assert m["losses"] == 12 and m["win_rate_adjusted"]["value"] == 0.0
    assert m["win_rate"]["ci_high"] < 0.3 and m["position_inconsistency_rate"]["value"] == 0.0


def test_seeded_pairing_reproducible_and_recorded(fake_server, store, tmp_path) -> None:
    gen, ref = write_sets(tmp_path, n_gen=12, n_ref=15)
    opts = {"data": str(gen), "reference": str(ref), "seed": 7}
    ids1 = [s.id for s in WinRateTask(**opts).samples()]
    ids2 = [s.id for s in WinRateTask(**opts).samples()]
    ids3 = [s.id for s in WinRateTask(**{**opts, "seed": 8}).samples()]
    assert ids1 == ids2 and ids1 != ids3
    refs = [i.split("~")[1] for i in ids1]
    assert len(set(refs)) == 12  # drawn without replacement
    assert [i.split("~")[0] for i in ids1] == [f"g{i}" for i in range(12)]
    srv = fake_server(responder=judge_recognising_generated(True))
    run_id, results = run_winrate(store, srv, opts)
    run = store.get_run(run_id)
    assert run["dataset"]["seed"] == 7
    assert run["dataset"]["pairing"] == [i.split("~") for i in ids1]
    assert [r.sample_id for r in results] == ids1
    for r in results:
        assert r.metadata["seed"] == 7
        assert f"{r.metadata['generated_id']}~{r.metadata['reference_id']}" == r.sample_id
    m = metrics(store, run_id, results)
    assert m["seed"] == 7 and m["pairing"] == run["dataset"]["pairing"]


def test_pairing_sizes() -> None:
    gen = [Problem(f"g{i}", f"p{i}", "1") for i in range(10)]
    ref = [Problem(f"r{i}", f"q{i}", "2") for i in range(4)]
    pairs = seeded_pairs(gen, ref, seed=1)
    assert len(pairs) == 4  # default: min of the two sizes
    assert len({g.problem_id for g, _ in pairs}) == 4 and len({r.problem_id for _, r in pairs}) == 4
    more = seeded_pairs(gen, ref, seed=1, n=10)
    assert len(more) == 10
    counts = {r: sum(1 for _, x in more if x.problem_id == r) for r in ("r0", "r1", "r2", "r3")}
    assert sorted(counts.values()) == [2, 2, 3, 3]  # balanced reuse only after exhaustion
    assert len(seeded_pairs(gen, ref, seed=1, n=50)) == 10  # each generated problem once
    with pytest.raises(ConfigError):
        seeded_pairs(gen, [], seed=1)
    with pytest.raises(ConfigError):
        WinRateTask(data="x.jsonl")


def test_n_comparisons_option(fake_server, store, tmp_path) -> None:
    gen, ref = write_sets(tmp_path, n_gen=12, n_ref=15)
    srv = fake_server(responder=judge_recognising_generated(True))
    run_id, results = run_winrate(store, srv, {"data": str(gen), "reference": str(ref),
                                               "n_comparisons": 5, "seed": 2})
    assert len(results) == 5 and len(srv.requests) == 10
    assert store.get_run(run_id)["dataset"]["n_comparisons_requested"] == 5


def test_invalid_verdicts_counted_and_excluded(fake_server, store, tmp_path) -> None:
    gen, ref = write_sets(tmp_path, n_gen=6, n_ref=6)

    def responder(body: dict[str, Any]) -> str:
        one, _ = positions(body)
        n = int(re.search(r"number (\d+)", body["messages"][1]["content"]).group(1))
        gen_first = MARKER in one
        retry = len(body["messages"]) > 2
        if n in (0, 1) and not gen_first:
            return "Problem 1 is better I think" if not retry else '{"winner": "A"}'
        if n == 2 and not retry:  # recovered on the retry
            return "```\nnot json\n```"
        return answer("1" if gen_first else "2")

    srv = fake_server(responder=responder)
    run_id, results = run_winrate(store, srv, {"data": str(gen), "reference": str(ref)})
    by_gen = {r.metadata["generated_id"]: r for r in results}
    for g in ("g0", "g1"):
        s = by_gen[g].scores["winrate"]
        assert s["value"] is None and s["answer"] is None and s["metadata"]["invalid"]
        assert "order B" in s["explanation"]
        assert s["metadata"]["judgments"]["B"]["attempts"] == 2
        assert s["metadata"]["judgments"]["A"]["winner"] == "1"  # the valid half is kept
    s2 = by_gen["g2"].scores["winrate"]
    assert s2["answer"] == "win" and s2["metadata"]["judgments"]["A"]["attempts"] == 2
    m = metrics(store, run_id, results)
    assert m["n_invalid_pairs"] == 2 and m["n_valid_pairs"] == 4
    assert m["invalid_rate"]["value"] == pytest.approx(2 / 6)
    assert m["wins"] == 4 and m["win_rate_adjusted"]["value"] == 1.0
    assert m["n_single_invalid"] == 2 and m["n_single_judgments"] == 10
    assert any("excluded" in r for r in WinRateTask.report_extra(m, results)
               ["recommendations"])


def test_tie_with_preference_is_a_tie(fake_server, store, tmp_path) -> None:
    gen, ref = write_sets(tmp_path, n_gen=4, n_ref=4)

    def responder(body: dict[str, Any]) -> str:
        one, _ = positions(body)
        return answer("1") if MARKER in one else answer("tie")

    srv = fake_server(responder=responder)
    run_id, results = run_winrate(store, srv, {"data": str(gen), "reference": str(ref)})
    m = metrics(store, run_id, results)
    assert m["ties"] == 4 and m["win_rate_adjusted"]["value"] == 0.5
    assert m["position_inconsistency_rate"]["value"] == 0.0
    assert m["tie_with_preference_rate"]["value"] == 1.0


def test_self_preference_flagged_when_judge_generated(fake_server, store, tmp_path) -> None:
    gen, ref = write_sets(tmp_path, n_gen=3, n_ref=3, gen_model="openai/fake")
    srv = fake_server(responder=judge_recognising_generated(True))
    run_id, results = run_winrate(store, srv, {"data": str(gen), "reference": str(ref)})
    m = metrics(store, run_id, results)
    assert m["judge_models"] == ["openai/fake"]
    assert "generating model" in m["self_preference_warning"]


def test_combination_rules() -> None:
    assert preferred_item("A", "1") == "generated" and preferred_item("B", "1") == "reference"
    assert preferred_item("A", "2") == "reference" and preferred_item("B", "2") == "generated"
    assert preferred_item("A", "tie") == "tie" and preferred_item("B", None) is None
    assert combine("generated", "generated")["outcome"] == "win"
    assert combine("reference", "reference")["outcome"] == "loss"
    c = combine("generated", "reference")
    assert c["outcome"] == "tie" and c["inconsistent"] and not c["mixed"]
    c = combine("generated", "tie")
    assert c["outcome"] == "tie" and c["mixed"] and not c["inconsistent"]
    assert combine("tie", "tie") == {"outcome": "tie", "inconsistent": False, "mixed": False}
    assert combine(None, "generated")["outcome"] == "invalid"


@pytest.mark.parametrize("text, winner", [
    ('{"reason": "r", "winner": "1"}', "1"),
    ('```json\n{"reason": "r", "winner": "2"}\n```', "2"),
    ('Verdict: {"winner": "Tie", "reason": "same"}', "tie"),
    ('{"winner": 2, "reason": "r"}', "2"),
    ('{"winner": "Problem 1", "reason": "r"}', "1"),
    ('{"winner": "A"}', None),
    ('{"winner": "3"}', None),
    ('{"winner": true}', None),
    ('{"reason": "r"}', None),
    ("1", None),
    ("Problem 1 is better.", None),
    ('{"reason": "r", "winner": "1', None),
    ("", None),
])
def test_parse_winner(text: str, winner: str | None) -> None:
    v = parse_winner(text)
    assert (v["winner"] if v else None) == winner


def test_reason_length_fits_the_token_budget(fake_server, store, tmp_path) -> None:
    """A rambling small judge must be cut off inside the reason, not before the verdict."""
    assert WINNER_SCHEMA["properties"]["reason"]["maxLength"] == 300
    assert "maxLength" not in winner_schema(None)["properties"]["reason"]
    gen, ref = write_sets(tmp_path, n_gen=1, n_ref=1)
    srv = fake_server(responder=lambda body: answer("1"))
    run_winrate(store, srv, {"data": str(gen), "reference": str(ref), "max_tokens": 256})
    schema = srv.requests[0]["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["reason"]["maxLength"] == 156
    assert srv.requests[0]["max_tokens"] == 256
