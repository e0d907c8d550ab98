"""The planner's prior weight and its "at most N benchmarks" budget (issue 32).

The field's prior (canonical, supporting, niche) and the request's words share a
candidate's score (:mod:`assay.plan.field`). The weight between them decides orderings a
user sees; the tests below pin it from both sides with real requests on the real
catalogue (the ``reasoning`` capability has no canonical task, so its supporting
``arc_challenge`` and its niche ``basic_skills_*`` sets meet on the words):

* the words still win where they are clearly better: a plain reasoning request gets the
  niche set whose words match (``basic_skills_pattern``), not ``arc_challenge``; and a
  reasoning request with none of ARC's words ranks ``arc_challenge`` below the three
  ``basic_skills`` sets that match it (a heavier prior, from about 0.64, breaks these);
* the prior still wins where the words are close: once the request has ARC's words
  (science, exam, challenge questions), ``arc_challenge`` ranks right after the best
  match, above the niche sets it nearly ties with (a lighter prior, from about 0.57
  down, breaks this).

If a catalogue entry's text changes and moves these scores, pick requests whose
orderings again change within a few hundredths of the weight on each side.

The budget: a request that names K capabilities with "at most N benchmarks" (N >= K)
gets each capability's canonical set round-robin: every capability once before any gets
a second, never one capability's whole set first.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from assay.plan.field import capability_candidates
from assay.plan.intent import domain_words
from assay.plan.planner import Settings, plan_request
from assay.plan.schema import read_plan
from assay.sandbox import allow_weak_isolation
from assay.store.sqlite import Store
from tests.plan import quality


def plan(request: str, folder: Path) -> Any:
    """The real planner, offline, rules only (no planner model, no Hub); code tasks run as
    where the weights were set (quality.without_bwrap)."""
    store = Store()
    try:
        with allow_weak_isolation(quality.without_bwrap()):
            path = plan_request(store, request, Settings(model="openai/fake", hub=False,
                                                         output=str(folder / "plan.yaml")),
                                prompt=lambda _t: None, echo=lambda _t: None, yes=True)
    finally:
        store.close()
    return read_plan(path)


def ranking(request: str, capability: str) -> list[str]:
    """A capability's tasks as the planner ranks them for ``request`` (its query is the
    request and the domain words it uses, as the select step builds it)."""
    query = " ".join([request, *domain_words(request)])
    return [c.name for c in capability_candidates(query, capability)]


# -- the prior weight ---------------------------------------------------------------------------
def test_a_plain_reasoning_request_gets_the_niche_set_its_words_match(tmp_path: Path) -> None:
    made = plan("reasoning challenge questions", tmp_path)
    assert made.intent.capabilities == ["reasoning"]
    assert [t.task for t in made.tasks] == ["basic_skills_pattern"]
    why = made.tasks[0].why
    assert why["prior"].startswith("niche for reasoning")
    # arc_challenge (supporting) was in the running: the words, not its absence, decided
    assert "arc_challenge" in ranking("reasoning challenge questions", "reasoning")


def test_words_that_match_better_outrank_a_supporting_task() -> None:
    order = ranking("test its reasoning", "reasoning")
    assert order.index("arc_challenge") > max(order.index(n) for n in (
        "basic_skills_pattern", "basic_skills_string_operations",
        "basic_skills_logical_reasoning")), order


@pytest.mark.parametrize("request_text", ["reasoning on science exam questions",
                                          "reasoning challenge questions"])
def test_the_prior_keeps_a_supporting_task_above_niche_ones_it_nearly_ties(
        request_text: str) -> None:
    order = ranking(request_text, "reasoning")
    assert order[:2] == ["basic_skills_pattern", "arc_challenge"], order
    assert {"basic_skills_string_operations", "basic_skills_logical_reasoning",
            "copycolors"} <= set(order[2:])


# -- the budget ----------------------------------------------------------------------------------
#: requests naming K capabilities whose canonical sets hold two tasks or more each
BUDGET = [
    ("math and code, at most {n} benchmarks", ["math", "code"]),
    ("reading comprehension, natural language inference and science questions, at most "
     "{n} benchmarks", ["nli", "reading", "science"]),
    ("commonsense, reading comprehension, science, math and code, at most {n} benchmarks",
     ["math", "code", "reading", "commonsense", "science"]),
]


@pytest.mark.parametrize("extra", [0, 1, 2])
@pytest.mark.parametrize(("template", "caps"), BUDGET, ids=["K=2", "K=3", "K=5"])
def test_at_most_n_covers_every_capability_once_before_any_twice(
        tmp_path: Path, template: str, caps: list[str], extra: int) -> None:
    n = len(caps) + extra
    made = plan(template.format(n=n), tmp_path)
    assert sorted(made.intent.capabilities) == sorted(caps)
    assert made.intent.budget.max_tasks == n
    assert len(made.tasks) == n
    per_task = [t.capabilities for t in made.tasks]
    assert all(len(c) == 1 for c in per_task), per_task
    taken = [c[0] for c in per_task]
    # each capability once, in the first K tasks; then seconds, at most one each
    assert sorted(taken[:len(caps)]) == sorted(caps), taken
    counts = Counter(taken)
    assert set(counts) == set(caps) and max(counts.values()) - min(counts.values()) <= 1, taken
