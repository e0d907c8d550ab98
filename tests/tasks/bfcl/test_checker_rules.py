"""The BFCL AST checker rule by rule (reference/bfcl.md §4, §5, §8, §11).

Synthetic docs cover the reference verdict table (§4.11) and every error type; tests on
the shipped data (parallel_178, the §8 ceilings) read the installed official package's
data and skip without it. Where the official converters are installed our conversions
are also compared with them value for value.
"""

from __future__ import annotations

import ast
import copy
from pathlib import Path
from typing import Any

import official_oracle as oo
import pytest

from assay.tasks.bfcl import checker as checker_module
from assay.tasks.bfcl import convert as convert_module
from assay.tasks.bfcl.checker import (
    Verdict,
    check_ast,
    check_relevance,
    is_call_list,
    is_empty_output,
    standardize,
)
from assay.tasks.bfcl.convert import convert_java, convert_js

needs_data = pytest.mark.skipif(not oo.available(), reason=oo.NOT_INSTALLED)

# ----------------------------------------------------------------------------- fixtures

GEO = {
    "name": "geo.lookup",
    "description": "Look a place up.",
    "parameters": {
        "type": "dict",
        "properties": {
            "city": {"type": "string", "description": "City."},
            "radius": {"type": "float", "description": "Radius."},
            "count": {"type": "integer", "description": "Count."},
            "tags": {"type": "array", "items": {"type": "string"}, "description": "Tags."},
            "filters": {"type": "dict", "description": "Filters."},
            "places": {"type": "array", "items": {"type": "dict"}, "description": "Places."},
            "coords": {"type": "tuple", "items": {"type": "float"}, "description": "x, y."},
            "exact": {"type": "boolean", "description": "Exact match."},
            "unit": {"type": "string", "description": "Unit."},
            "region": {"type": "integer", "description": "Region id (a variable)."},
            "meta": {"type": "dict", "description": "Metadata."},
            "documented_only": {"type": "string", "description": "Not in the ground truth."},
        },
        "required": ["city", "radius"],
    },
}
GEO_TRUTH = [{"geo.lookup": {
    "city": ["New York, NY"],
    "radius": [5.0],
    "count": ["", 3],
    "tags": ["", ["Big Apple", "usa"]],
    "filters": ["", {"a": [1], "b": ["", 2], "c": ["", "x y"]}],
    "places": ["", [{"name": ["home"]}, {"name": ["work"], "floor": ["", 2]}]],
    "coords": ["", [1.0, 2.0]],
    "exact": ["", True],
    "unit": ["", "km"],
    "region": ["", "region_var"],
    "meta": [""],
}}]
GOOD = {"city": "New York, NY", "radius": 5.0}


def geo(docs: list[dict[str, Any]] | None = None, *, category: str = "simple_python",
        fc: bool = False, **params: Any) -> Verdict:
    """Check one geo.lookup call with GOOD overridden by ``params`` (None drops a key)."""
    args = {k: v for k, v in {**GOOD, **params}.items() if v is not None}
    name = "geo_lookup" if fc else "geo.lookup"
    return check_ast(docs or [GEO], [{name: args}], GEO_TRUTH, language="python",
                     category=category, underscore_to_dot=fc)


def outcome(v: Verdict) -> str:
    return "PASS" if v.valid else str(v.error_type)


# ------------------------------------------------------------------- §4.11 verdict table

