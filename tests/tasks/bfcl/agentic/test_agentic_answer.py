"""Our agentic verdict agrees with the official one on every memory and web-search entry.

The oracle is the official ``_evaluate_single_agentic_entry`` (its source cut verbatim out
of the installed ``eval_runner.py``) with the official ``agentic_checker`` and the official
decoders, FC and prompt mode (official_agentic_oracle). Each of the 155 memory and 100
web-search ground truths is put in many result shapes (:data:`PERTURBATIONS`); ours and the
official must agree on ``valid``, the error type, the error message and, for a wrong
answer, on the step read as the answer and the checker's details. The official verdicts'
spread per perturbation is pinned, so a perturbation that stops biting fails here instead
of agreeing trivially.
"""

from __future__ import annotations

import collections
from collections.abc import Callable
from functools import cache
from typing import Any

import official_agentic_oracle as oracle
import pytest

from assay.tasks.bfcl.agentic.answer import agentic_checker, check_agentic, standardize_string
from assay.tasks.bfcl.agentic.data import load_agentic
from assay.tasks.bfcl.data import locate

WRONG = "{'answer': 'Quixotic Zebra Lantern', 'context': 'a guess'}"
UNKNOWN = "{'answer': 'I do not know', 'context': 'I do not know'}"


def call(mode: str) -> Any:
    return [{"core_memory_retrieve_all": "{}"}] if mode == "fc" else "[core_memory_retrieve_all()]"


def answer(a: str) -> str:
    return f"{{'answer': '{a}', 'context': 'from what you told me'}}"


def shouted(a: str) -> str:
    """Upper case, a full stop after every word, in brackets: all standardised away."""
    return "(" + ". ".join(a.upper().split()) + ".)"


#: name -> result shape built from (accepted answers, mode)
PERTURBATIONS: dict[str, Callable[[list[str], str], Any]] = {
    "formatted": lambda gt, m: [[call(m), answer(gt[0])]],
    "last_accepted": lambda gt, m: [[answer(gt[-1])]],
    "in_prose": lambda gt, m: [[f"After checking my notes: it is {gt[0]}, as you said."]],
    "double_quotes": lambda gt, m: [[f'{{"answer": "{gt[0]}", "context": "notes"}}']],
    "shouted": lambda gt, m: [[f"{{'answer': '{shouted(gt[0])}'}}"]],
    "glued": lambda gt, m: [[f"{gt[0]}xyz"]],
    "wrong": lambda gt, m: [[call(m), WRONG]],
    "unknown": lambda gt, m: [[UNKNOWN]],
    "only_calls": lambda gt, m: [[call(m), call(m)]],
    "answer_then_call": lambda gt, m: [[answer(gt[0]), call(m)]],
    "wrong_then_answer": lambda gt, m: [[WRONG, call(m), answer(gt[0])]],
    "answer_then_wrong": lambda gt, m: [[answer(gt[0]), call(m), WRONG]],
    "answer_then_empty_text": lambda gt, m: [[answer(gt[0]), ""]],
    "answer_then_empty_calls": lambda gt, m: [[answer(gt[0]), [] if m == "fc" else "[]"]],
    "answer_as_call": lambda gt, m: [[f"[answer(text={gt[0]!r})]"]],
    "unparsable_fc_arguments": lambda gt, m: [[[{"answer": f"{gt[0]} (not json)"}]]],
    "dict_step": lambda gt, m: [[{"answer": gt[0]}]],
    "text_instead_of_steps": lambda gt, m: [answer(gt[0])],
    "two_turns": lambda gt, m: [[answer(gt[0])], [answer(gt[0])]],
    "a_tuple": lambda gt, m: ([answer(gt[0])],),
    "error_text": lambda gt, m: "Error during inference: the model timed out",
}

