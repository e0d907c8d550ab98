"""The checker's return shape, its isolation from shared simulator state, and ``jsonable``.

The long-context TravelAPI shares the card dicts of ``long_context.CREDIT_CARD_EXTENSION``
between every instance (the model's and the ground truth's) and mutates them in place.
``test_model_side_runs_first`` is a trajectory whose official verdict depends on the
model's calls of a turn running before the ground truth's; ``test_entry_is_isolated``
shows a mutation left behind by an earlier entry (or anything else in the process)
changes nothing, and that a check leaves the shared dicts as it found them.
"""

from __future__ import annotations

import copy
import datetime
import json
from decimal import Decimal
from typing import Any

import official_mt_oracle as oracle
import pytest
from test_checker_agreement import disagreement

from assay.tasks.bfcl.multiturn import sim
from assay.tasks.bfcl.multiturn.checker import (
    EntryCheck,
    check_entry,
    jsonable,
)

TOP = {"valid", "error_type", "error_message", "details", "turns", "first_failing_turn"}
TURN = {"turn", "valid", "error_type", "model_results", "ground_truth_results"}
CARD = "1234567812345678"  # a long-context extension card, shared by reference


def _entry(entry_id: str) -> tuple[dict[str, Any], list[list[str]]]:
    entries, truth = oracle.entries(entry_id.rsplit("_", 1)[0])
    entry = next(e for e in entries if e["id"] == entry_id)
    return entry, truth[entry_id]


def _gt_trajectory(gt: list[list[str]]) -> list[list[list[str]]]:
    return [[list(t)] if t else [] for t in gt]


def test_valid_shape() -> None:
    entry, gt = _entry("multi_turn_miss_param_0")
    out = check_entry(_gt_trajectory(gt), entry, gt, "multi_turn_miss_param")
    assert set(out) == TOP
    assert (out["valid"], out["error_type"], out["error_message"], out["details"],
            out["first_failing_turn"]) == (True, "", "", {}, None)
    assert [set(t) for t in out["turns"]] == [TURN] * len(gt)
    # a turn with empty ground truth is not checked (None), the others pass
    assert [t["valid"] for t in out["turns"]] == [None if not g else True for g in gt]
    assert [t["turn"] for t in out["turns"]] == list(range(len(gt)))
    assert out["turns"][0]["model_results"] == [out["turns"][0]["ground_truth_results"]]
    json.dumps(out)


def test_state_mismatch_shape_and_diff() -> None:
    entry, gt = _entry("multi_turn_base_0")
    model = _gt_trajectory(gt)
    model[0] = [gt[0][:-1]]  # drop the last call of turn 0
    out = check_entry(model, entry, gt, "multi_turn_base")
    assert set(out) == TOP | {"state_diff"}
    assert out["error_type"] == "multi_turn:instance_state_mismatch"
    assert out["first_failing_turn"] == 0
    assert [t["valid"] for t in out["turns"]] == [False] + [None] * (len(gt) - 1)
    assert all(t["model_results"] == [] for t in out["turns"][1:])  # never executed
    assert set(out["details"]) == {"differences"}
    (diff,) = out["state_diff"]
    assert set(diff) == {"class", "attribute", "model", "ground_truth"}
    assert (diff["class"], diff["attribute"]) == ("GorillaFileSystem", "root")
    # the file system as nested names and contents, never Directory objects
    assert diff["model"]["name"] == "workspace" and "contents" in diff["model"]
    assert diff["model"] != diff["ground_truth"]
    json.dumps(out)
    full = check_entry(model, entry, gt, "multi_turn_base", instance_states=True)
    assert set(full["details"]) == {"differences", "model_instance_state",
                                    "ground_truth_instance_state"}
    json.dumps(full)