TABLE: list[tuple[str, dict[str, Any], str]] = [
    ("exact ground truth, optional params omitted", {}, "PASS"),
    ("string standardized: new-york ny", {"city": "new-york ny"}, "PASS"),
    ("string standardized: NEWYORK,NY", {"city": "NEWYORK,NY"}, "PASS"),
    ("string with ! fails", {"city": "New York, NY!"}, "value_error:string"),
    ("string in parentheses fails", {"city": "(New York, NY)"}, "value_error:string"),
    ("string prefix fails", {"city": "New York"}, "value_error:string"),
    ("a tab is not removed", {"city": "New\tYork, NY"}, "value_error:string"),
    ("int for a float param", {"radius": 5}, "PASS"),
    ("bool for a float param", {"radius": True}, "type_error:simple"),
    ("float for an int param", {"count": 3.0}, "type_error:simple"),
    ("bool for an int param", {"count": True}, "type_error:simple"),
    ("numeric string for a float param", {"radius": "5.0"}, "type_error:simple"),
    ("optional int supplied correctly", {"count": 3}, "PASS"),
    ("optional int supplied with another value", {"count": 4}, "value_error:others"),
    ("optional bool supplied correctly", {"exact": True}, "PASS"),
    ("optional bool supplied with another value", {"exact": False}, "value_error:others"),
    ("optional string supplied with another value", {"unit": "mi"}, "value_error:string"),
    ("list in order", {"tags": ["Big Apple", "usa"]}, "PASS"),
    ("list order swapped", {"tags": ["usa", "Big Apple"]}, "value_error:list/tuple"),
    ("list elements differing in case", {"tags": ["big apple", "USA"]}, "PASS"),
    ("list element dropped", {"tags": ["Big Apple"]}, "value_error:list/tuple"),
    ("empty list matches the '' option of a list param", {"tags": []}, "PASS"),
    ("empty list matches the '' option of a list-of-dicts param", {"places": []}, "PASS"),
    ("list as tuple for an array param", {"tags": ("Big Apple", "usa")}, "type_error:simple"),
    ("element types are not checked when '' is an option", {"tags": [1, 2]},
     "value_error:list/tuple"),
    ("tuple value for a tuple param", {"coords": (1.0, 2.0)}, "PASS"),
    ("list value for a tuple param", {"coords": [1.0, 2.0]}, "PASS"),
    ("ints in a float tuple, '' option: equal by ==", {"coords": (1, 2)}, "PASS"),
    ("dict with its optional keys omitted", {"filters": {"a": 1}}, "PASS"),
    ("dict string values standardized", {"filters": {"a": 1, "c": "X-Y"}}, "PASS"),
    ("dict with an extra key", {"filters": {"a": 1, "z": 1}}, "value_error:dict_key"),
    ("dict with a wrong value", {"filters": {"a": 2}}, "value_error:dict_value"),
    ("dict missing a required key", {"filters": {"b": 2}}, "value_error:dict_key"),
    ("dict param with only '' as option", {"meta": {"k": 1}}, "dict_checker:unclear"),
    ("list of dicts in order", {"places": [{"name": "home"}, {"name": "Work", "floor": 2}]},
     "PASS"),
    ("list of dicts reversed", {"places": [{"name": "work"}, {"name": "home"}]},
     "value_error:dict_value"),
    ("list of dicts, wrong length", {"places": [{"name": "home"}]},
     "value_error:list_dict_count"),
    ("variable accepted by type of the ground truth", {"region": "region_var"}, "PASS"),
    ("variable compared without standardization", {"region": "Region_Var"},
     "value_error:others"),
    ("unknown extra param", {"zz": 1}, "simple_function_checker:unexpected_param"),
    ("documented param the ground truth lacks", {"documented_only": "x"},
     "simple_function_checker:unexpected_param"),
    ("required param missing", {"radius": None}, "simple_function_checker:missing_required"),
]


@pytest.mark.parametrize(("case", "params", "expected"), TABLE, ids=[t[0] for t in TABLE])
def test_reference_verdict_table(case: str, params: dict[str, Any], expected: str) -> None:
    """Each row of the §4.11 table (plus neighbours) gets the official verdict."""
    assert outcome(geo(**params)) == expected
    if oo.available():
        args = {k: v for k, v in {**GOOD, **params}.items() if v is not None}
        official = oo.official_verdict([GEO], [{"geo.lookup": args}], GEO_TRUTH, "python",
                                       "simple_python", False)
        assert (official["valid"] and expected == "PASS") or official["error_type"] == expected


NESTED_DOC = {"name": "f", "parameters": {"type": "dict", "required": [], "properties": {
    "xs": {"type": "array", "items": {"type": "float"}},
    "ys": {"type": "array", "items": {"type": "integer"}}}}}
NESTED_TRUTH = [{"f": {"xs": [[1.0, 2.0], [1, 2]], "ys": ["", ["a", "b"]]}}]


@pytest.mark.parametrize(("xs", "expected"), [
    ([1.0, 2.0], "PASS"),
    ([1, 2], "PASS"),  # fits the second candidate's own element type (int)
    ([1, 2.0], "PASS"),  # every element is float or int
    (["1", "2"], "type_error:nested"),
    ([True], "type_error:nested"),
    ([3.0, 4.0], "value_error:list/tuple"),
    ((1.0, 2.0), "type_error:simple"),  # a tuple is not a list for an array param
    ("xs_var", "type_error:simple"),  # not the declared type nor the options' type
])
def test_nested_element_types(xs: Any, expected: str) -> None:
    """One level of element checking against each candidate list (no int->float)."""
    v = check_ast([NESTED_DOC], [{"f": {"xs": xs}}], NESTED_TRUTH, language="python",
                  category="simple_python", underscore_to_dot=False)
    assert outcome(v) == expected


@pytest.mark.parametrize(("value", "expected"), [
    ([1], "type_error:simple"), ([], "type_error:simple"), (None, "missing_required")])
