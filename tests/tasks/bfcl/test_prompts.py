"""assay's BFCL prompts and tools against the official bfcl_eval functions, entry by entry."""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import official_oracle as oracle  # noqa: E402

from assay.tasks.bfcl.categories import (  # noqa: E402
    AGENTIC,
    MULTI_TURN,
    SUPPORTED,
    language_of,
)
from assay.tasks.bfcl.prompts import (  # noqa: E402
    add_language_hints,
    official_sort_key,
    prompt_messages,
    system_prompt,
    to_openai_tools,
)

needs_oracle = pytest.mark.skipif(not oracle.available(), reason=oracle.NOT_INSTALLED)

SINGLE_TURN = ("simple_python", "simple_java", "simple_javascript", "multiple", "parallel",
               "parallel_multiple", "irrelevance", "live_simple", "live_multiple",
               "live_parallel", "live_parallel_multiple", "live_irrelevance", "live_relevance")

SIMPLE_PYTHON_0_PROMPT = (
    "You are an expert in composing functions.You are given a question and a set of possible "
    "functions. Based on the question, you will need to make one or more function/tool calls "
    "to achieve the purpose. If none of the functions can be used, point it out. If the given "
    "question lacks the parameters required by the function, also point it out.\n\n"
    "You should only return the function calls in your response.\n\n"
    "If you decide to invoke any of the function(s), you MUST put it in the format of "
    "[func_name1(params_name1=params_value1, params_name2=params_value2...), "
    "func_name2(params)].  You SHOULD NOT include any other text in the response.\n\n"
    "At each turn, you should try your best to complete the tasks requested by the user within "
    "the current turn. Continue to output functions to call until you have fulfilled the "
    "user's request to the best of your ability. Once you have no more functions to call, the "
    "system will consider the current turn complete and proceed to the next turn or task.\n\n"
    "Here is a list of functions in json format that you can invoke.\n"
    """[
    {
        "name": "calculate_triangle_area",
        "description": "Calculate the area of a triangle given its base and height. Note that \
the provided function is in Python 3 syntax.",
        "parameters": {
            "type": "dict",
            "properties": {
                "base": {
                    "type": "integer",
                    "description": "The base of the triangle."
                },
                "height": {
                    "type": "integer",
                    "description": "The height of the triangle."
                },
                "unit": {
                    "type": "string",
                    "description": "The unit of measure (defaults to 'units' if not specified)"
                }
            },
            "required": [
                "base",
                "height"
            ]
        }
    }
]
"""
)


def test_single_turn_list_matches_supported() -> None:
    assert set(SINGLE_TURN) == set(SUPPORTED) - set(MULTI_TURN) - set(AGENTIC)


@needs_oracle
def test_simple_python_0_prompt_byte_exact() -> None:
    questions, _ = oracle.entries("simple_python")
    entry = questions[0]
    assert entry["id"] == "simple_python_0"
    hinted = add_language_hints(entry["function"], "python")
    assert system_prompt(hinted) == SIMPLE_PYTHON_0_PROMPT
    messages = prompt_messages(entry["question"][0], hinted)
    assert messages == [
        {"role": "system", "content": SIMPLE_PYTHON_0_PROMPT},
        {"role": "user", "content": "Find the area of a triangle with a base of 10 units and "
                                    "height of 5 units."},
    ]


def test_prompt_messages_prepends_to_existing_system_message() -> None:
    docs = [{"name": "f", "description": "d", "parameters": {"type": "dict", "properties": {}}}]
    turn = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]
    before = copy.deepcopy(turn)
    out = prompt_messages(turn, docs)
    assert turn == before
    assert out[0] == {"role": "system", "content": system_prompt(docs) + "\n\nBe brief."}
    assert out[1:] == turn[1:]
    assert system_prompt([{"name": "caf\u00e9"}]).count("caf\\u00e9") == 1  # ensure_ascii
    assert system_prompt(docs).endswith("\n]\n")


def _raises_or(fn, *args):
    try:
        return True, fn(*args)
    except Exception as exc:  # noqa: BLE001
        return False, type(exc).__name__


