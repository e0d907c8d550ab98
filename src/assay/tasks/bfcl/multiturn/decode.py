"""Model output to executable call strings, as the official multi-turn harness decodes it (FC
``convert_to_function_call``; prompt ``default_decode_execute_prompting``). A trajectory drops
steps that fail to decode or decode to nothing, as the official runner does before checking.
"""

from __future__ import annotations

import json
from typing import Any

from assay.tasks.bfcl.decode import decode_prompt
from assay.tasks.bfcl.decode_error import DecodeError

__all__ = ["decode_execute", "decode_trajectory", "is_empty_execute_response"]


def _fc(raw: Any) -> list[str]:
    items = [raw] if type(raw) is dict else raw  # noqa: E721 - the official exact-type test
    out = []
    for item in items:
        for name, value in item.items():
            if type(value) is str:  # noqa: E721
                value = json.loads(value)
            out.append(f"{name}({','.join(f'{k}={v!r}' for k, v in value.items())})")
    return out


def _nested(value: Any) -> str:
    if isinstance(value, dict):
        if all(isinstance(v, dict) for v in value.values()):
            name = next(iter(value))
            args = ", ".join(f"{k}={_nested(v)}" for k, v in value[name].items())
            return f"{name}({args})"
        return "{" + ", ".join(f"'{k}': {_nested(v)}" for k, v in value.items()) + "}"
    return repr(value)


def _prompt(raw: Any) -> list[str]:
    out = []
    for call in decode_prompt(raw, "python"):
        for name, args in call.items():
            out.append(f"{name}({', '.join(f'{k}={_nested(v)}' for k, v in args.items())})")
    return out


def decode_execute(raw: Any, mode: str) -> list[str]:
    """One step's raw reply as call strings; raises :class:`DecodeError` where the official
    decoder raises (text in FC mode, prose in prompt mode, bad JSON arguments)."""
    try:
        return _fc(raw) if mode == "fc" else _prompt(raw)
    except DecodeError:
        raise
    except Exception as e:  # the official decoders fail on any exception; so do we
        raise DecodeError(f"cannot decode: {e!r}") from e


def is_empty_execute_response(calls: list[str]) -> bool:
    """The official test for a step that decoded to nothing (``multi_turn_utils.py``)."""
    return len(calls) == 0 or (len(calls) == 1 and len(calls[0]) == 0)


def decode_trajectory(turns: Any, mode: str) -> list[list[list[str]]] | Any:
    """Every step of every turn decoded, undecodable or empty ones left out; a non-list is
    returned as is (the checker reports ``multi_turn:inference_error``)."""
    if not isinstance(turns, list):
        return turns
    out: list[list[list[str]]] = []
    for turn in turns:
        steps: list[list[str]] = []
        for step in turn if isinstance(turn, list) else []:
            try:
                calls = decode_execute(step, mode)
            except DecodeError:
                continue
            if not is_empty_execute_response(calls):
                steps.append(calls)
        out.append(steps)
    return out