def test_empty_option_list_is_unsatisfiable(value: Any, expected: str) -> None:
    """A required array whose option list is [] (live_simple_106-63-0) never passes."""
    doc = {"name": "f", "parameters": {"type": "dict", "required": ["zs"], "properties": {
        "zs": {"type": "array", "items": {"type": "integer"}}}}}
    args = {} if value is None else {"zs": value}
    v = check_ast([doc], [{"f": args}], [{"f": {"zs": []}}], language="python",
                  category="live_simple", underscore_to_dot=False)
    assert outcome(v).endswith(expected)


def test_dict_bad_value_and_missing_key_reports_missing_key() -> None:
    """A missing required key overrides an earlier bad value (official order)."""
    truth = [{"f": {"d": [{"a": [1], "b": [2]}]}}]
    doc = {"name": "f", "parameters": {"type": "dict", "required": [],
                                       "properties": {"d": {"type": "dict"}}}}
    v = check_ast([doc], [{"f": {"d": {"a": 9}}}], truth, language="python",
                  category="simple_python", underscore_to_dot=False)
    assert outcome(v) == "value_error:dict_key"


def test_missing_optional() -> None:
    """A ground-truth param without a "" option must be supplied, required or not."""
    truth = [{"f": {"a": [1], "b": [2]}}]
    doc = {"name": "f", "parameters": {"type": "dict", "required": ["a"], "properties": {
        "a": {"type": "integer"}, "b": {"type": "integer"}}}}
    v = check_ast([doc], [{"f": {"a": 1}}], truth, language="python", category="simple",
                  underscore_to_dot=False)
    assert outcome(v) == "simple_function_checker:missing_optional"


def test_required_checked_even_when_ground_truth_allows_omission() -> None:
    """A doc-required param fails missing_required even when its options include ""."""
    truth = [{"f": {"a": ["", 1]}}]
    doc = {"name": "f", "parameters": {"type": "dict", "required": ["a"],
                                       "properties": {"a": {"type": "integer"}}}}
    v = check_ast([doc], [{"f": {}}], truth, language="python", category="simple",
                  underscore_to_dot=False)
    assert outcome(v) == "simple_function_checker:missing_required"


def test_first_failure_wins_in_model_param_order() -> None:
    """Params are checked in the model's order: the first failing one decides."""
    assert outcome(geo(city="nowhere", zz=1)) == "value_error:string"
    swapped = check_ast([GEO], [{"geo.lookup": {"zz": 1, "city": "nowhere", "radius": 5.0}}],
                        GEO_TRUTH, language="python", category="simple",
                        underscore_to_dot=False)
    assert outcome(swapped) == "simple_function_checker:unexpected_param"
    # required params are checked before any value
    bad_first = check_ast([GEO], [{"geo.lookup": {"city": "nowhere"}}], GEO_TRUTH,
                          language="python", category="simple", underscore_to_dot=False)
    assert outcome(bad_first) == "simple_function_checker:missing_required"


def test_empty_option_list_with_string_only() -> None:
    """A string param whose only option is "" accepts only strings that standardize to ""."""
    truth = [{"f": {"s": [""]}}]
    doc = {"name": "f", "parameters": {"type": "dict", "required": ["s"],
                                       "properties": {"s": {"type": "string"}}}}
    for value, expected in [("", "PASS"), (" -_", "PASS"), ("x", "value_error:string")]:
        v = check_ast([doc], [{"f": {"s": value}}], truth, language="python",
                      category="live_multiple", underscore_to_dot=False)
        assert outcome(v) == expected, value


def test_list_of_dicts_with_non_dict_elements_raises_like_the_official() -> None:
    """A "" option skips the element type check; a non-dict element then breaks the dict
    comparison exactly where the official checker raises AttributeError."""
    truth = [{"f": {"p": ["", [{"a": [1]}]]}}]
    doc = {"name": "f", "parameters": {"type": "dict", "required": [], "properties": {
        "p": {"type": "array", "items": {"type": "dict"}}}}}
    with pytest.raises(AttributeError):
        check_ast([doc], [{"f": {"p": ["x"]}}], truth, language="python", category="simple",
                  underscore_to_dot=False)
    v = check_ast([doc], [{"f": {"p": []}}], truth, language="python", category="simple",
                  underscore_to_dot=False)
    assert v.valid  # [] matches the "" option (length 0)


# ------------------------------------------------------------------- names and dispatch


@pytest.mark.parametrize(("fc", "name", "expected"), [
    (False, "geo.lookup", "PASS"),
    (False, "geo_lookup", "simple_function_checker:wrong_func_name"),
    (True, "geo_lookup", "PASS"),
    (True, "geo.lookup", "simple_function_checker:wrong_func_name"),
    (False, "Geo.Lookup", "simple_function_checker:wrong_func_name"),
    (True, "GEO_LOOKUP", "simple_function_checker:wrong_func_name"),
])
def test_function_name_rule(fc: bool, name: str, expected: str) -> None:
    """Exact, case-sensitive names; underscore_to_dot expects a.b as a_b."""
    v = check_ast([GEO], [{name: dict(GOOD)}], GEO_TRUTH, language="python",
                  category="simple_python", underscore_to_dot=fc)
    assert outcome(v) == expected


