"""The official BFCL checker, loaded the light way (reference/bfcl.md §10.2), as a test oracle.

Needs ``pip install --no-deps bfcl-eval==2026.3.23`` plus the tree-sitter pins
(``scripts/test`` installs both); tests that use it skip when it is not installed, and
tests/conftest.py counts that skip as a failure unless ``ASSAY_ALLOW_SKIPS=1``. Nothing
from it is used by assay itself.
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

VERSION = "2026.3.23"
NOT_INSTALLED = (f"the official BFCL checker is not installed: pip install --no-deps "
           f"bfcl-eval=={VERSION} tree_sitter==0.21.3 tree-sitter-java==0.21.0 "
           f"tree-sitter-javascript==0.21.4 filelock tenacity (scripts/test does it)")

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
    # bfcl_eval makes folders there on import: never a BFCL_PROJECT_ROOT set outside the tests
    os.environ["BFCL_PROJECT_ROOT"] = tempfile.mkdtemp(prefix="bfcl-root-")
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


#: entries per single-turn category in bfcl-eval 2026.3.23 (questions; the AST categories
#: have as many ground-truth answers, the relevance ones none). Every corpus the oracle
#: tests build comes from these files, so a shrunk or missing file must fail, not thin out.
CORPUS_SIZES = {
    "simple_python": 400, "simple_java": 100, "simple_javascript": 50, "multiple": 200,
    "parallel": 200, "parallel_multiple": 200, "irrelevance": 240, "live_simple": 258,
    "live_multiple": 1053, "live_parallel": 16, "live_parallel_multiple": 24,
    "live_irrelevance": 884, "live_relevance": 16,
}
NO_GROUND_TRUTH = {"irrelevance", "live_irrelevance", "live_relevance"}


def entries(category: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]] | None]:
    """Questions and (for AST categories) ground truth of one category, checked against
    the pinned corpus size."""
    d = data_dir()
    questions = read_jsonl(d / f"BFCL_v4_{category}.json")
    gt_path = d / "possible_answer" / f"BFCL_v4_{category}.json"
    answers = read_jsonl(gt_path) if gt_path.exists() else None
    want = CORPUS_SIZES[category]
    assert len(questions) == want, (
        f"official {category} has {len(questions)} entries, bfcl-eval=={VERSION} has {want}")
    if category in NO_GROUND_TRUTH:
        assert answers is None, f"official {category} unexpectedly has ground truth"
    else:
        assert answers is not None and len(answers) == want, (
            f"official {category} has {len(answers or [])} ground-truth entries, not {want}")
    return questions, answers


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


# --------------------------------------------------------------------------------------
# Predictions built from the ground truth (shared by the checker tests; not part of the
# official package). A "typed call" is (expected function name, {param: Python value},
# function doc or None); render() turns a list of them into decoded model output.

MISSING = object()
_JAVA_ARRAY_NAMES = {"String": "String", "integer": "int", "long": "long", "any": "Object",
                     "char": "char", "double": "double", "float": "float",
                     "boolean": "boolean", "short": "short", "byte": "byte"}


def first_choice(options: Any) -> Any:
    """The first option that is not the "may be omitted" marker ``""`` (else MISSING)."""
    for option in options:
        if option != "":
            return option
    return MISSING


def _materialize_dict(candidate: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for key, options in candidate.items():
        value = first_choice(options)
        if value is not MISSING:
            out[key] = value
    return out


def materialize(value: Any, spec: dict[str, Any] | None) -> Any:
    """A concrete value from an option: dict candidates map keys to option lists."""
    t = (spec or {}).get("type")
    if t in ("dict", "HashMap") and type(value) is dict:
        return _materialize_dict(value)
    item = ((spec or {}).get("items") or {}).get("type")
    if item in ("dict", "HashMap") and type(value) is list:
        return [_materialize_dict(v) if type(v) is dict else v for v in value]
    return value


def truth_calls(docs: list[dict[str, Any]], ground_truth: list[dict[str, Any]], *,
                omit_optional: bool = False, last: bool = False) -> list[list[Any]]:
    """The best answer the ground truth allows (reference/bfcl.md §8).

    Every ground-truth parameter the doc declares gets its first (``last``: last) option
    that is not ``""``; a parameter whose only option is ``""`` is supplied as ``""`` when
    the doc requires it and omitted otherwise; one without options is omitted. With
    ``omit_optional`` every parameter that allows ``""`` is omitted.
    """
    by_name = {d["name"]: d for d in docs}
    calls = []
    for call in ground_truth:
        ((name, params),) = call.items()
        doc = by_name.get(name)
        props = doc["parameters"]["properties"] if doc else {}
        required = doc["parameters"].get("required", []) if doc else []
        out: dict[str, Any] = {}
        for param, options in params.items():
            if param not in props or (omit_optional and "" in options):
                continue
            value = first_choice(list(reversed(options)) if last else options)
            if value is MISSING:
                if options == [""] and param in required:
                    out[param] = ""
                continue
            out[param] = materialize(value, props[param])
        calls.append([name, out, doc])
    return calls


def java_untyped(value: Any) -> str:
    """``value`` as Java source text without a declared type."""
    if type(value) is bool:
        return "true" if value else "false"
    if value is None:
        return "null"
    if type(value) is str:
        return '"' + value + '"'
    if type(value) in (list, tuple):
        return "new Object[]{" + ", ".join(java_untyped(v) for v in value) + "}"
    if type(value) is dict:
        return java_map(value)
    return repr(value)


def java_map(value: dict[Any, Any]) -> str:
    """A Java HashMap literal in the double-brace form."""
    puts = " ".join(f'put("{k}", {java_untyped(v)});' for k, v in value.items())
    return "new HashMap<String, Object>() {{ " + puts + " }}"


def java_element(value: Any, item_type: str | None) -> str:
    """One collection element as Java source for the declared element type."""
    if type(value) is str:
        if item_type == "char":
            return "'" + value + "'"
        return '"' + value + '"'
    return java_source(value, {"type": item_type} if item_type else {})


def java_source(value: Any, spec: dict[str, Any] | None, *, array_list_form: str = "asList"
                ) -> str:
    """``value`` as the Java source text a model would write for a param of ``spec``."""
    t = (spec or {}).get("type")
    item = ((spec or {}).get("items") or {}).get("type")
    if type(value) is bool:
        return "true" if value else "false"
    if type(value) is int:
        return f"{value}L" if t == "long" else f"{value}f" if t == "float" else str(value)
    if type(value) is float:
        return f"{value}L" if t == "long" else f"{value}f" if t == "float" else repr(value)
    if type(value) is str:
        return value
    if value is None:
        return "null"
    if type(value) in (list, tuple):
        parts = [java_element(v, item) for v in value]
        if t == "ArrayList":
            if array_list_form == "add":
                adds = " ".join(f"add({p});" for p in parts)
                return "new ArrayList<>() {{ " + adds + " }}"
            return "new ArrayList<>(Arrays.asList(" + ", ".join(parts) + "))"
        return f"new {_JAVA_ARRAY_NAMES.get(item or '', 'Object')}[]{{" + ", ".join(parts) + "}"
    if type(value) is dict:
        return java_map(value)
    return repr(value)


def js_untyped(value: Any, quote: str = '"') -> str:
    """``value`` as a JavaScript literal."""
    if type(value) is bool:
        return "true" if value else "false"
    if value is None:
        return "null"
    if type(value) is str:
        return quote + value + quote
    if type(value) in (list, tuple):
        return "[" + ", ".join(js_untyped(v, quote) for v in value) + "]"
    if type(value) is dict:
        return "{" + ", ".join(f"{k}: {js_untyped(v, quote)}" for k, v in value.items()) + "}"
    return repr(value)


def js_source(value: Any, spec: dict[str, Any] | None, *, quote: str = '"') -> str:
    """``value`` as the JavaScript source text a model would write for a param of ``spec``."""
    t = (spec or {}).get("type")
    if type(value) is int and t == "Bigint":
        return f"{value}n"
    if type(value) is str:
        return value
    return js_untyped(value, quote)


def render(calls: list[list[Any]], language: str, fc: bool) -> list[dict[str, Any]]:
    """Decoded model output for typed calls: names with "." -> "_" when ``fc``; Java/JS
    values as source text."""
    out = []
    for name, params, doc in calls:
        if fc and type(name) is str:
            name = name.replace(".", "_")
        props = doc["parameters"]["properties"] if doc else {}
        if language == "java":
            params = {k: java_source(v, props.get(k)) for k, v in params.items()}
        elif language == "javascript":
            params = {k: js_source(v, props.get(k)) for k, v in params.items()}
        out.append({name: dict(params)})
    return out


# --------------------------------------------------------------------------------------
# Prompting, tool conversion, decoding and id sorting (added for test_prompts/test_decode)


@cache
def load_prompting() -> types.SimpleNamespace:
    """The official prompt builders, language hints, tool conversion and id sort key."""
    load()
    from bfcl_eval import utils as official_utils
    from bfcl_eval.constants.default_prompts import DEFAULT_SYSTEM_PROMPT_FORMAT
    from bfcl_eval.constants.enums import ModelStyle
    from bfcl_eval.constants.type_mappings import GORILLA_TO_OPENAPI
    from bfcl_eval.model_handler import utils as handler_utils

    return types.SimpleNamespace(
        DEFAULT_FORMAT=DEFAULT_SYSTEM_PROMPT_FORMAT, ModelStyle=ModelStyle,
        GORILLA_TO_OPENAPI=GORILLA_TO_OPENAPI,
        formulate_system_prompt=handler_utils.formulate_system_prompt,
        system_prompt_pre_processing_chat_model=(
            handler_utils.system_prompt_pre_processing_chat_model),
        convert_to_tool=handler_utils.convert_to_tool,
        language_hints=official_utils._func_doc_language_specific_pre_processing,
        load_dataset_entry=official_utils.load_dataset_entry,
        sort_key=official_utils.sort_key,
    )


def official_system_prompt(functions: list[dict[str, Any]]) -> str:
    """The official default prompt-mode system prompt."""
    p = load_prompting()
    return p.formulate_system_prompt(format_sensitivity_config=p.DEFAULT_FORMAT,
                                     functions=functions)


def official_prompt_messages(question_turn: list[dict[str, Any]],
                             functions: list[dict[str, Any]], entry_id: str) -> list[dict]:
    """The official first-turn messages with the system prompt (on a copy of the turn)."""
    import copy

    return load_prompting().system_prompt_pre_processing_chat_model(
        copy.deepcopy(question_turn), functions, entry_id)


def official_openai_tools(functions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The official ``convert_to_tool`` output for the OpenAI chat-completions style."""
    p = load_prompting()
    return p.convert_to_tool(functions, p.GORILLA_TO_OPENAPI, p.ModelStyle.OPENAI_COMPLETIONS)