V, NF, NL, IE = "valid", "answer_not_found", "no_last_message", "inference_error"
#: perturbation -> mode -> official verdict counts over the 255 entries (bfcl-eval 2026.3.23)
EXPECTED: dict[str, dict[str, dict[str, int]]] = {
    "formatted": {"fc": {V: 255}, "prompt": {V: 255}},
    "last_accepted": {"fc": {V: 255}, "prompt": {V: 255}},
    "in_prose": {"fc": {V: 255}, "prompt": {V: 255}},
    "double_quotes": {"fc": {V: 255}, "prompt": {V: 255}},
    "shouted": {"fc": {V: 255}, "prompt": {V: 255}},
    # 7 entries: an accepted answer that ends in a non-word character, or a second one
    "glued": {"fc": {NF: 248, V: 7}, "prompt": {NF: 248, V: 7}},
    "wrong": {"fc": {NF: 255}, "prompt": {NF: 255}},
    "unknown": {"fc": {NF: 255}, "prompt": {NF: 255}},
    "only_calls": {"fc": {NL: 255}, "prompt": {NL: 255}},
    "answer_then_call": {"fc": {V: 255}, "prompt": {V: 255}},
    "wrong_then_answer": {"fc": {V: 255}, "prompt": {V: 255}},
    "answer_then_wrong": {"fc": {NF: 255}, "prompt": {NF: 255}},
    "answer_then_empty_text": {"fc": {NL: 255}, "prompt": {NL: 255}},
    "answer_then_empty_calls": {"fc": {NL: 255}, "prompt": {NF: 255}},
    "answer_as_call": {"fc": {V: 255}, "prompt": {NL: 255}},
    "unparsable_fc_arguments": {"fc": {V: 255}, "prompt": {V: 255}},
    "dict_step": {"fc": {V: 255}, "prompt": {V: 255}},
    "text_instead_of_steps": {"fc": {NF: 255}, "prompt": {NF: 255}},
    "two_turns": {"fc": {IE: 255}, "prompt": {IE: 255}},
    "a_tuple": {"fc": {IE: 255}, "prompt": {IE: 255}},
    "error_text": {"fc": {IE: 255}, "prompt": {IE: 255}},
}


@cache
def corpus() -> list[tuple[str, list[str]]]:
    """(id, accepted answers) of every memory (155) and web-search (100) entry."""
    oracle.load()
    out = []
    for cat in ("memory_kv", "web_search_base"):
        data = load_agentic(locate(), cat)
        out.extend((e["id"], data.ground_truth[e["id"]]) for e in data.entries)
    assert len(out) == 255
    return out


def short(error_type: str | None) -> str:
    return (error_type or "valid").removeprefix("agentic:")


def disagreement(ours: dict[str, Any], official: dict[str, Any]) -> str | None:
    """Why two verdicts differ, or ``None``."""
    if official["valid"]:
        return None if ours["valid"] else f"official valid, ours {ours['error_type']}"
    error = official["error"]
    mine = (ours["valid"], ours.get("error_type"), ours.get("error_message"))
    theirs = (False, error["error_type"], error["error_message"])
    if mine != theirs:
        return f"ours {mine} != official {theirs}"
    if error["error_type"] == "agentic:answer_not_found":
        if ours["answer"] != official["last_non_fc_message"]:
            return f"answer step {ours['answer']!r} != {official['last_non_fc_message']!r}"
        if ours["details"] != error["details"]:
            return f"details {ours['details']} != {error['details']}"
    return None


@pytest.mark.parametrize("mode", ["fc", "prompt"])
def test_agrees_with_the_official_runner_on_every_entry_and_perturbation(mode: str) -> None:
    assert set(EXPECTED) == set(PERTURBATIONS)
    failures = []
    spread: dict[str, collections.Counter[str]] = {}
    for name, make in PERTURBATIONS.items():
        counts = spread.setdefault(name, collections.Counter())
        for eid, gt in corpus():
            result = make(gt, mode)
            official = oracle.official_verdict(result, gt, mode, eid)
            ours = check_agentic(result, gt, mode)
            counts[short(None if official["valid"] else official["error"]["error_type"])] += 1
            why = disagreement(ours, official)
            if why:
                failures.append(f"{name} {eid}: {why}")
    assert not failures, f"{len(failures)} disagreements, e.g. {failures[:5]}"
    assert {k: dict(v) for k, v in spread.items()} == {k: v[mode] for k, v in EXPECTED.items()}


def test_checker_and_standardisation_equal_the_official_functions() -> None:
    o = oracle.load()
    texts = ["April 1, 2024", "Dr. O'Brien-Smith (PhD)", "3/4 * 2^5", "snake_case_name",
             "  Spaces  stay  ", "Ünïcödé Straße", ""]
    for t in texts:
        assert standardize_string(t) == o.standardize(t)
    responses = ["It was on april 1 2024.", ["Dr OBrien Smith phd", "x"], {"answer": "3/4*2^5"},
                 12, None, "snakecasename", "Spaces stay", "Ünïcödé Straße!"]
    for r in responses:
        for gt in (texts, ["x"], ["12"], ["None"]):
            assert agentic_checker(r, gt) == o.agentic_checker(r, gt)


def test_a_non_iterable_result_is_an_inference_error_where_the_official_runner_crashes() -> None:
    """The one documented divergence: ``[5]`` makes the official runner raise TypeError."""
    with pytest.raises(TypeError):
        oracle.official_verdict([5], ["5"], "fc")
    assert check_agentic([5], ["5"], "fc")["error_type"] == "agentic:inference_error"