def test_names_without_dots_are_unaffected_by_the_rule() -> None:
    doc = copy.deepcopy(GEO)
    doc["name"] = "geo_lookup"
    truth = [{"geo_lookup": GEO_TRUTH[0]["geo.lookup"]}]
    for fc in (False, True):
        v = check_ast([doc], [{"geo_lookup": dict(GOOD)}], truth, language="python",
                      category="simple_python", underscore_to_dot=fc)
        assert v.valid


def test_wrong_counts_per_category() -> None:
    two = [{"geo.lookup": dict(GOOD)}, {"geo.lookup": dict(GOOD)}]
    expected = {"simple_python": "simple_function_checker:wrong_count",
                "live_simple": "simple_function_checker:wrong_count",
                "multiple": "multiple_function_checker:wrong_count",
                "live_multiple": "multiple_function_checker:wrong_count",
                "parallel": "parallel_function_checker_no_order:wrong_count",
                "live_parallel_multiple": "parallel_function_checker_no_order:wrong_count"}
    for category, error in expected.items():
        for calls in (two, []):
            v = check_ast([GEO], calls, GEO_TRUTH, language="python", category=category,
                          underscore_to_dot=False)
            assert outcome(v) == error, (category, calls)


def test_multiple_checks_against_the_ground_truth_function() -> None:
    """multiple: the doc is looked up by the ground-truth name; another function fails."""
    other = {"name": "other.fn", "parameters": {"type": "dict", "required": [],
                                                "properties": {}}}
    docs = [other, GEO]
    ok = check_ast(docs, [{"geo.lookup": dict(GOOD)}], GEO_TRUTH, language="python",
                   category="multiple", underscore_to_dot=False)
    assert ok.valid
    bad = check_ast(docs, [{"other.fn": {}}], GEO_TRUTH, language="python",
                    category="multiple", underscore_to_dot=False)
    assert outcome(bad) == "simple_function_checker:wrong_func_name"
    # simple uses the first doc without looking it up
    simple = check_ast(docs, [{"geo.lookup": dict(GOOD)}], GEO_TRUTH, language="python",
                       category="simple_python", underscore_to_dot=False)
    assert outcome(simple) == "simple_function_checker:wrong_func_name"


@pytest.mark.parametrize("decoded", ["text", None, {"f": {}}, [{}], [{"a": {}, "b": {}}],
                                     [{"f": "x"}], [["f"]], ({"f": {}},), [{"f": []}]])
def test_wrong_output_format(decoded: Any) -> None:
    v = check_ast([GEO], decoded, GEO_TRUTH, language="python", category="simple_python",
                  underscore_to_dot=False)
    assert outcome(v) == "ast_decoder:decoder_wrong_output_format"
    assert not is_call_list(decoded)
    assert is_empty_output(decoded)


def test_call_list_and_empty_output() -> None:
    assert is_call_list([]) and is_empty_output([])
    assert is_call_list([{"f": {}}]) and not is_empty_output([{"f": {}}])
    assert not is_call_list([{}]) and is_empty_output([{}])


# ------------------------------------------------------------------- parallel (greedy)

STOCK = {"name": "get_stock_price", "parameters": {"type": "dict", "required": [
    "company_name", "date"], "properties": {"company_name": {"type": "string"},
                                            "date": {"type": "string"}}}}
STOCK_TRUTH = [
    {"get_stock_price": {"company_name": ["Microsoft", "Apple"], "date": ["2022-01-01"]}},
    {"get_stock_price": {"company_name": ["Microsoft"], "date": ["2022-02-01"]}},
    {"get_stock_price": {"company_name": ["Apple"], "date": ["2022-01-01"]}},
    {"get_stock_price": {"company_name": ["Apple"], "date": ["2022-02-01"]}},
]
STOCK_CALLS = [{"get_stock_price": {"company_name": c, "date": d}} for c, d in [
    ("Microsoft", "2022-01-01"), ("Microsoft", "2022-02-01"), ("Apple", "2022-01-01"),
    ("Apple", "2022-02-01")]]


