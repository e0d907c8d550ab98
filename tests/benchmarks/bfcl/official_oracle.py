"""The official BFCL checker, loaded the light way (reference/bfcl.md §10.2), as a test oracle.

Needs ``pip install --no-deps bfcl-eval==2026.3.23`` plus the tree-sitter pins; tests
that use it skip when it is not installed. Nothing from it is used by assay itself.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import tempfile
import types
from functools import cache
from pathlib import Path
from typing import Any

PROMPT_MODEL = "prompt-model"  # underscore_to_dot = False
FC_MODEL = "fc-model"  # underscore_to_dot = True


def available() -> bool:
    """Whether bfcl_eval (light install) can be found."""
    return importlib.util.find_spec("bfcl_eval") is not None


def data_dir() -> Path:
    """The official data folder inside the installed bfcl_eval."""
    spec = importlib.util.find_spec("bfcl_eval")
    assert spec is not None and spec.submodule_search_locations
    return Path(list(spec.submodule_search_locations)[0]) / "data"


@cache
def load() -> types.SimpleNamespace:
    """Import the official checker pieces with a stubbed model registry."""
    os.environ.setdefault("BFCL_PROJECT_ROOT", tempfile.mkdtemp(prefix="bfcl-root-"))
    stub = types.ModuleType("bfcl_eval.constants.model_config")

    class _Cfg:
        def __init__(self, underscore_to_dot: bool) -> None:
            self.underscore_to_dot = underscore_to_dot

    stub.MODEL_CONFIG_MAPPING = {PROMPT_MODEL: _Cfg(False), FC_MODEL: _Cfg(True)}  # type: ignore[attr-defined]
    sys.modules["bfcl_eval.constants.model_config"] = stub
    from bfcl_eval.constants.enums import Language, ReturnFormat
    from bfcl_eval.eval_checker.ast_eval.ast_checker import ast_checker
    from bfcl_eval.model_handler.utils import default_decode_ast_prompting
    from bfcl_eval.utils import is_empty_output, is_function_calling_format_output

    return types.SimpleNamespace(
        Language=Language, ReturnFormat=ReturnFormat, ast_checker=ast_checker,
        decode_prompt=default_decode_ast_prompting, is_empty_output=is_empty_output,
        is_fc_format=is_function_calling_format_output,
    )


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Official data files are JSON Lines (often without a trailing newline)."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def entries(category: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]] | None]:
    """Questions and (for AST categories) ground truth of one category."""
    d = data_dir()
    questions = read_jsonl(d / f"BFCL_v4_{category}.json")
    gt_path = d / "possible_answer" / f"BFCL_v4_{category}.json"
    return questions, (read_jsonl(gt_path) if gt_path.exists() else None)


def official_language(lang: str) -> Any:
    """Our language name as the official enum."""
    L = load().Language
    return {"python": L.PYTHON, "java": L.JAVA, "javascript": L.JAVASCRIPT}[lang]


def official_verdict(docs: list[dict[str, Any]], decoded: Any, ground_truth: list[Any],
                     lang: str, category: str, fc: bool) -> dict[str, Any]:
    """The official AST verdict for already decoded output (runner pre-check included)."""
    o = load()
    if not o.is_fc_format(decoded):
        return {"valid": False, "error_type": "ast_decoder:decoder_wrong_output_format"}
    return o.ast_checker(docs, decoded, ground_truth, official_language(lang), category,
                         FC_MODEL if fc else PROMPT_MODEL)


def official_prompt_verdict(docs: list[dict[str, Any]], text: str, ground_truth: list[Any],
                            lang: str, category: str) -> dict[str, Any]:
    """The official verdict for raw prompt-mode text (decode, format check, AST check)."""
    o = load()
    fmt = {"python": o.ReturnFormat.PYTHON, "java": o.ReturnFormat.JAVA,
           "javascript": o.ReturnFormat.JAVASCRIPT}[lang]
    try:
        decoded = o.decode_prompt(text, fmt, False)
    except Exception:
        return {"valid": False, "error_type": "ast_decoder:decoder_failed"}
    return official_verdict(docs, decoded, ground_truth, lang, category, fc=False)


def official_relevance_has_call(text: Any) -> bool:
    """Whether the official relevance check sees a function call in ``text`` (prompt mode)."""
    o = load()
    try:
        decoded = o.decode_prompt(text, o.ReturnFormat.PYTHON, False)
    except Exception:
        return False
    return not o.is_empty_output(decoded)
