"""The BFCL v4 AST checker and relevance check, verdict for verdict as the official one
(``bfcl-eval`` 2026.3.23, reference/bfcl.md §4, §5, §11), on decoded ``[{name: {param: v}}]``.

Checks run in the official order (the first failure decides the error type); types compare by
strict ``type()``, with the official "variable" rule and §4.6 candidate rules for values.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from assay.tasks.bfcl.convert import (
    JAVA_COLLECTION_TYPES,
    JAVA_TYPES,
    JS_COLLECTION_TYPES,
    JS_TYPES,
    convert_java,
    convert_js,
)

__all__ = ["Verdict", "check_ast", "check_relevance", "is_call_list", "is_empty_output",
           "standardize"]

PYTHON_TYPES: dict[str, type] = {
    "string": str, "integer": int, "float": float, "boolean": bool,
    "array": list, "tuple": list, "dict": dict, "any": str,
}
_PY_SEQUENCES = frozenset({"array", "tuple"})
_LANGUAGES = frozenset({"python", "java", "javascript"})

# error types (the official vocabulary)
WRONG_FORMAT = "ast_decoder:decoder_wrong_output_format"
SIMPLE_WRONG_COUNT = "simple_function_checker:wrong_count"
WRONG_FUNC_NAME = "simple_function_checker:wrong_func_name"
MISSING_REQUIRED = "simple_function_checker:missing_required"
UNEXPECTED_PARAM = "simple_function_checker:unexpected_param"
MISSING_OPTIONAL = "simple_function_checker:missing_optional"
MULTIPLE_WRONG_COUNT = "multiple_function_checker:wrong_count"
PARALLEL_WRONG_COUNT = "parallel_function_checker_no_order:wrong_count"
NO_MATCH = "parallel_function_checker_no_order:cannot_find_match"
TYPE_SIMPLE = "type_error:simple"
TYPE_NESTED = "type_error:nested"
TYPE_JAVA = "type_error:java"
TYPE_JS = "type_error:js"
VALUE_STRING = "value_error:string"
VALUE_LIST = "value_error:list/tuple"
VALUE_DICT_KEY = "value_error:dict_key"
VALUE_DICT_VALUE = "value_error:dict_value"
VALUE_LIST_DICT_COUNT = "value_error:list_dict_count"
VALUE_OTHERS = "value_error:others"
DICT_UNCLEAR = "dict_checker:unclear"
LIST_DICT_UNCLEAR = "list_dict_checker:unclear"
IRRELEVANCE_FAILED = "irrelevance_error:decoder_success"
RELEVANCE_FAILED = "relevance_error:decoder_failed"

#: per language of the Java/JavaScript categories: types, collection types, conversion,
#: error type and the language's name in messages
_FOREIGN: dict[str, tuple[dict[str, type], frozenset[str], Any, str, str]] = {
    "java": (JAVA_TYPES, JAVA_COLLECTION_TYPES, convert_java, TYPE_JAVA, "Java"),
    "javascript": (JS_TYPES, JS_COLLECTION_TYPES, convert_js, TYPE_JS, "JavaScript"),
}
_Failure = tuple[str, str]  # (error type, message); None means "passes"


@dataclass(slots=True, frozen=True)
class Verdict:
    """Outcome of one check: ``error_type`` is None exactly when ``valid``."""

    valid: bool
    error_type: str | None
    errors: tuple[str, ...] = ()


PASS = Verdict(True, None)


def _fail(failure: _Failure) -> Verdict:
    return Verdict(False, failure[0], (failure[1],))


def is_call_list(decoded: Any) -> bool:
    """The official ``is_function_calling_format_output``: a list of single-key dicts whose
    value is a dict, exact types (no subclasses); ``[]`` counts."""
    if type(decoded) is not list:
        return False
    for item in decoded:
        if type(item) is not dict or len(item) != 1:
            return False
        for params in item.values():
            if type(params) is not dict:
                return False
    return True


def is_empty_output(decoded: Any) -> bool:
    """Whether ``decoded`` holds no function call: not a call list, ``[]`` or ``[{}]``."""
    if not is_call_list(decoded):
        return True
    return len(decoded) == 0 or (len(decoded) == 1 and len(decoded[0]) == 0)


_STANDARDIZED: dict[str, str] = {}  # memo: ground-truth strings recur on every run
_STANDARDIZED_MAX = 65536


def standardize(text: str) -> str:
    """The official normalization: drop `` ,./-_*^`` (space only, before lowercasing, as officially:
    it matters for the Greek final sigma), lowercase, ``'`` -> ``"``."""
    done = _STANDARDIZED.get(text)
    if done is None:
        done = (text.replace(" ", "").replace(",", "").replace(".", "").replace("/", "")
                .replace("-", "").replace("_", "").replace("*", "").replace("^", "")
                .lower().replace("'", '"'))
        if len(_STANDARDIZED) >= _STANDARDIZED_MAX:
            _STANDARDIZED.clear()
        _STANDARDIZED[text] = done
    return done