def test_parallel_greedy_matching_like_parallel_178() -> None:
    """Greedy, ground-truth order: the natural order passes, the reverse does not."""
    ok = check_ast([STOCK], STOCK_CALLS, STOCK_TRUTH, language="python",
                   category="parallel", underscore_to_dot=False)
    assert ok.valid
    rev = check_ast([STOCK], STOCK_CALLS[::-1], STOCK_TRUTH, language="python",
                    category="parallel", underscore_to_dot=False)
    assert outcome(rev) == "parallel_function_checker_no_order:cannot_find_match"
    assert len(rev.errors) == 1 + 2  # the summary, then one line per model call tried
    order = [STOCK_CALLS[i] for i in (1, 3, 0, 2)]
    assert check_ast([STOCK], order, STOCK_TRUTH, language="python", category="parallel",
                     underscore_to_dot=False).valid
    rotated = STOCK_CALLS[1:] + STOCK_CALLS[:1]  # "Apple 01-01" is taken by call 0 again
    assert not check_ast([STOCK], rotated, STOCK_TRUTH, language="python",
                         category="parallel", underscore_to_dot=False).valid


@needs_data
def test_parallel_178_on_the_shipped_data() -> None:
    questions, truths = oo.entries("parallel")
    assert truths is not None
    (entry,) = [q for q in questions if q["id"] == "parallel_178"]
    (truth,) = [t for t in truths if t["id"] == "parallel_178"]
    calls = oo.render(oo.truth_calls(entry["function"], truth["ground_truth"]), "python",
                      False)
    natural = check_ast(entry["function"], calls, truth["ground_truth"], language="python",
                        category="parallel", underscore_to_dot=False)
    reverse = check_ast(entry["function"], calls[::-1], truth["ground_truth"],
                        language="python", category="parallel", underscore_to_dot=False)
    assert natural.valid
    assert outcome(reverse) == "parallel_function_checker_no_order:cannot_find_match"


# ------------------------------------------------------------------- Java and JavaScript

JAVA_DOC = {"name": "Intro.step", "parameters": {"type": "dict", "required": [], "properties": {
    "w": {"type": "integer"}, "ratio": {"type": "float"}, "big": {"type": "long"},
    "flag": {"type": "boolean"}, "d": {"type": "double"}, "name": {"type": "String"},
    "names": {"type": "ArrayList", "items": {"type": "String"}},
    "arr": {"type": "Array", "items": {"type": "String"}},
    "nums": {"type": "Array", "items": {"type": "integer"}},
    "map": {"type": "HashMap"}, "c": {"type": "char"}, "obj": {"type": "any"},
    "s": {"type": "Set"}}}}
JAVA_TRUTH = [{"Intro.step": {
    "w": ["", 800], "ratio": ["", 1.5], "big": ["", 7], "flag": ["", True], "d": ["", 1.5],
    "name": ["", "abc"], "names": ["", ["a", "b"]], "arr": ["", ["a", "b"]],
    "nums": ["", [1, 2]], "map": ["", {"k": ["v"], "n": [1]}], "c": ["", "x"],
    "obj": ["", "thing"], "s": ["", "anything"]}}]

JAVA_CASES = [
    ("w", "800", "PASS"), ("w", 800, "type_error:java"), ("w", "800L", "type_error:simple"),
    ("w", "801", "value_error:others"), ("w", "800\n", "PASS"),
    ("ratio", "1.5f", "PASS"), ("ratio", "1.5F", "PASS"), ("ratio", "1.5", "type_error:simple"),
    ("ratio", 1.5, "type_error:java"), ("ratio", "15e-1f", "PASS"),
    ("big", "7L", "PASS"), ("big", "7l", "PASS"), ("big", "7", "type_error:simple"),
    ("flag", "true", "PASS"), ("flag", "True", "type_error:simple"),
    ("flag", True, "type_error:java"),
    ("d", "1.5", "PASS"), ("d", "1.5d", "type_error:simple"), ("d", "15e-1", "PASS"),
    ("name", "abc", "PASS"), ("name", "ABC", "PASS"), ("name", '"abc"', "value_error:string"),
    ("names", 'new ArrayList<>(Arrays.asList("a", "b"))', "PASS"),
    ("names", 'new ArrayList<String>() {{ add("a"); add("b"); }}', "PASS"),
    ("names", 'new ArrayList<>(Arrays.asList("b", "a"))', "value_error:list/tuple"),
    ("names", '["a", "b"]', "type_error:simple"),
    ("arr", 'new String[]{"a", "b"}', "value_error:list/tuple"),  # quotes are kept
    ("arr", "new String[]{a, b}", "PASS"),
    ("nums", "new int[]{1, 2}", "PASS"), ("nums", "new int[]{1L, 2}", "value_error:list/tuple"),  # "" option: no element check
    ("map", 'new HashMap<String, Object>() {{ put("k", "v"); put("n", 1); }}', "PASS"),
    ("map", 'new HashMap<String, Object>() {{ put("k", "v"); }}', "value_error:dict_key"),
    ("map", "new HashMap<>()", "value_error:dict_key"),
    ("c", "x", "PASS"), ("c", "'x'", "value_error:string"),
    ("obj", "thing", "PASS"), ("obj", 1, "type_error:java"),
]