def test_runner_level_shapes() -> None:
    entry, gt = _entry("multi_turn_base_0")
    short = check_entry(_gt_trajectory(gt)[:1], entry, gt, "multi_turn_base")
    assert short["error_type"] == "multi_turn:force_terminated"
    assert short["error_message"] == (
        "Model was force-terminated during inference phase. The length of the model result "
        f"turns (1) does not match the length of the ground truth turns ({len(gt)}).")
    failed = check_entry("Error during inference: x", entry, gt, "multi_turn_base")
    assert failed["error_type"] == "multi_turn:inference_error"
    for out in (short, failed):
        assert set(out) == TOP and out["first_failing_turn"] is None
        assert [t["valid"] for t in out["turns"]] == [None] * len(gt)


def test_turn_at_a_time_matches_check_entry() -> None:
    entry, gt = _entry("multi_turn_long_context_3")
    model = _gt_trajectory(gt)
    with sim.pristine_long_context():
        check = EntryCheck(entry, gt)
        records = [check.check_turn(t, steps) for t, steps in enumerate(model)]
    assert records == check_entry(model, entry, gt, "multi_turn_long_context")["turns"]


def _card_case() -> tuple[dict[str, Any], list[list[str]], list[list[list[str]]]]:
    """multi_turn_long_context_151 with a synthetic ground truth: turn 0 reads the
    balance of an extension card; the model first pays insurance with it (changing only
    the shared card dict), then reads the balance too. Officially the model's calls run
    first, so both balances read the paid amount: valid."""
    entry, real = _entry("multi_turn_long_context_151")
    balance = f"get_credit_card_balance(access_token='abc123xyz', card_id='{CARD}')"
    insure = (f"purchase_insurance(access_token='abc123xyz', insurance_type='basic', "
              f"booking_id='booking_901', insurance_cost=100.0, card_id='{CARD}')")
    gt = [[balance]] + [[] for _ in real[1:]]
    model = [[[insure, balance]]] + [[] for _ in real[1:]]
    return entry, gt, model


def test_model_side_runs_first() -> None:
    entry, gt, model = _card_case()
    ours = check_entry(copy.deepcopy(model), entry, gt, "multi_turn_long_context")
    official = oracle.official_verdict(copy.deepcopy(model), entry, gt,
                                       "multi_turn_long_context")
    assert official == {"valid": True}
    assert disagreement(ours, official) is None
    assert ours["turns"][0]["ground_truth_results"] == ['{"card_balance": 4900.0}']


def test_entry_is_isolated() -> None:
    entry, gt, model = _card_case()
    shared = sim._import("long_context").CREDIT_CARD_EXTENSION
    pristine = copy.deepcopy(shared)
    clean = check_entry(copy.deepcopy(model), entry, gt, "multi_turn_long_context")
    assert shared == pristine, "check_entry left the shared card dicts changed"
    shared[CARD]["balance"] = 1.0  # what an unguarded earlier entry could leave behind
    try:
        dirty = check_entry(copy.deepcopy(model), entry, gt, "multi_turn_long_context")
    finally:
        shared[CARD]["balance"] = pristine[CARD]["balance"]
    assert dirty == clean


@pytest.mark.parametrize(("value", "expected"), [
    ({3, 1, 2}, [1, 2, 3]),
    ({"b", 1}, ["b", 1]),  # mixed: ordered by JSON text
    ((1, (2,)), [1, [2]]),
    ({1: {2: "x"}}, {"1": {"2": "x"}}),
    (float("inf"), "inf"),
    (Decimal("1.50"), "1.50"),
    (datetime.datetime(2024, 9, 1, 10, 30), "2024-09-01T10:30:00"),
    (None, None),
    (True, True),
])
def test_jsonable(value: Any, expected: Any) -> None:
    assert jsonable(value) == expected


def test_jsonable_file_system() -> None:
    entry, _ = _entry("multi_turn_base_0")
    with sim.pristine_long_context():
        fs = sim.make_instances(["GorillaFileSystem"], entry["initial_config"],
                                long_context=False)["GorillaFileSystem"]
    tree = jsonable(fs.root)
    assert tree["name"] == "workspace"
    assert set(tree) == {"name", "contents"}  # no parent back reference
    leaf = tree["contents"]["document"]
    assert set(leaf) == {"name", "contents"}
    json.dumps(tree)