def _standardize_items(seq: Any) -> list[Any]:
    """Elements of ``seq`` with the ``str`` ones standardized (one level only)."""
    if type(seq) is not list and type(seq) is not str:
        seq = [seq[i] for i in range(len(seq))]  # the official walks by index
    return [standardize(x) if type(x) is str else x for x in seq]


def _first_option_type(options: Any) -> type | None:
    for option in options:
        if option != "":
            return type(option)
    return None


def _elements_fit(value: list[Any], options: Any, item_type: type) -> bool:
    """One-level element type check of a sequence value against the candidate lists."""
    for option in options:
        if type(option) is not list:
            return True  # "" or a variable name: nothing to check against
        own = _first_option_type(option)
        for item in value:
            t = type(item)
            if t is not item_type and (own is None or t is not own):
                break
        else:
            return True
    return False


def _check_string(param: str, value: str, options: Any) -> _Failure | None:
    target = standardize(value)
    for option in options:
        if type(option) is str and standardize(option) == target:
            return None
    return (VALUE_STRING,
            f"{param}: {value!r} is none of {options!r} (compared after standardization)")


def _check_list(param: str, value: list[Any], options: Any) -> _Failure | None:
    target = _standardize_items(value)
    allowed = [_standardize_items(o) for o in options]
    if target in allowed:
        return None
    return VALUE_LIST, f"{param}: {value!r} is none of the lists {options!r} (order matters)"


def _dict_against(param: str, value: dict[Any, Any], candidate: Any) -> _Failure | None:
    """One dict candidate. A missing required key overrides a bad value (official order)."""
    failure: _Failure | None = None
    for key, item in value.items():
        if key not in candidate:
            failure = VALUE_DICT_KEY, f"{param}: unexpected key {key!r}"
            break
        target = standardize(item) if type(item) is str else item
        if target not in _standardize_items(candidate[key]):
            failure = (VALUE_DICT_VALUE,
                       f"{param}[{key!r}]: {item!r} is none of {candidate[key]!r}")
            break
    for key, allowed in candidate.items():
        if key not in value and "" not in allowed:
            failure = VALUE_DICT_KEY, f"{param}: missing key {key!r}"
            break
    return failure


def _check_dict(param: str, value: dict[Any, Any], options: Any) -> _Failure | None:
    failure: _Failure = DICT_UNCLEAR, f"{param}: no dict candidate to compare with"
    for candidate in options:
        if candidate == "":
            continue
        found = _dict_against(param, value, candidate)
        if found is None:
            return None
        failure = found  # the last candidate's failure is reported
    return failure


def _check_dict_list(param: str, value: list[Any], options: Any) -> _Failure | None:
    failure: _Failure = LIST_DICT_UNCLEAR, f"{param}: no list candidate to compare with"
    for candidate in options:
        if len(value) != len(candidate):
            failure = (VALUE_LIST_DICT_COUNT,
                       f"{param}: {len(value)} dicts, expected {len(candidate)}")
            continue
        for n, item in enumerate(value):
            found = _check_dict(f"{param}[{n}]", item, [candidate[n]])
            if found is not None:
                failure = found
                break
        else:
            return None
    return failure


def _check_param(param: str, value: Any, spec: dict[str, Any], options: Any,
                 language: str) -> _Failure | None:
    """Conversion, type and value check of one supplied parameter."""
    declared = spec["type"]
    item_type: type | None = None
    if language == "python":
        expected = PYTHON_TYPES[declared]
        if declared in _PY_SEQUENCES:
            item_type = PYTHON_TYPES[spec["items"]["type"]]
            if declared == "tuple" and type(value) is tuple:
                value = list(value)
        elif declared == "float" and type(value) is int:
            value = float(value)
    else:
        types, collections, convert, error, lang = _FOREIGN[language]
        expected = types[declared]
        if type(value) is not str:
            return (error, f"{param}: {lang} values must be strings in {lang} syntax, "
                           f"got {type(value).__name__} {value!r}")
        if declared in collections:
            element = spec["items"]["type"]
            item_type = types[element]
            value = convert(value, declared, element)
        else:
            value = convert(value, declared)

    # type check, with the "variable" rule: the ground truth's own type is accepted too
    if type(options) is list and options and options[0] != "":
        own: type | None = type(options[0])
    else:
        own = _first_option_type(options)
    actual = type(value)
    if actual is expected:
        variable = own is not None and own is not expected
        if item_type is not None and not _elements_fit(value, options, item_type):
            if own is not None and actual is own:
                return (TYPE_NESTED, f"{param}: elements of {value!r} are not all "
                                     f"{item_type.__name__}")
            return (TYPE_SIMPLE, f"{param}: elements of {value!r} cannot match the "
                                 f"(empty) options {options!r}")
    elif own is not None and actual is own:
        variable = True
    else:
        return (TYPE_SIMPLE, f"{param}: expected {declared}, got {actual.__name__} "
                             f"{value!r}")

    if not variable:
        if expected is dict:
            return _check_dict(param, value, options)
        if expected is list:
            if item_type is dict:
                return _check_dict_list(param, value, options)
            return _check_list(param, value, options)
        if expected is str:
            return _check_string(param, value, options)
    if value in options:
        return None
    return VALUE_OTHERS, f"{param}: {value!r} is none of {options!r}"