@pytest.mark.parametrize(("param", "value", "expected"), JAVA_CASES,
                         ids=[f"{p}={v!r}" for p, v, _ in JAVA_CASES])
def test_java_values(param: str, value: Any, expected: str) -> None:
    """Java values must be strings in Java syntax, then convert as in §4.9."""
    v = check_ast([JAVA_DOC], [{"Intro.step": {param: value}}], JAVA_TRUTH, language="java",
                  category="simple_java", underscore_to_dot=False)
    assert outcome(v) == expected


def test_java_unsupported_collections_raise() -> None:
    with pytest.raises(NotImplementedError):
        check_ast([JAVA_DOC], [{"Intro.step": {"s": "new HashSet<>()"}}], JAVA_TRUTH,
                  language="java", category="simple_java", underscore_to_dot=False)


JS_DOC = {"name": "validateUserInput", "parameters": {"type": "dict", "required": [],
                                                      "properties": {
    "inputField": {"type": "String"}, "isComplete": {"type": "Boolean"},
    "n": {"type": "integer"}, "x": {"type": "float"}, "big": {"type": "Bigint"},
    "list": {"type": "array", "items": {"type": "integer"}},
    "names": {"type": "array", "items": {"type": "String"}},
    "opts": {"type": "dict"}, "anything": {"type": "any"}}}}
JS_TRUTH = [{"validateUserInput": {
    "inputField": ["", "userInputField"], "isComplete": ["", True], "n": ["", 5],
    "x": ["", 1.5], "big": ["", 5], "list": ["", [1, 2]], "names": ["", ["a", "b"]],
    "opts": ["", {"k": ["v"], "m": ["", 2]}], "anything": ["", "thing"]}}]

JS_CASES = [
    ("inputField", "userInputField", "PASS"), ("inputField", '"userInputField"', "PASS"),
    ("inputField", "'userInputField'", "PASS"), ("inputField", 7, "type_error:js"),
    ("isComplete", "true", "PASS"), ("isComplete", "True", "type_error:simple"),
    ("isComplete", True, "type_error:js"),
    ("n", "5", "PASS"), ("n", "5.0", "type_error:simple"), ("n", 5, "type_error:js"),
    ("x", "1.5", "PASS"), ("x", "15e-1", "type_error:simple"), ("x", "1.5f", "type_error:simple"),
    ("big", "5n", "PASS"), ("big", "5", "type_error:simple"),
    ("list", "[1, 2]", "PASS"), ("list", "new Array(1, 2)", "PASS"),
    ("list", "[2, 1]", "value_error:list/tuple"), ("list", "['1', 2]", "value_error:list/tuple"),
    ("names", '["a", "b"]', "PASS"), ("names", "['A', 'b']", "PASS"),
    ("names", "[a, b]", "PASS"),
    ("opts", "{k: 'v'}", "PASS"), ("opts", '{"k": "v", "m": 2}', "PASS"),
    ("opts", "{k: 'v', z: 1}", "value_error:dict_key"), ("opts", "{}", "value_error:dict_key"),
    ("anything", "thing", "PASS"), ("anything", '"thing"', "value_error:string"),
]


@pytest.mark.parametrize(("param", "value", "expected"), JS_CASES,
                         ids=[f"{p}={v!r}" for p, v, _ in JS_CASES])
def test_javascript_values(param: str, value: Any, expected: str) -> None:
    v = check_ast([JS_DOC], [{"validateUserInput": {param: value}}], JS_TRUTH,
                  language="javascript", category="simple_javascript", underscore_to_dot=False)
    assert outcome(v) == expected