def official_language_hints(functions: list[dict[str, Any]], category: str) -> list[dict]:
    """The official language-specific hints for a category (on a copy of the docs)."""
    import copy

    return load_prompting().language_hints(copy.deepcopy(functions), category)


def official_hinted_entries(category: str) -> list[dict[str, Any]]:
    """Questions as the official inference loads them (language hints included)."""
    return load_prompting().load_dataset_entry(category, include_prereq=False,
                                               include_language_specific_hint=True)


def official_sort_key(entry_id: str) -> Any:
    """The official id sort key."""
    return load_prompting().sort_key({"id": entry_id})


def official_decode_raw(text: Any, lang: str) -> tuple[bool, Any]:
    """``(True, decoded)`` from the official prompt decoder, or ``(False, exception)``."""
    o = load()
    fmt = {"python": o.ReturnFormat.PYTHON, "java": o.ReturnFormat.JAVA,
           "javascript": o.ReturnFormat.JAVASCRIPT}[lang]
    try:
        return True, o.decode_prompt(text, fmt, False)
    except Exception as exc:  # the official runner treats any exception as a decode failure
        return False, exc


@cache
def _fc_decoder() -> Any:
    load()
    if importlib.util.find_spec("overrides") is None:  # only used as a decorator there
        stub = types.ModuleType("overrides")
        stub.final = stub.override = lambda f: f  # type: ignore[attr-defined]
        sys.modules["overrides"] = stub
    from bfcl_eval.model_handler.api_inference.openai_completion import (
        OpenAICompletionsHandler,
    )

    return OpenAICompletionsHandler.decode_ast


def fc_oracle_available() -> bool:
    """Whether the official OpenAI FC handler can be imported (needs ``openai``)."""
    if not available() or importlib.util.find_spec("openai") is None:
        return False
    try:
        _fc_decoder()
    except Exception:
        return False
    return True


def official_fc_decode_raw(result: Any) -> tuple[bool, Any]:
    """The official OpenAI-style FC ``decode_ast`` on a result-file ``result`` value."""
    fake_handler = types.SimpleNamespace(is_fc_model=True)
    try:
        return True, _fc_decoder()(fake_handler, result, None, False)
    except Exception as exc:
        return False, exc
