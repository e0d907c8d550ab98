"""The official BFCL multi-turn checker and executor, loaded the light way, as test oracles.

``multi_turn_checker`` (``bfcl_eval/eval_checker/multi_turn_eval/multi_turn_checker.py``)
imports only ``multi_turn_utils``, which imports only the backend constants; the
simulators need ``mpmath``. ``eval_runner`` is *not* imported (it needs ``overrides``,
which CI does not install): its runner-level checks are replicated in
:func:`official_verdict`, quoted below.

Two hazards of the official code are neutralised here (research note §8):

- instances are cached for ever in ``multi_turn_utils``' module globals under
  ``<model>_<id>_<Class>_instance``: every call gets a unique model name, and its
  instances are deleted afterwards;
- long-context simulators mutate module-level dicts of ``func_source_code/long_context.py``
  in place (card balances in ``CREDIT_CARD_EXTENSION``): they are reset to pristine
  copies, read from a separate load of that file (independent of assay's
  ``sim.pristine_long_context``), before and after every official call.

Nothing here is used by assay itself.
"""

from __future__ import annotations

import copy
import importlib.util
import itertools
import os
import tempfile
import types
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any

import pytest
from official_oracle import NOT_INSTALLED, VERSION, available, data_dir

from assay.tasks.bfcl.data import read_jsonl

CATEGORIES = ("multi_turn_base", "multi_turn_miss_func", "multi_turn_miss_param",
              "multi_turn_long_context")
#: entries per multi-turn category in bfcl-eval 2026.3.23 (questions = ground truths)
CORPUS_SIZES = dict.fromkeys(CATEGORIES, 200)
#: ground-truth calls per category (4625 in all)
CALL_COUNTS = {"multi_turn_base": 1142, "multi_turn_miss_func": 1140,
               "multi_turn_miss_param": 1140, "multi_turn_long_context": 1203}
SHARED = ("CREDIT_CARD_EXTENSION", "BOOKING_RECORD_EXTENSION", "LONG_WEATHER_EXTENSION")
_FSC = "bfcl_eval.eval_checker.multi_turn_eval.func_source_code"
_names = itertools.count()


@cache
def load() -> types.SimpleNamespace:
    """The official checker, executor and long-context module (skips when not installed)."""
    if not available():
        pytest.skip(NOT_INSTALLED)
    # bfcl_eval makes folders there on import: never a BFCL_PROJECT_ROOT set outside the tests
    os.environ["BFCL_PROJECT_ROOT"] = tempfile.mkdtemp(prefix="bfcl-root-")
    from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_checker as mtc
    from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils as mtu

    long_context = importlib.import_module(f"{_FSC}.long_context")
    # a second, private load of the same file: the dicts as the wheel ships them
    spec = importlib.util.spec_from_file_location("_oracle_pristine_long_context",
                                                  long_context.__file__)
    assert spec is not None and spec.loader is not None
    fresh = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fresh)
    return types.SimpleNamespace(
        checker=mtc.multi_turn_checker, execute=mtu.execute_multi_turn_func_call,
        is_empty=mtu.is_empty_execute_response, mtu=mtu, long_context=long_context,
        pristine={k: getattr(fresh, k) for k in SHARED})


def _reset_shared() -> None:
    o = load()
    for key in SHARED:
        shared = getattr(o.long_context, key)
        if shared == o.pristine[key]:
            continue
        shared.clear()  # in place: the simulator modules hold this very object
        shared.update(copy.deepcopy(o.pristine[key]))


@contextmanager
def isolated() -> Iterator[str]:
    """A unique official model name; shared dicts pristine around it; its cached instances
    purged afterwards."""
    o = load()
    name = f"assay_oracle_{next(_names)}"
    _reset_shared()
    try:
        yield name
    finally:
        _reset_shared()
        cache_ = vars(o.mtu)
        for key in [k for k in cache_ if k.startswith(name) and k.endswith("_instance")]:
            del cache_[key]


@cache
def entries(category: str) -> tuple[list[dict[str, Any]], dict[str, list[list[str]]]]:
    """A category's entries and ground truth by id, checked against the pinned sizes."""
    load()
    d = data_dir()
    questions = read_jsonl(d / f"BFCL_v4_{category}.json")
    answers = read_jsonl(d / "possible_answer" / f"BFCL_v4_{category}.json")
    want = CORPUS_SIZES[category]
    assert len(questions) == want, (
        f"official {category} has {len(questions)} entries, bfcl-eval=={VERSION} has {want}")
    assert len(answers) == want, f"official {category} has {len(answers)} answers, not {want}"
    truth = {a["id"]: a["ground_truth"] for a in answers}
    assert [q["id"] for q in questions] == [a["id"] for a in answers]
    return questions, truth


def official_verdict(model_result: Any, entry: dict[str, Any], ground_truth: list[list[str]],
                     category: str) -> dict[str, Any]:
    """The official verdict: ``eval_runner._evaluate_single_multi_turn_entry``'s checks,
    replicated, then ``multi_turn_checker`` itself on decoded steps.

    Replicated from ``bfcl_eval/eval_checker/eval_runner.py`` (2026.3.23):

    .. code-block:: python

        if type(model_result_list) != list:                                # :180
            ... "error_message": ["Error during inference phase. Model did not output a list of model responses."],
                "error_type": "multi_turn:inference_error",
        if len(model_result_list) != len(ground_truth_list):               # :200
            ... "error_message": [f"Model was force-terminated during inference phase. The length of the model result turns ({len(model_result_list)}) does not match the length of the ground truth turns ({len(ground_truth_list)})."],
                "error_type": "multi_turn:force_terminated",
        for single_turn_model_result_list in model_result_list:             # :219
            single_turn_model_result_list_decoded = []
            for model_result_item in single_turn_model_result_list:
                try:
                    decoded_result: list[str] = handler.decode_execute(model_result_item, has_tool_call_tag=False)
                    if is_empty_execute_response(decoded_result):
                        continue
                    single_turn_model_result_list_decoded.append(decoded_result)
                except Exception as e:
                    continue
            multi_turn_model_result_list_decoded.append(single_turn_model_result_list_decoded)

    Our steps are already decoded, so ``decode_execute`` is the identity. The two runner
    messages are one-element lists, as in the official score file.
    """
    o = load()
    if type(model_result) != list:  # noqa: E721 - replicated as written
        return {"valid": False, "error_message": [
            "Error during inference phase. Model did not output a list of model responses."],
            "error_type": "multi_turn:inference_error"}
    if len(model_result) != len(ground_truth):
        return {"valid": False, "error_message": [
            f"Model was force-terminated during inference phase. The length of the model "
            f"result turns ({len(model_result)}) does not match the length of the ground "
            f"truth turns ({len(ground_truth)})."], "error_type": "multi_turn:force_terminated"}
    decoded = [[step for step in turn if not o.is_empty(step)] for turn in model_result]
    with isolated() as name:
        return o.checker(decoded, ground_truth, entry, category, name)


def official_execute(entry: dict[str, Any], turns: list[list[str]]) -> list[list[str]]:
    """Official execution results of ``turns`` (lists of call strings) run in order on one
    set of fresh instances, as the checker runs a side (``is_evaL_run=True``)."""
    o = load()
    long_context = "long_context" in entry["id"].rsplit("_", 1)[0]
    with isolated() as name:
        return [o.execute(func_call_list=list(calls), initial_config=entry["initial_config"],
                          involved_classes=entry["involved_classes"], model_name=name,
                          test_entry_id=entry["id"], long_context=long_context,
                          is_evaL_run=True)[0]
                for calls in turns]