CONVERSIONS_JAVA: list[tuple[str, str, str | None, Any]] = [
    ("123", "integer", None, 123), ("-123", "short", None, -123), ("1.0", "integer", None, "1.0"),
    ("3.14f", "float", None, 3.14), ("3e3F", "float", None, 3e3), ("3.14", "float", None, "3.14"),
    ("3.14", "double", None, 3.14), ("3.14d", "double", None, "3.14d"),
    ("123L", "long", None, 123), ("123", "long", None, "123"),
    ("true", "boolean", None, True), ("false", "boolean", None, False),
    ("TRUE", "boolean", None, "TRUE"), ("'a'", "char", None, "'a'"), ("a", "char", None, "a"),
    ('"abc"', "String", None, '"abc"'), ("123", "any", None, "123"),
    ("new int[]{1, 2, 3}", "Array", "integer", [1, 2, 3]),
    ("new int[] { }", "Array", "integer", []),
    ('new String[]{"a", "b"}', "Array", "String", ['"a"', '"b"']),
    ("new long[]{1L, 2, 3L}", "Array", "long", [1, "2", 3]),
    ('new Object[]{1, "abc", true}', "Array", None, [1, "abc", True]),
    ('new ArrayList<>(Arrays.asList("a", "b"))', "ArrayList", "String", ["a", "b"]),
    ("new ArrayList<>(Arrays.asList(a, b))", "ArrayList", "String", ["", ""]),
    ("new ArrayList<Long>(Arrays.asList(1L, 2L))", "ArrayList", "long", [1, 2]),
    ("new ArrayList<Character>() {{ add('a'); add('b'); }}", "ArrayList", "char", ["a", "b"]),
    ('new ArrayList<>(Arrays.asList(1, "x", 2.5, 7L, 1.5f))', "ArrayList", None,
     [1, "x", 2.5, 7, 1.5]),
    ('new ArrayList<>(Arrays.asList("x", 1))', "ArrayList", "any", ['"x"', "1"]),
    ("new ArrayList<>()", "ArrayList", "String", []), ("[1, 2]", "ArrayList", "integer", "[1, 2]"),
    ('new HashMap<String, Object>() {{ put("k", 1); put("s", "v"); }}', "HashMap", None,
     {"k": 1, "s": "v"}),
    ("new HashMap<>() {{}}", "HashMap", None, {}), ("new HashMap<>()", "HashMap", None, {}),
    ("{k: 1}", "HashMap", None, "{k: 1}"),
]


@pytest.mark.parametrize(("value", "java_type", "item", "expected"), CONVERSIONS_JAVA,
                         ids=[f"{t}:{v}" for v, t, _, _ in CONVERSIONS_JAVA])
def test_convert_java(value: str, java_type: str, item: str | None, expected: Any) -> None:
    got = convert_java(value, java_type, item)
    assert got == expected and type(got) is type(expected)
    if oo.available():
        official = _official_converters()[0](value, java_type, item)
        assert got == official and type(got) is type(official)


CONVERSIONS_JS: list[tuple[str, str, str | None, Any]] = [
    ('"abc"', "String", None, "abc"), ("'abc'", "String", None, "abc"),
    ("\"abc'", "String", None, "\"abc'"), ("abc", "String", None, "abc"),
    ("123", "integer", None, 123), ("1.5", "float", None, 1.5), ("1e5", "float", None, "1e5"),
    ("12n", "Bigint", None, 12), ("12", "Bigint", None, "12"),
    ("true", "Boolean", None, True), ("True", "Boolean", None, "True"),
    ("[1, 2, 3]", "array", "integer", [1, 2, 3]), ("new Array(4, 5)", "array", "integer", [4, 5]),
    ("[1, 'two', true]", "array", None, [1, "two", True]),
    ("['a', \"b\", c]", "array", "String", ["a", "b", "c"]),
    ("['5', 6]", "array", "integer", ["'5'", 6]),
    (" [ [1, 2], [3, 4]]", "array", "array", [[1, 2], [3, 4]]),
    ("[]", "array", "String", []), ("  myList ", "array", "String", "myList"),
    ("{}", "dict", None, {}), ("{'key': 'value', n: 12}", "dict", None, {"key": "value", "n": 12}),
    ("{k: '5'}", "dict", None, {"k": 5}), ("{a: [1, 2], b: x}", "dict", None, {"a": [1, 2], "b": "x"}),
    ("{\na: 1\n}", "dict", None, "{\na: 1\n}"), ("obj", "dict", None, "obj"),
    ("123", "any", None, "123"),
]


@pytest.mark.parametrize(("value", "js_type", "item", "expected"), CONVERSIONS_JS,
                         ids=[f"{t}:{v}" for v, t, _, _ in CONVERSIONS_JS])
def test_convert_js(value: str, js_type: str, item: str | None, expected: Any) -> None:
    got = convert_js(value, js_type, item)
    assert got == expected and type(got) is type(expected)
    if oo.available():
        official = _official_converters()[1](value, js_type, item)
        assert got == official and type(got) is type(official)


def test_conversion_errors() -> None:
    for t in ("Set", "Hashtable", "Queue", "Stack"):
        with pytest.raises(NotImplementedError):
            convert_java("x", t)
    with pytest.raises(ValueError):
        convert_java("x", "object")
    with pytest.raises(ValueError):
        convert_js("x", "number")


def _official_converters() -> tuple[Any, Any]:
    oo.load()
    from bfcl_eval.eval_checker.ast_eval.type_convertor.java_type_converter import (
        java_type_converter,
    )
    from bfcl_eval.eval_checker.ast_eval.type_convertor.js_type_converter import (
        js_type_converter,
    )
    return java_type_converter, js_type_converter


# ------------------------------------------------------------------- relevance


