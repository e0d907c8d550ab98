"""Our multi-turn checker agrees with the official ``multi_turn_checker`` on all 800 entries.

For every category and every trajectory in ``trajectories.PERTURBATIONS`` (built from the
ground truth), each entry is checked by ours and by the official checker (with the
runner-level checks of ``eval_runner`` replicated in the oracle). They must agree on
``valid``, ``error_type`` and ``error_message`` (all official messages are
deterministic), and on the details both report: the differing attributes and their
values for a state mismatch, the missing items and the result lists for a response
mismatch, and every execution result up to the failing turn.

The number of entries each trajectory applies to and the official verdicts' spread are
pinned, so a perturbation that silently stops biting (everything valid on both sides)
fails here instead of agreeing trivially.
"""

from __future__ import annotations

import collections
import re
from typing import Any

import official_mt_oracle as oracle
import pytest
import trajectories

from assay.tasks.bfcl.multiturn.checker import check_entry, jsonable

SHORT = {"": "valid", "multi_turn:instance_state_mismatch": "state",
         "multi_turn:execution_response_mismatch": "response",
         "multi_turn:empty_turn_model_response": "empty",
         "multi_turn:force_terminated": "force_terminated",
         "multi_turn:inference_error": "inference_error"}

#: perturbation -> category (without "multi_turn_") -> official verdicts; the sum is the
#: number of entries the perturbation applies to (bfcl-eval 2026.3.23)
EXPECTED: dict[str, dict[str, dict[str, int]]] = {
    "ground_truth": {"base": {"valid": 200}, "miss_func": {"valid": 200},
                     "miss_param": {"valid": 200}, "long_context": {"valid": 200}},
    "dropped_call": {"base": {"empty": 98, "response": 35, "state": 67},
                     "miss_func": {"empty": 99, "response": 35, "state": 66},
                     "miss_param": {"empty": 99, "response": 35, "state": 66},
                     "long_context": {"empty": 99, "response": 35, "state": 66}},
    "reordered": {"base": {"response": 18, "state": 62, "valid": 83},
                  "miss_func": {"response": 18, "state": 62, "valid": 82},
                  "miss_param": {"response": 18, "state": 62, "valid": 82},
                  "long_context": {"response": 18, "state": 62, "valid": 84}},
    "wrong_argument": {"base": {"response": 120, "state": 59, "valid": 21},
                       "miss_func": {"response": 119, "state": 61, "valid": 20},
                       "miss_param": {"response": 119, "state": 60, "valid": 21},
                       "long_context": {"response": 119, "state": 60, "valid": 21}},
    "extra_call": {"base": {"state": 38, "valid": 162}, "miss_func": {"state": 38, "valid": 162},
                   "miss_param": {"state": 38, "valid": 162},
                   "long_context": {"state": 38, "valid": 162}},
    "extra_failing_step": {"base": {"valid": 200}, "miss_func": {"valid": 200},
                           "miss_param": {"valid": 200}, "long_context": {"valid": 200}},
    "one_call_per_step": {"base": {"valid": 200}, "miss_func": {"valid": 200},
                          "miss_param": {"valid": 200}, "long_context": {"valid": 200}},
    "wrong_turn": {"base": {"empty": 73, "state": 74, "valid": 50},
                   "miss_func": {"empty": 81, "state": 16, "valid": 103},
                   "miss_param": {"empty": 82, "state": 31, "valid": 87},
                   "long_context": {"empty": 72, "state": 74, "valid": 51}},
    "empty_turn": {"base": {"empty": 200}, "miss_func": {"empty": 200},
                   "miss_param": {"empty": 200}, "long_context": {"empty": 200}},
    "empty_step": {"base": {"empty": 200}, "miss_func": {"empty": 200},
                   "miss_param": {"empty": 200}, "long_context": {"empty": 200}},
    "miss_func_early": {"miss_func": {"empty": 88, "response": 6, "state": 17, "valid": 87}},
    "miss_func_early_and_again": {"miss_func": {"response": 2, "state": 39, "valid": 157}},
    "fewer_turns": {c: {"force_terminated": 200}
                    for c in ("base", "miss_func", "miss_param", "long_context")},
    "more_turns": {c: {"force_terminated": 200}
                   for c in ("base", "miss_func", "miss_param", "long_context")},
    "not_a_list": {c: {"inference_error": 200}
                   for c in ("base", "miss_func", "miss_param", "long_context")},
    "a_tuple": {c: {"inference_error": 200}
                for c in ("base", "miss_func", "miss_param", "long_context")},
}