@needs_oracle
@pytest.mark.parametrize("category", SINGLE_TURN)
def test_every_entry_matches_official(category: str) -> None:
    language = language_of(category)
    raw_entries, _ = oracle.entries(category)
    official_entries = oracle.official_hinted_entries(category)
    assert [e["id"] for e in raw_entries] == [e["id"] for e in official_entries]
    for raw, official in zip(raw_entries, official_entries, strict=True):
        docs_before = copy.deepcopy(raw["function"])
        hinted = add_language_hints(raw["function"], language)
        assert raw["function"] == docs_before, raw["id"]  # never mutated
        assert hinted == official["function"], raw["id"]
        assert hinted == oracle.official_language_hints(raw["function"], category), raw["id"]

        assert system_prompt(hinted) == oracle.official_system_prompt(hinted), raw["id"]
        turn = raw["question"][0]
        turn_before = copy.deepcopy(turn)
        assert prompt_messages(turn, hinted) == oracle.official_prompt_messages(
            turn, hinted, raw["id"]), raw["id"]
        assert turn == turn_before

        hinted_before = copy.deepcopy(hinted)
        tools = to_openai_tools(hinted)
        assert hinted == hinted_before
        official_tools = oracle.official_openai_tools(hinted)
        assert tools == official_tools, raw["id"]
        undotted = to_openai_tools(hinted, underscore_to_dot=False)
        for ours, theirs, doc in zip(undotted, official_tools, hinted, strict=True):
            assert ours["function"] == {**theirs["function"], "name": doc["name"]}, raw["id"]

        # The raw (un-hinted, gorilla-typed) docs exercise the type mapping fully.
        ours_raw = _raises_or(lambda d: to_openai_tools(d), raw["function"])
        theirs_raw = _raises_or(oracle.official_openai_tools, raw["function"])
        assert ours_raw[0] == theirs_raw[0], raw["id"]
        if ours_raw[0]:
            assert ours_raw == theirs_raw, raw["id"]
        assert json.dumps(tools)  # JSON-serialisable


@needs_oracle
def test_sort_key_matches_official() -> None:
    ids = ["simple_python_10", "live_simple_19-3-15", "multi_turn_base_3", "web_search_base_2",
           "memory_kv_prereq_0-customer-0", "memory_kv_4-student-1", "irrelevance_0",
           "format_sensitivity_0:ret_fmt=python&tool_call_tag=False&func_doc_fmt=json"
           "&prompt_fmt=plaintext&style=classic:live_simple_23-5-1"]
    for category in SINGLE_TURN:
        ids.extend(e["id"] for e in oracle.entries(category)[0])
    for entry_id in ids:
        assert official_sort_key(entry_id) == oracle.official_sort_key(entry_id), entry_id
    assert sorted(ids, key=official_sort_key) == sorted(ids, key=oracle.official_sort_key)
    for bad in ("nounderscore", "simple_x", "live_simple_1-2"):
        with pytest.raises(ValueError):
            official_sort_key(bad)


def test_to_openai_tools_type_mapping_rules() -> None:
    docs = [{"name": "geo.lookup", "description": "d", "parameters": {"type": "dict",
                                                                      "properties": {
        "r": {"type": "float", "description": "radius"},
        "n": {"type": "Bigint", "description": ""},
        "u": {"type": "weird", "description": ""},
        "m": {"description": "no type"},
        "xs": {"type": "tuple", "description": "", "items": {"type": "float"}},
        "xss": {"type": "array", "description": "", "items": {"type": "list",
                                                              "items": {"type": "double"}}},
        "obj": {"type": "dict", "description": "", "properties": {
            "f": {"type": "float", "description": "inner"}}},
    }, "required": ["r"]}}]
    (tool,) = to_openai_tools(docs)
    fn = tool["function"]
    assert tool["type"] == "function" and fn["name"] == "geo_lookup"
    props = fn["parameters"]["properties"]
    assert fn["parameters"]["type"] == "object"
    assert props["r"] == {"type": "number", "format": "float",
                          "description": "radius This is a float type value."}
    assert props["n"]["type"] == "integer" and props["u"]["type"] == "string"
    assert props["m"]["type"] == "string"
    assert props["xs"]["items"] == {"type": "number"}  # no float format one level down
    assert props["xss"]["items"] == {"type": "array", "items": {"type": "number"}}
    assert props["obj"]["properties"]["f"]["format"] == "float"
    assert docs[0]["parameters"]["type"] == "dict"  # input untouched
    assert to_openai_tools(docs, underscore_to_dot=False)[0]["function"]["name"] == "geo.lookup"


def test_language_hints_examples() -> None:
    docs = [{"name": "A.f", "description": "Do.", "parameters": {"type": "dict", "properties": {
        "xs": {"type": "ArrayList", "description": "list.", "items": {"type": "String"}},
        "o": {"type": "any", "description": "obj."},
        "n": {"type": "long", "description": "num."}}}}]
    (java,) = add_language_hints(docs, "java")
    assert java["description"] == "Do. Note that the provided function is in Java 8 SDK syntax."
    props = java["parameters"]["properties"]
    assert props["xs"] == {"type": "string", "description": (
        "list. This is Java ArrayList type parameter in string representation. The list elements"
        " are of type String; they are not in string representation.")}
    assert props["o"]["description"] == (
        "obj. This parameter can be of any type of Java object in string representation.")
    assert props["n"]["type"] == "string"
    js_docs = [{"name": "g", "description": "D.", "parameters": {"type": "dict", "properties": {
        "d": {"type": "dict", "description": "map.", "properties": {"k": {"type": "String"}}}}}}]
    (js,) = add_language_hints(js_docs, "javascript")
    assert js["parameters"]["properties"]["d"] == {"type": "string", "description": (
        'map. This is JavaScript dict type parameter in string representation. The dictionary '
        'entries have the following schema; they are not in string representation. '
        '{"k": {"type": "String"}}')}
    assert add_language_hints([], "python") == []
    with pytest.raises(ValueError):
        add_language_hints(docs, "rust")
