"""The official BFCL agentic verdict and data loading, as test oracles.

- ``_evaluate_single_agentic_entry`` is taken **verbatim** from the installed
  ``bfcl_eval/eval_checker/eval_runner.py``: its source is cut out of the file with
  :mod:`ast` and compiled on its own, with the official ``agentic_checker``,
  ``is_empty_execute_response`` and a handler whose ``decode_execute`` is the official
  ``convert_to_function_call`` (FC) or ``default_decode_execute_prompting`` (prompt), as the
  OpenAI handler's (``openai_completion.py:63-67``). ``eval_runner`` itself is not imported
  (it imports every model handler through ``constants/model_config.py``).
- The official data loader ``bfcl_eval.utils.load_dataset_entry`` (imports light:
  ``filelock`` and the constants), for the entries as the official harness builds them.

Nothing here is used by assay itself.
"""

from __future__ import annotations

import ast
import copy
import importlib.util
import types
from functools import cache
from pathlib import Path
from typing import Any

import official_oracle
import pytest


def _package() -> Path:
    spec = importlib.util.find_spec("bfcl_eval")
    assert spec is not None and spec.submodule_search_locations
    return Path(next(iter(spec.submodule_search_locations)))


@cache
def load() -> types.SimpleNamespace:
    """The official pieces (skips, which the suite counts as a failure, when the light
    install of bfcl-eval is missing)."""
    if not official_oracle.available():
        pytest.skip(official_oracle.NOT_INSTALLED)
    official_oracle.load()  # BFCL_PROJECT_ROOT and the model_config stub
    from bfcl_eval.constants import default_prompts
    from bfcl_eval.eval_checker.agentic_eval.agentic_checker import (
        agentic_checker,
        standardize_string,
    )
    from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils import (
        is_empty_execute_response,
    )
    from bfcl_eval.model_handler import utils as mhu
    from bfcl_eval.utils import load_dataset_entry, load_ground_truth_entry

    source = (_package() / "eval_checker" / "eval_runner.py").read_text(encoding="utf-8")
    node = next(n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef)
                and n.name == "_evaluate_single_agentic_entry")
    namespace: dict[str, Any] = {"agentic_checker": agentic_checker,
                                 "is_empty_execute_response": is_empty_execute_response,
                                 "BaseHandler": object}  # the signature's annotation
    exec(compile(ast.Module([node], type_ignores=[]), "eval_runner.py", "exec"), namespace)
    return types.SimpleNamespace(
        evaluate=namespace["_evaluate_single_agentic_entry"], agentic_checker=agentic_checker,
        standardize=standardize_string, prompts=default_prompts, mhu=mhu,
        load_dataset_entry=load_dataset_entry, load_ground_truth_entry=load_ground_truth_entry)


class Handler:
    """The OpenAI handler's ``decode_execute`` (``openai_completion.py:63-67``)."""

    def __init__(self, mode: str) -> None:
        self.is_fc_model = mode == "fc"

    def decode_execute(self, result: Any, has_tool_call_tag: bool) -> list[str]:
        mhu = load().mhu
        if self.is_fc_model:
            return mhu.convert_to_function_call(result)
        return mhu.default_decode_execute_prompting(result)


def official_verdict(result: Any, ground_truth: list[str], mode: str,
                     entry_id: str = "x", category: str = "memory_kv") -> dict[str, Any]:
    """The official ``_evaluate_single_agentic_entry`` on one result."""
    o = load()
    return o.evaluate(Handler(mode), entry_id, copy.deepcopy(result), list(ground_truth),
                      {"id": entry_id, "question": []}, "oracle-model", category)
