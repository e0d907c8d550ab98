"""BFCL's multi-turn checker: the official rules, on the official simulators, without ``eval``.

Mirrors bfcl-eval 2026.3.23 ``eval_checker/``: ``eval_runner.py:180-236`` (:func:`check_entry`),
``multi_turn_eval/multi_turn_checker.py:9-129`` (:meth:`EntryCheck.check_turn`: model steps run
before the ground truth, as long-context simulators share module dicts). Long context comes from
the id (``multi_turn_checker.py:23,48-50``). Verdict: the official shape plus ``turns``,
``first_failing_turn``, ``state_diff``; instance states only with ``instance_states=True``.
"""

from __future__ import annotations

import datetime
import json
import math
from decimal import Decimal
from typing import Any

from assay.tasks.bfcl.multiturn import sim
from assay.tasks.bfcl.multiturn.decode import is_empty_execute_response
from assay.tasks.bfcl.multiturn.executor import execute_calls

__all__ = [
    "EMPTY_TURN", "EXECUTION_RESPONSE_MISMATCH", "FORCE_TERMINATED", "INFERENCE_ERROR",
    "INSTANCE_STATE_MISMATCH", "EntryCheck", "check_entry", "is_empty_execute_response",
    "is_long_context", "jsonable",
]

INFERENCE_ERROR = "multi_turn:inference_error"
FORCE_TERMINATED = "multi_turn:force_terminated"
EMPTY_TURN = "multi_turn:empty_turn_model_response"
INSTANCE_STATE_MISMATCH = "multi_turn:instance_state_mismatch"
EXECUTION_RESPONSE_MISMATCH = "multi_turn:execution_response_mismatch"

_MISSING = object()


def is_long_context(entry_id: str) -> bool:
    """Whether the official checker loads the simulators in long-context mode."""
    category = entry_id.rsplit("_", 1)[0]
    return "long_context" in category or "composite" in category


def jsonable(value: Any, _seen: frozenset[int] = frozenset()) -> Any:
    """``value`` as plain JSON data, for details and reports (never for comparing): sets
    sorted lists, non-string keys and ``Decimal``/``mpf`` strings, non-finite floats their
    ``repr``, other objects their public attributes (without ``parent`` back references)."""
    if value is None or type(value) in (bool, int, str):
        return value
    if isinstance(value, (bool, int, str)):  # a subclass (an enum member, ...)
        return _scalar(value)
    if isinstance(value, float):
        return float(value) if math.isfinite(value) else repr(value)
    if id(value) in _seen:
        return "<cycle>"
    seen = _seen | {id(value)}
    if isinstance(value, dict):
        return {_key(k): jsonable(v, seen) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v, seen) for v in value]
    if isinstance(value, (set, frozenset)):
        items = [jsonable(v, seen) for v in value]
        try:
            return sorted(items)
        except TypeError:
            return sorted(items, key=lambda v: json.dumps(v, sort_keys=True))
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, Decimal) or not hasattr(value, "__dict__"):
        return str(value)
    return {k: jsonable(v, seen) for k, v in vars(value).items()
            if not k.startswith("_") and k != "parent"}


def _scalar(value: Any) -> Any:
    for t in (bool, int, str):
        if isinstance(value, t):
            return t(value)
    return str(value)


def _key(key: Any) -> str:
    return key if type(key) is str else str(jsonable(key))


def _public(instance: Any) -> dict[str, Any]:
    return {k: v for k, v in vars(instance).items() if not k.startswith("_")}


def _turn_record(turn: int) -> dict[str, Any]:
    return {"turn": turn, "valid": None, "error_type": None, "model_results": [],
            "ground_truth_results": []}