@pytest.mark.parametrize(("ok", "decoded", "category", "expected"), [
    (True, [{"geo.lookup": {"city": "x"}}], "irrelevance", "irrelevance_error:decoder_success"),
    (True, [{"foo": {}}], "live_irrelevance", "irrelevance_error:decoder_success"),
    (True, [], "irrelevance", "PASS"), (True, [{}], "irrelevance", "PASS"),
    (True, "some text", "irrelevance", "PASS"), (False, None, "live_irrelevance", "PASS"),
    (True, [{"foo": {}}], "live_relevance", "PASS"),
    (True, [], "live_relevance", "relevance_error:decoder_failed"),
    (False, None, "live_relevance", "relevance_error:decoder_failed"),
    (False, [{"foo": {}}], "live_relevance", "relevance_error:decoder_failed"),
])
def test_relevance(ok: bool, decoded: Any, category: str, expected: str) -> None:
    assert outcome(check_relevance(ok, decoded, category=category)) == expected


# ------------------------------------------------------------------- misc


def test_standardize() -> None:
    assert standardize("New York, NY") == "newyorkny"
    assert standardize("It's a/b-c_d*e^f.g") == 'it"sabcdefg'
    assert standardize("a\tb") == "a\tb"


def test_verdict_shape() -> None:
    v = geo()
    assert v == Verdict(True, None) and v.errors == ()
    bad = geo(city="x")
    assert not bad.valid and bad.error_type == "value_error:string" and bad.errors
    with pytest.raises(AttributeError):
        bad.valid = True  # type: ignore[misc]


def test_inputs_are_not_modified() -> None:
    calls = [{"geo.lookup": {**GOOD, "coords": (1.0, 2.0), "radius": 5}}]
    before = copy.deepcopy(calls), copy.deepcopy(GEO_TRUTH), copy.deepcopy(GEO)
    check_ast([GEO], calls, GEO_TRUTH, language="python", category="simple",
              underscore_to_dot=False)
    assert (calls, GEO_TRUTH, GEO) == before


def test_checker_imports_only_the_standard_library() -> None:
    """checker.py and convert.py must stay light: stdlib plus each other, never bfcl_eval."""
    for module in (checker_module, convert_module):
        tree = ast.parse(Path(module.__file__ or "").read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                assert top in {"__future__", "re", "dataclasses", "typing"} or (
                    name == "assay.tasks.bfcl.convert"), name


# ------------------------------------------------------------------- §8 ceilings


def _score(category: str, *, omit_optional: bool = False, fc: bool = False) -> tuple[int, list]:
    questions, truths = oo.entries(category)
    assert truths is not None
    language = {"simple_java": "java", "simple_javascript": "javascript"}.get(category,
                                                                             "python")
    failed = []
    for entry, truth in zip(questions, truths, strict=True):
        calls = oo.truth_calls(entry["function"], truth["ground_truth"],
                               omit_optional=omit_optional)
        v = check_ast(entry["function"], oo.render(calls, language, fc), truth["ground_truth"],
                      language=language, category=category, underscore_to_dot=fc)
        if not v.valid:
            failed.append(entry["id"])
    return len(questions) - len(failed), failed


@needs_data
@pytest.mark.parametrize("fc", [False, True])
def test_ground_truth_ceilings(fc: bool) -> None:
    """Answers built from the ground truth: the §8 numbers and the entries that fail."""
    for category in ("simple_python", "multiple", "parallel", "parallel_multiple"):
        assert _score(category, fc=fc) == (len(oo.entries(category)[0]), [])
    assert _score("live_simple", fc=fc) == (256, ["live_simple_106-63-0",
                                                  "live_simple_112-68-0"])
    assert _score("live_multiple", fc=fc) == (1051, ["live_multiple_862-181-3",
                                                     "live_multiple_964-207-0"])
    assert _score("live_parallel", fc=fc) == (16, [])
    assert _score("live_parallel_multiple", fc=fc) == (24, [])


@needs_data
def test_ground_truth_ceilings_with_optional_params_omitted() -> None:
    """Omitting every ""-allowed param: 995/1000 non-live and 1042/1053 live_multiple."""
    non_live = [_score(c, omit_optional=True)
                for c in ("simple_python", "multiple", "parallel", "parallel_multiple")]
    assert sum(n for n, _ in non_live) == 995
    assert sorted(i for _, f in non_live for i in f) == sorted([
        "simple_python_17", "simple_python_200", "parallel_88", "parallel_multiple_87",
        "parallel_multiple_119"])
    passed, failed = _score("live_multiple", omit_optional=True)
    assert passed == 1042
    assert {"live_multiple_507-149-4", "live_multiple_862-181-3",
            "live_multiple_964-207-0"} <= set(failed)
