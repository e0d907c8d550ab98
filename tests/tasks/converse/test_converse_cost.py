"""What a converse run costs, per role: the agent's, the examiner's and the judge's tokens as
the server counted them (cached prompt tokens included), priced by hand from a --pricing
file, equal to what the run stored and printed; and --sample-token-limit ending a sample.

Runs go through the real CLI in a subprocess, over real HTTP to the fake server that plays
all three roles (:mod:`convfakes`), into the test's own store."""

from __future__ import annotations

from pathlib import Path

import pytest
from convfakes import (
    ConverseServer,
    converse_args,
    run_cli,
    run_id_of,
    stop_after,
    stored,
    write_case,
)

#: USD per million tokens; distinct per role, so a role priced as another would show
PRICES = {"openai/agent": (3.0, 1.5, 15.0), "openai/examiner": (0.5, 0.25, 2.0),
          "openai/judge": (10.0, 2.5, 30.0)}
ROLE_OF = {"agent": "subject", "examiner": "examiner", "judge": "judge"}


def pricing_file(folder: Path) -> Path:
    path = folder / "prices.yaml"
    path.write_text("".join(f"{m}: {{input: {i}, cached_input: {c}, output: {o}}}\n"
                            for m, (i, c, o) in PRICES.items()), encoding="utf-8")
    return path


def by_hand(usages: list[dict], model: str) -> tuple[float, int, int, int]:
    """A role's cost from the server's own usage records and the price file."""
    i, c, o = PRICES[f"openai/{model}"]
    mine = [u for u in usages if u["model"] == model]
    cached = sum(u["prompt_tokens_details"]["cached_tokens"] for u in mine)
    prompt = sum(u["prompt_tokens"] for u in mine)
    out = sum(u["completion_tokens"] for u in mine)
    return ((prompt - cached) * i + cached * c + out * o) / 1e6, prompt, out, cached


def test_cost_per_role_equals_the_servers_tokens_priced_by_hand(tmp_path: Path,
                                                                 workspace: Path) -> None:
    folder = tmp_path / "cases"
    for name in ("a", "b", "c"):
        write_case(folder, name, max_rounds=3)
    with ConverseServer(examiner=stop_after(2)) as srv:
        p = run_cli(*converse_args(folder, srv.base_url, "--no-cache", "-c", "1",
                                   "--pricing", str(pricing_file(tmp_path))))
        assert p.returncode == 0, p.stderr
        usages = list(srv.usages)
    run = stored(run_id_of(p.stdout))["run"]
    cost = run["stats"]["cost"]
    assert set(cost["roles"]) == {"subject", "examiner", "judge"} and not cost["unpriced"]
    total = 0.0
    for model, role in ROLE_OF.items():
        usd, prompt, out, cached = by_hand(usages, model)
        stored_role = cost["roles"][role]
        assert stored_role["input_tokens"] == prompt and stored_role["output_tokens"] == out
        assert stored_role["cached_input_tokens"] == cached
        assert stored_role["usd"] == pytest.approx(usd, rel=1e-9), role
        assert stored_role["model"] == f"openai/{model}" and stored_role["price"] == "file"
        total += usd
    # the examiner's system prompt repeats: the prompt cache is exercised, not zero
    assert cost["roles"]["examiner"]["cached_input_tokens"] > 0
    assert cost["usd"] == pytest.approx(total, rel=1e-9)
    assert f"cost ${total:.4f}" in p.stdout.replace(",", "")
    # per sample: the roles' costs add up to the run's
    per_sample = [sum(u["cost_usd"] for u in r.outcome["usage"].values())
                  for r in stored(run["id"])["results"]]
    assert sum(per_sample) == pytest.approx(total, rel=1e-9)


def test_sample_token_limit_ends_that_sample_with_the_reason(tmp_path: Path,
                                                             workspace: Path) -> None:
    folder = tmp_path / "cases"
    write_case(folder, "long", max_rounds=20)
    with ConverseServer() as srv:  # the examiner never stops
        p = run_cli(*converse_args(folder, srv.base_url, "--no-cache",
                                   "--sample-token-limit", "300"))
        sent = srv.stats["requests"]
    result = stored(run_id_of(p.stdout))["results"][0]
    assert result.error and "sample token limit reached" in result.error
    assert "the limit is 300" in result.error
    used = result.outcome["usage"]
    spent = sum(u["input_tokens"] + u["output_tokens"] for u in used.values())
    assert spent > 300  # the call that crossed it was paid for, and counted
    assert sent < 40  # 20 rounds would take over 40 requests