def test_pins_cover_every_perturbation() -> None:
    assert set(EXPECTED) == set(trajectories.PERTURBATIONS)


def _executions(ours: dict[str, Any], upto: int) -> list[dict[str, Any]]:
    return [{"model": t["model_results"], "ground_truth": t["ground_truth_results"]}
            for t in ours["turns"][:upto + 1]]


def disagreement(ours: dict[str, Any], official: dict[str, Any]) -> str | None:
    """Why the two verdicts differ, or ``None``."""
    message = official.get("error_message", "")
    if isinstance(message, list):  # the two runner-level messages
        (message,) = message
    mine = (ours["valid"], ours["error_type"], ours["error_message"])
    theirs = (official["valid"], official.get("error_type", ""), message)
    if mine != theirs:
        return f"ours {mine} != official {theirs}"
    kind = ours["error_type"]
    if kind in ("", "multi_turn:force_terminated", "multi_turn:inference_error"):
        if ours["first_failing_turn"] is not None:
            return "first_failing_turn set without a checker failure"
        if kind == "" and any(t["valid"] is False for t in ours["turns"]):
            return "a failing turn in a valid verdict"
        return None
    details = official.get("details", {})
    if kind == "multi_turn:execution_response_mismatch":
        turn = int(re.search(r"for turn (\d+)\.$", message).group(1))  # type: ignore[union-attr]
        want = {k: details[k] for k in ("missing_items",
                                         "model_response (including all previous turns)",
                                         "ground_truth_response (only the current turn)")}
        if ours["details"] != want:
            return f"response details differ: {ours['details']} != {want}"
    else:
        execution = details["execution_result"] if "execution_result" in details \
            else official["execution_result"]
        turn = len(execution) - 1
        if _executions(ours, turn) != execution:
            return "execution results differ"
        if kind == "multi_turn:instance_state_mismatch":
            want_diff = jsonable(details["differences"])
            if ours["details"]["differences"] != want_diff:
                return f"state differences differ: {ours['details']} != {want_diff}"
            listed = {d["attribute"]: {"model": d["model"], "ground_truth": d["ground_truth"]}
                      for d in ours["state_diff"]}
            cls = re.match(r"Model instance for (\w+) does", message).group(1)  # type: ignore[union-attr]
            if listed != want_diff or {d["class"] for d in ours["state_diff"]} != {cls}:
                return "state_diff does not list the official differences"
    if ours["first_failing_turn"] != turn:
        return f"first_failing_turn {ours['first_failing_turn']} != {turn}"
    if [t["valid"] for t in ours["turns"]][turn] is not False:
        return "the failing turn is not marked failed"
    return None


@pytest.mark.parametrize("category", oracle.CATEGORIES)
@pytest.mark.parametrize("perturbation", list(trajectories.PERTURBATIONS))
def test_agrees_with_official(category: str, perturbation: str) -> None:
    entries, truth = oracle.entries(category)
    spread: collections.Counter[str] = collections.Counter()
    disagreements = []
    for entry in entries:
        gt = truth[entry["id"]]
        trajectory = trajectories.build(perturbation, entry, gt)
        if trajectory is None:
            continue
        ours = check_entry(trajectory, entry, gt, category)
        official = oracle.official_verdict(trajectories.build(perturbation, entry, gt), entry,
                                           gt, category)
        spread[SHORT[official.get("error_type", "")]] += 1
        why = disagreement(ours, official)
        if why is not None:
            disagreements.append(f"{entry['id']}: {why}"[:600])
    applied = sum(spread.values())
    assert not disagreements, (
        f"{category} / {perturbation}: {len(disagreements)} of {applied} entries disagree "
        f"with the official checker; first ones:\n" + "\n".join(disagreements[:5]))
    want = EXPECTED[perturbation].get(category.removeprefix("multi_turn_"), {})
    assert dict(spread) == want, (
        f"{category} / {perturbation}: the official verdicts moved (applies to {applied}, "
        f"pinned {sum(want.values())}): {dict(spread)} != {want}")