class EntryCheck:
    """The official checker's state for one entry: :meth:`check_turn` for turns 0, 1, ... in
    order, inside :func:`sim.pristine_long_context` (:func:`check_entry` does both); a turn
    with empty ground truth is not checked, and the caller stops after a failing turn."""

    def __init__(self, entry: dict[str, Any], ground_truth: list[list[str]], *,
                 instance_states: bool = False) -> None:
        self.entry = entry
        self.ground_truth = ground_truth
        self.instance_states = instance_states
        self.long_context = is_long_context(entry["id"])
        self._model: dict[str, Any] | None = None
        self._model_methods: dict[str, Any] = {}
        self._truth = self._instances()
        self._truth_methods = sim.involved_methods(self._truth)
        self.model_results: list[str] = []  # all turns so far, flattened

    def _instances(self) -> dict[str, Any]:
        return sim.make_instances(self.entry["involved_classes"],
                                  self.entry["initial_config"],
                                  long_context=self.long_context)

    def _run_model_step(self, calls: list[str]) -> list[str]:
        if self._model is None:  # created at the model's first step, as officially
            self._model = self._instances()
            self._model_methods = sim.involved_methods(self._model)
        return execute_calls(calls, self._model_methods)

    def check_turn(self, turn: int, steps: list[list[str]]) -> dict[str, Any]:
        """Execute and check one turn; the turn record plus, when it fails, ``failure``
        (the official ``error_type``, ``error_message``, ``details`` and ``state_diff``)."""
        record = _turn_record(turn)
        step_results = [self._run_model_step(step) for step in steps]
        truth = self.ground_truth[turn]
        truth_results = execute_calls(truth, self._truth_methods)
        record["model_results"] = step_results
        record["ground_truth_results"] = truth_results
        turn_results = [r for results in step_results for r in results]
        self.model_results.extend(turn_results)

        if truth and (not steps or is_empty_execute_response(steps)):
            return self._fail(record, EMPTY_TURN,
                              f"Model response list is empty for turn {turn}", {})
        if not truth:
            return record
        assert self._model is not None  # a non-empty turn ran at least one step
        failure = self._state_check()
        if failure is not None:
            return self._fail(record, *failure)
        missing = _missing_unordered(truth_results, self.model_results)
        if missing:
            return self._fail(
                record, EXECUTION_RESPONSE_MISMATCH,
                f"Model response execution results so far does not contain all the ground "
                f"truth response execution results for turn {turn}.",
                {"missing_items": missing,
                 "model_response (including all previous turns)": list(self.model_results),
                 "ground_truth_response (only the current turn)": truth_results})
        record["valid"] = True
        return record

    def _state_check(self) -> tuple[str, str, dict[str, Any], list[dict[str, Any]]] | None:
        assert self._model is not None
        for class_name, truth_inst in self._truth.items():
            model_inst = self._model[class_name]
            diff = []
            for attr in vars(truth_inst):
                if attr.startswith("_"):
                    continue
                model_value = getattr(model_inst, attr, _MISSING)
                truth_value = getattr(truth_inst, attr)
                if model_value is _MISSING or model_value != truth_value:
                    diff.append((attr, None if model_value is _MISSING else model_value,
                                 truth_value))
            if not diff:
                continue
            details: dict[str, Any] = {"differences": {
                attr: {"model": jsonable(m), "ground_truth": jsonable(g)}
                for attr, m, g in diff}}
            if self.instance_states:
                details["model_instance_state"] = jsonable(_public(model_inst))
                details["ground_truth_instance_state"] = jsonable(_public(truth_inst))
            state_diff = [{"class": class_name, "attribute": attr, **details["differences"][attr]}
                          for attr, _, _ in diff]
            return (INSTANCE_STATE_MISMATCH,
                    f"Model instance for {class_name} does not match the state with ground "
                    f"truth instance.", details, state_diff)
        return None

    @staticmethod
    def _fail(record: dict[str, Any], error_type: str, message: str, details: dict[str, Any],
              state_diff: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        record["valid"] = False
        record["error_type"] = error_type
        record["failure"] = {"error_type": error_type, "error_message": message,
                             "details": details, "state_diff": state_diff}
        return record


def _missing_unordered(wanted: list[str], have: list[str]) -> list[str]:
    """``_is_subsequence_unordered``: the wanted items not removable one by one from have."""
    pool = list(have)
    missing = []
    for item in wanted:
        try:
            pool.remove(item)
        except ValueError:
            missing.append(item)
    return missing


def _runner_failure(error_type: str, message: str, turns: int) -> dict[str, Any]:
    return {"valid": False, "error_type": error_type, "error_message": message, "details": {},
            "turns": [_turn_record(t) for t in range(turns)], "first_failing_turn": None}


def check_entry(model_result: Any, entry: dict[str, Any], ground_truth: list[list[str]],
                category: str, *, instance_states: bool = False) -> dict[str, Any]:
    """The official verdict on one entry; a non-list ``model_result`` is an inference error
    and ``category`` is ignored, as officially. Adds ``turns``, ``first_failing_turn``, diffs."""
    del category  # the official checker overwrites it with the id's (see module docstring)
    n = len(ground_truth)
    if type(model_result) is not list:  # noqa: E721 - the official test is on the exact type
        return _runner_failure(
            INFERENCE_ERROR,
            "Error during inference phase. Model did not output a list of model responses.", n)
    if len(model_result) != n:
        return _runner_failure(
            FORCE_TERMINATED,
            f"Model was force-terminated during inference phase. The length of the model "
            f"result turns ({len(model_result)}) does not match the length of the ground "
            f"truth turns ({n}).", n)
    # the runner drops empty decoded steps before the checker sees them
    turns_in = [[step for step in turn if not is_empty_execute_response(step)]
                for turn in model_result]
    records: list[dict[str, Any]] = []
    failure: dict[str, Any] | None = None
    with sim.pristine_long_context():
        check = EntryCheck(entry, ground_truth, instance_states=instance_states)
        for t in range(n):
            record = check.check_turn(t, turns_in[t])
            records.append(record)
            failure = record.pop("failure", None)
            if failure is not None:
                break
    failing_turn = len(records) - 1 if failure is not None else None
    records.extend(_turn_record(t) for t in range(len(records), n))
    if failure is None:
        return {"valid": True, "error_type": "", "error_message": "", "details": {},
                "turns": records, "first_failing_turn": None}
    out = {"valid": False, "error_type": failure["error_type"],
           "error_message": failure["error_message"], "details": failure["details"],
           "turns": records, "first_failing_turn": failing_turn}
    if failure["state_diff"] is not None:
        out["state_diff"] = failure["state_diff"]
    return out
