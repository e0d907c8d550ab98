"""The frozen field set of issue 25 (``requests_field.yaml``) and the rates it is measured
by (:func:`quality.field_rates`): the set is well formed, and the formulas give the
figures worked out by hand on a small made-up list of plans; and the planner (rules, and
the embedded model as planner) meets issue 25's targets on it. The figures are printed by
``python bench/plan_quality.py --set field``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from assay.plan.schema import Intent, Plan, PlanTask
from assay.tasks.gallery.entry import find_entry
from assay.tasks.registry import available
from tests.plan import quality


def test_the_field_set_is_well_formed() -> None:
    requests, capabilities = quality.load_field()
    assert len(requests) >= 100
    assert len({r["request"] for r in requests}) == len(requests)
    assert len({r["style"] for r in requests}) >= 4
    builtin = set(available())
    for cap, c in capabilities.items():
        assert set(c) >= {"meets", "canonical"}, cap
        for name in c["meets"] + c["canonical"]:
            assert find_entry(name) is not None or name in builtin, (cap, name)
        assert set(c["canonical"]) <= set(c["meets"]), cap
    for r in requests:
        assert set(r) <= {"request", "style", "capabilities", "named", "budget", "agent",
                          "languages", "unavailable"}, r
        assert set(r["capabilities"]) <= set(capabilities), r
        assert set(r.get("unavailable", [])) <= set(capabilities), r
        for name in r.get("named", []):
            assert find_entry(name) is not None or name in builtin, (r, name)
    # the old sets load as before, beside the new one
    assert quality.load_requests() and quality.load_requests(quality.HELDOUT)


@pytest.mark.parametrize(("budget", "n_caps", "want"), [
    ({}, 1, ["a", "b", "c"]),
    ({"max_tasks": 5}, 3, ["a", "b"]),      # ceil(5 / 3) = 2
    ({"max_tasks": 2}, 2, ["a"]),
    ({"max_tasks": 1}, 3, ["a"]),           # at least one
    ({"cheap": True}, 1, ["a", "b", "c"]),  # no number: nothing cut
])
def test_the_canonical_list_is_cut_to_the_stated_budget(budget: dict[str, Any], n_caps: int,
                                                        want: list[str]) -> None:
    req = {"budget": budget, "capabilities": [f"c{i}" for i in range(n_caps)]}
    assert quality.expected_canonical(req, ["a", "b", "c"]) == want


CAPS = {"code": {"meets": ["humaneval", "mbpp"], "canonical": ["humaneval", "mbpp"]},
        "math": {"meets": ["gsm8k", "math", "math500"], "canonical": ["gsm8k", "math"]},
        "safety": {"meets": [], "canonical": []}}


def made(request: dict[str, Any], tasks: list[str], candidates: list[str] | None = None,
         **plan: Any) -> dict[str, Any]:
    request = {"request": f"r{len(tasks)}{tasks}", "capabilities": [], **request}
    return {"request": request, "seconds": 1.0,
            "plan": Plan(request=request["request"],
                         tasks=[PlanTask(task=t) for t in tasks], **plan),
            "candidates": candidates if candidates is not None else tasks}


def test_the_field_rates_on_a_hand_made_list_of_plans() -> None:
    plans = [
        # code: hit, canonical 1 of 2
        made({"style": "terse", "capabilities": ["code"]}, ["humaneval"],
             ["humaneval", "basic_skills_coding"]),
        # max_tasks 2 over 2 capabilities: humaneval (missed) and gsm8k (met); mbpp fails
        made({"style": "chatty", "capabilities": ["code", "math"],
              "budget": {"max_tasks": 2}}, ["mbpp", "gsm8k"]),
        # both named met (tau2_bench reported as planned), safety said in the notes
        made({"style": "chatty", "named": ["tau2_bench", "bfcl"], "unavailable": ["safety"]},
             ["bfcl"], intent=Intent(unknown_benchmarks=[{"name": "tau-bench",
                                                          "planned": "tau2_bench"}]),
             notes=["jailbreak robustness: no task in the gallery"]),
        # no task: not executable; gsm8k sixth: not in the top 5; canonical 0
        made({"style": "terse", "capabilities": ["math"]}, [],
             ["basic_arithmetic", "a1", "a2", "a3", "a4", "gsm8k"]),
        # only what no task covers: an empty plan is executable; safety not said
        made({"style": "terse", "unavailable": ["safety"]}, []),
        # named mmlu missing
        made({"style": "terse", "named": ["mmlu"]}, ["triviaqa"]),
    ]
    ok = {"ok": True, "why": ""}
    smoked = {quality.smoke_key(PlanTask(task=t)): ok
              for t in ("humaneval", "gsm8k", "bfcl", "triviaqa")}
    smoked[quality.smoke_key(PlanTask(task="mbpp"))] = {"ok": False, "why": "boom"}
    rates = quality.field_rates(plans, smoked, CAPS)
    assert rates["requests"] == 6
    assert (rates["executable_n"], rates["executable"]) == (4, round(4 / 6, 4))
    assert (rates["named"], rates["named_recall"]) == ("2/3", round(2 / 3, 4))
    assert (rates["capabilities"], rates["capability_recall_at_5"]) == ("3/4", 0.75)
    # (0.5 + 0 + 1 + 0) / 4 pairs
    assert (rates["canonical_pairs"], rates["canonical_coverage"]) == (4, 0.375)
    assert (rates["unavailable"], rates["unavailable_said"]) == ("1/2", 0.5)
    assert rates["seconds_per_plan"] == 1.0
    terse, chatty = rates["by_style"]["terse"], rates["by_style"]["chatty"]
    assert (terse["requests"], terse["executable"], terse["canonical_coverage"]) == \
        (4, 0.75, 0.25)
    assert (chatty["requests"], chatty["executable"], chatty["capability_recall_at_5"],
            chatty["canonical_coverage"]) == (2, 0.5, 1.0, 0.5)
    failures = "\n".join(rates["failures"])
    assert "not executable: mbpp: boom" in failures
    assert "not executable: no task" in failures
    assert "named mmlu missing" in failures
    assert "capability math not in top 5" in failures
    assert "canonical ['humaneval'] not in the plan" in failures
    assert "unavailable safety not said" in failures
    assert len(rates["failures"]) == 8


@pytest.fixture(scope="module")
def field_smoked() -> dict[str, dict[str, Any]]:
    """Smoke results by task, shared by the planners (a task runs once per module)."""
    return {}


@pytest.mark.parametrize("planner", [None, pytest.param("local", marks=pytest.mark.slow)])
def test_the_planner_meets_the_issues_targets_on_the_frozen_field_set(
        planner: str | None, tmp_path: Path, fake_server: Any,
        field_smoked: dict[str, Any]) -> None:
    # issue 25's acceptance: named recall 100%, capability recall@5 >= 90%, executable 100%
    # (before the field's prior: rules 97.8% / 91.9% / 98.5%, bench/results/)
    requests, capabilities = quality.load_field()
    plans = quality.make_plans(requests, tmp_path, planner=planner)
    quality.smoke(plans, fake_server().base_url, field_smoked)
    rates = quality.field_rates(plans, field_smoked, capabilities)
    misses = "\n".join(rates["failures"])
    assert rates["named_recall"] == 1.0, misses
    assert rates["executable"] == 1.0, misses
    assert rates["capability_recall_at_5"] >= 0.9, misses
    assert rates["unavailable_said"] == 1.0, misses
    # the canonical sets: most of what the field reports for a capability is in the plan
    assert rates["canonical_coverage"] >= 0.7, misses
