"""The agentic verdict, as the official evaluator gives it (bfcl-eval 2026.3.23,
``eval_runner.py:72-163``, ``agentic_eval/agentic_checker.py:6-35``), on ``[[step, ...]]``.

The last step that does not decode to calls is the answer, matched standardized between word
boundaries. One divergence: a non-iterable only element is ``agentic:inference_error`` (the
official runner raises ``TypeError``).
"""

from __future__ import annotations

import re
from typing import Any

from assay.tasks.bfcl.decode_error import DecodeError
from assay.tasks.bfcl.multiturn.decode import decode_execute, is_empty_execute_response

__all__ = ["INFERENCE_ERROR", "NO_LAST_MESSAGE", "agentic_checker", "check_agentic",
           "last_non_call_message", "standardize_string"]

INFERENCE_ERROR = ("Error during inference phase. Model did not output a list of model "
                   "responses.")
NO_LAST_MESSAGE = "Cannot find the last chat message that is not a function call."
NOT_FOUND = "None of the expected answers were found in the model response."
_PUNCTUATION = re.compile(r"[\,\.\/\-\_\*\^\(\)]")


def standardize_string(text: str) -> str:
    """``standardize_string`` (agentic_checker.py:41-49)."""
    return _PUNCTUATION.sub("", text).lower().replace("'", '"')


def agentic_checker(model_response: Any, possible_answers: list[str]) -> dict[str, Any]:
    """``agentic_checker`` (agentic_checker.py:6-35), same result dict."""
    standardized = [standardize_string(a) for a in possible_answers]
    if type(model_response) is list:  # noqa: E721 - the official exact-type test
        model_response = model_response[0]
    if type(model_response) is not str:  # noqa: E721
        model_response = str(model_response)
    response = standardize_string(model_response)
    for answer in standardized:
        if re.search(rf"\b{re.escape(answer)}\b", response):
            return {"valid": True, "error": []}
    return {
        "valid": False,
        "error_message": NOT_FOUND,
        "error_type": "agentic:answer_not_found",
        "details": {"model_response": model_response, "possible_answers": possible_answers,
                    "standardized_model_response": response,
                    "standardized_possible_answers": standardized},
    }


def last_non_call_message(steps: Any, mode: str) -> tuple[Any, list[list[str]]]:
    """The last step that fails to decode or decodes to nothing (``None`` when none), and
    the decoded call steps, as ``eval_runner.py:121-136`` walks ``result[0]``."""
    last = None
    decoded: list[list[str]] = []
    for step in steps:  # a str or a dict iterates as Python does, as officially
        try:
            calls = decode_execute(step, mode)
        except DecodeError:
            calls = []
        if is_empty_execute_response(calls):
            last = step
        else:
            decoded.append(calls)
    return last, decoded


def check_agentic(result: Any, ground_truth: list[str], mode: str) -> dict[str, Any]:
    """The official verdict on one agentic result, with the official types and messages
    (the runner's messages as one-element lists, as in the official score file)."""
    if type(result) is not list or len(result) != 1:  # noqa: E721
        return {"valid": False, "error_type": "agentic:inference_error",
                "error_message": [INFERENCE_ERROR]}
    try:
        steps = iter(result[0])
    except TypeError:  # the official runner raises here (see the module docstring)
        return {"valid": False, "error_type": "agentic:inference_error",
                "error_message": [INFERENCE_ERROR]}
    last, decoded = last_non_call_message(steps, mode)
    if not last:
        return {"valid": False, "error_type": "agentic:no_last_message",
                "error_message": [NO_LAST_MESSAGE], "decoded": decoded}
    verdict = agentic_checker(last, ground_truth)
    if verdict["valid"]:
        return {"valid": True, "answer": last}
    return {**verdict, "answer": last}