def _check_call(doc: dict[str, Any], call: dict[str, Any], expected_call: dict[str, Any],
                language: str, underscore_to_dot: bool) -> _Failure | None:
    """One model call against one ground-truth call and its function doc."""
    expected = [*expected_call.values()][0]
    name = doc["name"]
    schema = doc["parameters"]
    props = schema["properties"]
    required_params = schema["required"]
    if underscore_to_dot and "." in name:
        name = name.replace(".", "_")
    if name not in call:
        return WRONG_FUNC_NAME, f"expected a call to {name!r}, got {list(call)!r}"
    params = call[name]
    for required in required_params:
        if required not in params:
            return MISSING_REQUIRED, f"missing required parameter {required!r}"
    for param, value in params.items():
        if param not in props or param not in expected:
            return UNEXPECTED_PARAM, f"unexpected parameter {param!r}"
        failure = _check_param(param, value, props[param], expected[param], language)
        if failure is not None:
            return failure
    for param, options in expected.items():
        if param not in params and "" not in options:
            return MISSING_OPTIONAL, f"parameter {param!r} is expected (it has no \"\" option)"
    return None


def _find_doc(docs: Any, name: str) -> Any:
    if type(docs) is not list:
        return docs
    for doc in docs:
        if doc["name"] == name:
            return doc
    return None


def _check_parallel(docs: list[dict[str, Any]], calls: list[Any], truth: list[Any],
                    language: str, underscore_to_dot: bool) -> Verdict:
    if len(calls) != len(truth):
        return Verdict(False, PARALLEL_WRONG_COUNT,
                       (f"{len(calls)} calls, expected {len(truth)}",))
    used: set[int] = set()
    for n, expected_call in enumerate(truth):
        doc = _find_doc(docs, [*expected_call][0])
        tried: list[str] = []
        for k, call in enumerate(calls):
            if k in used:
                continue
            failure = _check_call(doc, call, expected_call, language, underscore_to_dot)
            if failure is None:
                used.add(k)
                break
            tried.append(f"model call {k}: {failure[0]}: {failure[1]}")
        else:
            left = [k for k in range(len(calls)) if k not in used]
            head = f"no model call among {left} matches ground-truth call {n}"
            return Verdict(False, NO_MATCH, (head, *tried))
    return PASS


def check_ast(function_docs: list[dict[str, Any]], decoded: Any, ground_truth: list[dict[str, Any]],
              *, language: str, category: str, underscore_to_dot: bool) -> Verdict:
    """Check decoded output against ``possible_answer`` as the official runner: dispatch by
    substring of ``category``; docs without language hints; raises as the official checker."""
    if language not in _LANGUAGES:
        raise ValueError(f"unsupported language: {language!r}")
    if not is_call_list(decoded):
        return Verdict(False, WRONG_FORMAT, ("output is not a list of {name: {param: value}}",))
    if "parallel" in category:
        return _check_parallel(function_docs, decoded, ground_truth, language,
                               underscore_to_dot)
    if "multiple" in category:
        if len(decoded) != len(ground_truth):
            return Verdict(False, MULTIPLE_WRONG_COUNT,
                           (f"{len(decoded)} calls, expected {len(ground_truth)}",))
        expected_call = ground_truth[0]
        doc = _find_doc(function_docs, [*expected_call][0])
    else:
        if len(decoded) != 1:
            return Verdict(False, SIMPLE_WRONG_COUNT, (f"{len(decoded)} calls, expected 1",))
        expected_call = ground_truth[0]
        doc = function_docs[0]
    failure = _check_call(doc, decoded[0], expected_call, language, underscore_to_dot)
    return PASS if failure is None else _fail(failure)


def check_relevance(decoded_ok: bool, decoded: Any, *, category: str) -> Verdict:
    """The (ir)relevance verdict (``decoded_ok``: decoding did not raise): ``irrelevance``
    categories pass without a call, the others with one; the call itself is not looked at."""
    has_call = bool(decoded_ok) and not is_empty_output(decoded)
    if "irrelevance" in category:
        return _CALL_DECODED if has_call else PASS
    return PASS if has_call else _NO_CALL_DECODED


# Verdicts are immutable, so the two relevance failures are built once.
_CALL_DECODED = Verdict(False, IRRELEVANCE_FAILED,
                        ("a function call was decoded where none should be",))
_NO_CALL_DECODED = Verdict(False, RELEVANCE_FAILED, ("no function call could be decoded",))
